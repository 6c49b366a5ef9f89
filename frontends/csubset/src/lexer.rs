//! The lexer: bytes to tokens with byte-offset spans. Skips whitespace and
//! `//`/`/* */` comments, decodes C escapes in char and string literals,
//! reads integer suffixes (`u`, `l`, `ul`, `ll`) and the float suffix `f`,
//! keeps `#pragma pgpu speculate [window(N)] [warp(W)]` as a token and skips
//! every other `#` line with a warning. Never fails: bad input becomes an
//! [`Tok::Error`] token plus a diagnostic.

use crate::diag::Diagnostic;
use crate::span::Span;

/// Diagnostic codes of the lexer.
pub mod codes {
    /// A byte that starts no token.
    pub const INVALID_CHAR: &str = "csubset::E001";
    /// `/*` without `*/`.
    pub const UNTERMINATED_COMMENT: &str = "csubset::E002";
    /// `"` without closing `"` on the line.
    pub const UNTERMINATED_STRING: &str = "csubset::E003";
    /// Empty, multi-character or unterminated char literal.
    pub const BAD_CHAR_LITERAL: &str = "csubset::E004";
    /// Malformed number (`0x`, `12abc`, too large).
    pub const BAD_NUMBER: &str = "csubset::E005";
    /// Unknown escape sequence.
    pub const BAD_ESCAPE: &str = "csubset::E006";
    /// A preprocessor line that is skipped.
    pub const SKIPPED_DIRECTIVE: &str = "csubset::W001";
    /// A malformed `#pragma pgpu` line.
    pub const BAD_PRAGMA: &str = "csubset::W002";
}

/// Punctuators and operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Punct {
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Semi,
    Comma,
    Dot,
    Arrow,
    Question,
    Colon,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Amp,
    Pipe,
    Caret,
    Tilde,
    Bang,
    Lt,
    Gt,
    Le,
    Ge,
    EqEq,
    Ne,
    AndAnd,
    OrOr,
    Shl,
    Shr,
    Assign,
    PlusAssign,
    MinusAssign,
    StarAssign,
    SlashAssign,
    PercentAssign,
    AmpAssign,
    PipeAssign,
    CaretAssign,
    ShlAssign,
    ShrAssign,
    PlusPlus,
    MinusMinus,
    Dollar,
    DollarDollar,
    At,
}

impl Punct {
    /// The source spelling.
    pub fn as_str(self) -> &'static str {
        use Punct::*;
        match self {
            LParen => "(",
            RParen => ")",
            LBrace => "{",
            RBrace => "}",
            LBracket => "[",
            RBracket => "]",
            Semi => ";",
            Comma => ",",
            Dot => ".",
            Arrow => "->",
            Question => "?",
            Colon => ":",
            Plus => "+",
            Minus => "-",
            Star => "*",
            Slash => "/",
            Percent => "%",
            Amp => "&",
            Pipe => "|",
            Caret => "^",
            Tilde => "~",
            Bang => "!",
            Lt => "<",
            Gt => ">",
            Le => "<=",
            Ge => ">=",
            EqEq => "==",
            Ne => "!=",
            AndAnd => "&&",
            OrOr => "||",
            Shl => "<<",
            Shr => ">>",
            Assign => "=",
            PlusAssign => "+=",
            MinusAssign => "-=",
            StarAssign => "*=",
            SlashAssign => "/=",
            PercentAssign => "%=",
            AmpAssign => "&=",
            PipeAssign => "|=",
            CaretAssign => "^=",
            ShlAssign => "<<=",
            ShrAssign => ">>=",
            PlusPlus => "++",
            MinusMinus => "--",
            Dollar => "$",
            DollarDollar => "$$",
            At => "@",
        }
    }
}

