//! Recursive-descent parser from tokens to the IR ([`crate::ir`]).
//!
//! The grammar is the PTX ISA's (8.x) for what nvcc and LLVM's NVPTX
//! backend emit: module directives, variables with initializers, `.entry`
//! and `.func` with parameters and performance directives, and bodies of
//! register declarations, variables, labels, guarded instructions and
//! nested blocks. Instructions keep their modifiers as written; an
//! instruction or directive outside the supported set is an error naming
//! it, at its span.

use crate::error::{ErrorKind, PtxError, Span};
use crate::ir::*;
use crate::lexer::{Token, TokenKind, lex};

/// Parses PTX text into a module (syntax only; [`crate::check`] checks
/// names and operands).
pub fn parse(source: &str) -> Result<Module, PtxError> {
    let tokens = lex(source)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        source,
        depth: 0,
    };
    parser.module()
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    source: &'a str,
    /// How many blocks, initializer lists and operand lists enclose the
    /// current position.
    depth: usize,
}

/// The deepest nesting of blocks, initializer lists and operand lists that
/// the parser accepts: deeper text would overflow the stack of the parser
/// (and of the checker and the printer, which recurse the same way).
pub const MAX_NESTING: usize = 256;

/// What precedes a declaration's name and the name itself: alignment,
/// type, `.ptr` attributes, name and array dimensions.
struct TypedName {
    align: Option<u32>,
    ty: ValueType,
    pointer: Option<PointerAttribute>,
    name: String,
    dims: Vec<Option<u64>>,
}

