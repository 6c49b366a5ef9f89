//! `--verify-diagnostics`: the diagnostics a run emits must match the
//! `expected-error|warning|note|remark [@+N|@-N|@above|@below|@unknown]
//! {{text}}` comments of the input one to one (same kind, same line, text
//! contained in the message), as MLIR's verifier handler requires.

use pgpu_pass_infra::diagnostics::{Record, Severity};

#[derive(Debug)]
struct Expectation {
    severity: Severity,
    /// Line the diagnostic must be at; `None` for `@unknown`.
    target_line: Option<u32>,
    directive_line: u32,
    directive_column: u32,
    text: String,
    matched: bool,
}

/// Expectations of the lines `first_line..` of `text`; malformed
/// directives are reported as errors.
#[derive(Debug, Default)]
pub struct Expectations {
    file: String,
    expected: Vec<Expectation>,
    errors: Vec<String>,
}

const KINDS: [(&str, Severity); 4] = [
    ("expected-error", Severity::Error),
    ("expected-warning", Severity::Warning),
    ("expected-note", Severity::Note),
    ("expected-remark", Severity::Remark),
];

impl Expectations {
    pub fn parse(file: &str, text: &str, first_line: u32) -> Self {
        let mut expectations = Self {
            file: file.to_string(),
            ..Self::default()
        };
        for (index, line) in text.lines().enumerate() {
            let line_number = first_line + index as u32;
            let mut rest = line;
            let mut consumed = 0;
            while let Some(start) = rest.find("expected-") {
                let directive = &rest[start..];
                let column = (consumed + start + 1) as u32;
                let advance = expectations.parse_directive(directive, line_number, column);
                consumed += start + advance;
                rest = &rest[start + advance..];
            }
        }
        expectations
    }

    /// Parses one directive at the start of `directive`; returns how many
    /// bytes it used.
    fn parse_directive(&mut self, directive: &str, line: u32, column: u32) -> usize {
        let Some(&(keyword, severity)) = KINDS
            .iter()
            .find(|(keyword, _)| directive.starts_with(keyword))
        else {
            return "expected-".len();
        };
        let mut rest = &directive[keyword.len()..];
        let here = format!("{}:{line}:{column}", self.file);
        if rest.starts_with("-re") {
            self.errors.push(format!(
                "{here}: error: regular-expression expectations ('{keyword}-re') are not supported"
            ));
            return keyword.len() + 3;
        }
        rest = rest.trim_start();
        let mut target_line = Some(line);
        if let Some(offset) = rest.strip_prefix('@') {
            let end = offset
                .find(|c: char| c.is_whitespace() || c == '{')
                .unwrap_or(offset.len());
            let spec = &offset[..end];
            target_line = match spec {
                "above" => line.checked_sub(1),
                "below" => Some(line + 1),
                "unknown" => None,
                _ => match spec.parse::<i64>() {
                    Ok(delta) if spec.starts_with(['+', '-']) => {
                        u32::try_from(i64::from(line) + delta)
                            .ok()
                            .filter(|target| *target > 0)
                    }
                    _ => {
                        self.errors.push(format!(
                            "{here}: error: invalid line specifier '@{spec}' in expected directive"
                        ));
                        return directive.len() - offset[end..].len();
                    }
                },
            };
            rest = offset[end..].trim_start();
        }
        let Some(body) = rest.strip_prefix("{{") else {
            // Not a directive (e.g. prose mentioning expected-error).
            return keyword.len();
        };
        let Some(close) = body.find("}}") else {
            self.errors.push(format!(
                "{here}: error: expected directive has no closing '}}}}'"
            ));
            return directive.len();
        };
        self.expected.push(Expectation {
            severity,
            target_line,
            directive_line: line,
            directive_column: column,
            text: body[..close].to_string(),
            matched: false,
        });
        directive.len() - body[close + 2..].len()
    }

    /// Matches `records` (notes included) against the expectations; returns
    /// one message per mismatch, empty when everything matched.
    pub fn check(mut self, records: &[Record]) -> Vec<String> {
        let mut flattened = Vec::new();
        flatten(records, &mut flattened);
        let mut errors = std::mem::take(&mut self.errors);
        for record in flattened {
            let line = record
                .position
                .as_ref()
                .filter(|position| position.file == self.file)
                .map(|position| position.line);
            let found = self.expected.iter_mut().find(|expectation| {
                !expectation.matched
                    && expectation.severity == record.severity
                    && expectation.target_line == line
                    && record.message.contains(&expectation.text)
            });
            match found {
                Some(expectation) => expectation.matched = true,
                None => {
                    let location = match &record.position {
                        Some(position) => {
                            format!("{}:{}:{}", position.file, position.line, position.column)
                        }
                        None => format!("{}:0:0", self.file),
                    };
                    errors.push(format!(
                        "{location}: error: unexpected {}: {}",
                        record.severity.name(),
                        record.message
                    ));
                }
            }
        }
        for expectation in self
            .expected
            .iter()
            .filter(|expectation| !expectation.matched)
        {
            errors.push(format!(
                "{}:{}:{}: error: expected {} \"{}\" was not produced",
                self.file,
                expectation.directive_line,
                expectation.directive_column,
                expectation.severity.name(),
                expectation.text
            ));
        }
        errors
    }
}

fn flatten<'a>(records: &'a [Record], into: &mut Vec<&'a Record>) {
    for record in records {
        into.push(record);
        flatten(&record.notes, into);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgpu_pass_infra::diagnostics::FilePosition;

    fn error_at(line: u32, message: &str) -> Record {
        Record {
            severity: Severity::Error,
            position: Some(FilePosition {
                file: "t.mlir".into(),
                line,
                column: 3,
            }),
            message: message.into(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn relative_lines_match() {
        let text = "// expected-error @+1 {{bad op}}\nfoo\n// expected-error @above {{other}}\n";
        let expectations = Expectations::parse("t.mlir", text, 1);
        let errors =
            expectations.check(&[error_at(2, "a bad op here"), error_at(2, "other thing")]);
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn missing_and_unexpected_are_reported() {
        let expectations = Expectations::parse("t.mlir", "x // expected-error {{never}}\n", 5);
        let errors = expectations.check(&[error_at(9, "surprise")]);
        assert_eq!(errors.len(), 2);
        assert!(errors[0].contains("t.mlir:9:3: error: unexpected error: surprise"));
        assert!(errors[1].contains("t.mlir:5:6: error: expected error \"never\" was not produced"));
    }

    #[test]
    fn malformed_directives_are_errors() {
        let expectations = Expectations::parse(
            "t.mlir",
            "// expected-error @x {{a}}\n// expected-note {{open\n",
            1,
        );
        assert_eq!(expectations.check(&[]).len(), 2);
    }
}
