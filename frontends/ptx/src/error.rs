//! Diagnostics as values: every error names a stable code and the source
//! span it is about, and renders with miette (attach the text with
//! `miette::Report::with_source_code`).

use std::fmt;

/// A half-open byte range of the PTX text. Spans do not take part in
/// comparisons: two IRs are equal when they say the same thing, wherever
/// it was written (that is what the round-trip test compares).
#[derive(Clone, Copy, Debug, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `[start, end)`.
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start,
            end: end.max(start),
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// The 1-based line of the span's start in `source`.
    pub fn line(self, source: &str) -> usize {
        source
            .get(..self.start)
            .map_or(0, |before| before.bytes().filter(|&b| b == b'\n').count())
            + 1
    }
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(span: Span) -> miette::SourceSpan {
        (span.start, span.end - span.start).into()
    }
}

/// What went wrong; each kind has a stable code (`ptx::E0xx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not PTX.
    Syntax,
    /// A PTX instruction this frontend does not support.
    UnsupportedInstruction,
    /// A directive (module or function level) this frontend does not support.
    UnsupportedDirective,
    /// A modifier unknown to PTX or invalid on this instruction.
    Modifier,
    /// Operands of the wrong number or shape.
    Operands,
    /// A register, label or symbol that is not declared.
    Undeclared,
    /// A name declared twice in one scope.
    Redeclared,
}

impl ErrorKind {
    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "ptx::E001",
            ErrorKind::UnsupportedInstruction => "ptx::E002",
            ErrorKind::UnsupportedDirective => "ptx::E003",
            ErrorKind::Modifier => "ptx::E004",
            ErrorKind::Operands => "ptx::E005",
            ErrorKind::Undeclared => "ptx::E006",
            ErrorKind::Redeclared => "ptx::E007",
        }
    }
}

/// One diagnostic.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct PtxError {
    /// What kind of error.
    pub kind: ErrorKind,
    /// One-line message.
    pub message: String,
    /// Where.
    pub span: Span,
    /// Optional help line.
    pub help: Option<String>,
}

impl PtxError {
    /// An error of `kind` at `span`.
    pub fn new(kind: ErrorKind, message: impl Into<String>, span: Span) -> PtxError {
        PtxError {
            kind,
            message: message.into(),
            span,
            help: None,
        }
    }

    /// A syntax error.
    pub fn syntax(message: impl Into<String>, span: Span) -> PtxError {
        PtxError::new(ErrorKind::Syntax, message, span)
    }

    /// Adds a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> PtxError {
        self.help = Some(help.into());
        self
    }
}

impl miette::Diagnostic for PtxError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.kind.code()))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_with_span(None, self.span),
        )))
    }
}
