//! PTX tokens. The lexer keeps every token's byte span and whether
//! whitespace preceded it: an instruction's modifiers (`ld.global.f32`) and
//! a special register's component (`%tid.x`) are written without spaces,
//! which is how the parser tells them from the next statement's directive.

use crate::error::{PtxError, Span};

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum TokenKind {
    /// An identifier: `ld`, `%r1`, `$L__BB0_2`, `_Z3fooi`, `_`.
    Ident(String),
    /// A dotted name: `.reg`, `.f32`, `.shared::cta`, `.L1::evict_last`
    /// (the text after the dot).
    Directive(String),
    /// An integer literal (`-` is a separate token); `unsigned` records a
    /// `U` suffix.
    Integer { value: u64, unsigned: bool },
    /// `0fXXXXXXXX`: the bits of an f32.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX` or a decimal literal with a point or an
    /// exponent: the bits of an f64.
    F64(u64),
    /// A string literal, without its quotes.
    String(String),
    /// Punctuation: one of `, ; : { } [ ] ( ) < > + - ! @ | =`.
    Punct(char),
}

/// A token with its span.
#[derive(Clone, Debug)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Where.
    pub span: Span,
    /// Whether whitespace or a comment separates it from the token before.
    pub spaced: bool,
}

fn is_follow(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// Splits PTX text into tokens; comments (`//`, `/* */`) are skipped.
pub fn lex(source: &str) -> Result<Vec<Token>, PtxError> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let mut at = 0;
    let mut spaced = true;
    while at < bytes.len() {
        let c = bytes[at];
        if c.is_ascii_whitespace() {
            at += 1;
            spaced = true;
            continue;
        }
        if c == b'/' && bytes.get(at + 1) == Some(&b'/') {
            while at < bytes.len() && bytes[at] != b'\n' {
                at += 1;
            }
            spaced = true;
            continue;
        }
        if c == b'/' && bytes.get(at + 1) == Some(&b'*') {
            let start = at;
            at += 2;
            loop {
                if at + 1 >= bytes.len() {
                    return Err(PtxError::syntax(
                        "unterminated comment",
                        Span::new(start, start + 2),
                    ));
                }
                if bytes[at] == b'*' && bytes[at + 1] == b'/' {
                    at += 2;
                    break;
                }
                at += 1;
            }
            spaced = true;
            continue;
        }
        let start = at;
        let kind = if c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c == b'%' {
            at += 1;
            while at < bytes.len() && is_follow(bytes[at]) {
                at += 1;
            }
            if at - start == 1 && (c == b'%' || c == b'$') {
                return Err(PtxError::syntax(
                    format!("`{}` must be followed by a name", c as char),
                    Span::new(start, at),
                ));
            }
            TokenKind::Ident(source[start..at].to_string())
        } else if c == b'.' && bytes.get(at + 1).is_some_and(|&b| is_follow(b)) {
            at += 1;
            // `::` joins the parts of a qualified directive (`.shared::cta`).
            loop {
                while at < bytes.len() && is_follow(bytes[at]) {
                    at += 1;
                }
                if bytes.get(at) == Some(&b':')
                    && bytes.get(at + 1) == Some(&b':')
                    && bytes.get(at + 2).is_some_and(|&b| is_follow(b))
                {
                    at += 2;
                } else {
                    break;
                }
            }
            TokenKind::Directive(source[start + 1..at].to_string())
        } else if c.is_ascii_digit() {
            let (kind, end) = number(source, start)?;
            at = end;
            kind
        } else if c == b'"' {
            at += 1;
            while at < bytes.len() && bytes[at] != b'"' && bytes[at] != b'\n' {
                if bytes[at] == b'\\' {
                    at += 1;
                }
                at += 1;
            }
            if bytes.get(at) != Some(&b'"') {
                return Err(PtxError::syntax(
                    "unterminated string",
                    Span::new(start, at.min(bytes.len())),
                ));
            }
            at += 1;
            TokenKind::String(source[start + 1..at - 1].to_string())
        } else if b",;:{}[]()<>+-!@|=".contains(&c) {
            at += 1;
            TokenKind::Punct(c as char)
        } else {
            let len = source[start..].chars().next().map_or(1, char::len_utf8);
            return Err(PtxError::syntax(
                format!(
                    "unexpected character `{}`",
                    source[start..start + len].escape_default()
                ),
                Span::new(start, start + len),
            ));
        };
        tokens.push(Token {
            kind,
            span: Span::new(start, at),
            spaced,
        });
        spaced = false;
    }
    Ok(tokens)
}

/// A number starting at `start` (a digit): its token and its end.
fn number(source: &str, start: usize) -> Result<(TokenKind, usize), PtxError> {
    let bytes = source.as_bytes();
    let word_end = {
        let mut end = start;
        while end < bytes.len() && is_follow(bytes[end]) {
            end += 1;
        }
        end
    };
    let word = &source[start..word_end];
    let bad = |what: &str| PtxError::syntax(format!("{what} `{word}`"), Span::new(start, word_end));
    let hex_bits = |digits: &str, count: usize| {
        (digits.len() == count && digits.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u64::from_str_radix(digits, 16).ok())
            .flatten()
    };
    if let Some(digits) = word.strip_prefix("0f").or_else(|| word.strip_prefix("0F")) {
        let bits = hex_bits(digits, 8).ok_or_else(|| bad("malformed f32 literal"))?;
        return Ok((TokenKind::F32(bits as u32), word_end));
    }
    if let Some(digits) = word.strip_prefix("0d").or_else(|| word.strip_prefix("0D")) {
        let bits = hex_bits(digits, 16).ok_or_else(|| bad("malformed f64 literal"))?;
        return Ok((TokenKind::F64(bits), word_end));
    }
    // A decimal floating-point literal: digits, then `.` digits and/or an
    // exponent.
    let mut end = start;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
    }
    let mut is_float = false;
    if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
        is_float = true;
        end += 1;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut exp = end + 1;
        if matches!(bytes.get(exp), Some(b'+' | b'-')) {
            exp += 1;
        }
        if bytes.get(exp).is_some_and(u8::is_ascii_digit) {
            is_float = true;
            end = exp;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
        }
    }
    if is_float {
        let value: f64 = source[start..end]
            .parse()
            .map_err(|_| bad("malformed floating-point literal"))?;
        return Ok((TokenKind::F64(value.to_bits()), end));
    }
    let (body, unsigned) = match word.strip_suffix(['U', 'u']) {
        Some(body) if !body.is_empty() => (body, true),
        _ => (word, false),
    };
    let (digits, radix) =
        if let Some(d) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (d, 16)
        } else if let Some(d) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (d, 2)
        } else if body.len() > 1 && body.starts_with('0') {
            (&body[1..], 8)
        } else {
            (body, 10)
        };
    let value = u64::from_str_radix(digits, radix).map_err(|_| bad("malformed integer"))?;
    Ok((TokenKind::Integer { value, unsigned }, word_end))
}
