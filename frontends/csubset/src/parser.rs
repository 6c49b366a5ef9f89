//! Recursive-descent parser with a Pratt loop for expressions (C's exact
//! precedence and associativity). Accepts each language's constructs only in
//! that language (`spawn` is an identifier in C). Error recovery: a failed
//! statement or item reports one diagnostic and skips to the next `;` or the
//! closing `}`, so one run reports many errors. Terminates on any input: every
//! loop consumes a token or stops, and nesting is limited to
//! [`MAX_DEPTH`].

use crate::ast::*;
use crate::diag::Diagnostic;
use crate::hir::{FnMode, Language, Storage};
use crate::lexer::{Punct, Tok, Token};
use crate::span::Span;

/// Diagnostic codes of the parser.
pub mod codes {
    /// Expected a token, found another.
    pub const EXPECTED: &str = "csubset::E010";
    /// Expected an expression.
    pub const EXPECTED_EXPR: &str = "csubset::E011";
    /// A function prototype without a definition.
    pub const NO_BODY: &str = "csubset::E012";
    /// A function without a result type outside BSGP.
    pub const NO_RETURN_TYPE: &str = "csubset::E013";
    /// `#pragma pgpu speculate` not followed by `for`.
    pub const STRAY_PRAGMA: &str = "csubset::W003";
    /// Expected a type.
    pub const EXPECTED_TYPE: &str = "csubset::E015";
    /// Nesting deeper than [`super::MAX_DEPTH`].
    pub const TOO_DEEP: &str = "csubset::E016";
    /// A C construct outside the subset (`switch`, `goto`, `typedef`, ...).
    pub const UNSUPPORTED: &str = "csubset::E017";
    /// A keyword used as a name.
    pub const KEYWORD_AS_NAME: &str = "csubset::E018";
}

/// Deepest nesting of statements and expressions accepted.
pub const MAX_DEPTH: u32 = 256;

/// Most binary operators chained at one nesting level (`a + b + ...`): the
/// tree of a chain is as deep as it is long.
pub const MAX_CHAIN: u32 = 256;

/// Most diagnostics one parse reports (garbage input stops early).
const MAX_ERRORS: usize = 100;

/// Parse a token stream (ending in `Eof`) as `lang`.
pub fn parse(tokens: &[Token], lang: Language) -> (Ast, Vec<Diagnostic>) {
    let eof = Token {
        tok: Tok::Eof,
        span: tokens.last().map(|t| t.span).unwrap_or_default(),
    };
    let mut p = Parser {
        toks: tokens,
        pos: 0,
        lang,
        diags: Vec::new(),
        depth: 0,
        gave_up: false,
        eof,
    };
    let ast = p.file();
    (ast, p.diags)
}

/// Marker: a diagnostic was already pushed.
struct Fail;

type PResult<T> = Result<T, Fail>;

struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
    lang: Language,
    diags: Vec<Diagnostic>,
    depth: u32,
    /// Nesting overflowed: the rest of the input was skipped.
    gave_up: bool,
    eof: Token,
}

const C_KEYWORDS: &[&str] = &[
    "void", "bool", "char", "int", "unsigned", "signed", "long", "short", "float", "double",
    "struct", "if", "else", "for", "while", "do", "break", "continue", "return", "sizeof",
    "inline", "const", "static", "true", "false", "NULL", "switch", "case", "default", "goto",
    "typedef", "union", "enum", "extern",
];
const BSGP_KEYWORDS: &[&str] = &[
    "spawn", "barrier", "require", "par", "thread", "dnew", "dtempnew",
];
const FORK_KEYWORDS: &[&str] = &[
    "sh", "pr", "start", "fork", "seq", "farm", "sync", "async", "barrier",
];

/// Whether `name` is a keyword of `lang`.
pub fn is_keyword(name: &str, lang: Language) -> bool {
    C_KEYWORDS.contains(&name)
        || (lang == Language::Bsgp && BSGP_KEYWORDS.contains(&name))
        || (lang == Language::Fork && FORK_KEYWORDS.contains(&name))
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Int { .. } | Tok::Float { .. } => "a number".into(),
        Tok::Char(_) => "a character literal".into(),
        Tok::Str(_) => "a string literal".into(),
        Tok::Punct(p) => format!("`{}`", p.as_str()),
        Tok::Speculate { .. } => "`#pragma pgpu speculate`".into(),
        Tok::Error => "an invalid token".into(),
        Tok::Eof => "end of file".into(),
    }
}

impl<'a> Parser<'a> {
    // ---- token helpers ----

    fn tok(&self) -> &Tok {
        &self.token().tok
    }

    fn token(&self) -> &Token {
        self.toks.get(self.pos).unwrap_or(&self.eof)
    }

    fn nth(&self, k: usize) -> &Tok {
        self.toks
            .get(self.pos + k)
            .map(|t| &t.tok)
            .unwrap_or(&Tok::Eof)
    }

    fn span(&self) -> Span {
        self.token().span
    }

    fn prev_end(&self) -> Span {
        let e = if self.pos == 0 {
            0
        } else {
            self.toks.get(self.pos - 1).map(|t| t.span.end).unwrap_or(0)
        };
        Span { start: e, end: e }
    }

    fn prev_span(&self) -> Span {
        if self.pos == 0 {
            return self.span();
        }
        self.toks
            .get(self.pos - 1)
            .map(|t| t.span)
            .unwrap_or_default()
    }