/// A token kind with its value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Tok {
    /// Identifier or keyword (the parser decides by language).
    Ident(String),
    /// Integer literal.
    Int {
        /// Value.
        value: u64,
        /// `u` suffix.
        unsigned: bool,
        /// `l`/`ll` suffix.
        long: bool,
        /// Written in hex or octal (C gives those unsigned types sooner).
        non_decimal: bool,
    },
    /// Floating literal (`f64` bits) and whether it had the `f` suffix.
    Float {
        /// `f64::to_bits` of the value.
        bits: u64,
        /// `f` suffix.
        single: bool,
    },
    /// Character literal (its byte value).
    Char(u8),
    /// String literal, unescaped.
    Str(String),
    /// Operator or punctuator.
    Punct(Punct),
    /// `#pragma pgpu speculate ...`.
    Speculate {
        /// `window(N)`.
        window: Option<u64>,
        /// `warp(W)`.
        warp: Option<u64>,
    },
    /// Malformed input (already diagnosed).
    Error,
    /// End of input.
    Eof,
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Token {
    /// What.
    pub tok: Tok,
    /// Where.
    pub span: Span,
}

/// Lex a whole source text. The last token is always [`Tok::Eof`].
pub fn lex(text: &str) -> (Vec<Token>, Vec<Diagnostic>) {
    let mut lx = Lexer {
        src: text.as_bytes(),
        pos: 0,
        toks: Vec::with_capacity(text.len() / 3 + 1),
        diags: Vec::new(),
        line_start: true,
    };
    lx.run();
    (lx.toks, lx.diags)
}

struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    toks: Vec<Token>,
    diags: Vec<Diagnostic>,
    /// Only whitespace since the last newline (a `#` here starts a directive).
    line_start: bool,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_cont(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> u8 {
        self.src.get(self.pos + k).copied().unwrap_or(0)
    }

    fn push(&mut self, tok: Tok, start: usize) {
        self.toks.push(Token {
            tok,
            span: Span::new(start, self.pos),
        });
    }

    fn err(&mut self, code: &'static str, msg: impl Into<String>, start: usize, end: usize) {
        self.diags
            .push(Diagnostic::error(code, msg, Span::new(start, end)));
    }

    fn run(&mut self) {
        while self.pos < self.src.len() {
            let b = self.src[self.pos];
            let start = self.pos;
            match b {
                b'\n' => {
                    self.pos += 1;
                    self.line_start = true;
                }
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => self.pos += 1,
                b'/' if self.peek(1) == b'/' => {
                    while self.pos < self.src.len() && self.src[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'/' if self.peek(1) == b'*' => {
                    self.pos += 2;
                    loop {
                        if self.pos + 1 >= self.src.len() {
                            self.pos = self.src.len();
                            self.diags.push(
                                Diagnostic::error(
                                    codes::UNTERMINATED_COMMENT,
                                    "unterminated block comment",
                                    Span::new(start, start + 2),
                                )
                                .with_label_text("comment starts here")
                                .with_help("close it with `*/`"),
                            );
                            break;
                        }
                        if self.src[self.pos] == b'*' && self.src[self.pos + 1] == b'/' {
                            self.pos += 2;
                            break;
                        }
                        self.pos += 1;
                    }
                }
                b'#' if self.line_start => self.directive(),
                _ => {
                    self.line_start = false;
                    if is_ident_start(b) {
                        while self.pos < self.src.len() && is_ident_cont(self.src[self.pos]) {
                            self.pos += 1;
                        }
                        let s = String::from_utf8_lossy(&self.src[start..self.pos]).into_owned();
                        self.push(Tok::Ident(s), start);
                    } else if b.is_ascii_digit() || (b == b'.' && self.peek(1).is_ascii_digit()) {
                        self.number();
                    } else if b == b'\'' {
                        self.char_lit();
                    } else if b == b'"' {
                        self.string_lit();
                    } else if let Some((p, n)) = self.punct() {
                        self.pos += n;
                        self.push(Tok::Punct(p), start);
                    } else {
                        // Skip a whole UTF-8 sequence so spans stay on
                        // character boundaries.
                        let mut n = 1;
                        while n < 4
                            && self.pos + n < self.src.len()
                            && self.src[self.pos + n] & 0xC0 == 0x80
                        {
                            n += 1;
                        }
                        self.pos += n;
                        let shown =
                            String::from_utf8_lossy(&self.src[start..self.pos]).into_owned();
                        self.err(
                            codes::INVALID_CHAR,
                            format!("invalid character {shown:?} in source"),
                            start,
                            self.pos,
                        );
                        self.push(Tok::Error, start);
                    }
                }
            }
        }
        let end = self.src.len();
        self.toks.push(Token {
            tok: Tok::Eof,
            span: Span::new(end, end),
        });
    }

    fn punct(&self) -> Option<(Punct, usize)> {
        use Punct::*;
        let (a, b, c) = (self.peek(0), self.peek(1), self.peek(2));
        Some(match (a, b, c) {
            (b'<', b'<', b'=') => (ShlAssign, 3),
            (b'>', b'>', b'=') => (ShrAssign, 3),
            (b'-', b'>', _) => (Arrow, 2),
            (b'+', b'+', _) => (PlusPlus, 2),
            (b'-', b'-', _) => (MinusMinus, 2),
            (b'<', b'<', _) => (Shl, 2),
            (b'>', b'>', _) => (Shr, 2),
            (b'<', b'=', _) => (Le, 2),
            (b'>', b'=', _) => (Ge, 2),
            (b'=', b'=', _) => (EqEq, 2),
            (b'!', b'=', _) => (Ne, 2),
            (b'&', b'&', _) => (AndAnd, 2),
            (b'|', b'|', _) => (OrOr, 2),
            (b'+', b'=', _) => (PlusAssign, 2),
            (b'-', b'=', _) => (MinusAssign, 2),
            (b'*', b'=', _) => (StarAssign, 2),
            (b'/', b'=', _) => (SlashAssign, 2),
            (b'%', b'=', _) => (PercentAssign, 2),
            (b'&', b'=', _) => (AmpAssign, 2),
            (b'|', b'=', _) => (PipeAssign, 2),
            (b'^', b'=', _) => (CaretAssign, 2),
            (b'(', _, _) => (LParen, 1),
            (b')', _, _) => (RParen, 1),
            (b'{', _, _) => (LBrace, 1),
            (b'}', _, _) => (RBrace, 1),
            (b'[', _, _) => (LBracket, 1),
            (b']', _, _) => (RBracket, 1),
            (b';', _, _) => (Semi, 1),
            (b',', _, _) => (Comma, 1),
            (b'.', _, _) => (Dot, 1),
            (b'?', _, _) => (Question, 1),
            (b':', _, _) => (Colon, 1),
            (b'+', _, _) => (Plus, 1),
            (b'-', _, _) => (Minus, 1),
            (b'*', _, _) => (Star, 1),
            (b'/', _, _) => (Slash, 1),
            (b'%', _, _) => (Percent, 1),
            (b'&', _, _) => (Amp, 1),
            (b'|', _, _) => (Pipe, 1),
            (b'^', _, _) => (Caret, 1),
            (b'~', _, _) => (Tilde, 1),
            (b'!', _, _) => (Bang, 1),
            (b'<', _, _) => (Lt, 1),
            (b'>', _, _) => (Gt, 1),
            (b'=', _, _) => (Assign, 1),
            (b'$', b'$', _) => (DollarDollar, 2),
            (b'$', _, _) => (Dollar, 1),
            (b'@', _, _) => (At, 1),
            _ => return None,
        })
    }

    /// A `#` line: `#pragma pgpu speculate ...` becomes a token; the rest is
    /// skipped (with `\` line continuations) with a warning.
    fn directive(&mut self) {
        let start = self.pos;
        let mut end = self.pos;
        while end < self.src.len() && self.src[end] != b'\n' {
            if self.src[end] == b'\\' && end + 1 < self.src.len() && self.src[end + 1] == b'\n' {
                end += 2;
                continue;
            }
            end += 1;
        }
        let line = String::from_utf8_lossy(&self.src[start..end]).into_owned();
        self.pos = end;
        let words: Vec<&str> = line[1..].split_whitespace().collect();
        if words.first() == Some(&"pragma") && words.get(1) == Some(&"pgpu") {
            if words.get(2) == Some(&"speculate") {
                match parse_speculate_clauses(&words[3..].join(" ")) {
                    Ok((window, warp)) => {
                        self.toks.push(Token {
                            tok: Tok::Speculate { window, warp },
                            span: Span::new(start, end),
                        });
                    }
                    Err(msg) => self.diags.push(
                        Diagnostic::warning(codes::BAD_PRAGMA, msg, Span::new(start, end))
                            .with_help("write `#pragma pgpu speculate [window(N)] [warp(W)]`"),
                    ),
                }
            } else {
                self.diags.push(
                    Diagnostic::warning(
                        codes::BAD_PRAGMA,
                        "unknown `#pragma pgpu` directive ignored",
                        Span::new(start, end),
                    )
                    .with_help("the only pgpu pragma is `#pragma pgpu speculate`"),
                );
            }
        } else {
            let what = words.first().copied().unwrap_or("");
            self.diags.push(
                Diagnostic::warning(
                    codes::SKIPPED_DIRECTIVE,
                    format!("preprocessor directive `#{what}` skipped"),
                    Span::new(start, end),
                )
                .with_help("pgpu has no preprocessor; the builtins need no #include"),
            );
        }
    }

    fn number(&mut self) {
        let start = self.pos;
        let src = self.src;
        let mut p = self.pos;
        let mut is_float = false;
        let hex = src.get(p) == Some(&b'0') && matches!(src.get(p + 1), Some(b'x' | b'X'));
        if hex {
            p += 2;
            while p < src.len() && src[p].is_ascii_hexdigit() {
                p += 1;
            }
        } else {
            while p < src.len() && src[p].is_ascii_digit() {
                p += 1;
            }
            if p < src.len() && src[p] == b'.' {
                is_float = true;
                p += 1;
                while p < src.len() && src[p].is_ascii_digit() {
                    p += 1;
                }
            }
            if p < src.len() && (src[p] == b'e' || src[p] == b'E') {
                let mut q = p + 1;
                if q < src.len() && (src[q] == b'+' || src[q] == b'-') {
                    q += 1;
                }
                if q < src.len() && src[q].is_ascii_digit() {
                    is_float = true;
                    p = q;
                    while p < src.len() && src[p].is_ascii_digit() {
                        p += 1;
                    }
                }
            }
        }
        let digits_end = p;
        // Suffix: everything identifier-like that follows.
        while p < src.len() && is_ident_cont(src[p]) {
            p += 1;
        }
        self.pos = p;
        let body = String::from_utf8_lossy(&src[start..digits_end]).into_owned();
        let suffix = String::from_utf8_lossy(&src[digits_end..p]).to_ascii_lowercase();
        let bad = |lx: &mut Self, msg: String| {
            lx.err(codes::BAD_NUMBER, msg, start, p);
            lx.push(Tok::Error, start);
        };
        if is_float {
            let single = match suffix.as_str() {
                "" | "l" => false,
                "f" => true,
                _ => {
                    return bad(
                        self,
                        format!("invalid suffix `{suffix}` on floating literal"),
                    );
                }
            };
            match body.parse::<f64>() {
                Ok(v) => self.push(
                    Tok::Float {
                        bits: v.to_bits(),
                        single,
                    },
                    start,
                ),
                Err(_) => bad(self, format!("invalid floating literal `{body}`")),
            }
            return;
        }
        let (unsigned, long) = match suffix.as_str() {
            "" => (false, false),
            "u" => (true, false),
            "l" | "ll" => (false, true),
            "ul" | "lu" | "ull" | "llu" => (true, true),
            "f" if !hex => {
                // `1f` is not C; accept it as a float for convenience? No:
                // report it, as C compilers do.
                return bad(self, "invalid suffix `f` on integer literal".to_string());
            }
            _ => {
                return bad(
                    self,
                    format!("invalid suffix `{suffix}` on integer literal"),
                );
            }
        };
        let (radix, digits, non_decimal) = if hex {
            (16, &body[2..], true)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..], true)
        } else {
            (10, &body[..], false)
        };
        if digits.is_empty() {
            return bad(self, format!("invalid integer literal `{body}`: no digits"));
        }
        match u64::from_str_radix(digits, radix) {
            Ok(value) => self.push(
                Tok::Int {
                    value,
                    unsigned,
                    long,
                    non_decimal,
                },
                start,
            ),
            Err(e) => bad(self, format!("invalid integer literal `{body}`: {e}")),
        }
    }

    /// One (possibly escaped) character inside a quoted literal; `None` at a
    /// newline or the end of input.
    fn escaped_char(&mut self) -> Option<u8> {
        let b = *self.src.get(self.pos)?;
        if b == b'\n' {
            return None;
        }
        self.pos += 1;
        if b != b'\\' {
            return Some(b);
        }
        let start = self.pos - 1;
        let e = match self.src.get(self.pos) {
            Some(&e) if e != b'\n' => e,
            _ => return None,
        };
        self.pos += 1;
        Some(match e {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'0'..=b'7' => {
                let mut v: u32 = u32::from(e - b'0');
                let mut n = 1;
                while n < 3 {
                    match self.src.get(self.pos) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            self.pos += 1;
                            n += 1;
                        }
                        _ => break,
                    }
                }
                (v & 0xff) as u8
            }
            b'x' => {
                let mut v: u32 = 0;
                let mut n = 0;
                while let Some(&d) = self.src.get(self.pos) {
                    match (d as char).to_digit(16) {
                        Some(x) if n < 2 => {
                            v = v * 16 + x;
                            self.pos += 1;
                            n += 1;
                        }
                        _ => break,
                    }
                }
                if n == 0 {
                    self.err(
                        codes::BAD_ESCAPE,
                        "`\\x` used with no hex digits",
                        start,
                        self.pos,
                    );
                }
                v as u8
            }
            b'\\' => b'\\',
            b'\'' => b'\'',
            b'"' => b'"',
            b'?' => b'?',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            other => {
                self.err(
                    codes::BAD_ESCAPE,
                    format!("unknown escape sequence `\\{}`", other as char),
                    start,
                    self.pos,
                );
                other
            }
        })
    }

    fn char_lit(&mut self) {
        let start = self.pos;
        self.pos += 1;
        let mut chars = Vec::new();
        loop {
            match self.src.get(self.pos) {
                Some(b'\'') => {
                    self.pos += 1;
                    break;
                }
                None | Some(b'\n') => {
                    self.err(
                        codes::BAD_CHAR_LITERAL,
                        "unterminated character literal",
                        start,
                        self.pos,
                    );
                    self.push(Tok::Error, start);
                    return;
                }
                _ => match self.escaped_char() {
                    Some(c) => chars.push(c),
                    None => {
                        self.err(
                            codes::BAD_CHAR_LITERAL,
                            "unterminated character literal",
                            start,
                            self.pos,
                        );
                        self.push(Tok::Error, start);
                        return;
                    }
                },
            }
        }
        match chars.as_slice() {
            [c] => self.push(Tok::Char(*c), start),
            [] => {
                self.err(
                    codes::BAD_CHAR_LITERAL,
                    "empty character literal",
                    start,
                    self.pos,
                );
                self.push(Tok::Error, start);
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        codes::BAD_CHAR_LITERAL,
                        "character literal with more than one character",
                        Span::new(start, self.pos),
                    )
                    .with_help("use a string literal (\"...\") or a single character"),
                );
                self.push(Tok::Error, start);
            }
        }
    }

    fn string_lit(&mut self) {
        let start = self.pos;
        self.pos += 1;
        let mut bytes = Vec::new();
        loop {
            match self.src.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                None | Some(b'\n') => {
                    self.diags.push(
                        Diagnostic::error(
                            codes::UNTERMINATED_STRING,
                            "unterminated string literal",
                            Span::new(start, self.pos),
                        )
                        .with_help("close it with `\"` on the same line"),
                    );
                    self.push(Tok::Error, start);
                    return;
                }
                _ => match self.escaped_char() {
                    Some(c) => bytes.push(c),
                    None => {
                        self.err(
                            codes::UNTERMINATED_STRING,
                            "unterminated string literal",
                            start,
                            self.pos,
                        );
                        self.push(Tok::Error, start);
                        return;
                    }
                },
            }
        }
        let s = String::from_utf8_lossy(&bytes).into_owned();
        self.push(Tok::Str(s), start);
    }
}

