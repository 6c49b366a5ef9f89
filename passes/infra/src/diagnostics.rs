//! Diagnostics captured from MLIR, with their `file:line:col`, printed the
//! way `mlir-opt` prints them (location, severity, message, source line and
//! caret) or checked against `expected-*` comments.

use melior::{
    Context,
    diagnostic::{Diagnostic, DiagnosticSeverity},
    ir::Location,
};
use mlir_sys::{
    MlirLocation, mlirIdentifierStr, mlirLocationCallSiteGetCallee,
    mlirLocationFileLineColRangeGetFilename, mlirLocationFileLineColRangeGetStartColumn,
    mlirLocationFileLineColRangeGetStartLine, mlirLocationFusedGetLocations,
    mlirLocationFusedGetNumLocations, mlirLocationIsACallSite, mlirLocationIsAFileLineColRange,
    mlirLocationIsAFused, mlirLocationIsAName, mlirLocationNameGetChildLoc,
};
use std::{cell::RefCell, fmt, rc::Rc};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Note,
    Remark,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Note => "note",
            Self::Remark => "remark",
        }
    }
}

/// A file position, 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePosition {
    pub file: String,
    pub line: u32,
    pub column: u32,
}

#[derive(Debug, Clone)]
pub struct Record {
    pub severity: Severity,
    pub position: Option<FilePosition>,
    pub message: String,
    pub notes: Vec<Record>,
}

impl Record {
    fn from_diagnostic(diagnostic: &Diagnostic) -> Self {
        let severity = match diagnostic.severity() {
            DiagnosticSeverity::Error => Severity::Error,
            DiagnosticSeverity::Warning => Severity::Warning,
            DiagnosticSeverity::Note => Severity::Note,
            DiagnosticSeverity::Remark => Severity::Remark,
        };
        let notes = (0..diagnostic.note_count())
            .filter_map(|index| diagnostic.note(index).ok())
            .map(|note| Self::from_diagnostic(&note))
            .collect();
        Self {
            severity,
            position: file_position(diagnostic.location()),
            message: diagnostic.to_string(),
            notes,
        }
    }

    /// Renders the record like MLIR's source-manager handler: a
    /// `file:line:col: severity: message` line, then the source line with a
    /// caret when `source` holds that file's text.
    pub fn render(&self, sources: &SourceText) -> String {
        let mut text = String::new();
        self.render_into(sources, &mut text);
        text
    }

    fn render_into(&self, sources: &SourceText, text: &mut String) {
        use fmt::Write;
        match &self.position {
            Some(position) => {
                let _ = writeln!(
                    text,
                    "{}:{}:{}: {}: {}",
                    position.file,
                    position.line,
                    position.column,
                    self.severity.name(),
                    self.message
                );
                if let Some(line) = sources.line(&position.file, position.line) {
                    let caret_column = (position.column as usize).saturating_sub(1).min(line.len());
                    let padding: String = line[..caret_column]
                        .chars()
                        .map(|c| if c == '\t' { '\t' } else { ' ' })
                        .collect();
                    let _ = writeln!(text, "{line}\n{padding}^");
                }
            }
            None => {
                let _ = writeln!(
                    text,
                    "<unknown>: {}: {}",
                    self.severity.name(),
                    self.message
                );
            }
        }
        for note in &self.notes {
            note.render_into(sources, text);
        }
    }
}

/// The text of the input file, for source lines in rendered diagnostics.
#[derive(Debug)]
pub struct SourceText<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

impl SourceText<'_> {
    fn line(&self, file: &str, line: u32) -> Option<&str> {
        if file != self.name || line == 0 {
            return None;
        }
        self.text.lines().nth(line as usize - 1)
    }
}

/// The first file position a location leads to (through names, call sites
/// and fused locations).
pub fn file_position(location: Location) -> Option<FilePosition> {
    raw_file_position(location.to_raw())
}

fn raw_file_position(location: MlirLocation) -> Option<FilePosition> {
    // SAFETY: queries on a valid location of a live context.
    unsafe {
        if mlirLocationIsAFileLineColRange(location) {
            return Some(FilePosition {
                file: crate::string_ref_to_string(mlirIdentifierStr(
                    mlirLocationFileLineColRangeGetFilename(location),
                )),
                line: mlirLocationFileLineColRangeGetStartLine(location).max(0) as u32,
                column: mlirLocationFileLineColRangeGetStartColumn(location).max(0) as u32,
            });
        }
        if mlirLocationIsAName(location) {
            return raw_file_position(mlirLocationNameGetChildLoc(location));
        }
        if mlirLocationIsACallSite(location) {
            return raw_file_position(mlirLocationCallSiteGetCallee(location));
        }
        if mlirLocationIsAFused(location) {
            let count = mlirLocationFusedGetNumLocations(location) as usize;
            let mut locations = vec![
                MlirLocation {
                    ptr: std::ptr::null()
                };
                count
            ];
            mlirLocationFusedGetLocations(location, locations.as_mut_ptr());
            return locations.into_iter().find_map(raw_file_position);
        }
    }
    None
}

/// Collects every diagnostic emitted in `context` from now on.
#[derive(Debug, Clone, Default)]
pub struct Collector {
    records: Rc<RefCell<Vec<Record>>>,
}

impl Collector {
    pub fn attach(context: &Context) -> Self {
        let collector = Self::default();
        let records = collector.records.clone();
        context.attach_diagnostic_handler(move |diagnostic| {
            records
                .borrow_mut()
                .push(Record::from_diagnostic(&diagnostic));
            true
        });
        collector
    }

    pub fn take(&self) -> Vec<Record> {
        std::mem::take(&mut self.records.borrow_mut())
    }
}
