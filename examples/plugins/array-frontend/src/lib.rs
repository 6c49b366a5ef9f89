//! An out-of-tree pgpu frontend: `arr`, a tiny array language whose
//! element-wise operations become `pgpu.spawn` regions, one logical thread
//! per element. It depends only on the plugin API (`pgpu-plugin`) and
//! hands the driver pgpu IR as MLIR text.
//!
//! ```text
//! # squares.arr
//! n = arg 0 default 1000      # the program's argument 0 (default 1000)
//! a = iota n                  # a[i] = i, for i < n
//! b = map a: x * x + 1        # b[i] = f(a[i])     (a pgpu.spawn)
//! c = zip a b: y - 2 * x + i  # c[i] = f(a[i], b[i])
//! print sum c                 # sum on the host
//! print b[3]
//! print n
//! ```
//!
//! Values are 64-bit integers; arrays are `pgpu.dnew` buffers. In a `map`
//! or `zip` expression `x` (and `y`) are the elements, `i` the index, and
//! scalar names their values; `+ - * / %` with the usual precedence,
//! parentheses and unary minus. `zip`'s arrays must have the same length
//! (the runtime's bounds checks catch a shorter second one). Errors are
//! diagnostics with the byte span of what is wrong.
//!
//! The crate also has a toy backend, `kernel-census` (see
//! [`KernelCensus`]), to show the other plugin trait.

use pgpu_plugin::{Backend, Diagnostic, Frontend, Registry};
use std::collections::HashMap;
use std::fmt::Write;
use std::ops::Range;

/// The `arr` frontend.
#[derive(Debug, Default)]
pub struct ArrayFrontend;

/// Adds this crate's frontend and backend to `registry`.
pub fn register(registry: &mut Registry) {
    registry.add_frontend(Box::new(ArrayFrontend));
    registry.add_backend(Box::new(KernelCensus));
}

pgpu_plugin::export_plugin!(register);

impl Frontend for ArrayFrontend {
    fn name(&self) -> String {
        "arr".to_string()
    }

    fn extensions(&self) -> Vec<String> {
        vec!["arr".to_string()]
    }

    fn translate(&self, file: &str, source: &str) -> Result<String, Vec<Diagnostic>> {
        let statements = parse(source)?;
        Lowering::new(file, source).program(&statements)
    }
}

/// An expression of a `map` or `zip` body, or a scalar.
#[derive(Debug, Clone)]
enum Expr {
    Int(i64),
    /// `x`, `y`, `i` or a scalar's name.
    Name(String, Range<usize>),
    Neg(Box<Expr>),
    Binary(char, Box<Expr>, Box<Expr>),
}

#[derive(Debug)]
enum Statement {
    Arg {
        name: String,
        index: i64,
        default: i64,
    },
    Iota {
        name: String,
        length: Expr,
    },
    Map {
        name: String,
        inputs: Vec<(String, Range<usize>)>,
        body: Expr,
    },
    PrintSum(String, Range<usize>),
    PrintElement(String, Range<usize>, Expr),
    PrintScalar(Expr),
}

/// A statement and where it is.
type Located = (Statement, Range<usize>);

/// A token: its text and byte range.
#[derive(Debug, Clone)]
struct Token {
    text: String,
    span: Range<usize>,
}

fn tokens(line: &str, offset: usize) -> Result<Vec<Token>, Diagnostic> {
    let mut tokens = Vec::new();
    let bytes = line.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let start = at;
        let c = bytes[at] as char;
        if c == '#' {
            break;
        }
        if c.is_ascii_whitespace() {
            at += 1;
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
                at += 1;
            }
        } else if "=:+-*/%()[]".contains(c) {
            at += 1;
        } else {
            let width = line[at..].chars().next().map_or(1, char::len_utf8);
            return Err(Diagnostic::new(
                format!("unexpected character '{}'", &line[at..at + width]),
                offset + at..offset + at + width,
            ));
        }
        tokens.push(Token {
            text: line[start..at].to_string(),
            span: offset + start..offset + at,
        });
    }
    Ok(tokens)
}