/// `window(N) warp(W)` in any order, each at most once.
fn parse_speculate_clauses(s: &str) -> Result<(Option<u64>, Option<u64>), String> {
    let mut window = None;
    let mut warp = None;
    let mut rest = s.trim();
    while !rest.is_empty() {
        let open = rest
            .find('(')
            .ok_or_else(|| format!("malformed speculate clause `{rest}`"))?;
        let close = rest
            .find(')')
            .ok_or_else(|| format!("missing `)` in speculate clause `{rest}`"))?;
        if close < open {
            return Err(format!("malformed speculate clause `{rest}`"));
        }
        let name = rest[..open].trim();
        let value: u64 = rest[open + 1..close]
            .trim()
            .parse()
            .map_err(|_| format!("`{name}` needs a positive integer"))?;
        if value == 0 {
            return Err(format!("`{name}` needs a positive integer"));
        }
        let slot = match name {
            "window" => &mut window,
            "warp" => &mut warp,
            _ => return Err(format!("unknown speculate clause `{name}`")),
        };
        if slot.is_some() {
            return Err(format!("duplicate speculate clause `{name}`"));
        }
        *slot = Some(value);
        rest = rest[close + 1..].trim_start();
    }
    Ok((window, warp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let (t, d) = lex(s);
        assert!(d.is_empty(), "{d:?}");
        t.into_iter().map(|t| t.tok).collect()
    }

    fn id(s: &str) -> Tok {
        Tok::Ident(s.to_string())
    }

    #[test]
    fn basic_tokens_and_spans() {
        let (t, d) = lex("int x = a<<=2; // c\n/* b */ y->z");
        assert!(d.is_empty());
        assert_eq!(t[0].tok, id("int"));
        assert_eq!(t[0].span, Span::new(0, 3));
        assert_eq!(t[3].tok, Tok::Ident("a".into()));
        assert_eq!(t[4].tok, Tok::Punct(Punct::ShlAssign));
        assert_eq!(t[4].span, Span::new(9, 12));
        assert_eq!(t[7].tok, id("y"));
        assert_eq!(t[8].tok, Tok::Punct(Punct::Arrow));
        assert_eq!(t.last().map(|t| &t.tok), Some(&Tok::Eof));
    }

    #[test]
    fn numbers() {
        let t = toks("12 0x1F 017 10u 5l 7ul 1.5 2.5f .5 1e3 3.f");
        assert_eq!(
            t[0],
            Tok::Int {
                value: 12,
                unsigned: false,
                long: false,
                non_decimal: false
            }
        );
        assert!(matches!(
            t[1],
            Tok::Int {
                value: 31,
                non_decimal: true,
                ..
            }
        ));
        assert!(matches!(t[2], Tok::Int { value: 15, .. }));
        assert!(matches!(
            t[3],
            Tok::Int {
                value: 10,
                unsigned: true,
                long: false,
                ..
            }
        ));
        assert!(matches!(
            t[4],
            Tok::Int {
                value: 5,
                unsigned: false,
                long: true,
                ..
            }
        ));
        assert!(matches!(
            t[5],
            Tok::Int {
                value: 7,
                unsigned: true,
                long: true,
                ..
            }
        ));
        assert_eq!(
            t[6],
            Tok::Float {
                bits: 1.5f64.to_bits(),
                single: false
            }
        );
        assert_eq!(
            t[7],
            Tok::Float {
                bits: 2.5f64.to_bits(),
                single: true
            }
        );
        assert_eq!(
            t[8],
            Tok::Float {
                bits: 0.5f64.to_bits(),
                single: false
            }
        );
        assert_eq!(
            t[9],
            Tok::Float {
                bits: 1000f64.to_bits(),
                single: false
            }
        );
        assert_eq!(
            t[10],
            Tok::Float {
                bits: 3f64.to_bits(),
                single: true
            }
        );
    }

    #[test]
    fn bad_numbers() {
        for s in ["0x", "12abc", "99999999999999999999999", "1.5q"] {
            let (t, d) = lex(s);
            assert_eq!(d.len(), 1, "{s}");
            assert_eq!(d[0].code, codes::BAD_NUMBER);
            assert_eq!(t[0].tok, Tok::Error);
        }
    }

    #[test]
    fn chars_and_strings() {
        let t = toks(r#"'a' '\n' '\0' '\x41' '\'' "a\tb\"c\\" "#);
        assert_eq!(t[0], Tok::Char(b'a'));
        assert_eq!(t[1], Tok::Char(b'\n'));
        assert_eq!(t[2], Tok::Char(0));
        assert_eq!(t[3], Tok::Char(b'A'));
        assert_eq!(t[4], Tok::Char(b'\''));
        assert_eq!(t[5], Tok::Str("a\tb\"c\\".to_string()));
    }

    #[test]
    fn literal_errors() {
        let cases = [
            ("'ab'", codes::BAD_CHAR_LITERAL),
            ("''", codes::BAD_CHAR_LITERAL),
            ("'a", codes::BAD_CHAR_LITERAL),
            ("\"abc\nx", codes::UNTERMINATED_STRING),
            ("\"a\\qb\"", codes::BAD_ESCAPE),
            ("/* x", codes::UNTERMINATED_COMMENT),
            ("`", codes::INVALID_CHAR),
            ("é", codes::INVALID_CHAR),
        ];
        for (s, code) in cases {
            let (_, d) = lex(s);
            assert_eq!(d.first().map(|d| d.code), Some(code), "{s}");
        }
    }

    #[test]
    fn directives() {
        let (t, d) = lex("#include <stdio.h>\n  #pragma pgpu speculate window(8) warp(32)\nfor");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, codes::SKIPPED_DIRECTIVE);
        assert!(!d[0].is_error());
        assert_eq!(
            t[0].tok,
            Tok::Speculate {
                window: Some(8),
                warp: Some(32)
            }
        );
        assert_eq!(t[1].tok, id("for"));
        let (t, d) = lex("#pragma pgpu speculate\n");
        assert!(d.is_empty());
        assert_eq!(
            t[0].tok,
            Tok::Speculate {
                window: None,
                warp: None
            }
        );
        let (_, d) = lex("#pragma pgpu speculate window(x)\n");
        assert_eq!(d[0].code, codes::BAD_PRAGMA);
        // `#` not at a line start is an ordinary (invalid) character.
        let (_, d) = lex("x # y");
        assert_eq!(d[0].code, codes::INVALID_CHAR);
    }
}