    fn at_eof(&self) -> bool {
        matches!(self.tok(), Tok::Eof)
    }

    fn bump(&mut self) -> Span {
        let s = self.span();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        s
    }

    fn at(&self, p: Punct) -> bool {
        matches!(self.tok(), Tok::Punct(q) if *q == p)
    }

    fn nth_is(&self, k: usize, p: Punct) -> bool {
        matches!(self.nth(k), Tok::Punct(q) if *q == p)
    }

    fn eat(&mut self, p: Punct) -> bool {
        if self.at(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn at_kw(&self, kw: &str) -> bool {
        matches!(self.tok(), Tok::Ident(s) if s == kw) && is_keyword(kw, self.lang)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.at_kw(kw) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn push(&mut self, d: Diagnostic) {
        // After a nesting overflow the rest of the file is skipped: no
        // follow-up errors about it.
        if self.diags.len() < MAX_ERRORS && !self.gave_up {
            self.diags.push(d);
        }
    }

    fn error_here(&mut self, what: &str) -> Fail {
        let found = describe(self.tok());
        let span = self.span();
        // Invalid tokens were diagnosed by the lexer already.
        if !matches!(self.tok(), Tok::Error) {
            self.push(
                Diagnostic::error(
                    codes::EXPECTED,
                    format!("expected {what}, found {found}"),
                    span,
                )
                .with_label_text(format!("expected {what}")),
            );
        }
        Fail
    }

    fn expect(&mut self, p: Punct) -> PResult<Span> {
        if self.at(p) {
            return Ok(self.bump());
        }
        let found = describe(self.tok());
        if matches!(self.tok(), Tok::Error) {
            return Err(Fail);
        }
        // A missing `;` or `)` is best shown right after the previous token.
        let span = if matches!(p, Punct::Semi | Punct::RParen | Punct::RBracket) && self.pos > 0 {
            self.prev_end()
        } else {
            self.span()
        };
        let mut d = Diagnostic::error(
            codes::EXPECTED,
            format!("expected `{}`, found {found}", p.as_str()),
            span,
        )
        .with_label_text(format!("expected `{}`", p.as_str()));
        if span != self.span() {
            d = d.with_label(self.span(), format!("found {found}"));
        }
        self.push(d);
        Err(Fail)
    }

    fn name(&mut self) -> PResult<Name> {
        match self.tok().clone() {
            Tok::Ident(s) if is_keyword(&s, self.lang) => {
                let span = self.span();
                self.push(Diagnostic::error(
                    codes::KEYWORD_AS_NAME,
                    format!("keyword `{s}` cannot be used as a name"),
                    span,
                ));
                Err(Fail)
            }
            Tok::Ident(s) => {
                let span = self.bump();
                Ok(Name { text: s, span })
            }
            _ => Err(self.error_here("a name")),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = self.span();
            self.push(Diagnostic::error(
                codes::TOO_DEEP,
                format!("nesting deeper than {MAX_DEPTH} levels"),
                span,
            ));
            // Skip everything: the rest cannot be parsed sensibly.
            self.pos = self.toks.len();
            self.gave_up = true;
            self.depth -= 1;
            return Err(Fail);
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Skip to just after the next `;` at this nesting level, or to just
    /// before a `}` that closes the enclosing block, or just after a
    /// balanced `{ ... }`.
    fn recover(&mut self) {
        let mut depth = 0u32;
        loop {
            match self.tok() {
                Tok::Eof => return,
                Tok::Punct(Punct::Semi) if depth == 0 => {
                    self.bump();
                    return;
                }
                Tok::Punct(Punct::LBrace) => {
                    depth += 1;
                    self.bump();
                }
                Tok::Punct(Punct::RBrace) => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                    self.bump();
                    if depth == 0 {
                        return;
                    }
                }
                _ => {
                    self.bump();
                }
            }
        }
    }

    // ---- items ----

    fn file(&mut self) -> Ast {
        let mut items = Vec::new();
        while !self.at_eof() {
            let before = self.pos;
            match self.item() {
                Ok(Some(item)) => items.push(item),
                Ok(None) => {}
                Err(Fail) => self.recover(),
            }
            if self.pos == before {
                self.bump();
            }
        }
        Ast { items }
    }

    fn is_type_start(&self) -> bool {
        match self.tok() {
            Tok::Ident(s) => matches!(
                s.as_str(),
                "void"
                    | "bool"
                    | "char"
                    | "int"
                    | "unsigned"
                    | "signed"
                    | "long"
                    | "short"
                    | "float"
                    | "double"
                    | "struct"
                    | "const"
            ),
            _ => false,
        }
    }

    fn storage(&mut self) -> Option<Storage> {
        if self.lang != Language::Fork {
            return None;
        }
        if self.eat_kw("sh") {
            Some(Storage::Shared)
        } else if self.eat_kw("pr") {
            Some(Storage::Private)
        } else {
            None
        }
    }

    fn unsupported_kw(&mut self) -> PResult<()> {
        if let Tok::Ident(s) = self.tok()
            && matches!(
                s.as_str(),
                "switch" | "case" | "default" | "goto" | "typedef" | "union" | "enum" | "extern"
            )
        {
            let msg = format!("`{s}` is not supported by the pgpu C subset");
            let span = self.span();
            self.push(Diagnostic::error(codes::UNSUPPORTED, msg, span));
            return Err(Fail);
        }
        Ok(())
    }

    fn item(&mut self) -> PResult<Option<Item>> {
        let start = self.span();
        if let Tok::Speculate { .. } = self.tok() {
            let span = self.bump();
            self.push(
                Diagnostic::warning(
                    codes::STRAY_PRAGMA,
                    "`#pragma pgpu speculate` outside a function is ignored",
                    span,
                )
                .with_help("put it directly before a `for` loop"),
            );
            return Ok(None);
        }
        if self.eat(Punct::Semi) {
            return Ok(None);
        }
        self.unsupported_kw()?;
        // struct definition
        if self.at_kw("struct")
            && matches!(self.nth(1), Tok::Ident(_))
            && self.nth_is(2, Punct::LBrace)
        {
            return self.struct_decl(start).map(|s| Some(Item::Struct(s)));
        }
        if self.at_kw("struct")
            && matches!(self.nth(1), Tok::Ident(_))
            && self.nth_is(2, Punct::Semi)
        {
            self.bump();
            self.bump();
            self.bump();
            return Ok(None);
        }
        let mut is_inline = false;
        let mut mode = None;
        loop {
            if self.eat_kw("inline") || self.eat_kw("static") {
                if matches!(self.prev_tok_text(), Some("inline")) {
                    is_inline = true;
                }
                continue;
            }
            if self.lang == Language::Fork {
                if self.eat_kw("sync") {
                    mode = Some(FnMode::Sync);
                    continue;
                }
                if self.eat_kw("async") {
                    mode = Some(FnMode::Async);
                    continue;
                }
            }
            break;
        }
        let storage = self.storage();
        // BSGP: a function without a result type: `name(params) {`.
        if matches!(self.tok(), Tok::Ident(s) if !is_keyword(s, self.lang))
            && self.nth_is(1, Punct::LParen)
        {
            let name = self.name()?;
            if self.lang != Language::Bsgp {
                self.push(
                    Diagnostic::error(
                        codes::NO_RETURN_TYPE,
                        format!("function `{}` has no result type", name.text),
                        name.span,
                    )
                    .with_help("write `void` (only BSGP allows leaving it out)"),
                );
            }
            return self
                .function(start, None, name, is_inline, mode)
                .map(|f| Some(Item::Function(f)));
        }
        if !self.is_type_start() {
            return Err(self.error_here("a declaration"));
        }
        let (base, base_span) = self.base_type()?;
        // One declarator, then `(` makes it a function.
        let ptr_start = self.pos;
        let mut pointers = 0;
        while self.eat(Punct::Star) {
            pointers += 1;
        }
        if matches!(self.tok(), Tok::Ident(_)) && self.nth_is(1, Punct::LParen) {
            let name = self.name()?;
            let ret = TypeName {
                base,
                pointers,
                span: base_span.to(self.prev_span()),
            };
            return self
                .function(start, Some(ret), name, is_inline, mode)
                .map(|f| Some(Item::Function(f)));
        }
        self.pos = ptr_start;
        let decl = self.decl_rest(start, storage, base, base_span)?;
        Ok(Some(Item::Global(decl)))
    }

    fn prev_tok_text(&self) -> Option<&str> {
        if self.pos == 0 {
            return None;
        }
        match self.toks.get(self.pos - 1).map(|t| &t.tok) {
            Some(Tok::Ident(s)) => Some(s),
            _ => None,
        }
    }

    fn struct_decl(&mut self, start: Span) -> PResult<StructDecl> {
        self.bump(); // struct
        let name = self.name()?;
        self.expect(Punct::LBrace)?;
        let mut fields = Vec::new();
        while !self.at(Punct::RBrace) && !self.at_eof() {
            let before = self.pos;
            let fstart = self.span();
            let r = (|| {
                if !self.is_type_start() {
                    return Err(self.error_here("a field declaration"));
                }
                let (base, bspan) = self.base_type()?;
                self.decl_rest(fstart, None, base, bspan)
            })();
            match r {
                Ok(d) => fields.push(d),
                Err(Fail) => self.recover(),
            }
            if self.pos == before {
                self.bump();
            }
        }
        self.expect(Punct::RBrace)?;
        self.expect(Punct::Semi)?;
        Ok(StructDecl {
            name,
            fields,
            span: start.to(self.prev_span()),
        })
    }

    fn function(
        &mut self,
        start: Span,
        ret: Option<TypeName>,
        name: Name,
        is_inline: bool,
        mode: Option<FnMode>,
    ) -> PResult<FnDef> {
        self.expect(Punct::LParen)?;
        let mut params = Vec::new();
        if self.at_kw("void") && self.nth_is(1, Punct::RParen) {
            self.bump();
        }
        if !self.at(Punct::RParen) {
            loop {
                params.push(self.param()?);
                if !self.eat(Punct::Comma) {
                    break;
                }
            }
        }
        self.expect(Punct::RParen)?;
        let body = if self.eat(Punct::Semi) {
            None
        } else if self.at(Punct::LBrace) {
            Some(self.block()?)
        } else {
            return Err(self.error_here("`{` or `;`"));
        };
        Ok(FnDef {
            name,
            ret,
            params,
            body,
            is_inline,
            mode,
            span: start.to(self.prev_span()),
        })
    }

    fn param(&mut self) -> PResult<Param> {
        let start = self.span();
        let storage = self.storage();
        if !self.is_type_start() {
            return Err(self.error_here("a parameter type"));
        }
        let mut ty = self.type_name()?;
        let name = if matches!(self.tok(), Tok::Ident(_)) {
            Some(self.name()?)
        } else {
            None
        };
        while self.at(Punct::LBracket) {
            self.bump();
            // `T a[]` and `T a[N]` parameters are pointers.
            if !self.at(Punct::RBracket) {
                self.assign_expr()?;
            }
            self.expect(Punct::RBracket)?;
            ty.pointers += 1;
        }
        Ok(Param {
            storage,
            ty,
            name,
            span: start.to(self.prev_span()),
        })
    }

    /// `unsigned long`, `struct S`, `const int`, ...
    fn base_type(&mut self) -> PResult<(BaseType, Span)> {
        let start = self.span();
        while self.eat_kw("const") {}
        let mut unsigned = false;
        let mut signed = false;
        let mut longs = 0;
        let mut base: Option<BaseType> = None;
        while let Tok::Ident(s) = self.tok() {
            let s = s.clone();
            match s.as_str() {
                "const" => {}
                "unsigned" => unsigned = true,
                "signed" => signed = true,
                "long" => longs += 1,
                "int" if base.is_none() => base = Some(BaseType::Int),
                "void" | "bool" | "char" | "float" | "double" if base.is_none() => {
                    base = Some(match s.as_str() {
                        "void" => BaseType::Void,
                        "bool" => BaseType::Bool,
                        "char" => BaseType::Char,
                        "float" => BaseType::Float,
                        _ => BaseType::Double,
                    })
                }
                "short" => {
                    let span = self.span();
                    self.push(
                        Diagnostic::error(codes::UNSUPPORTED, "`short` is not supported", span)
                            .with_help("use `int`"),
                    );
                    return Err(Fail);
                }
                "struct" if base.is_none() && !unsigned && !signed && longs == 0 => {
                    self.bump();
                    let name = self.name()?;
                    while self.eat_kw("const") {}
                    return Ok((BaseType::Struct(name), start.to(self.prev_span())));
                }
                _ => break,
            }
            self.bump();
        }
        let span = start.to(self.prev_span());
        let bad = |p: &mut Self, msg: &str| {
            p.push(Diagnostic::error(
                codes::EXPECTED_TYPE,
                msg.to_string(),
                span,
            ));
            Fail
        };
        let t = match (base, unsigned, longs) {
            (None, false, 0) if !signed => return Err(self.error_here("a type")),
            (None | Some(BaseType::Int), false, 0) => BaseType::Int,
            (None | Some(BaseType::Int), true, 0) => BaseType::UInt,
            (None | Some(BaseType::Int), false, _) => BaseType::Long,
            (None | Some(BaseType::Int), true, _) => BaseType::ULong,
            (Some(BaseType::Double), false, 1) if !signed => BaseType::Double,
            (Some(b), false, 0) if !signed || b == BaseType::Char => b,
            _ => return Err(bad(self, "invalid combination of type specifiers")),
        };
        Ok((t, span))
    }

    fn type_name(&mut self) -> PResult<TypeName> {
        let (base, span) = self.base_type()?;
        let mut pointers = 0;
        while self.eat(Punct::Star) {
            pointers += 1;
            while self.eat_kw("const") {}
        }
        Ok(TypeName {
            base,
            pointers,
            span: span.to(self.prev_span()),
        })
    }

    /// Declarators after the base type, through the `;`.
    fn decl_rest(
        &mut self,
        start: Span,
        storage: Option<Storage>,
        base: BaseType,
        base_span: Span,
    ) -> PResult<Decl> {
        let mut declarators = Vec::new();
        loop {
            let dstart = self.span();
            let mut pointers = 0;
            while self.eat(Punct::Star) {
                pointers += 1;
                while self.eat_kw("const") {}
            }
            let name = self.name()?;
            if self.at(Punct::LParen) && self.depth > 0 {
                // `int main() {` inside a function body.
                let span = self.span();
                self.push(
                    Diagnostic::error(
                        codes::EXPECTED,
                        format!("expected `;`, found `(`: `{}` looks like a function definition inside a function", name.text),
                        span,
                    )
                    .with_label(name.span, "function definitions cannot nest")
                    .with_help("is a `}` missing before this line?"),
                );
                return Err(Fail);
            }
            let mut dims = Vec::new();
            while self.eat(Punct::LBracket) {
                if self.at(Punct::RBracket) {
                    dims.push(None);
                } else {
                    dims.push(Some(self.assign_expr()?));
                }
                self.expect(Punct::RBracket)?;
            }
            let init = if self.eat(Punct::Assign) {
                Some(self.initializer()?)
            } else {
                None
            };
            declarators.push(Declarator {
                name,
                pointers,
                dims,
                init,
                span: dstart.to(self.prev_span()),
            });
            if !self.eat(Punct::Comma) {
                break;
            }
        }
        self.expect(Punct::Semi)?;
        Ok(Decl {
            storage,
            base,
            base_span,
            declarators,
            span: start.to(self.prev_span()),
        })
    }

    fn initializer(&mut self) -> PResult<Initializer> {
        if self.at(Punct::LBrace) {
            self.enter()?;
            let r = self.init_list();
            self.leave();
            return r;
        }
        Ok(Initializer::Expr(self.assign_expr()?))
    }

    fn init_list(&mut self) -> PResult<Initializer> {
        let start = self.bump();
        let mut elems = Vec::new();
        while !self.at(Punct::RBrace) {
            elems.push(self.initializer()?);
            if !self.eat(Punct::Comma) {
                break;
            }
        }
        self.expect(Punct::RBrace)?;
        Ok(Initializer::List(elems, start.to(self.prev_span())))
    }

    // ---- statements ----

    fn block(&mut self) -> PResult<Block> {
        let start = self.expect(Punct::LBrace)?;
        let mut stmts = Vec::new();
        while !self.at(Punct::RBrace) && !self.at_eof() {
            let before = self.pos;
            match self.stmt() {
                Ok(s) => stmts.push(s),
                Err(Fail) => {
                    let s = self.span();
                    self.recover();
                    stmts.push(Stmt {
                        kind: StmtKind::Error,
                        span: s.to(self.prev_span()),
                    });
                }
            }
            if self.pos == before {
                self.bump();
            }
        }
        if self.at_eof() {
            self.push(
                Diagnostic::error(
                    codes::EXPECTED,
                    "expected `}`, found end of file",
                    self.span(),
                )
                .with_label(start, "this `{` is not closed"),
            );
            return Ok(Block {
                stmts,
                span: start.to(self.prev_span()),
            });
        }
        let end = self.bump();
        Ok(Block {
            stmts,
            span: start.to(end),
        })
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        self.enter()?;
        let r = self.stmt_inner();
        self.leave();
        r
    }

    /// A statement used as a body (`if (c) s`): wrapped so that recovery
    /// inside stays local.
    fn body(&mut self) -> PResult<Box<Stmt>> {
        Ok(Box::new(self.stmt()?))
    }

    fn paren_expr(&mut self) -> PResult<Expr> {
        self.expect(Punct::LParen)?;
        let e = self.expr()?;
        self.expect(Punct::RParen)?;
        Ok(e)
    }

    fn stmt_inner(&mut self) -> PResult<Stmt> {
        let start = self.span();
        let mk = |p: &Self, kind| Stmt {
            kind,
            span: start.to(p.prev_span()),
        };
        if let Tok::Speculate { window, warp } = *self.tok() {
            let pspan = self.bump();
            let pragma = Pragma {
                window,
                warp,
                span: pspan,
            };
            if !self.at_kw("for") {
                self.push(
                    Diagnostic::warning(
                        codes::STRAY_PRAGMA,
                        "`#pragma pgpu speculate` must be followed by a `for` loop; ignored",
                        pspan,
                    )
                    .with_help("put it directly before a `for` loop"),
                );
                return self.stmt_inner();
            }
            return self.for_stmt(start, Some(pragma));
        }
        if self.at(Punct::LBrace) {
            let b = self.block()?;
            return Ok(mk(self, StmtKind::Block(b)));
        }
        if self.eat(Punct::Semi) {
            return Ok(mk(self, StmtKind::Empty));
        }
        self.unsupported_kw()?;
        if self.eat_kw("if") {
            let cond = self.paren_expr()?;
            let then_branch = self.body()?;
            let else_branch = if self.eat_kw("else") {
                Some(self.body()?)
            } else {
                None
            };
            return Ok(mk(
                self,
                StmtKind::If {
                    cond,
                    then_branch,
                    else_branch,
                },
            ));
        }
        if self.eat_kw("while") {
            let cond = self.paren_expr()?;
            let body = self.body()?;
            return Ok(mk(self, StmtKind::While { cond, body }));
        }
        if self.eat_kw("do") {
            let body = self.body()?;
            if !self.eat_kw("while") {
                return Err(self.error_here("`while`"));
            }
            let cond = self.paren_expr()?;
            self.expect(Punct::Semi)?;
            return Ok(mk(self, StmtKind::DoWhile { body, cond }));
        }
        if self.at_kw("for") {
            return self.for_stmt(start, None);
        }
        if self.eat_kw("break") {
            self.expect(Punct::Semi)?;
            return Ok(mk(self, StmtKind::Break));
        }
        if self.eat_kw("continue") {
            self.expect(Punct::Semi)?;
            return Ok(mk(self, StmtKind::Continue));
        }
        if self.eat_kw("return") {
            let e = if self.at(Punct::Semi) {
                None
            } else {
                Some(self.expr()?)
            };
            self.expect(Punct::Semi)?;
            return Ok(mk(self, StmtKind::Return(e)));
        }
        if self.lang == Language::Bsgp {
            if self.eat_kw("spawn") {
                let count = self.paren_expr()?;
                let body = self.body()?;
                return Ok(mk(self, StmtKind::Spawn { count, body }));
            }
            if self.eat_kw("require") {
                let body = self.body()?;
                return Ok(mk(self, StmtKind::Require(body)));
            }
            if self.eat_kw("par") {
                if !self.at(Punct::LBrace) {
                    return Err(self.error_here("`{` after `par`"));
                }
                let b = self.block()?;
                return Ok(mk(self, StmtKind::Par(b)));
            }
        }
        if self.lang != Language::C && self.eat_kw("barrier") {
            let mut rank_reassigned = false;
            if self.eat(Punct::LParen) {
                match self.tok() {
                    Tok::Ident(s) if s == "RANK_REASSIGNED" && self.lang == Language::Bsgp => {
                        self.bump();
                        rank_reassigned = true;
                    }
                    _ => return Err(self.error_here("`RANK_REASSIGNED`")),
                }
                self.expect(Punct::RParen)?;
            }
            self.expect(Punct::Semi)?;
            return Ok(mk(self, StmtKind::Barrier { rank_reassigned }));
        }
        if self.lang == Language::Fork {
            if self.eat_kw("start") {
                let count = self.paren_expr()?;
                let body = self.body()?;
                return Ok(mk(self, StmtKind::Start { count, body }));
            }
            if self.eat_kw("fork") {
                self.expect(Punct::LParen)?;
                let groups = self.expr()?;
                self.expect(Punct::Semi)?;
                self.expect(Punct::At)?;
                self.expect(Punct::Assign)?;
                let group_id = self.expr()?;
                self.expect(Punct::Semi)?;
                self.expect(Punct::Dollar)?;
                self.expect(Punct::Assign)?;
                let rank = self.expr()?;
                self.expect(Punct::RParen)?;
                let body = self.body()?;
                return Ok(mk(
                    self,
                    StmtKind::Fork {
                        groups,
                        group_id,
                        rank,
                        body,
                    },
                ));
            }
            if self.eat_kw("seq") {
                let body = self.body()?;
                return Ok(mk(self, StmtKind::Seq(body)));
            }
            if self.eat_kw("farm") {
                let body = self.body()?;
                return Ok(mk(self, StmtKind::Farm(body)));
            }
        }
        if self.is_type_start()
            || (self.lang == Language::Fork && (self.at_kw("sh") || self.at_kw("pr")))
        {
            let storage = self.storage();
            let (base, bspan) = self.base_type()?;
            let d = self.decl_rest(start, storage, base, bspan)?;
            return Ok(mk(self, StmtKind::Decl(d)));
        }
        let e = self.expr()?;
        self.expect(Punct::Semi)?;
        Ok(mk(self, StmtKind::Expr(e)))
    }

    fn for_stmt(&mut self, start: Span, pragma: Option<Pragma>) -> PResult<Stmt> {
        self.bump(); // for
        self.expect(Punct::LParen)?;
        let init = if self.eat(Punct::Semi) {
            None
        } else if self.is_type_start() {
            let s = self.span();
            let (base, bspan) = self.base_type()?;
            let d = self.decl_rest(s, None, base, bspan)?;
            Some(Box::new(Stmt {
                kind: StmtKind::Decl(d),
                span: s.to(self.prev_span()),
            }))
        } else {
            let s = self.span();
            let e = self.expr()?;
            self.expect(Punct::Semi)?;
            Some(Box::new(Stmt {
                kind: StmtKind::Expr(e),
                span: s.to(self.prev_span()),
            }))
        };
        let cond = if self.at(Punct::Semi) {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect(Punct::Semi)?;
        let step = if self.at(Punct::RParen) {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect(Punct::RParen)?;
        let body = self.body()?;
        Ok(Stmt {
            kind: StmtKind::For {
                init,
                cond,
                step,
                body,
                pragma,
            },
            span: start.to(self.prev_span()),
        })
    }

    // ---- expressions ----

    /// A full expression (with the comma operator).
    fn expr(&mut self) -> PResult<Expr> {
        self.bp(0)
    }

    /// An assignment expression (no top-level comma).
    fn assign_expr(&mut self) -> PResult<Expr> {
        self.bp(2)
    }

    /// Binary operator: (left binding power, right binding power, op).
    fn infix(&self) -> Option<(u8, u8, Infix)> {
        use Punct::*;
        let Tok::Punct(p) = self.tok() else {
            return None;
        };
        let b = |op| Infix::Bin(op);
        let a = |op| Infix::Assign(op);
        Some(match p {
            Comma => (1, 2, Infix::Comma),
            Assign => (4, 3, a(None)),
            PlusAssign => (4, 3, a(Some(BinOp::Add))),
            MinusAssign => (4, 3, a(Some(BinOp::Sub))),
            StarAssign => (4, 3, a(Some(BinOp::Mul))),
            SlashAssign => (4, 3, a(Some(BinOp::Div))),
            PercentAssign => (4, 3, a(Some(BinOp::Rem))),
            AmpAssign => (4, 3, a(Some(BinOp::BitAnd))),
            PipeAssign => (4, 3, a(Some(BinOp::BitOr))),
            CaretAssign => (4, 3, a(Some(BinOp::BitXor))),
            ShlAssign => (4, 3, a(Some(BinOp::Shl))),
            ShrAssign => (4, 3, a(Some(BinOp::Shr))),
            Question => (6, 5, Infix::Cond),
            OrOr => (7, 8, b(BinOp::LogOr)),
            AndAnd => (9, 10, b(BinOp::LogAnd)),
            Pipe => (11, 12, b(BinOp::BitOr)),
            Caret => (13, 14, b(BinOp::BitXor)),
            Amp => (15, 16, b(BinOp::BitAnd)),
            EqEq => (17, 18, b(BinOp::Eq)),
            Ne => (17, 18, b(BinOp::Ne)),
            Lt => (19, 20, b(BinOp::Lt)),
            Gt => (19, 20, b(BinOp::Gt)),
            Le => (19, 20, b(BinOp::Le)),
            Ge => (19, 20, b(BinOp::Ge)),
            Shl => (21, 22, b(BinOp::Shl)),
            Shr => (21, 22, b(BinOp::Shr)),
            Plus => (23, 24, b(BinOp::Add)),
            Minus => (23, 24, b(BinOp::Sub)),
            Star => (25, 26, b(BinOp::Mul)),
            Slash => (25, 26, b(BinOp::Div)),
            Percent => (25, 26, b(BinOp::Rem)),
            _ => return None,
        })
    }

    /// Pratt loop: operators whose left binding power is above `min_bp`.
    fn bp(&mut self, min_bp: u8) -> PResult<Expr> {
        self.enter()?;
        let r = self.bp_inner(min_bp);
        self.leave();
        r
    }

    fn bp_inner(&mut self, min_bp: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut chain = 0u32;
        while let Some((l, r, op)) = self.infix() {
            if l <= min_bp {
                break;
            }
            chain += 1;
            if chain > MAX_CHAIN {
                let span = self.span();
                self.push(
                    Diagnostic::error(
                        codes::TOO_DEEP,
                        format!("more than {MAX_CHAIN} operators in one expression"),
                        lhs.span.to(span),
                    )
                    .with_help("split the expression with temporary variables"),
                );
                return Err(Fail);
            }
            self.bump();
            lhs = match op {
                Infix::Cond => {
                    let then_expr = self.expr()?;
                    self.expect(Punct::Colon)?;
                    let else_expr = self.bp(r - 1)?;
                    let span = lhs.span.to(else_expr.span);
                    Expr {
                        kind: ExprKind::Cond {
                            cond: Box::new(lhs),
                            then_expr: Box::new(then_expr),
                            else_expr: Box::new(else_expr),
                        },
                        span,
                    }
                }
                _ => {
                    // Right-associative operators recurse with a lower bp.
                    let rhs = self.bp(if l > r { r - 1 } else { l })?;
                    let span = lhs.span.to(rhs.span);
                    let (lhs, rhs) = (Box::new(lhs), Box::new(rhs));
                    let kind = match op {
                        Infix::Bin(op) => ExprKind::Binary { op, lhs, rhs },
                        Infix::Assign(op) => ExprKind::Assign { op, lhs, rhs },
                        Infix::Comma | Infix::Cond => ExprKind::Comma { lhs, rhs },
                    };
                    Expr { kind, span }
                }
            };
        }
        Ok(lhs)
    }

    fn is_cast(&self) -> bool {
        if !self.at(Punct::LParen) {
            return false;
        }
        match self.nth(1) {
            Tok::Ident(s) => matches!(
                s.as_str(),
                "void"
                    | "bool"
                    | "char"
                    | "int"
                    | "unsigned"
                    | "signed"
                    | "long"
                    | "short"
                    | "float"
                    | "double"
                    | "struct"
                    | "const"
            ),
            _ => false,
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.unary_inner();
        self.leave();
        r
    }

    fn unary_inner(&mut self) -> PResult<Expr> {
        let start = self.span();
        let prefix = match self.tok() {
            Tok::Punct(Punct::Minus) => Some(UnOp::Neg),
            Tok::Punct(Punct::Plus) => Some(UnOp::Plus),
            Tok::Punct(Punct::Bang) => Some(UnOp::Not),
            Tok::Punct(Punct::Tilde) => Some(UnOp::BitNot),
            Tok::Punct(Punct::Star) => Some(UnOp::Deref),
            Tok::Punct(Punct::Amp) => Some(UnOp::AddrOf),
            Tok::Punct(Punct::PlusPlus) => Some(UnOp::PreInc),
            Tok::Punct(Punct::MinusMinus) => Some(UnOp::PreDec),
            _ => None,
        };
        if let Some(op) = prefix {
            self.bump();
            let operand = self.unary()?;
            let span = start.to(operand.span);
            return Ok(Expr {
                kind: ExprKind::Unary {
                    op,
                    operand: Box::new(operand),
                },
                span,
            });
        }
        if self.is_cast() {
            self.bump();
            let ty = self.type_name()?;
            self.expect(Punct::RParen)?;
            let expr = self.unary()?;
            let span = start.to(expr.span);
            return Ok(Expr {
                kind: ExprKind::Cast {
                    ty,
                    expr: Box::new(expr),
                },
                span,
            });
        }
        if self.eat_kw("sizeof") {
            if self.is_cast() {
                self.bump();
                let ty = self.type_name()?;
                self.expect(Punct::RParen)?;
                return Ok(Expr {
                    kind: ExprKind::SizeofType(ty),
                    span: start.to(self.prev_span()),
                });
            }
            let e = self.unary()?;
            let span = start.to(e.span);
            return Ok(Expr {
                kind: ExprKind::SizeofExpr(Box::new(e)),
                span,
            });
        }
        if self.lang == Language::Bsgp && (self.at_kw("dnew") || self.at_kw("dtempnew")) {
            let temp = self.at_kw("dtempnew");
            self.bump();
            self.expect(Punct::LBracket)?;
            let count = self.expr()?;
            self.expect(Punct::RBracket)?;
            if !self.is_type_start() {
                return Err(self.error_here("an element type after `dnew[n]`"));
            }
            let ty = self.type_name()?;
            return Ok(Expr {
                kind: ExprKind::DNew {
                    temp,
                    count: Box::new(count),
                    ty,
                },
                span: start.to(self.prev_span()),
            });
        }
        let prim = self.primary()?;
        self.postfix(prim)
    }

    fn postfix(&mut self, mut e: Expr) -> PResult<Expr> {
        loop {
            let start = e.span;
            match self.tok() {
                Tok::Punct(Punct::LBracket) => {
                    self.bump();
                    let index = self.expr()?;
                    self.expect(Punct::RBracket)?;
                    e = Expr {
                        kind: ExprKind::Index {
                            base: Box::new(e),
                            index: Box::new(index),
                        },
                        span: start.to(self.prev_span()),
                    };
                }
                Tok::Punct(Punct::LParen) => {
                    self.bump();
                    let op_first = self.lang == Language::Bsgp
                        && matches!(&e.kind, ExprKind::Ident(s) if s == "reduce" || s == "scan");
                    let mut args = Vec::new();
                    if !self.at(Punct::RParen) {
                        loop {
                            if op_first && args.is_empty() && self.nth_is(1, Punct::Comma) {
                                // Any binary operator token: the checker
                                // rejects those that are not collective.
                                let op = match self.infix() {
                                    Some((_, _, Infix::Bin(op))) => Some(op),
                                    _ => None,
                                };
                                if let Some(op) = op {
                                    let span = self.bump();
                                    args.push(Expr {
                                        kind: ExprKind::OpArg(op),
                                        span,
                                    });
                                    self.bump(); // ,
                                    continue;
                                }
                            }
                            args.push(self.assign_expr()?);
                            if !self.eat(Punct::Comma) {
                                break;
                            }
                        }
                    }
                    self.expect(Punct::RParen)?;
                    e = Expr {
                        kind: ExprKind::Call {
                            callee: Box::new(e),
                            args,
                        },
                        span: start.to(self.prev_span()),
                    };
                }
                Tok::Punct(p @ (Punct::Dot | Punct::Arrow)) => {
                    let arrow = *p == Punct::Arrow;
                    self.bump();
                    let field = match self.tok().clone() {
                        // `thread.fork`: a Fork/BSGP keyword is a fine member.
                        Tok::Ident(s) => {
                            let span = self.bump();
                            Name { text: s, span }
                        }
                        _ => return Err(self.error_here("a member name")),
                    };
                    e = Expr {
                        kind: ExprKind::Member {
                            base: Box::new(e),
                            field,
                            arrow,
                        },
                        span: start.to(self.prev_span()),
                    };
                }
                Tok::Punct(p @ (Punct::PlusPlus | Punct::MinusMinus)) => {
                    let op = if *p == Punct::PlusPlus {
                        UnOp::PostInc
                    } else {
                        UnOp::PostDec
                    };
                    self.bump();
                    e = Expr {
                        kind: ExprKind::Unary {
                            op,
                            operand: Box::new(e),
                        },
                        span: start.to(self.prev_span()),
                    };
                }
                _ => return Ok(e),
            }
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let span = self.span();
        let kind = match self.tok().clone() {
            Tok::Int {
                value,
                unsigned,
                long,
                non_decimal,
            } => ExprKind::Int {
                value,
                unsigned,
                long,
                non_decimal,
            },
            Tok::Float { bits, single } => ExprKind::Float { bits, single },
            Tok::Char(c) => ExprKind::Char(c),
            Tok::Str(s) => {
                let mut s = s;
                let mut end = self.bump();
                while let Tok::Str(t) = self.tok() {
                    s.push_str(t);
                    end = self.bump();
                }
                return Ok(Expr {
                    kind: ExprKind::Str(s),
                    span: span.to(end),
                });
            }
            Tok::Punct(Punct::LParen) => {
                self.bump();
                let e = self.expr()?;
                let end = self.expect(Punct::RParen)?;
                return Ok(Expr {
                    kind: e.kind,
                    span: span.to(end),
                });
            }
            Tok::Punct(Punct::Dollar) if self.lang == Language::Fork => ExprKind::Dollar,
            Tok::Punct(Punct::DollarDollar) if self.lang == Language::Fork => {
                ExprKind::DollarDollar
            }
            Tok::Punct(Punct::At) if self.lang == Language::Fork => ExprKind::At,
            Tok::Ident(s) => match s.as_str() {
                "true" => ExprKind::Bool(true),
                "false" => ExprKind::Bool(false),
                "NULL" => ExprKind::Null,
                "thread" if self.lang == Language::Bsgp => ExprKind::Thread,
                _ if is_keyword(&s, self.lang) => {
                    self.push(Diagnostic::error(
                        codes::EXPECTED_EXPR,
                        format!("expected an expression, found keyword `{s}`"),
                        span,
                    ));
                    return Err(Fail);
                }
                _ => ExprKind::Ident(s),
            },
            Tok::Error => return Err(Fail),
            other => {
                let found = describe(&other);
                self.push(
                    Diagnostic::error(
                        codes::EXPECTED_EXPR,
                        format!("expected an expression, found {found}"),
                        span,
                    )
                    .with_label_text("expected an expression"),
                );
                return Err(Fail);
            }
        };
        self.bump();
        Ok(Expr { kind, span })
    }
}

#[derive(Clone, Copy)]
enum Infix {
    Bin(BinOp),
    Assign(Option<BinOp>),
    Cond,
    Comma,
}