/// A cursor over one statement's tokens.
struct Cursor<'t> {
    tokens: &'t [Token],
    at: usize,
    /// Where the statement ends (for "expected ..." at its end).
    end: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn here(&self) -> Range<usize> {
        self.peek()
            .map_or(self.end..self.end, |token| token.span.clone())
    }

    fn next(&mut self, what: &str) -> Result<Token, Diagnostic> {
        let token = self
            .peek()
            .cloned()
            .ok_or_else(|| Diagnostic::new(format!("expected {what}"), self.here()))?;
        self.at += 1;
        Ok(token)
    }

    fn expect(&mut self, text: &str) -> Result<Token, Diagnostic> {
        match self.peek() {
            Some(token) if token.text == text => self.next(text),
            _ => Err(Diagnostic::new(format!("expected '{text}'"), self.here())),
        }
    }

    fn name(&mut self, what: &str) -> Result<(String, Range<usize>), Diagnostic> {
        let token = self.next(what)?;
        if !is_name(&token.text) {
            return Err(Diagnostic::new(format!("expected {what}"), token.span));
        }
        Ok((token.text, token.span))
    }

    fn integer(&mut self) -> Result<i64, Diagnostic> {
        let negative = self.peek().is_some_and(|token| token.text == "-");
        if negative {
            self.at += 1;
        }
        let token = self.next("an integer")?;
        let value: i64 = token
            .text
            .parse()
            .map_err(|_| Diagnostic::new("expected an integer", token.span))?;
        Ok(if negative { -value } else { value })
    }

    fn done(&self) -> Result<(), Diagnostic> {
        match self.peek() {
            None => Ok(()),
            Some(token) => Err(Diagnostic::new(
                format!("unexpected '{}'", token.text),
                token.span.clone(),
            )),
        }
    }

    /// expr := term (('+' | '-') term)*
    fn expr(&mut self) -> Result<Expr, Diagnostic> {
        self.binary("+-", Self::term)
    }

    /// term := factor (('*' | '/' | '%') factor)*
    fn term(&mut self) -> Result<Expr, Diagnostic> {
        self.binary("*/%", Self::factor)
    }

    /// operand (op operand)*, left-associative, for the one-character
    /// operators in `ops`.
    fn binary(
        &mut self,
        ops: &str,
        operand: fn(&mut Self) -> Result<Expr, Diagnostic>,
    ) -> Result<Expr, Diagnostic> {
        let mut left = operand(self)?;
        while let Some(op) = self
            .peek()
            .filter(|token| token.text.len() == 1)
            .and_then(|token| token.text.chars().next())
            .filter(|c| ops.contains(*c))
        {
            self.at += 1;
            let right = operand(self)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    /// factor := INT | NAME | '(' expr ')' | '-' factor
    fn factor(&mut self) -> Result<Expr, Diagnostic> {
        let token = self.next("an expression")?;
        match token.text.as_str() {
            "(" => {
                let inner = self.expr()?;
                self.expect(")")?;
                Ok(inner)
            }
            "-" => Ok(Expr::Neg(Box::new(self.factor()?))),
            text if text.chars().all(|c| c.is_ascii_digit()) => text
                .parse()
                .map(Expr::Int)
                .map_err(|_| Diagnostic::new("this integer does not fit 64 bits", token.span)),
            text if is_name(text) => Ok(Expr::Name(token.text, token.span)),
            _ => Err(Diagnostic::new("expected an expression", token.span)),
        }
    }
}

fn is_name(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The statements of `source`, or every line's error.
fn parse(source: &str) -> Result<Vec<Located>, Vec<Diagnostic>> {
    let mut statements = Vec::new();
    let mut errors = Vec::new();
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let text = line.trim_end_matches(['\n', '\r']);
        match tokens(text, start).and_then(|tokens| statement(&tokens, start + text.len())) {
            Ok(Some(statement)) => statements.push(statement),
            Ok(None) => {}
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() {
        Ok(statements)
    } else {
        Err(errors)
    }
}

fn statement(tokens: &[Token], end: usize) -> Result<Option<Located>, Diagnostic> {
    let Some(first) = tokens.first() else {
        return Ok(None);
    };
    let span = first.span.start..tokens.last().map_or(end, |t| t.span.end);
    let mut cursor = Cursor { tokens, at: 0, end };
    let statement = if first.text == "print" {
        cursor.at = 1;
        match cursor.peek().map(|t| t.text.as_str()) {
            Some("sum") => {
                cursor.at += 1;
                let (name, span) = cursor.name("an array")?;
                Statement::PrintSum(name, span)
            }
            _ if tokens.get(2).is_some_and(|t| t.text == "[") => {
                let (name, span) = cursor.name("an array")?;
                cursor.expect("[")?;
                let index = cursor.expr()?;
                cursor.expect("]")?;
                Statement::PrintElement(name, span, index)
            }
            _ => Statement::PrintScalar(cursor.expr()?),
        }
    } else {
        let (name, _) = cursor.name("a name or 'print'")?;
        cursor.expect("=")?;
        let verb = cursor.next("'arg', 'iota', 'map' or 'zip'")?;
        match verb.text.as_str() {
            "arg" => {
                let index = cursor.integer()?;
                cursor.expect("default")?;
                let default = cursor.integer()?;
                Statement::Arg {
                    name,
                    index,
                    default,
                }
            }
            "iota" => Statement::Iota {
                name,
                length: cursor.expr()?,
            },
            "map" | "zip" => {
                let count = if verb.text == "map" { 1 } else { 2 };
                let mut inputs = Vec::new();
                for _ in 0..count {
                    inputs.push(cursor.name("an array")?);
                }
                cursor.expect(":")?;
                Statement::Map {
                    name,
                    inputs,
                    body: cursor.expr()?,
                }
            }
            _ => {
                return Err(Diagnostic::new(
                    "expected 'arg', 'iota', 'map' or 'zip'",
                    verb.span,
                ));
            }
        }
    };
    cursor.done()?;
    Ok(Some((statement, span)))
}

/// What a name stands for in `main`.
#[derive(Debug, Clone)]
enum Value {
    /// An `i64` SSA value.
    Scalar(String),
    /// A `memref<?xi64>` and its length (an `index` SSA value).
    Array(String, String),
}

/// Writes `func.func @main` for the statements.
struct Lowering<'s> {
    file: &'s str,
    source: &'s str,
    body: String,
    next: usize,
    values: HashMap<String, Value>,
}

impl<'s> Lowering<'s> {
    fn new(file: &'s str, source: &'s str) -> Self {
        Self {
            file,
            source,
            body: String::new(),
            next: 0,
            values: HashMap::new(),
        }
    }

    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%v{}", self.next)
    }

    /// `loc("file":line:col)` of byte `at`.
    fn loc(&self, at: usize) -> String {
        let before = &self.source[..at.min(self.source.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, str::len) + 1;
        let file = self.file.replace('\\', "\\\\").replace('"', "\\\"");
        format!("loc(\"{file}\":{line}:{column})")
    }

    fn emit(&mut self, indent: usize, line: &str) {
        let _ = writeln!(self.body, "{:indent$}{line}", "", indent = indent);
    }

    fn constant(&mut self, indent: usize, value: i64, ty: &str) -> String {
        let name = self.fresh();
        self.emit(indent, &format!("{name} = arith.constant {value} : {ty}"));
        name
    }

    fn program(mut self, statements: &[Located]) -> Result<String, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        for (statement, span) in statements {
            if let Err(error) = self.statement(statement, span.clone()) {
                errors.push(error);
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut text = String::from("module {\n  func.func @main() -> i32 {\n");
        text.push_str(&self.body);
        text.push_str("    %status = arith.constant 0 : i32\n    return %status : i32\n  }\n}\n");
        Ok(text)
    }

    /// The `i64` value of `expr` and the same as an `index`.
    fn index(&mut self, indent: usize, expr: &Expr) -> Result<(String, String), Diagnostic> {
        let value = self.scalar(indent, expr, &HashMap::new())?;
        let index = self.fresh();
        self.emit(
            indent,
            &format!("{index} = arith.index_cast {value} : i64 to index"),
        );
        Ok((value, index))
    }

    /// A new array of `size` elements and the opening of the spawn that
    /// fills it: the array, and the thread's rank and rank as `i64`.
    fn spawn_filling(&mut self, indent: usize, size: &str, loc: &str) -> (String, String, String) {
        let memref = self.fresh();
        self.emit(
            indent,
            &format!("{memref} = pgpu.dnew [{size}] : memref<?xi64> {loc}"),
        );
        self.emit(indent, &format!("pgpu.spawn {size} {{"));
        let rank = self.fresh();
        self.emit(indent + 2, &format!("{rank} = pgpu.rank : index"));
        let index = self.fresh();
        self.emit(
            indent + 2,
            &format!("{index} = arith.index_cast {rank} : index to i64"),
        );
        (memref, rank, index)
    }

    fn array(&self, name: &str, span: &Range<usize>) -> Result<(String, String), Diagnostic> {
        match self.values.get(name) {
            Some(Value::Array(memref, length)) => Ok((memref.clone(), length.clone())),
            Some(Value::Scalar(_)) => Err(Diagnostic::new(
                format!("'{name}' is a scalar, not an array"),
                span.clone(),
            )),
            None => Err(Diagnostic::new(
                format!("'{name}' is not defined"),
                span.clone(),
            )),
        }
    }

    fn statement(&mut self, statement: &Statement, span: Range<usize>) -> Result<(), Diagnostic> {
        let loc = self.loc(span.start);
        let indent = 4;
        match statement {
            Statement::Arg {
                name,
                index,
                default,
            } => {
                let index = i32::try_from(*index)
                    .ok()
                    .filter(|index| *index >= 0)
                    .ok_or_else(|| {
                        Diagnostic::new("the argument's index must be 0 or more", span.clone())
                    })?;
                let index = self.constant(indent, i64::from(index), "i32");
                let default = self.constant(indent, *default, "i64");
                let argument = self.fresh();
                self.emit(
                    indent,
                    &format!("{argument} = pgpu.argi {index} default {default} : i32, i64 {loc}"),
                );
                self.values.insert(name.clone(), Value::Scalar(argument));
            }
            Statement::Iota { name, length } => {
                let (_, size) = self.index(indent, length)?;
                let (memref, rank, value) = self.spawn_filling(indent, &size, &loc);
                self.emit(
                    indent + 2,
                    &format!("memref.store {value}, {memref}[{rank}] : memref<?xi64>"),
                );
                self.emit(indent, &format!("}} {loc}"));
                self.values.insert(name.clone(), Value::Array(memref, size));
            }
            Statement::Map { name, inputs, body } => {
                let arrays = inputs
                    .iter()
                    .map(|(input, span)| self.array(input, span))
                    .collect::<Result<Vec<_>, _>>()?;
                let size = arrays[0].1.clone();
                let (memref, rank, index) = self.spawn_filling(indent, &size, &loc);
                let mut locals = HashMap::new();
                locals.insert("i".to_string(), index);
                for ((array, _), element) in arrays.iter().zip(["x", "y"]) {
                    let loaded = self.fresh();
                    self.emit(
                        indent + 2,
                        &format!("{loaded} = memref.load {array}[{rank}] : memref<?xi64>"),
                    );
                    locals.insert(element.to_string(), loaded);
                }
                let value = self.scalar(indent + 2, body, &locals)?;
                self.emit(
                    indent + 2,
                    &format!("memref.store {value}, {memref}[{rank}] : memref<?xi64>"),
                );
                self.emit(indent, &format!("}} {loc}"));
                self.values.insert(name.clone(), Value::Array(memref, size));
            }
            Statement::PrintSum(name, name_span) => {
                let (memref, size) = self.array(name, name_span)?;
                let zero = self.constant(indent, 0, "index");
                let one = self.constant(indent, 1, "index");
                let start = self.constant(indent, 0, "i64");
                let (total, index, partial) = (self.fresh(), self.fresh(), self.fresh());
                self.emit(
                    indent,
                    &format!("{total} = scf.for {index} = {zero} to {size} step {one} iter_args({partial} = {start}) -> (i64) {{"),
                );
                let (element, sum) = (self.fresh(), self.fresh());
                self.emit(
                    indent + 2,
                    &format!("{element} = memref.load {memref}[{index}] : memref<?xi64>"),
                );
                self.emit(
                    indent + 2,
                    &format!("{sum} = arith.addi {partial}, {element} : i64"),
                );
                self.emit(indent + 2, &format!("scf.yield {sum} : i64"));
                self.emit(indent, &format!("}} {loc}"));
                self.emit(
                    indent,
                    &format!("pgpu.printf \"sum {name} = %ld\\0A\"({total}) : i64 {loc}"),
                );
            }
            Statement::PrintElement(name, name_span, index) => {
                let (memref, _) = self.array(name, name_span)?;
                let (index, position) = self.index(indent, index)?;
                let element = self.fresh();
                self.emit(
                    indent,
                    &format!("{element} = memref.load {memref}[{position}] : memref<?xi64> {loc}"),
                );
                self.emit(
                    indent,
                    &format!(
                        "pgpu.printf \"{name}[%ld] = %ld\\0A\"({index}, {element}) : i64, i64 {loc}"
                    ),
                );
            }
            Statement::PrintScalar(expr) => {
                let value = self.scalar(indent, expr, &HashMap::new())?;
                let text = self.source[span.clone()].trim_start_matches("print").trim();
                let text = text
                    .replace('%', "%%")
                    .replace('\\', "\\5C")
                    .replace('"', "\\22");
                self.emit(
                    indent,
                    &format!("pgpu.printf \"{text} = %ld\\0A\"({value}) : i64 {loc}"),
                );
            }
        }
        Ok(())
    }

    /// The `i64` value of `expr`, with `locals` (`x`, `y`, `i` in a body)
    /// before the program's scalars.
    fn scalar(
        &mut self,
        indent: usize,
        expr: &Expr,
        locals: &HashMap<String, String>,
    ) -> Result<String, Diagnostic> {
        Ok(match expr {
            Expr::Int(value) => self.constant(indent, *value, "i64"),
            Expr::Name(name, span) => match (locals.get(name), self.values.get(name)) {
                (Some(local), _) => local.clone(),
                (None, Some(Value::Scalar(value))) => value.clone(),
                (None, Some(Value::Array(..))) => {
                    return Err(Diagnostic::new(
                        format!("'{name}' is an array; map or zip it to use its elements"),
                        span.clone(),
                    ));
                }
                (None, None) => {
                    return Err(Diagnostic::new(
                        format!("'{name}' is not defined"),
                        span.clone(),
                    ));
                }
            },
            Expr::Neg(inner) => {
                let zero = self.constant(indent, 0, "i64");
                let value = self.scalar(indent, inner, locals)?;
                let result = self.fresh();
                self.emit(
                    indent,
                    &format!("{result} = arith.subi {zero}, {value} : i64"),
                );
                result
            }
            Expr::Binary(op, left, right) => {
                let left = self.scalar(indent, left, locals)?;
                let right = self.scalar(indent, right, locals)?;
                let operation = match op {
                    '+' => "addi",
                    '-' => "subi",
                    '*' => "muli",
                    '/' => "divsi",
                    _ => "remsi",
                };
                let result = self.fresh();
                self.emit(
                    indent,
                    &format!("{result} = arith.{operation} {left}, {right} : i64"),
                );
                result
            }
        })
    }
}

/// A toy backend: after canonicalization and CSE at the kernel stage, a
/// CSV of the program's kernels (each outermost `scf.parallel` of a host
/// function) and the operations in each, read from the module's text.
#[derive(Debug, Default)]
pub struct KernelCensus;

impl Backend for KernelCensus {
    fn name(&self) -> String {
        "kernel-census".to_string()
    }

    fn pipeline(&self) -> String {
        "builtin.module(canonicalize,cse)".to_string()
    }

    fn emit(&self, module: &str) -> Result<Vec<u8>, Vec<Diagnostic>> {
        let mut csv = String::from("function,kernel,operations\n");
        let mut function = None;
        // (indentation, kernel number, operations) of the open kernel.
        let mut open: Option<(usize, usize, usize)> = None;
        let mut numbers: HashMap<String, usize> = HashMap::new();
        for line in module.lines() {
            let indent = line.len() - line.trim_start().len();
            let text = line.trim_start();
            if let Some((depth, number, operations)) = open {
                if indent <= depth && text.starts_with('}') {
                    let name = function.clone().unwrap_or_default();
                    let _ = writeln!(csv, "{name},{number},{operations}");
                    open = None;
                } else if !text.starts_with('}') && !text.is_empty() && !text.starts_with('^') {
                    open = Some((depth, number, operations + 1));
                }
                continue;
            }
            if let Some(rest) = text.strip_prefix("func.func ") {
                let name = rest
                    .split('(')
                    .next()
                    .unwrap_or("")
                    .rsplit('@')
                    .next()
                    .unwrap_or("");
                function = Some(name.to_string());
            } else if text.contains("scf.parallel") {
                let name = function.clone().unwrap_or_default();
                let counter = numbers.entry(name).or_insert(0);
                open = Some((indent, *counter, 0));
                *counter += 1;
            }
        }
        if numbers.is_empty() {
            return Err(vec![Diagnostic::unplaced(
                "the module has no kernels (scf.parallel)",
            )]);
        }
        Ok(csv.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_become_spawns() {
        let text = ArrayFrontend
            .translate(
                "t.arr",
                "n = arg 0 default 4\na = iota n\nb = map a: x * (x + 1)\nprint sum b\n",
            )
            .unwrap_or_default();
        assert_eq!(text.matches("pgpu.spawn").count(), 2, "{text}");
        assert!(text.contains("arith.muli"), "{text}");
        assert!(text.contains("loc(\"t.arr\":3:1)"), "{text}");
    }

    #[test]
    fn errors_have_spans() {
        let errors = ArrayFrontend
            .translate("t.arr", "a = iota 4\nb = map c: x\nd = zip a: x\n")
            .err()
            .unwrap_or_default();
        let spans: Vec<_> = errors
            .iter()
            .map(|e| (e.message.as_str(), e.span.clone()))
            .collect();
        assert_eq!(
            spans,
            vec![("expected an array", Some(33..34))],
            "parse errors come first"
        );
        let errors = ArrayFrontend
            .translate("t.arr", "a = iota 4\nb = map c: x + q\n")
            .err()
            .unwrap_or_default();
        assert_eq!(errors[0].message, "'c' is not defined");
        assert_eq!(errors[0].span, Some(19..20));
    }
}