const VARIABLE_SPACES: &[&str] = &["global", "const", "shared", "local", "param", "shared::cta"];

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn peek_kind(&self) -> Option<&TokenKind> {
        self.peek().map(|t| &t.kind)
    }

    fn eof_span(&self) -> Span {
        let end = self.source.len();
        Span::new(end, end)
    }

    fn span(&self) -> Span {
        self.peek().map_or_else(|| self.eof_span(), |t| t.span)
    }

    fn previous_span(&self) -> Span {
        self.at
            .checked_sub(1)
            .and_then(|i| self.tokens.get(i))
            .map_or_else(|| self.eof_span(), |t| t.span)
    }

    fn next(&mut self) -> Result<Token, PtxError> {
        let token = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or_else(|| PtxError::syntax("unexpected end of input", self.eof_span()))?;
        self.at += 1;
        Ok(token)
    }

    fn unexpected(&self, wanted: &str) -> PtxError {
        match self.peek() {
            Some(token) => PtxError::syntax(
                format!(
                    "expected {wanted}, found `{}`",
                    &self.source[token.span.start..token.span.end]
                ),
                token.span,
            ),
            None => PtxError::syntax(
                format!("expected {wanted}, found the end of input"),
                self.eof_span(),
            ),
        }
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek_kind() == Some(&TokenKind::Punct(c))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let found = self.is_punct(c);
        if found {
            self.at += 1;
        }
        found
    }

    fn expect_punct(&mut self, c: char) -> Result<Span, PtxError> {
        if self.is_punct(c) {
            Ok(self.next()?.span)
        } else {
            Err(self.unexpected(&format!("`{c}`")))
        }
    }

    fn directive(&self) -> Option<&str> {
        match self.peek_kind() {
            Some(TokenKind::Directive(name)) => Some(name),
            _ => None,
        }
    }

    fn eat_directive(&mut self, name: &str) -> bool {
        let found = self.directive() == Some(name);
        if found {
            self.at += 1;
        }
        found
    }

    fn ident(&mut self, what: &str) -> Result<(String, Span), PtxError> {
        match self.peek_kind() {
            Some(TokenKind::Ident(name)) => {
                let name = name.clone();
                Ok((name, self.next()?.span))
            }
            _ => Err(self.unexpected(what)),
        }
    }

    fn unsigned(&mut self, what: &str) -> Result<u64, PtxError> {
        match self.peek_kind() {
            Some(TokenKind::Integer { value, .. }) => {
                let value = *value;
                self.at += 1;
                Ok(value)
            }
            _ => Err(self.unexpected(what)),
        }
    }

    fn small(&mut self, what: &str) -> Result<u32, PtxError> {
        let span = self.span();
        let value = self.unsigned(what)?;
        u32::try_from(value).map_err(|_| PtxError::syntax(format!("{what} is too large"), span))
    }

    fn string(&mut self, what: &str) -> Result<String, PtxError> {
        match self.peek_kind() {
            Some(TokenKind::String(text)) => {
                let text = text.clone();
                self.at += 1;
                Ok(text)
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// Runs `parse` one nesting level deeper, or fails past [`MAX_NESTING`].
    fn nested<T>(&mut self, parse: fn(&mut Self) -> Result<T, PtxError>) -> Result<T, PtxError> {
        if self.depth >= MAX_NESTING {
            return Err(PtxError::syntax(
                format!("nesting deeper than {MAX_NESTING} levels is not supported"),
                self.span(),
            ));
        }
        self.depth += 1;
        let result = parse(self);
        self.depth -= 1;
        result
    }

    fn unsupported_directive(&self, name: &str, span: Span) -> PtxError {
        PtxError::new(
            ErrorKind::UnsupportedDirective,
            format!("the directive `.{name}` is not supported here"),
            span,
        )
    }

    fn module(&mut self) -> Result<Module, PtxError> {
        let mut module = Module {
            version: (0, 0),
            target: Vec::new(),
            address_size: 64,
            items: Vec::new(),
        };
        let mut seen_version = false;
        while let Some(token) = self.peek() {
            let span = token.span;
            let Some(name) = self.directive().map(str::to_string) else {
                return Err(self.unexpected("a directive"));
            };
            match name.as_str() {
                "version" => {
                    self.at += 1;
                    module.version = self.version()?;
                    seen_version = true;
                }
                "target" => {
                    self.at += 1;
                    loop {
                        module.target.push(self.ident("a target name")?.0);
                        if !self.eat_punct(',') {
                            break;
                        }
                    }
                }
                "address_size" => {
                    self.at += 1;
                    let at = self.span();
                    module.address_size = self.small("an address size")?;
                    if !matches!(module.address_size, 32 | 64) {
                        return Err(PtxError::syntax("the address size must be 32 or 64", at));
                    }
                }
                "file" => {
                    self.at += 1;
                    let index = self.small("a file index")?;
                    let name = self.string("a file name")?;
                    let mut extra = Vec::new();
                    while self.eat_punct(',') {
                        extra.push(self.unsigned("a number")?);
                    }
                    module.items.push(Item::File { index, name, extra });
                }
                _ => {
                    let linkage = Linkage::parse(&name);
                    if linkage.is_some() {
                        self.at += 1;
                    }
                    module.items.push(self.item(linkage)?);
                }
            }
            if !seen_version {
                return Err(PtxError::syntax(
                    "a PTX module starts with `.version`",
                    span,
                ));
            }
        }
        if !seen_version {
            return Err(PtxError::syntax(
                "a PTX module starts with `.version`",
                Span::new(0, 0),
            ));
        }
        Ok(module)
    }

    fn version(&mut self) -> Result<(u32, u32), PtxError> {
        let token = self.next()?;
        let text = &self.source[token.span.start..token.span.end];
        let parsed = match token.kind {
            TokenKind::F64(_) | TokenKind::Integer { .. } => text
                .split_once('.')
                .and_then(|(major, minor)| Some((major.parse().ok()?, minor.parse().ok()?))),
            _ => None,
        };
        parsed.ok_or_else(|| PtxError::syntax("expected a version `major.minor`", token.span))
    }

    fn item(&mut self, linkage: Option<Linkage>) -> Result<Item, PtxError> {
        let span = self.span();
        let name = self.directive().map(str::to_string);
        match name.as_deref() {
            Some("entry") | Some("func") => Ok(Item::Function(self.function(linkage)?)),
            Some(space) if VARIABLE_SPACES.contains(&space) => {
                let variable = self.variable(linkage)?;
                self.expect_punct(';')?;
                Ok(Item::Variable(variable))
            }
            Some(other) => Err(self.unsupported_directive(other, span)),
            None => Err(self.unexpected("`.entry`, `.func` or a variable")),
        }
    }

    /// `[.align n] [.vN] .type` in any order, then the name and array
    /// dimensions: the common tail of variables and parameters. Returns
    /// the align, the type and `.ptr` attributes.
    fn typed_name(&mut self, allow_pointer: bool) -> Result<TypedName, PtxError> {
        let mut align = None;
        let mut vector = None;
        let mut scalar = None;
        let mut pointer: Option<PointerAttribute> = None;
        while let Some(name) = self.directive().map(str::to_string) {
            let span = self.span();
            self.at += 1;
            if name == "align" {
                let value = Some(self.small("an alignment")?);
                match pointer.as_mut() {
                    Some(pointer) => pointer.align = value,
                    None => align = value,
                }
            } else if name == "ptr" && allow_pointer {
                pointer = Some(PointerAttribute {
                    space: None,
                    align: None,
                });
            } else if let (Some(pointer), Some(space)) =
                (pointer.as_mut(), StateSpace::parse(&name))
            {
                pointer.space = Some(space);
            } else if let Some(Modifier::Vector(n)) = Modifier::parse(&name) {
                vector = Some(n);
            } else if let Some(ty) = ScalarType::parse(&name) {
                scalar = Some(ty);
            } else {
                return Err(PtxError::new(
                    ErrorKind::UnsupportedDirective,
                    format!("unexpected `.{name}` in a declaration"),
                    span,
                ));
            }
        }
        let scalar = scalar.ok_or_else(|| self.unexpected("a type such as `.b32`"))?;
        let (name, _) = self.ident("a name")?;
        let mut dims = Vec::new();
        while self.eat_punct('[') {
            if self.eat_punct(']') {
                dims.push(None);
            } else {
                dims.push(Some(self.unsigned("an array size")?));
                self.expect_punct(']')?;
            }
        }
        Ok(TypedName {
            align,
            ty: ValueType { vector, scalar },
            pointer,
            name,
            dims,
        })
    }

    fn variable(&mut self, linkage: Option<Linkage>) -> Result<Variable, PtxError> {
        let start = self.span();
        let space_name = self.directive().map(str::to_string).unwrap_or_default();
        self.at += 1;
        let space = StateSpace::parse(&space_name)
            .ok_or_else(|| self.unsupported_directive(&space_name, start))?;
        let TypedName {
            align,
            ty,
            name,
            dims,
            ..
        } = self.typed_name(false)?;
        let init = if self.eat_punct('=') {
            Some(self.initializer()?)
        } else {
            None
        };
        Ok(Variable {
            linkage,
            space,
            align,
            ty,
            name,
            dims,
            init,
            span: start.to(self.previous_span()),
        })
    }

    fn initializer(&mut self) -> Result<Initializer, PtxError> {
        if self.eat_punct('{') {
            let mut items = Vec::new();
            if !self.is_punct('}') {
                loop {
                    items.push(self.nested(Self::initializer)?);
                    if !self.eat_punct(',') {
                        break;
                    }
                }
            }
            self.expect_punct('}')?;
            return Ok(Initializer::List(items));
        }
        if let Some(TokenKind::Ident(name)) = self.peek_kind() {
            let mut name = name.clone();
            self.at += 1;
            let generic = name == "generic" && self.is_punct('(');
            if generic {
                self.expect_punct('(')?;
                name = self.ident("a variable")?.0;
                self.expect_punct(')')?;
            }
            let offset = if self.is_punct('+') || self.is_punct('-') {
                self.offset()?
            } else {
                0
            };
            return Ok(Initializer::Symbol {
                name,
                offset,
                generic,
            });
        }
        Ok(Initializer::Immediate(self.immediate()?))
    }

    /// `+ n`, `- n` or `+ -n` after an address base.
    fn offset(&mut self) -> Result<i64, PtxError> {
        let mut negative = false;
        if self.eat_punct('+') {
            negative = self.eat_punct('-');
        } else {
            self.expect_punct('-')?;
            negative = !negative;
        }
        let span = self.span();
        let value = self.unsigned("an offset")?;
        let value =
            i64::try_from(value).map_err(|_| PtxError::syntax("offset out of range", span))?;
        Ok(if negative { -value } else { value })
    }

    fn immediate(&mut self) -> Result<Immediate, PtxError> {
        let negative = self.eat_punct('-');
        let token = self.next()?;
        let value = match token.kind {
            TokenKind::Integer { value, unsigned } => {
                if negative {
                    let magnitude = i64::try_from(value)
                        .ok()
                        .or((value == 1 << 63).then_some(i64::MIN))
                        .ok_or_else(|| PtxError::syntax("integer out of range", token.span))?;
                    Immediate::Int(magnitude.wrapping_neg())
                } else if unsigned || value > i64::MAX as u64 {
                    Immediate::Uint(value)
                } else {
                    Immediate::Int(value as i64)
                }
            }
            TokenKind::F32(bits) => Immediate::F32(if negative { bits ^ 1 << 31 } else { bits }),
            TokenKind::F64(bits) => Immediate::F64(if negative { bits ^ 1 << 63 } else { bits }),
            _ => {
                self.at -= 1;
                return Err(self.unexpected("a constant"));
            }
        };
        Ok(value)
    }

    fn parameter(&mut self) -> Result<Parameter, PtxError> {
        let start = self.span();
        let space = match self.directive() {
            Some("param") => StateSpace::Param,
            Some("reg") => StateSpace::Reg,
            _ => return Err(self.unexpected("`.param` or `.reg`")),
        };
        self.at += 1;
        let TypedName {
            align,
            ty,
            pointer,
            name,
            dims,
        } = self.typed_name(true)?;
        Ok(Parameter {
            space,
            align,
            ty,
            pointer,
            name,
            dims,
            span: start.to(self.previous_span()),
        })
    }

    fn parameters(&mut self) -> Result<Vec<Parameter>, PtxError> {
        self.expect_punct('(')?;
        let mut params = Vec::new();
        if !self.is_punct(')') {
            loop {
                params.push(self.parameter()?);
                if !self.eat_punct(',') {
                    break;
                }
            }
        }
        self.expect_punct(')')?;
        Ok(params)
    }

    fn function(&mut self, linkage: Option<Linkage>) -> Result<Function, PtxError> {
        let start = self.span();
        let kind = if self.eat_directive("entry") {
            FunctionKind::Entry
        } else {
            self.next()?;
            FunctionKind::Func
        };
        let returns = if kind == FunctionKind::Func && self.is_punct('(') {
            self.parameters()?
        } else {
            Vec::new()
        };
        let (name, _) = self.ident("a function name")?;
        let params = if self.is_punct('(') {
            self.parameters()?
        } else {
            Vec::new()
        };
        let span = start.to(self.previous_span());
        let mut directives = Vec::new();
        while let Some(name) = self.directive().map(str::to_string) {
            let at = self.span();
            self.at += 1;
            let mut directive = FunctionDirective {
                name: name.clone(),
                values: Vec::new(),
                strings: Vec::new(),
            };
            match name.as_str() {
                "maxntid" | "reqntid" | "minnctapersm" | "maxnctapersm" | "maxnreg"
                | "maxclusterrank" | "reqnctapercluster" => loop {
                    directive.values.push(self.unsigned("a number")?);
                    if !self.eat_punct(',') {
                        break;
                    }
                },
                "noreturn" | "explicitcluster" => {}
                "pragma" => {
                    loop {
                        directive.strings.push(self.string("a pragma string")?);
                        if !self.eat_punct(',') {
                            break;
                        }
                    }
                    self.expect_punct(';')?;
                }
                _ => return Err(self.unsupported_directive(&name, at)),
            }
            directives.push(directive);
        }
        let body = if self.eat_punct(';') {
            None
        } else {
            self.expect_punct('{')?;
            Some(self.statements()?)
        };
        Ok(Function {
            linkage,
            kind,
            returns,
            name,
            params,
            directives,
            body,
            span,
        })
    }

    /// Statements up to and including the closing `}`.
    fn statements(&mut self) -> Result<Vec<Statement>, PtxError> {
        let mut statements = Vec::new();
        loop {
            let span = self.span();
            let Some(kind) = self.peek_kind().cloned() else {
                return Err(self.unexpected("`}`"));
            };
            match kind {
                TokenKind::Punct('}') => {
                    self.at += 1;
                    return Ok(statements);
                }
                TokenKind::Punct('{') => {
                    self.at += 1;
                    statements.push(Statement::Block(self.nested(Self::statements)?));
                }
                TokenKind::Punct('@') => {
                    statements.push(Statement::Instruction(self.instruction()?))
                }
                TokenKind::Directive(name) => {
                    statements.push(self.directive_statement(&name, span)?)
                }
                TokenKind::Ident(name)
                    if self
                        .tokens
                        .get(self.at + 1)
                        .is_some_and(|t| t.kind == TokenKind::Punct(':')) =>
                {
                    self.at += 2;
                    statements.push(Statement::Label(name, span));
                }
                TokenKind::Ident(_) => statements.push(Statement::Instruction(self.instruction()?)),
                _ => return Err(self.unexpected("a statement")),
            }
        }
    }

    fn directive_statement(&mut self, name: &str, span: Span) -> Result<Statement, PtxError> {
        match name {
            "reg" => {
                self.at += 1;
                let mut vector = None;
                let mut scalar = None;
                while let Some(name) = self.directive().map(str::to_string) {
                    let at = self.span();
                    self.at += 1;
                    match Modifier::parse(&name) {
                        Some(Modifier::Vector(n)) => vector = Some(n),
                        Some(Modifier::Type(ty)) => scalar = Some(ty),
                        _ => {
                            return Err(PtxError::new(
                                ErrorKind::UnsupportedDirective,
                                format!("unexpected `.{name}` in a register declaration"),
                                at,
                            ));
                        }
                    }
                }
                let scalar = scalar.ok_or_else(|| self.unexpected("a type such as `.b32`"))?;
                let mut names = Vec::new();
                loop {
                    let (name, _) = self.ident("a register name")?;
                    let count = if self.eat_punct('<') {
                        let count = self.small("a register count")?;
                        self.expect_punct('>')?;
                        Some(count)
                    } else {
                        None
                    };
                    names.push((name, count));
                    if !self.eat_punct(',') {
                        break;
                    }
                }
                let end = self.expect_punct(';')?;
                Ok(Statement::Registers(RegisterDecl {
                    ty: ValueType { vector, scalar },
                    names,
                    span: span.to(end),
                }))
            }
            "local" | "shared" | "param" | "shared::cta" | "global" | "const" => {
                let variable = self.variable(None)?;
                self.expect_punct(';')?;
                Ok(Statement::Variable(variable))
            }
            "pragma" => {
                self.at += 1;
                let mut strings = Vec::new();
                loop {
                    strings.push(self.string("a pragma string")?);
                    if !self.eat_punct(',') {
                        break;
                    }
                }
                self.expect_punct(';')?;
                Ok(Statement::Pragma(strings))
            }
            "loc" => {
                self.at += 1;
                let file = self.small("a file index")?;
                let line = self.small("a line")?;
                let column = self.small("a column")?;
                let inlined = if self.eat_punct(',') {
                    let (key, at) = self.ident("`function_name`")?;
                    if key != "function_name" {
                        return Err(PtxError::syntax("expected `function_name`", at));
                    }
                    let (function, _) = self.ident("a name")?;
                    self.expect_punct(',')?;
                    let (key, at) = self.ident("`inlined_at`")?;
                    if key != "inlined_at" {
                        return Err(PtxError::syntax("expected `inlined_at`", at));
                    }
                    let position = [
                        self.small("a file index")?,
                        self.small("a line")?,
                        self.small("a column")?,
                    ];
                    Some((function, position))
                } else {
                    None
                };
                Ok(Statement::Location {
                    file,
                    line,
                    column,
                    inlined,
                })
            }
            other => Err(self.unsupported_directive(other, span)),
        }
    }

    fn instruction(&mut self) -> Result<Instruction, PtxError> {
        let start = self.span();
        let guard = if self.eat_punct('@') {
            let negated = self.eat_punct('!');
            let (predicate, _) = self.ident("a predicate register")?;
            Some(Guard { predicate, negated })
        } else {
            None
        };
        let (name, name_span) = self.ident("an instruction")?;
        let opcode = Opcode::parse(&name).ok_or_else(|| {
            if UNSUPPORTED_OPCODES.contains(&name.as_str()) {
                PtxError::new(
                    ErrorKind::UnsupportedInstruction,
                    format!("the PTX instruction `{name}` is not supported"),
                    name_span,
                )
                .with_help("see docs/ptx.md for the supported instruction set")
            } else {
                PtxError::syntax(format!("unknown instruction `{name}`"), name_span)
            }
        })?;
        let mut modifiers = Vec::new();
        while let Some(token) = self.peek()
            && !token.spaced
            && let TokenKind::Directive(text) = &token.kind
        {
            let span = token.span;
            let modifier = Modifier::parse(text).ok_or_else(|| {
                PtxError::new(
                    ErrorKind::Modifier,
                    format!("unknown modifier `.{text}` on `{name}`"),
                    span,
                )
            })?;
            modifiers.push(modifier);
            self.at += 1;
        }
        let mut operands = Vec::new();
        if !self.is_punct(';') {
            loop {
                operands.push(self.operand()?);
                if !self.eat_punct(',') {
                    break;
                }
            }
        }
        let end = self.expect_punct(';')?;
        Ok(Instruction {
            guard,
            opcode,
            modifiers,
            operands,
            span: start.to(end),
        })
    }

    fn operand(&mut self) -> Result<Operand, PtxError> {
        if self.eat_punct('!') {
            return Ok(Operand::Not(Box::new(self.primary()?)));
        }
        let first = self.primary()?;
        if self.eat_punct('|') {
            return Ok(Operand::Pair(Box::new(first), Box::new(self.primary()?)));
        }
        Ok(first)
    }

    fn primary(&mut self) -> Result<Operand, PtxError> {
        match self.peek_kind().cloned() {
            Some(TokenKind::Punct('{')) => {
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    items.push(self.nested(Self::operand)?);
                    if !self.eat_punct(',') {
                        break;
                    }
                }
                self.expect_punct('}')?;
                Ok(Operand::Vector(items))
            }
            Some(TokenKind::Punct('(')) => {
                self.at += 1;
                let mut items = Vec::new();
                if !self.is_punct(')') {
                    loop {
                        items.push(self.nested(Self::operand)?);
                        if !self.eat_punct(',') {
                            break;
                        }
                    }
                }
                self.expect_punct(')')?;
                Ok(Operand::List(items))
            }
            Some(TokenKind::Punct('[')) => {
                self.at += 1;
                let base = match self.peek_kind() {
                    Some(TokenKind::Ident(name)) => {
                        let name = name.clone();
                        self.at += 1;
                        Some(name)
                    }
                    _ => None,
                };
                let offset = if base.is_none() {
                    match self.immediate()? {
                        Immediate::Int(v) => v,
                        Immediate::Uint(v) => v as i64,
                        _ => {
                            return Err(PtxError::syntax(
                                "an address must be an integer",
                                self.previous_span(),
                            ));
                        }
                    }
                } else if self.is_punct('+') || self.is_punct('-') {
                    self.offset()?
                } else {
                    0
                };
                self.expect_punct(']')?;
                Ok(Operand::Address(Address { base, offset }))
            }
            Some(TokenKind::Ident(name)) => {
                self.at += 1;
                if name == "_" {
                    return Ok(Operand::Sink);
                }
                if let Some(token) = self.peek()
                    && !token.spaced
                    && let TokenKind::Directive(text) = &token.kind
                {
                    let span = token.span;
                    let component = Component::parse(text).ok_or_else(|| {
                        PtxError::syntax(format!("`.{text}` is not a vector component"), span)
                    })?;
                    self.at += 1;
                    return Ok(Operand::Component(name, component));
                }
                Ok(Operand::Name(name))
            }
            _ => Ok(Operand::Immediate(self.immediate()?)),
        }
    }
}
