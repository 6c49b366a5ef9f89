//! Diagnostics as values: a stable code, a message, labelled spans and an
//! optional help line. [`Diagnostic`] implements [`miette::Diagnostic`];
//! attach the source with [`Diagnostic::with_source`] to render it.

use crate::span::{LineIndex, Span};
use std::fmt;

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    /// Compilation fails.
    Error,
    /// Reported; compilation goes on.
    Warning,
}

/// A labelled source span.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What to say there (may be empty).
    pub message: String,
}

/// One diagnostic. `code` is stable (`csubset::E0xx`, `bsgp::E1xx`,
/// `csubset::W0xx` for warnings); tests match on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    /// Stable code, e.g. `csubset::E012`.
    pub code: &'static str,
    /// Error or warning.
    pub severity: Severity,
    /// One-line message.
    pub message: String,
    /// The first label is the primary one.
    pub labels: Vec<Label>,
    /// Optional help text.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with a primary label.
    pub fn error(code: &'static str, message: impl Into<String>, span: Span) -> Diagnostic {
        let message = message.into();
        Diagnostic {
            code,
            severity: Severity::Error,
            labels: vec![Label {
                span,
                message: String::new(),
            }],
            message,
            help: None,
        }
    }

    /// A warning with a primary label.
    pub fn warning(code: &'static str, message: impl Into<String>, span: Span) -> Diagnostic {
        let mut d = Diagnostic::error(code, message, span);
        d.severity = Severity::Warning;
        d
    }

    /// Set the primary label's text.
    pub fn with_label_text(mut self, text: impl Into<String>) -> Diagnostic {
        if let Some(l) = self.labels.first_mut() {
            l.message = text.into();
        }
        self
    }

    /// Add a secondary label.
    pub fn with_label(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: text.into(),
        });
        self
    }

    /// Add help text.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// The primary span.
    pub fn span(&self) -> Span {
        self.labels.first().map(|l| l.span).unwrap_or_default()
    }

    /// Whether this is an error (not a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// `file:line:col: error[code]: message` (one line, for tools and tests).
    pub fn render_short(&self, path: &str, index: &LineIndex) -> String {
        let (l, c) = index.line_col(self.span().start);
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        format!("{path}:{l}:{c}: {sev}[{}]: {}", self.code, self.message)
    }

    /// This diagnostic with its source attached, for miette's fancy renderer.
    pub fn with_source(self, path: &str, text: &str) -> miette::Report {
        miette::Report::new(self).with_source_code(miette::NamedSource::new(path, text.to_string()))
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display + 'a>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        Some(Box::new(self.labels.iter().enumerate().map(|(i, l)| {
            let text = if l.message.is_empty() {
                None
            } else {
                Some(l.message.clone())
            };
            if i == 0 {
                miette::LabeledSpan::new_primary_with_span(text, l.span)
            } else {
                miette::LabeledSpan::new_with_span(text, l.span)
            }
        })))
    }
}
