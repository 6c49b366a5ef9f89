//! Semantic analysis: AST -> typed HIR. Resolves names to ids (structs,
//! then function signatures, then globals, then bodies, so functions may be
//! called before their definition), types every expression with C's usual
//! arithmetic conversions and makes each implicit conversion a `Cast` node,
//! classifies lvalues, resolves BSGP declaration by assignment, checks
//! `printf` formats, and computes which functions use SPMD constructs
//! (a fixpoint over the call graph). Errors are collected, never fatal.

use crate::ast::{self, BaseType, BinOp as ABin, ExprKind as AE, Initializer, UnOp};
use crate::diag::Diagnostic;
use crate::hir::*;
use crate::span::Span;
use std::collections::{HashMap, HashSet};

/// Diagnostic codes of semantic analysis.
pub mod codes {
    /// Unknown variable.
    pub const UNKNOWN_NAME: &str = "csubset::E020";
    /// Unknown function.
    pub const UNKNOWN_FUNCTION: &str = "csubset::E021";
    /// A name defined twice in one scope.
    pub const REDEFINITION: &str = "csubset::E022";
    /// A value of the wrong type (assignment, initialiser, argument, return).
    pub const TYPE_MISMATCH: &str = "csubset::E023";
    /// Operands a binary operator does not accept.
    pub const BAD_OPERANDS: &str = "csubset::E024";
    /// An operand a unary operator does not accept.
    pub const BAD_OPERAND: &str = "csubset::E025";
    /// Wrong number of arguments.
    pub const ARITY: &str = "csubset::E026";
    /// Assignment to something that is not an lvalue.
    pub const NOT_LVALUE: &str = "csubset::E027";
    /// `break` outside a loop.
    pub const BREAK_OUTSIDE_LOOP: &str = "csubset::E028";
    /// `continue` outside a loop.
    pub const CONTINUE_OUTSIDE_LOOP: &str = "csubset::E029";
    /// `return;` in a function with a result.
    pub const MISSING_RETURN_VALUE: &str = "csubset::E030";
    /// `return e;` in a `void` function.
    pub const RETURN_VALUE_IN_VOID: &str = "csubset::E031";
    /// A `printf` format that does not match its arguments.
    pub const PRINTF_FORMAT: &str = "csubset::E032";
    /// Unknown struct or field.
    pub const UNKNOWN_FIELD: &str = "csubset::E033";
    /// Calling something that is not a function.
    pub const NOT_CALLABLE: &str = "csubset::E034";
    /// A condition that is not a scalar.
    pub const BAD_CONDITION: &str = "csubset::E035";
    /// A cast between types that do not convert.
    pub const BAD_CAST: &str = "csubset::E036";
    /// Indexing something that is not an array or pointer.
    pub const BAD_INDEX: &str = "csubset::E037";
    /// Dereferencing or `->` on a non-pointer.
    pub const BAD_DEREF: &str = "csubset::E038";
    /// A BSGP declaration by assignment whose type cannot be inferred.
    pub const CANNOT_INFER: &str = "csubset::E040";
    /// A variable of type `void` or another invalid declared type.
    pub const BAD_DECL_TYPE: &str = "csubset::E041";
    /// An array size that is not a positive integer constant.
    pub const BAD_ARRAY_SIZE: &str = "csubset::E042";
    /// A function prototype without a definition, or a conflicting one.
    pub const BAD_PROTOTYPE: &str = "csubset::E012";
    /// An invalid `reduce`/`scan` operator.
    pub const BAD_COLLECTIVE_OP: &str = "csubset::E045";
    /// A string literal outside `printf`'s format.
    pub const STRING_LITERAL: &str = "csubset::E046";
    /// `thread.get`/`thread.put`/`scan` need a variable.
    pub const NEEDS_VARIABLE: &str = "csubset::E047";
    /// Unknown `thread.` member, or `thread` used alone.
    pub const BAD_THREAD: &str = "csubset::E049";
    /// An initialiser list that does not fit.
    pub const BAD_INITIALIZER: &str = "csubset::E050";
    /// A recursive struct.
    pub const RECURSIVE_STRUCT: &str = "csubset::E051";
    /// A non-void function (other than `main`) may end without `return`.
    pub const MISSING_RETURN: &str = "csubset::W004";
    /// A global initialiser that is not a constant expression.
    pub const NOT_CONSTANT: &str = "csubset::E052";
}

/// Check a parsed file. Always returns a HIR (with `Error` nodes where
/// something was wrong) plus the diagnostics.
pub fn analyze(ast: &ast::Ast, lang: Language) -> (Hir, Vec<Diagnostic>) {
    let s = Sema {
        lang,
        diags: Vec::new(),
        structs: Vec::new(),
        struct_ids: HashMap::new(),
        globals: Vec::new(),
        global_ids: HashMap::new(),
        sigs: Vec::new(),
        func_ids: HashMap::new(),
        vars: Vec::new(),
        var_in_require: Vec::new(),
        scopes: Vec::new(),
        cur_fn: FuncId(0),
        cur_ret: Type::Void,
        loops: 0,
        spawn_depth: 0,
        start_depth: 0,
        require_depth: 0,
        facts: Vec::new(),
    };
    s.run(ast)
}

struct FnSig {
    name: String,
    ret: Type,
    params: Vec<Type>,
    is_inline: bool,
    mode: Option<FnMode>,
    span: Span,
    name_span: Span,
}

#[derive(Default, Clone)]
struct Facts {
    /// Barrier/collective/rank-changing op outside own spawns.
    sync: bool,
    /// Any SPMD construct outside own spawns.
    spmd: bool,
    has_spawn: bool,
    /// Callees called outside own spawns and outside require.
    calls: Vec<FuncId>,
}

struct Sema {
    lang: Language,
    diags: Vec<Diagnostic>,
    structs: Vec<StructDef>,
    struct_ids: HashMap<String, StructId>,
    globals: Vec<Global>,
    global_ids: HashMap<String, GlobalId>,
    sigs: Vec<FnSig>,
    func_ids: HashMap<String, FuncId>,
    vars: Vec<VarInfo>,
    var_in_require: Vec<bool>,
    scopes: Vec<HashMap<String, VarId>>,
    cur_fn: FuncId,
    cur_ret: Type,
    loops: u32,
    spawn_depth: u32,
    /// Fork `start` blocks entered in the current function.
    start_depth: u32,
    require_depth: u32,
    facts: Vec<Facts>,
}

fn mk(kind: ExprKind, ty: Type, category: ValueCategory, span: Span) -> Expr {
    Expr {
        kind,
        ty,
        category,
        span,
    }
}

fn rv(kind: ExprKind, ty: Type, span: Span) -> Expr {
    mk(kind, ty, ValueCategory::RValue, span)
}

fn err_expr(span: Span) -> Expr {
    rv(ExprKind::Error, Type::Error, span)
}

fn int_rank(t: &Type) -> u32 {
    match t {
        Type::Bool => 0,
        Type::Char => 1,
        Type::Int | Type::UInt => 2,
        Type::Long | Type::ULong => 3,
        _ => 0,
    }
}

fn int_size(t: &Type) -> u32 {
    match t {
        Type::Bool | Type::Char => 1,
        Type::Int | Type::UInt => 4,
        _ => 8,
    }
}

/// The conversion from `from` to `to` (`Ok(None)`: same type), if C allows
/// it implicitly (or explicitly with `explicit`).
fn cast_kind(from: &Type, to: &Type, explicit: bool) -> Result<Option<CastKind>, ()> {
    use Type::*;
    if from == to {
        return Ok(None);
    }
    match (from, to) {
        (Error, _) | (_, Error) => Ok(None),
        (_, Void) if explicit => Ok(Some(CastKind::ToVoid)),
        (f, Bool) if f.is_scalar() => Ok(Some(CastKind::ToBool)),
        (Bool, t) if t.is_integer() => Ok(Some(CastKind::BoolToInt)),
        (Bool, t) if t.is_float() => Ok(Some(CastKind::BoolToFloat)),
        (f, t) if f.is_integer() && t.is_integer() => {
            Ok(Some(match int_size(f).cmp(&int_size(t)) {
                std::cmp::Ordering::Less => CastKind::IntExtend,
                std::cmp::Ordering::Equal => CastKind::NoOp,
                std::cmp::Ordering::Greater => CastKind::IntTrunc,
            }))
        }
        (f, t) if f.is_integer() && t.is_float() => Ok(Some(CastKind::IntToFloat)),
        (f, t) if f.is_float() && t.is_integer() => Ok(Some(CastKind::FloatToInt)),
        (Float, Double) => Ok(Some(CastKind::FloatExtend)),
        (Double, Float) => Ok(Some(CastKind::FloatTrunc)),
        (Null, Ptr(_)) => Ok(Some(CastKind::NullToPtr)),
        (Array(e, _), Ptr(p)) if e == p => Ok(Some(CastKind::ArrayDecay)),
        (Ptr(_), Ptr(_)) if explicit => Ok(Some(CastKind::PtrToPtr)),
        _ => Err(()),
    }
}

/// Conversion specifications of a printf format: what each consumes.
#[derive(Debug, PartialEq)]
enum FmtArg {
    /// `%d %i %c` (and `%u %x %o`): any integer of 32 bits or less.
    Int,
    /// `%ld %lu %lx ...`: long / unsigned long.
    Long,
    /// `%f %e %g %a`: double (float promotes).
    Double,
    /// `%s`: a `char*` (string literals are not values here).
    Str,
    /// `%p`: any pointer.
    Ptr,
    /// `*` width or precision: int.
    Star,
}

fn parse_format(fmt: &str) -> Result<Vec<FmtArg>, String> {
    let b = fmt.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if b.get(i) == Some(&b'%') {
            i += 1;
            continue;
        }
        while matches!(b.get(i), Some(b'-' | b'+' | b' ' | b'#' | b'0')) {
            i += 1;
        }
        if b.get(i) == Some(&b'*') {
            out.push(FmtArg::Star);
            i += 1;
        }
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if b.get(i) == Some(&b'*') {
                out.push(FmtArg::Star);
                i += 1;
            }
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        let mut longs = 0;
        while matches!(b.get(i), Some(b'l')) {
            longs += 1;
            i += 1;
        }
        while matches!(b.get(i), Some(b'h')) {
            i += 1;
        }
        let Some(&c) = b.get(i) else {
            return Err("incomplete conversion specification at the end".into());
        };
        i += 1;
        out.push(match c {
            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' if longs > 0 && c != b'c' => {
                FmtArg::Long
            }
            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' => FmtArg::Int,
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => FmtArg::Double,
            b's' => FmtArg::Str,
            b'p' => FmtArg::Ptr,
            other => {
                return Err(format!("unknown conversion `%{}`", other as char));
            }
        });
    }
    Ok(out)
}

impl Sema {
    fn error(&mut self, code: &'static str, msg: impl Into<String>, span: Span) {
        self.diags.push(Diagnostic::error(code, msg, span));
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// A type as C spells it.
    fn ts(&self, t: &Type) -> String {
        match t {
            Type::Void => "void".into(),
            Type::Bool => "bool".into(),
            Type::Char => "char".into(),
            Type::Int => "int".into(),
            Type::UInt => "unsigned".into(),
            Type::Long => "long".into(),
            Type::ULong => "unsigned long".into(),
            Type::Float => "float".into(),
            Type::Double => "double".into(),
            Type::Ptr(e) => format!("{}*", self.ts(e)),
            Type::Array(e, n) => format!("{}[{n}]", self.ts(e)),
            Type::Struct(id) => format!(
                "struct {}",
                self.structs
                    .get(id.0 as usize)
                    .map(|s| s.name.as_str())
                    .unwrap_or("?")
            ),
            Type::Null => "NULL".into(),
            Type::Error => "<error>".into(),
        }
    }

    // ---- top level ----

    fn run(mut self, ast: &ast::Ast) -> (Hir, Vec<Diagnostic>) {
        // 1. structs
        for item in &ast.items {
            if let ast::Item::Struct(sd) = item {
                self.declare_struct(sd);
            }
        }
        // 2. function signatures (definitions, then prototypes)
        let mut defs: Vec<&ast::FnDef> = Vec::new();
        for item in &ast.items {
            if let ast::Item::Function(f) = item
                && f.body.is_some()
            {
                if let Some(&prev) = self.func_ids.get(&f.name.text) {
                    let prev_span = self.sigs[prev.0 as usize].name_span;
                    self.push(
                        Diagnostic::error(
                            codes::REDEFINITION,
                            format!("function `{}` is defined twice", f.name.text),
                            f.name.span,
                        )
                        .with_label(prev_span, "first defined here"),
                    );
                    continue;
                }
                let sig = self.signature(f);
                let id = FuncId(self.sigs.len() as u32);
                self.func_ids.insert(f.name.text.clone(), id);
                self.sigs.push(sig);
                defs.push(f);
            }
        }
        for item in &ast.items {
            if let ast::Item::Function(f) = item
                && f.body.is_none()
            {
                self.check_prototype(f);
            }
        }
        // 3. globals
        for item in &ast.items {
            if let ast::Item::Global(d) = item {
                self.global_decl(d);
            }
        }
        // 4. bodies
        let mut functions = Vec::new();
        self.facts = vec![Facts::default(); defs.len()];
        for (i, f) in defs.iter().enumerate() {
            functions.push(self.function(FuncId(i as u32), f));
        }
        // 5. SPMD facts, transitively.
        let n = functions.len();
        let mut sync: Vec<bool> = self.facts.iter().map(|f| f.sync).collect();
        let mut spmd: Vec<bool> = self.facts.iter().map(|f| f.spmd).collect();
        // Propagate from callees to callers along reversed call edges:
        // each function enters each worklist at most once (linear).
        let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, f) in self.facts.iter().enumerate() {
            for c in &f.calls {
                if let Some(list) = callers.get_mut(c.0 as usize) {
                    list.push(i);
                }
            }
        }
        for flags in [&mut sync, &mut spmd] {
            let mut work: Vec<usize> = (0..n).filter(|&i| flags[i]).collect();
            while let Some(c) = work.pop() {
                for &i in &callers[c] {
                    if !flags[i] {
                        flags[i] = true;
                        work.push(i);
                    }
                }
            }
        }
        for (i, f) in functions.iter_mut().enumerate() {
            f.spmd_inline = sync[i];
            f.uses_spmd = spmd[i] || sync[i];
            f.has_spawn = self.facts[i].has_spawn;
        }
        for (v, in_req) in self.vars.iter_mut().zip(&self.var_in_require) {
            if spmd.get(v.func.0 as usize).copied().unwrap_or(false) && !in_req {
                v.space = Space::Thread;
            }
        }
        let hir = Hir {
            language: self.lang,
            structs: self.structs,
            globals: self.globals,
            functions,
            vars: self.vars,
        };
        (hir, self.diags)
    }

    fn declare_struct(&mut self, sd: &ast::StructDecl) {
        if let Some(&prev) = self.struct_ids.get(&sd.name.text) {
            let ps = self.structs[prev.0 as usize].span;
            self.push(
                Diagnostic::error(
                    codes::REDEFINITION,
                    format!("struct `{}` is defined twice", sd.name.text),
                    sd.name.span,
                )
                .with_label(ps, "first defined here"),
            );
            return;
        }
        let id = StructId(self.structs.len() as u32);
        self.struct_ids.insert(sd.name.text.clone(), id);
        self.structs.push(StructDef {
            id,
            name: sd.name.text.clone(),
            fields: Vec::new(),
            span: sd.span,
        });
        let mut fields: Vec<FieldDef> = Vec::new();
        for d in &sd.fields {
            for dc in &d.declarators {
                let ty = self.declarator_type(&d.base, d.base_span, dc, false);
                if ty == Type::Struct(id) {
                    self.error(
                        codes::RECURSIVE_STRUCT,
                        format!("struct `{}` contains itself", sd.name.text),
                        dc.span,
                    );
                    continue;
                }
                if ty == Type::Void {
                    self.error(
                        codes::BAD_DECL_TYPE,
                        "a field cannot have type void",
                        dc.span,
                    );
                    continue;
                }
                if fields.iter().any(|f| f.name == dc.name.text) {
                    self.error(
                        codes::REDEFINITION,
                        format!("field `{}` is declared twice", dc.name.text),
                        dc.name.span,
                    );
                    continue;
                }
                fields.push(FieldDef {
                    name: dc.name.text.clone(),
                    ty,
                    span: dc.span,
                });
            }
        }
        if let Some(s) = self.structs.get_mut(id.0 as usize) {
            s.fields = fields;
        }
    }

    fn base_type(&mut self, b: &BaseType, span: Span) -> Type {
        match b {
            BaseType::Void => Type::Void,
            BaseType::Bool => Type::Bool,
            BaseType::Char => Type::Char,
            BaseType::Int => Type::Int,
            BaseType::UInt => Type::UInt,
            BaseType::Long => Type::Long,
            BaseType::ULong => Type::ULong,
            BaseType::Float => Type::Float,
            BaseType::Double => Type::Double,
            BaseType::Struct(n) => match self.struct_ids.get(&n.text) {
                Some(id) => Type::Struct(*id),
                None => {
                    self.error(
                        codes::UNKNOWN_FIELD,
                        format!("unknown struct `{}`", n.text),
                        span.to(n.span),
                    );
                    Type::Error
                }
            },
        }
    }

    fn type_name(&mut self, t: &ast::TypeName) -> Type {
        let mut ty = self.base_type(&t.base, t.span);
        for _ in 0..t.pointers {
            ty = Type::Ptr(Box::new(ty));
        }
        ty
    }

    /// The declared type; `[]` dimensions become pointers when `params`,
    /// else need an initialiser list (sized by the caller).
    fn declarator_type(
        &mut self,
        base: &BaseType,
        bspan: Span,
        d: &ast::Declarator,
        params: bool,
    ) -> Type {
        let mut ty = self.base_type(base, bspan);
        for _ in 0..d.pointers {
            ty = Type::Ptr(Box::new(ty));
        }
        for (i, dim) in d.dims.iter().enumerate().rev() {
            match dim {
                Some(e) => {
                    let n = self.const_size(e);
                    ty = Type::Array(Box::new(ty), n);
                }
                None if params && i == 0 => ty = Type::Ptr(Box::new(ty)),
                None => {
                    let len = match (&d.init, i) {
                        (Some(Initializer::List(l, _)), 0) => l.len() as u64,
                        _ => {
                            self.error(
                                codes::BAD_ARRAY_SIZE,
                                format!("array `{}` needs a size", d.name.text),
                                d.span,
                            );
                            1
                        }
                    };
                    ty = Type::Array(Box::new(ty), len.max(1));
                }
            }
        }
        ty
    }

    fn const_size(&mut self, e: &ast::Expr) -> u64 {
        let he = self.rvalue(e);
        match const_int(&he) {
            Some(v) if v > 0 && v <= (1i128 << 32) => v as u64,
            Some(_) => {
                self.error(codes::BAD_ARRAY_SIZE, "array size must be positive", e.span);
                1
            }
            None => {
                if he.ty != Type::Error {
                    self.push(
                        Diagnostic::error(
                            codes::BAD_ARRAY_SIZE,
                            "array size must be an integer constant",
                            e.span,
                        )
                        .with_help("use `dnew[n]T` for arrays sized at run time"),
                    );
                }
                1
            }
        }
    }

    fn signature(&mut self, f: &ast::FnDef) -> FnSig {
        let ret = match &f.ret {
            Some(t) => self.type_name(t),
            None => Type::Void,
        };
        if matches!(ret, Type::Array(..)) {
            self.error(
                codes::BAD_DECL_TYPE,
                "functions cannot return arrays",
                f.name.span,
            );
        }
        let params = f.params.iter().map(|p| self.type_name(&p.ty)).collect();
        FnSig {
            name: f.name.text.clone(),
            ret,
            params,
            is_inline: f.is_inline,
            mode: f.mode,
            span: f.span,
            name_span: f.name.span,
        }
    }

    fn check_prototype(&mut self, f: &ast::FnDef) {
        let sig = self.signature(f);
        match (
            self.func_ids.get(&f.name.text),
            MathFn::from_name(&f.name.text),
        ) {
            // A prototype of a <math.h> builtin (what `#include <math.h>`
            // would have said) declares the builtin: it must say the
            // builtin's C signature.
            (None, Some((func, single))) => {
                let (real, name) = if single {
                    (Type::Float, "float")
                } else {
                    (Type::Double, "double")
                };
                if sig.ret != real
                    || sig.params.len() != func.arity()
                    || sig.params.iter().any(|p| *p != real)
                {
                    let params = vec![name; func.arity()].join(", ");
                    self.push(Diagnostic::error(
                        codes::BAD_PROTOTYPE,
                        format!(
                            "prototype of the builtin `{}` does not match its C signature `{name} {}({params})`",
                            f.name.text, f.name.text
                        ),
                        f.name.span,
                    ));
                }
            }
            (None, None) => self.push(
                Diagnostic::error(
                    codes::BAD_PROTOTYPE,
                    format!("function `{}` is declared but never defined", f.name.text),
                    f.name.span,
                )
                .with_help("pgpu links no external code: define the function in this file"),
            ),
            (Some(&id), _) => {
                let def = &self.sigs[id.0 as usize];
                if def.ret != sig.ret || def.params != sig.params {
                    let ds = def.name_span;
                    self.push(
                        Diagnostic::error(
                            codes::BAD_PROTOTYPE,
                            format!(
                                "prototype of `{}` does not match its definition",
                                f.name.text
                            ),
                            f.name.span,
                        )
                        .with_label(ds, "defined here"),
                    );
                }
            }
        }
    }

    fn global_decl(&mut self, d: &ast::Decl) {
        for dc in &d.declarators {
            let ty = self.declarator_type(&d.base, d.base_span, dc, false);
            if ty == Type::Void {
                self.error(
                    codes::BAD_DECL_TYPE,
                    "a variable cannot have type void",
                    dc.span,
                );
            }
            if let Some(&prev) = self.global_ids.get(&dc.name.text) {
                let ps = self.globals[prev.0 as usize].span;
                self.push(
                    Diagnostic::error(
                        codes::REDEFINITION,
                        format!("global `{}` is defined twice", dc.name.text),
                        dc.name.span,
                    )
                    .with_label(ps, "first defined here"),
                );
                continue;
            }
            if self.func_ids.contains_key(&dc.name.text) {
                self.error(
                    codes::REDEFINITION,
                    format!("`{}` is already a function", dc.name.text),
                    dc.name.span,
                );
            }
            let init = dc.init.as_ref().map(|i| self.initializer(i, &ty));
            if let Some(bad) = init.as_ref().and_then(non_constant) {
                self.push(
                    Diagnostic::error(
                        codes::NOT_CONSTANT,
                        "a global initialiser must be a constant expression",
                        bad,
                    )
                    .with_help("initialise the global in `main` instead"),
                );
            }
            let id = GlobalId(self.globals.len() as u32);
            self.global_ids.insert(dc.name.text.clone(), id);
            self.globals.push(Global {
                id,
                name: dc.name.text.clone(),
                ty,
                init,
                storage: d.storage,
                span: dc.span,
            });
        }
    }

    fn initializer(&mut self, i: &Initializer, ty: &Type) -> Init {
        match i {
            Initializer::Expr(e) => {
                if let AE::Str(_) = e.kind {
                    self.error(
                        codes::STRING_LITERAL,
                        "string literals are only allowed as printf formats",
                        e.span,
                    );
                    return Init::Expr(err_expr(e.span));
                }
                let he = self.rvalue(e);
                Init::Expr(self.convert(he, ty, "initialiser"))
            }
            Initializer::List(list, span) => match ty {
                Type::Array(elem, n) => {
                    if list.len() as u64 > *n {
                        self.error(
                            codes::BAD_INITIALIZER,
                            format!("{} initialisers for an array of {n}", list.len()),
                            *span,
                        );
                    }
                    let elem = (**elem).clone();
                    Init::List(list.iter().map(|i| self.initializer(i, &elem)).collect())
                }
                Type::Struct(id) => {
                    let ftys: Vec<Type> = self
                        .structs
                        .get(id.0 as usize)
                        .map(|s| s.fields.iter().map(|f| f.ty.clone()).collect())
                        .unwrap_or_default();
                    if list.len() > ftys.len() {
                        self.error(
                            codes::BAD_INITIALIZER,
                            format!(
                                "{} initialisers for a struct of {} fields",
                                list.len(),
                                ftys.len()
                            ),
                            *span,
                        );
                    }
                    Init::List(
                        list.iter()
                            .zip(ftys.iter())
                            .map(|(i, t)| self.initializer(i, t))
                            .collect(),
                    )
                }
                Type::Error => Init::List(Vec::new()),
                t if t.is_scalar() && list.len() == 1 => self.initializer(&list[0], t),
                _ => {
                    self.error(
                        codes::BAD_INITIALIZER,
                        format!("an initialiser list cannot initialise `{}`", self.ts(ty)),
                        *span,
                    );
                    Init::List(Vec::new())
                }
            },
        }
    }

    // ---- functions and statements ----

    fn function(&mut self, id: FuncId, f: &ast::FnDef) -> Function {
        self.cur_fn = id;
        let sig = &self.sigs[id.0 as usize];
        self.cur_ret = sig.ret.clone();
        let ptys = sig.params.clone();
        self.scopes = vec![HashMap::new()];
        self.loops = 0;
        self.spawn_depth = 0;
        self.start_depth = 0;
        self.require_depth = 0;
        let mut params = Vec::new();
        for (i, (p, ty)) in f.params.iter().zip(ptys).enumerate() {
            let Some(name) = &p.name else {
                self.error(codes::BAD_DECL_TYPE, "parameter needs a name", p.span);
                continue;
            };
            if ty == Type::Void {
                self.error(
                    codes::BAD_DECL_TYPE,
                    "a parameter cannot have type void",
                    p.span,
                );
            }
            let v = self.declare(name, ty, VarKind::Param(i as u32), false);
            if let Some(info) = self.vars.get_mut(v.0 as usize) {
                info.storage = p.storage;
            }
            params.push(v);
        }
        let body = match &f.body {
            Some(b) => self.block_in_scope(b),
            None => Block {
                stmts: Vec::new(),
                span: f.span,
            },
        };
        self.scopes.clear();
        let sig = &self.sigs[id.0 as usize];
        if sig.ret != Type::Void
            && sig.ret != Type::Error
            && sig.name != "main"
            && f.body.is_some()
            && falls_through(&body.stmts)
        {
            let end = Span {
                start: body.span.end.saturating_sub(1),
                end: body.span.end,
            };
            let d = Diagnostic::warning(
                codes::MISSING_RETURN,
                format!("`{}` may reach its end without returning a value", sig.name),
                end,
            )
            .with_help("the result is then undefined; add a `return`");
            self.diags.push(d);
        }
        let sig = &self.sigs[id.0 as usize];
        Function {
            id,
            name: sig.name.clone(),
            ret: sig.ret.clone(),
            params,
            body,
            is_inline: sig.is_inline,
            mode: sig.mode,
            spmd_inline: false,
            uses_spmd: false,
            has_spawn: false,
            span: sig.span,
            name_span: sig.name_span,
        }
    }

    fn declare(&mut self, name: &ast::Name, ty: Type, kind: VarKind, by_assignment: bool) -> VarId {
        let id = VarId(self.vars.len() as u32);
        if let Some(scope) = self.scopes.last()
            && let Some(&prev) = scope.get(&name.text)
        {
            let ps = self.vars[prev.0 as usize].span;
            self.push(
                Diagnostic::error(
                    codes::REDEFINITION,
                    format!("`{}` is already declared in this scope", name.text),
                    name.span,
                )
                .with_label(ps, "previous declaration"),
            );
        }
        let space = if self.spawn_depth > 0 && self.require_depth == 0 {
            Space::Thread
        } else {
            Space::Host
        };
        self.vars.push(VarInfo {
            id,
            name: name.text.clone(),
            ty,
            kind,
            func: self.cur_fn,
            space,
            by_assignment,
            storage: None,
            span: name.span,
        });
        self.var_in_require.push(self.require_depth > 0);
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.text.clone(), id);
        }
        id
    }

    fn lookup(&self, name: &str) -> Option<VarId> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    /// A block that opens a scope.
    fn block_in_scope(&mut self, b: &ast::Block) -> Block {
        self.scopes.push(HashMap::new());
        let stmts = self.stmts(&b.stmts);
        self.scopes.pop();
        Block {
            stmts,
            span: b.span,
        }
    }

    fn stmts(&mut self, ss: &[ast::Stmt]) -> Vec<Stmt> {
        let mut out = Vec::with_capacity(ss.len());
        for s in ss {
            self.stmt_into(s, &mut out);
        }
        out
    }

    /// A sub-statement (`if` branch, loop body): its own scope.
    fn sub_stmt(&mut self, s: &ast::Stmt) -> Box<Stmt> {
        self.scopes.push(HashMap::new());
        let mut out = Vec::new();
        self.stmt_into(s, &mut out);
        self.scopes.pop();
        Box::new(if out.len() == 1 {
            out.pop().unwrap_or(Stmt {
                kind: StmtKind::Empty,
                span: s.span,
            })
        } else {
            Stmt {
                kind: StmtKind::Block(Block {
                    stmts: out,
                    span: s.span,
                }),
                span: s.span,
            }
        })
    }

    /// The statements of `s` as a block that does NOT open a scope (spawn
    /// body: caller pushes; require and par: transparent).
    fn flat_block(&mut self, s: &ast::Stmt) -> Block {
        let mut out = Vec::new();
        match &s.kind {
            ast::StmtKind::Block(b) => {
                for s in &b.stmts {
                    self.stmt_into(s, &mut out);
                }
            }
            _ => self.stmt_into(s, &mut out),
        }
        Block {
            stmts: out,
            span: s.span,
        }
    }

    fn cond(&mut self, e: &ast::Expr) -> Expr {
        let he = self.rvalue(e);
        self.as_condition(he)
    }

    fn in_loop<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.loops += 1;
        let r = f(self);
        self.loops -= 1;
        r
    }

    fn stmt_into(&mut self, s: &ast::Stmt, out: &mut Vec<Stmt>) {
        let span = s.span;
        let kind = match &s.kind {
            ast::StmtKind::Error => return,
            ast::StmtKind::Empty => StmtKind::Empty,
            ast::StmtKind::Expr(e) => {
                if let Some(d) = self.decl_by_assignment(e) {
                    d
                } else {
                    StmtKind::Expr(self.rvalue_allow_void(e))
                }
            }
            ast::StmtKind::Decl(d) => {
                self.local_decl(d, out);
                return;
            }
            ast::StmtKind::Block(b) => StmtKind::Block(self.block_in_scope(b)),
            ast::StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let cond = self.cond(cond);
                let then_branch = self.sub_stmt(then_branch);
                let else_branch = else_branch.as_ref().map(|e| self.sub_stmt(e));
                StmtKind::If {
                    cond,
                    then_branch,
                    else_branch,
                }
            }
            ast::StmtKind::While { cond, body } => {
                let cond = self.cond(cond);
                let body = self.in_loop(|s| s.sub_stmt(body));
                StmtKind::While { cond, body }
            }
            ast::StmtKind::DoWhile { body, cond } => {
                let body = self.in_loop(|s| s.sub_stmt(body));
                let cond = self.cond(cond);
                StmtKind::DoWhile { body, cond }
            }
            ast::StmtKind::For {
                init,
                cond,
                step,
                body,
                pragma,
            } => {
                self.scopes.push(HashMap::new());
                let mut hinit = Vec::new();
                if let Some(i) = init {
                    self.stmt_into(i, &mut hinit);
                }
                let cond = cond.as_ref().map(|c| self.cond(c));
                let step = step.as_ref().map(|e| self.rvalue_allow_void(e));
                let body = self.in_loop(|s| s.sub_stmt(body));
                self.scopes.pop();
                StmtKind::For {
                    init: hinit,
                    cond,
                    step,
                    body,
                    speculate: pragma.as_ref().map(|p| Speculate {
                        window: p.window,
                        warp: p.warp,
                        span: p.span,
                    }),
                }
            }
            ast::StmtKind::Break => {
                if self.loops == 0 {
                    self.error(codes::BREAK_OUTSIDE_LOOP, "`break` outside a loop", span);
                }
                StmtKind::Break
            }
            ast::StmtKind::Continue => {
                if self.loops == 0 {
                    self.error(
                        codes::CONTINUE_OUTSIDE_LOOP,
                        "`continue` outside a loop",
                        span,
                    );
                }
                StmtKind::Continue
            }
            ast::StmtKind::Return(e) => {
                let ret = self.cur_ret.clone();
                match e {
                    None => {
                        if ret != Type::Void && ret != Type::Error {
                            let name = self.sigs[self.cur_fn.0 as usize].name.clone();
                            self.push(
                                Diagnostic::error(
                                    codes::MISSING_RETURN_VALUE,
                                    format!(
                                        "`return` without a value in `{name}`, which returns `{}`",
                                        self.ts(&ret)
                                    ),
                                    span,
                                )
                                .with_help("return a value"),
                            );
                        }
                        StmtKind::Return(None)
                    }
                    Some(e) => {
                        let he = self.rvalue_allow_void(e);
                        if ret == Type::Void {
                            if he.ty != Type::Error {
                                self.push(
                                    Diagnostic::error(
                                        codes::RETURN_VALUE_IN_VOID,
                                        "`return` with a value in a function that returns `void`",
                                        e.span,
                                    )
                                    .with_help("remove the value, or declare a result type"),
                                );
                            }
                            StmtKind::Return(None)
                        } else {
                            StmtKind::Return(Some(self.convert(he, &ret, "return value")))
                        }
                    }
                }
            }
            ast::StmtKind::Spawn { count, body } => {
                let c = self.rvalue(count);
                let count = self.convert(c, &Type::Int, "thread count");
                if self.spawn_depth == 0
                    && let Some(f) = self.facts.get_mut(self.cur_fn.0 as usize)
                {
                    f.has_spawn = true;
                }
                let saved_loops = std::mem::replace(&mut self.loops, 0);
                let saved_req = std::mem::replace(&mut self.require_depth, 0);
                self.spawn_depth += 1;
                self.scopes.push(HashMap::new());
                let body = self.flat_block(body);
                self.scopes.pop();
                self.spawn_depth -= 1;
                self.loops = saved_loops;
                self.require_depth = saved_req;
                StmtKind::Spawn { count, body }
            }
            ast::StmtKind::Barrier { rank_reassigned } => {
                self.note_spmd(true);
                StmtKind::Barrier {
                    rank_reassigned: *rank_reassigned,
                }
            }
            ast::StmtKind::Require(body) => {
                self.note_spmd(false);
                let saved_loops = std::mem::replace(&mut self.loops, 0);
                self.require_depth += 1;
                let body = self.flat_block(body);
                self.require_depth -= 1;
                self.loops = saved_loops;
                let outputs = require_outputs(&body, &self.vars);
                StmtKind::Require { body, outputs }
            }
            ast::StmtKind::Par(b) => {
                let mut branches = Vec::new();
                for s in &b.stmts {
                    self.stmt_into(s, &mut branches);
                }
                StmtKind::Par { branches }
            }
            ast::StmtKind::Start { count, body } => {
                let c = self.rvalue(count);
                let count = self.convert(c, &Type::Int, "group size");
                // A group of its own, as a spawn: its barriers and the
                // synchronous calls in it do not make the enclosing
                // function synchronizing.
                self.start_depth += 1;
                let body = self.sub_stmt(body);
                self.start_depth -= 1;
                StmtKind::Start { count, body }
            }
            ast::StmtKind::Fork {
                groups,
                group_id,
                rank,
                body,
            } => {
                let g = self.rvalue(groups);
                let groups = self.convert(g, &Type::Int, "group count");
                let g = self.rvalue(group_id);
                let group_id = self.convert(g, &Type::Int, "group id");
                let r = self.rvalue(rank);
                let rank = self.convert(r, &Type::Int, "rank");
                let body = self.sub_stmt(body);
                StmtKind::Fork {
                    groups,
                    group_id,
                    rank,
                    body,
                }
            }
            ast::StmtKind::Seq(b) => StmtKind::Seq(self.sub_stmt(b)),
            ast::StmtKind::Farm(b) => StmtKind::Farm(self.sub_stmt(b)),
        };
        out.push(Stmt { kind, span });
    }

    /// Record an SPMD construct outside this function's own spawns.
    fn note_spmd(&mut self, sync: bool) {
        if self.spawn_depth == 0
            && self.start_depth == 0
            && let Some(f) = self.facts.get_mut(self.cur_fn.0 as usize)
        {
            f.spmd = true;
            f.sync |= sync;
        }
    }

    /// BSGP `x = e;` with `x` not yet declared: declare it.
    fn decl_by_assignment(&mut self, e: &ast::Expr) -> Option<StmtKind> {
        if self.lang != Language::Bsgp {
            return None;
        }
        let AE::Assign { op: None, lhs, rhs } = &e.kind else {
            return None;
        };
        let AE::Ident(name) = &lhs.kind else {
            return None;
        };
        if self.lookup(name).is_some() || self.global_ids.contains_key(name) {
            return None;
        }
        let init = self.rvalue(rhs);
        let ty = match &init.ty {
            Type::Null => {
                self.push(
                    Diagnostic::error(
                        codes::CANNOT_INFER,
                        format!("cannot infer the type of `{name}` from NULL"),
                        lhs.span,
                    )
                    .with_help(format!("declare it with a type: `T* {name} = NULL;`")),
                );
                Type::Error
            }
            Type::Void => {
                self.error(
                    codes::CANNOT_INFER,
                    format!("cannot declare `{name}` from an expression of type void"),
                    rhs.span,
                );
                Type::Error
            }
            t => t.clone(),
        };
        let n = ast::Name {
            text: name.clone(),
            span: lhs.span,
        };
        let var = self.declare(&n, ty, VarKind::Local, true);
        Some(StmtKind::Decl {
            var,
            init: Some(Init::Expr(init)),
        })
    }

    fn local_decl(&mut self, d: &ast::Decl, out: &mut Vec<Stmt>) {
        for dc in &d.declarators {
            let ty = self.declarator_type(&d.base, d.base_span, dc, false);
            if ty == Type::Void {
                self.error(
                    codes::BAD_DECL_TYPE,
                    "a variable cannot have type void",
                    dc.span,
                );
            }
            let init = dc.init.as_ref().map(|i| self.initializer(i, &ty));
            let var = self.declare(&dc.name, ty, VarKind::Local, false);
            if let Some(v) = self.vars.get_mut(var.0 as usize) {
                v.storage = d.storage;
            }
            out.push(Stmt {
                kind: StmtKind::Decl { var, init },
                span: dc.span,
            });
        }
    }

    // ---- expressions ----

    /// An rvalue whose type may be void (expression statements).
    fn rvalue_allow_void(&mut self, e: &ast::Expr) -> Expr {
        let he = self.expr(e);
        decay(he)
    }

    /// An rvalue: arrays decayed; `void` is an error.
    fn rvalue(&mut self, e: &ast::Expr) -> Expr {
        let he = decay(self.expr(e));
        if he.ty == Type::Void {
            self.error(
                codes::TYPE_MISMATCH,
                "a `void` expression has no value",
                e.span,
            );
            return err_expr(e.span);
        }
        he
    }

    fn cast(&self, e: Expr, to: &Type, kind: Option<CastKind>, explicit: bool) -> Expr {
        match kind {
            None if !explicit => e,
            None => {
                let span = e.span;
                rv(
                    ExprKind::Cast {
                        kind: CastKind::NoOp,
                        explicit,
                        expr: Box::new(e),
                    },
                    to.clone(),
                    span,
                )
            }
            Some(kind) => {
                let span = e.span;
                rv(
                    ExprKind::Cast {
                        kind,
                        explicit,
                        expr: Box::new(e),
                    },
                    to.clone(),
                    span,
                )
            }
        }
    }

    /// Implicit conversion of an rvalue to `to`, with a diagnostic if C does
    /// not allow it.
    fn convert(&mut self, e: Expr, to: &Type, what: &str) -> Expr {
        if e.ty == Type::Error || *to == Type::Error {
            return e;
        }
        match cast_kind(&e.ty, to, false) {
            Ok(k) => self.cast(e, to, k, false),
            Err(()) => {
                let mut d = Diagnostic::error(
                    codes::TYPE_MISMATCH,
                    format!(
                        "mismatched types: {what} has type `{}`, expected `{}`",
                        self.ts(&e.ty),
                        self.ts(to)
                    ),
                    e.span,
                )
                .with_label_text(format!("this is `{}`", self.ts(&e.ty)));
                if matches!((&e.ty, to), (Type::Ptr(_), Type::Ptr(_))) {
                    d = d.with_help("pointer types must match exactly; use an explicit cast");
                }
                self.push(d);
                let span = e.span;
                err_expr(span)
            }
        }
    }

    fn as_condition(&mut self, e: Expr) -> Expr {
        if e.ty == Type::Error || e.ty == Type::Bool {
            return e;
        }
        if !e.ty.is_scalar() {
            self.error(
                codes::BAD_CONDITION,
                format!(
                    "a condition must be a number or pointer, not `{}`",
                    self.ts(&e.ty)
                ),
                e.span,
            );
            return err_expr(e.span);
        }
        self.cast(e, &Type::Bool, Some(CastKind::ToBool), false)
    }

    /// Integer promotion (bool, char -> int).
    fn promote(&mut self, e: Expr) -> Expr {
        match e.ty {
            Type::Bool | Type::Char => self.convert(e, &Type::Int, "operand"),
            _ => e,
        }
    }

    fn common_type(a: &Type, b: &Type) -> Type {
        use Type::*;
        if *a == Double || *b == Double {
            return Double;
        }
        if *a == Float || *b == Float {
            return Float;
        }
        let (ra, rb) = (int_rank(a), int_rank(b));
        let a = if ra < 2 { Int } else { a.clone() };
        let b = if rb < 2 { Int } else { b.clone() };
        if a == b {
            return a;
        }
        match (&a, &b) {
            (ULong, _) | (_, ULong) => ULong,
            (Long, _) | (_, Long) => Long,
            (UInt, _) | (_, UInt) => UInt,
            _ => Int,
        }
    }

    fn lvalue_check(&mut self, e: &Expr, what: &str) -> bool {
        if e.ty == Type::Error {
            return false;
        }
        if !e.category.is_lvalue() {
            self.push(
                Diagnostic::error(
                    codes::NOT_LVALUE,
                    format!("cannot {what} this expression"),
                    e.span,
                )
                .with_label_text("not an lvalue")
                .with_help("only variables, array elements, `*p` and fields can be assigned"),
            );
            return false;
        }
        if matches!(e.ty, Type::Array(..)) {
            self.error(codes::NOT_LVALUE, format!("cannot {what} an array"), e.span);
            return false;
        }
        true
    }

    fn expr(&mut self, e: &ast::Expr) -> Expr {
        let span = e.span;
        match &e.kind {
            AE::Error => err_expr(span),
            AE::Int {
                value,
                unsigned,
                long,
                non_decimal,
            } => {
                let v = *value;
                let ty = if *unsigned {
                    if !*long && v <= u32::MAX as u64 {
                        Type::UInt
                    } else {
                        Type::ULong
                    }
                } else if !*long && v <= i32::MAX as u64 {
                    Type::Int
                } else if !*long && *non_decimal && v <= u32::MAX as u64 {
                    Type::UInt
                } else if v <= i64::MAX as u64 {
                    Type::Long
                } else {
                    Type::ULong
                };
                rv(ExprKind::IntLit(v), ty, span)
            }
            AE::Float { bits, single } => rv(
                ExprKind::FloatLit { bits: *bits },
                if *single { Type::Float } else { Type::Double },
                span,
            ),
            AE::Char(c) => rv(ExprKind::IntLit(u64::from(*c)), Type::Int, span),
            AE::Bool(b) => rv(ExprKind::BoolLit(*b), Type::Bool, span),
            AE::Null => rv(ExprKind::Null, Type::Null, span),
            AE::Str(_) => {
                self.error(
                    codes::STRING_LITERAL,
                    "string literals are only allowed as printf formats",
                    span,
                );
                err_expr(span)
            }
            AE::Ident(name) => {
                if let Some(v) = self.lookup(name) {
                    let ty = self.vars[v.0 as usize].ty.clone();
                    return mk(ExprKind::Var(v), ty, ValueCategory::Local, span);
                }
                if let Some(&g) = self.global_ids.get(name) {
                    let ty = self.globals[g.0 as usize].ty.clone();
                    return mk(ExprKind::Global(g), ty, ValueCategory::Global, span);
                }
                if self.func_ids.contains_key(name) {
                    self.error(
                        codes::NOT_CALLABLE,
                        format!("function `{name}` used as a value (function pointers are not supported)"),
                        span,
                    );
                    return err_expr(span);
                }
                let mut d =
                    Diagnostic::error(codes::UNKNOWN_NAME, format!("unknown name `{name}`"), span)
                        .with_label_text("not declared");
                // Suggestions cost a scan of the visible names: only for the
                // first errors of a run.
                let similar = if self.diags.len() < 100 {
                    let names = self
                        .scopes
                        .iter()
                        .flat_map(|s| s.keys())
                        .chain(self.global_ids.keys())
                        .map(String::as_str);
                    suggest(name, names).map(str::to_string)
                } else {
                    None
                };
                if let Some(similar) = similar {
                    d = d.with_help(format!(
                        "a name with a similar spelling exists: `{similar}`"
                    ));
                } else if self.lang == Language::Bsgp {
                    d = d.with_help(format!("declare it, or assign it first (`{name} = ...;`)"));
                } else if name == "thread" || name == "spawn" || name == "barrier" {
                    d = d.with_help("this is a BSGP construct: compile the file as BSGP");
                }
                self.push(d);
                err_expr(span)
            }
            AE::Unary { op, operand } => self.unary(*op, operand, span),
            AE::Binary { op, lhs, rhs } => {
                let l = self.rvalue(lhs);
                let r = self.rvalue(rhs);
                self.binary(*op, l, r, span)
            }
            AE::Assign { op, lhs, rhs } => {
                let target = self.expr(lhs);
                let value = self.rvalue(rhs);
                if !self.lvalue_check(&target, "assign to") {
                    return err_expr(span);
                }
                let tty = target.ty.clone();
                let cat = ValueCategory::RValue;
                match op {
                    None => {
                        let value = self.convert(value, &tty, "the assigned value");
                        mk(
                            ExprKind::Assign {
                                target: Box::new(target),
                                value: Box::new(value),
                            },
                            tty,
                            cat,
                            span,
                        )
                    }
                    Some(op) => {
                        if value.ty == Type::Error {
                            return err_expr(span);
                        }
                        let hop = bin_op(*op);
                        if matches!(tty, Type::Ptr(_)) && matches!(op, ABin::Add | ABin::Sub) {
                            if !value.ty.is_integer() {
                                self.bad_operands(*op, &tty, &value.ty, span);
                                return err_expr(span);
                            }
                            let v = self.convert(value, &Type::Long, "offset");
                            return mk(
                                ExprKind::CompoundAssign {
                                    op: hop,
                                    target: Box::new(target),
                                    value: Box::new(v),
                                    op_ty: Type::Long,
                                },
                                tty,
                                cat,
                                span,
                            );
                        }
                        // Type the operation as `target op value` would be.
                        let probe_l = rv(ExprKind::Error, tty.clone(), target.span);
                        let vty = value.ty.clone();
                        let probe_r = rv(ExprKind::Error, vty.clone(), value.span);
                        let n = self.diags.len();
                        let probe = self.binary(*op, probe_l, probe_r, span);
                        if self.diags.len() > n || probe.ty == Type::Error {
                            return err_expr(span);
                        }
                        let op_ty = match &probe.kind {
                            ExprKind::Binary { lhs, .. } => lhs.ty.clone(),
                            _ => probe.ty.clone(),
                        };
                        let op_ty = if op_ty == Type::Bool {
                            Type::Int
                        } else {
                            op_ty
                        };
                        let value = if matches!(op, ABin::Shl | ABin::Shr) {
                            let v = self.promote(value);
                            self.convert(v, &op_ty, "shift amount")
                        } else {
                            self.convert(value, &op_ty, "operand")
                        };
                        mk(
                            ExprKind::CompoundAssign {
                                op: hop,
                                target: Box::new(target),
                                value: Box::new(value),
                                op_ty,
                            },
                            tty,
                            cat,
                            span,
                        )
                    }
                }
            }
            AE::Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                let c = self.cond(cond);
                let a = self.rvalue(then_expr);
                let b = self.rvalue(else_expr);
                if a.ty == Type::Error || b.ty == Type::Error {
                    return err_expr(span);
                }
                let ty = if a.ty.is_arithmetic() && b.ty.is_arithmetic() {
                    if a.ty == Type::Bool && b.ty == Type::Bool {
                        Type::Bool
                    } else {
                        Self::common_type(&a.ty, &b.ty)
                    }
                } else if a.ty == b.ty || (matches!(a.ty, Type::Ptr(_)) && b.ty == Type::Null) {
                    a.ty.clone()
                } else if matches!(b.ty, Type::Ptr(_)) && a.ty == Type::Null {
                    b.ty.clone()
                } else {
                    self.push(
                        Diagnostic::error(
                            codes::TYPE_MISMATCH,
                            format!(
                                "the branches of `?:` have incompatible types `{}` and `{}`",
                                self.ts(&a.ty),
                                self.ts(&b.ty)
                            ),
                            span,
                        )
                        .with_label(a.span, self.ts(&a.ty))
                        .with_label(b.span, self.ts(&b.ty)),
                    );
                    return err_expr(span);
                };
                let a = self.convert(a, &ty, "branch");
                let b = self.convert(b, &ty, "branch");
                rv(
                    ExprKind::Cond {
                        cond: Box::new(c),
                        then_expr: Box::new(a),
                        else_expr: Box::new(b),
                    },
                    ty,
                    span,
                )
            }
            AE::Cast { ty, expr } => {
                let to = self.type_name(ty);
                let inner = self.rvalue(expr);
                if inner.ty == Type::Error || to == Type::Error {
                    return err_expr(span);
                }
                match cast_kind(&inner.ty, &to, true) {
                    Ok(k) => {
                        let mut c = self.cast(inner, &to, k, true);
                        c.span = span;
                        c
                    }
                    Err(()) => {
                        self.error(
                            codes::BAD_CAST,
                            format!("cannot cast `{}` to `{}`", self.ts(&inner.ty), self.ts(&to)),
                            span,
                        );
                        err_expr(span)
                    }
                }
            }
            AE::SizeofType(t) => {
                let ty = self.type_name(t);
                let n = ty.size_of(&self.structs);
                rv(ExprKind::IntLit(n), Type::ULong, span)
            }
            AE::SizeofExpr(x) => {
                // Typed for its type only; not evaluated.
                let he = self.expr(x);
                let n = he.ty.size_of(&self.structs);
                rv(ExprKind::IntLit(n), Type::ULong, span)
            }
            AE::Index { base, index } => {
                let b = self.expr(base);
                let i = self.rvalue(index);
                if b.ty == Type::Error || i.ty == Type::Error {
                    return err_expr(span);
                }
                let elem = match &b.ty {
                    Type::Array(t, _) | Type::Ptr(t) => (**t).clone(),
                    other => {
                        self.push(
                            Diagnostic::error(
                                codes::BAD_INDEX,
                                format!("cannot index a value of type `{}`", self.ts(other)),
                                b.span,
                            )
                            .with_label_text("not an array or pointer"),
                        );
                        return err_expr(span);
                    }
                };
                if !i.ty.is_integer() {
                    self.error(
                        codes::BAD_INDEX,
                        format!("an index must be an integer, not `{}`", self.ts(&i.ty)),
                        i.span,
                    );
                    return err_expr(span);
                }
                let i = self.convert(i, &Type::Long, "index");
                mk(
                    ExprKind::Index {
                        base: Box::new(b),
                        index: Box::new(i),
                    },
                    elem,
                    ValueCategory::Memory,
                    span,
                )
            }
            AE::Member { base, field, arrow } => {
                if let AE::Thread = base.kind {
                    return self.thread_attr(field, span);
                }
                let b = self.expr(base);
                if b.ty == Type::Error {
                    return err_expr(span);
                }
                let (sbase, cat) = if *arrow {
                    match &b.ty {
                        Type::Ptr(t) if matches!(**t, Type::Struct(_)) => {
                            let t = (**t).clone();
                            let bspan = b.span;
                            let d = mk(
                                ExprKind::Deref(Box::new(decay(b))),
                                t,
                                ValueCategory::Memory,
                                bspan,
                            );
                            (d, ValueCategory::Memory)
                        }
                        other => {
                            self.error(
                                codes::BAD_DEREF,
                                format!(
                                    "`->` needs a pointer to a struct, not `{}`",
                                    self.ts(other)
                                ),
                                b.span,
                            );
                            return err_expr(span);
                        }
                    }
                } else {
                    let c = b.category;
                    (b, c)
                };
                let Type::Struct(sid) = sbase.ty else {
                    let help = if matches!(sbase.ty, Type::Ptr(_)) {
                        "use `->` on a pointer"
                    } else {
                        "only structs have fields"
                    };
                    self.push(
                        Diagnostic::error(
                            codes::UNKNOWN_FIELD,
                            format!("`{}` has no field `{}`", self.ts(&sbase.ty), field.text),
                            field.span,
                        )
                        .with_help(help),
                    );
                    return err_expr(span);
                };
                let found = self.structs.get(sid.0 as usize).and_then(|s| {
                    s.fields
                        .iter()
                        .position(|f| f.name == field.text)
                        .map(|i| (i, s.fields[i].ty.clone()))
                });
                match found {
                    Some((i, fty)) => mk(
                        ExprKind::Field {
                            base: Box::new(sbase),
                            field: i as u32,
                        },
                        fty,
                        cat,
                        span,
                    ),
                    None => {
                        self.error(
                            codes::UNKNOWN_FIELD,
                            format!("`{}` has no field `{}`", self.ts(&sbase.ty), field.text),
                            field.span,
                        );
                        err_expr(span)
                    }
                }
            }
            AE::Call { callee, args } => self.call(callee, args, span),
            AE::Comma { lhs, rhs } => {
                let l = self.rvalue_allow_void(lhs);
                let r = self.rvalue_allow_void(rhs);
                let ty = r.ty.clone();
                rv(
                    ExprKind::Comma {
                        lhs: Box::new(l),
                        rhs: Box::new(r),
                    },
                    ty,
                    span,
                )
            }
            AE::Thread => {
                self.push(
                    Diagnostic::error(codes::BAD_THREAD, "`thread` is not a value", span)
                        .with_help("use `thread.rank`, `thread.size`, `thread.oldrank` or a `thread.` operation"),
                );
                err_expr(span)
            }
            AE::DNew { temp, count, ty } => {
                let elem = self.type_name(ty);
                if elem == Type::Void {
                    self.error(
                        codes::BAD_DECL_TYPE,
                        "cannot allocate `void` elements",
                        ty.span,
                    );
                }
                let c = self.rvalue(count);
                let c = self.convert(c, &Type::Int, "element count");
                rv(
                    ExprKind::DNew {
                        temp: *temp,
                        count: Box::new(c),
                        elem: elem.clone(),
                    },
                    Type::Ptr(Box::new(elem)),
                    span,
                )
            }
            AE::OpArg(_) => {
                self.error(
                    codes::BAD_COLLECTIVE_OP,
                    "an operator is only allowed as the first argument of `reduce`/`scan`",
                    span,
                );
                err_expr(span)
            }
            AE::Dollar => rv(ExprKind::ProcessorId, Type::Int, span),
            AE::DollarDollar => rv(ExprKind::GroupRank, Type::Int, span),
            AE::At => rv(ExprKind::GroupId, Type::Int, span),
        }
    }

    fn thread_attr(&mut self, field: &ast::Name, span: Span) -> Expr {
        let (kind, cat) = match field.text.as_str() {
            "rank" => (ExprKind::ThreadRank, ValueCategory::RValue),
            "size" => (ExprKind::ThreadSize, ValueCategory::RValue),
            "oldrank" => (ExprKind::ThreadOldRank, ValueCategory::OldRank),
            other => {
                let msg = if matches!(other, "fork" | "kill" | "sortby" | "split" | "get" | "put") {
                    format!("`thread.{other}` must be called")
                } else {
                    format!("unknown thread attribute `thread.{other}`")
                };
                self.push(
                    Diagnostic::error(codes::BAD_THREAD, msg, field.span)
                        .with_help("thread attributes: rank, size, oldrank; operations: fork, kill, sortby, split, get, put"),
                );
                return err_expr(span);
            }
        };
        self.note_spmd(false);
        mk(kind, Type::Int, cat, span)
    }

    fn bad_operands(&mut self, op: ABin, l: &Type, r: &Type, span: Span) {
        self.error(
            codes::BAD_OPERANDS,
            format!(
                "invalid operands to `{}`: `{}` and `{}`",
                op_str(op),
                self.ts(l),
                self.ts(r)
            ),
            span,
        );
    }

    fn binary(&mut self, op: ABin, l: Expr, r: Expr, span: Span) -> Expr {
        use ABin::*;
        if l.ty == Type::Error || r.ty == Type::Error {
            return err_expr(span);
        }
        let hop = bin_op(op);
        let bin = |lhs: Expr, rhs: Expr, ty: Type| {
            rv(
                ExprKind::Binary {
                    op: hop,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                ty,
                span,
            )
        };
        match op {
            LogAnd | LogOr => {
                if !l.ty.is_scalar() || !r.ty.is_scalar() {
                    self.bad_operands(op, &l.ty, &r.ty, span);
                    return err_expr(span);
                }
                let l = self.as_condition(l);
                let r = self.as_condition(r);
                bin(l, r, Type::Bool)
            }
            Add | Sub if matches!(l.ty, Type::Ptr(_)) || matches!(r.ty, Type::Ptr(_)) => {
                match (&l.ty, &r.ty) {
                    (Type::Ptr(_), t) if t.is_integer() => {
                        let pty = l.ty.clone();
                        let off = self.convert(r, &Type::Long, "offset");
                        let off = if op == Sub {
                            let s = off.span;
                            rv(
                                ExprKind::Unary {
                                    op: UnaryOp::Neg,
                                    operand: Box::new(off),
                                },
                                Type::Long,
                                s,
                            )
                        } else {
                            off
                        };
                        rv(
                            ExprKind::PtrAdd {
                                ptr: Box::new(l),
                                offset: Box::new(off),
                            },
                            pty,
                            span,
                        )
                    }
                    (t, Type::Ptr(_)) if t.is_integer() && op == Add => {
                        let pty = r.ty.clone();
                        let off = self.convert(l, &Type::Long, "offset");
                        rv(
                            ExprKind::PtrAdd {
                                ptr: Box::new(r),
                                offset: Box::new(off),
                            },
                            pty,
                            span,
                        )
                    }
                    (Type::Ptr(a), Type::Ptr(b)) if op == Sub && a == b => rv(
                        ExprKind::PtrDiff {
                            lhs: Box::new(l),
                            rhs: Box::new(r),
                        },
                        Type::Long,
                        span,
                    ),
                    _ => {
                        self.bad_operands(op, &l.ty, &r.ty, span);
                        err_expr(span)
                    }
                }
            }
            Add | Sub | Mul | Div => {
                if !l.ty.is_arithmetic() || !r.ty.is_arithmetic() {
                    self.bad_operands(op, &l.ty, &r.ty, span);
                    return err_expr(span);
                }
                let ty = Self::common_type(&l.ty, &r.ty);
                let l = self.convert(l, &ty, "operand");
                let r = self.convert(r, &ty, "operand");
                bin(l, r, ty)
            }
            Rem | BitAnd | BitOr | BitXor => {
                if !l.ty.is_integer() || !r.ty.is_integer() {
                    self.bad_operands(op, &l.ty, &r.ty, span);
                    return err_expr(span);
                }
                let ty = Self::common_type(&l.ty, &r.ty);
                let l = self.convert(l, &ty, "operand");
                let r = self.convert(r, &ty, "operand");
                bin(l, r, ty)
            }
            Shl | Shr => {
                if !l.ty.is_integer() || !r.ty.is_integer() {
                    self.bad_operands(op, &l.ty, &r.ty, span);
                    return err_expr(span);
                }
                let l = self.promote(l);
                let ty = l.ty.clone();
                let r = self.promote(r);
                let r = self.convert(r, &ty, "shift amount");
                bin(l, r, ty)
            }
            Eq | Ne | Lt | Le | Gt | Ge => {
                if l.ty.is_arithmetic() && r.ty.is_arithmetic() {
                    let ty = if l.ty == Type::Bool && r.ty == Type::Bool && matches!(op, Eq | Ne) {
                        Type::Bool
                    } else {
                        Self::common_type(&l.ty, &r.ty)
                    };
                    let l = self.convert(l, &ty, "operand");
                    let r = self.convert(r, &ty, "operand");
                    return bin(l, r, Type::Bool);
                }
                match (&l.ty, &r.ty) {
                    (Type::Ptr(a), Type::Ptr(b)) if a == b => bin(l, r, Type::Bool),
                    (Type::Ptr(_), Type::Null) if matches!(op, Eq | Ne) => {
                        let t = l.ty.clone();
                        let r = self.convert(r, &t, "operand");
                        bin(l, r, Type::Bool)
                    }
                    (Type::Null, Type::Ptr(_)) if matches!(op, Eq | Ne) => {
                        let t = r.ty.clone();
                        let l = self.convert(l, &t, "operand");
                        bin(l, r, Type::Bool)
                    }
                    _ => {
                        self.bad_operands(op, &l.ty, &r.ty, span);
                        err_expr(span)
                    }
                }
            }
        }
    }

    fn unary(&mut self, op: UnOp, operand: &ast::Expr, span: Span) -> Expr {
        match op {
            UnOp::PreInc | UnOp::PreDec | UnOp::PostInc | UnOp::PostDec => {
                let t = self.expr(operand);
                let what = if matches!(op, UnOp::PreInc | UnOp::PostInc) {
                    "increment"
                } else {
                    "decrement"
                };
                if !self.lvalue_check(&t, what) {
                    return err_expr(span);
                }
                if !(t.ty.is_arithmetic() || matches!(t.ty, Type::Ptr(_))) || t.ty == Type::Bool {
                    self.error(
                        codes::BAD_OPERAND,
                        format!("cannot {what} a value of type `{}`", self.ts(&t.ty)),
                        span,
                    );
                    return err_expr(span);
                }
                let ty = t.ty.clone();
                rv(
                    ExprKind::IncDec {
                        target: Box::new(t),
                        increment: matches!(op, UnOp::PreInc | UnOp::PostInc),
                        prefix: matches!(op, UnOp::PreInc | UnOp::PreDec),
                    },
                    ty,
                    span,
                )
            }
            UnOp::AddrOf => {
                let t = self.expr(operand);
                if t.ty == Type::Error {
                    return err_expr(span);
                }
                if !t.category.is_lvalue() || t.category == ValueCategory::OldRank {
                    self.error(
                        codes::BAD_OPERAND,
                        "cannot take the address of this expression",
                        span,
                    );
                    return err_expr(span);
                }
                let ty = match &t.ty {
                    // `&arr` is treated as a pointer to the first element.
                    Type::Array(e, _) => Type::Ptr(e.clone()),
                    other => Type::Ptr(Box::new(other.clone())),
                };
                rv(ExprKind::AddrOf(Box::new(t)), ty, span)
            }
            UnOp::Deref => {
                let p = self.rvalue(operand);
                match &p.ty {
                    Type::Error => err_expr(span),
                    Type::Ptr(t) => {
                        let t = (**t).clone();
                        mk(ExprKind::Deref(Box::new(p)), t, ValueCategory::Memory, span)
                    }
                    other => {
                        self.error(
                            codes::BAD_DEREF,
                            format!("cannot dereference a value of type `{}`", self.ts(other)),
                            span,
                        );
                        err_expr(span)
                    }
                }
            }
            UnOp::Not => {
                let v = self.rvalue(operand);
                if v.ty == Type::Error {
                    return err_expr(span);
                }
                if !v.ty.is_scalar() {
                    self.error(
                        codes::BAD_OPERAND,
                        format!("invalid operand to `!`: `{}`", self.ts(&v.ty)),
                        span,
                    );
                    return err_expr(span);
                }
                let b = self.as_condition(v);
                rv(
                    ExprKind::Unary {
                        op: UnaryOp::Not,
                        operand: Box::new(b),
                    },
                    Type::Bool,
                    span,
                )
            }
            UnOp::Neg | UnOp::Plus | UnOp::BitNot => {
                let v = self.rvalue(operand);
                if v.ty == Type::Error {
                    return err_expr(span);
                }
                let ok = if op == UnOp::BitNot {
                    v.ty.is_integer()
                } else {
                    v.ty.is_arithmetic()
                };
                if !ok {
                    let s = match op {
                        UnOp::Neg => "-",
                        UnOp::Plus => "+",
                        _ => "~",
                    };
                    self.error(
                        codes::BAD_OPERAND,
                        format!("invalid operand to unary `{s}`: `{}`", self.ts(&v.ty)),
                        span,
                    );
                    return err_expr(span);
                }
                let v = self.promote(v);
                if op == UnOp::Plus {
                    return v;
                }
                let ty = v.ty.clone();
                rv(
                    ExprKind::Unary {
                        op: if op == UnOp::Neg {
                            UnaryOp::Neg
                        } else {
                            UnaryOp::BitNot
                        },
                        operand: Box::new(v),
                    },
                    ty,
                    span,
                )
            }
        }
    }

    fn arity(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        min: usize,
        max: usize,
        span: Span,
    ) -> bool {
        if args.len() < min || args.len() > max {
            let expected = if min == max {
                format!("{min}")
            } else {
                format!("{min} or {max}")
            };
            self.error(
                codes::ARITY,
                format!(
                    "`{name}` takes {expected} argument{}, but {} {} given",
                    if max == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
                span,
            );
            // Still type the arguments for their own errors.
            for a in args {
                if !matches!(a.kind, AE::OpArg(_) | AE::Str(_)) {
                    self.rvalue_allow_void(a);
                }
            }
            return false;
        }
        true
    }

    /// A thread-local variable argument (`thread.get`, `scan`).
    fn var_arg(&mut self, a: &ast::Expr, what: &str) -> Option<(VarId, Type)> {
        if let AE::Ident(n) = &a.kind
            && let Some(v) = self.lookup(n)
        {
            return Some((v, self.vars[v.0 as usize].ty.clone()));
        }
        let e = self.expr(a);
        if e.ty != Type::Error {
            self.push(
                Diagnostic::error(
                    codes::NEEDS_VARIABLE,
                    format!("{what} needs a local variable"),
                    a.span,
                )
                .with_help("assign the value to a variable first"),
            );
        }
        None
    }

    fn collective_op(&mut self, a: &ast::Expr) -> Option<CollectiveOp> {
        match &a.kind {
            AE::OpArg(ABin::Add) => Some(CollectiveOp::Add),
            AE::OpArg(ABin::Mul) => Some(CollectiveOp::Mul),
            AE::OpArg(ABin::BitAnd) => Some(CollectiveOp::And),
            AE::OpArg(ABin::BitOr) => Some(CollectiveOp::Or),
            AE::OpArg(ABin::BitXor) => Some(CollectiveOp::Xor),
            AE::Ident(s) if s == "min" && self.lookup(s).is_none() => Some(CollectiveOp::Min),
            AE::Ident(s) if s == "max" && self.lookup(s).is_none() => Some(CollectiveOp::Max),
            _ => {
                self.push(
                    Diagnostic::error(
                        codes::BAD_COLLECTIVE_OP,
                        "invalid collective operator",
                        a.span,
                    )
                    .with_help("use one of `+ * min max & | ^`"),
                );
                None
            }
        }
    }

    fn call(&mut self, callee: &ast::Expr, args: &[ast::Expr], span: Span) -> Expr {
        if let AE::Member {
            base,
            field,
            arrow: false,
        } = &callee.kind
            && let AE::Thread = base.kind
        {
            return self.thread_call(&field.text, field.span, args, span);
        }
        let AE::Ident(name) = &callee.kind else {
            let c = self.expr(callee);
            if c.ty != Type::Error {
                self.error(
                    codes::NOT_CALLABLE,
                    "only named functions can be called",
                    callee.span,
                );
            }
            return err_expr(span);
        };
        if let Some(v) = self.lookup(name) {
            let vs = self.vars[v.0 as usize].span;
            self.push(
                Diagnostic::error(
                    codes::NOT_CALLABLE,
                    format!("`{name}` is a variable, not a function"),
                    callee.span,
                )
                .with_label(vs, "declared here"),
            );
            return err_expr(span);
        }
        if let Some(&fid) = self.func_ids.get(name) {
            let (ret, ptys) = {
                let s = &self.sigs[fid.0 as usize];
                (s.ret.clone(), s.params.clone())
            };
            if args.len() != ptys.len() {
                let ds = self.sigs[fid.0 as usize].name_span;
                self.push(
                    Diagnostic::error(
                        codes::ARITY,
                        format!(
                            "`{name}` takes {} argument{}, but {} {} given",
                            ptys.len(),
                            if ptys.len() == 1 { "" } else { "s" },
                            args.len(),
                            if args.len() == 1 { "was" } else { "were" }
                        ),
                        span,
                    )
                    .with_label(ds, "defined here"),
                );
                for a in args {
                    self.rvalue_allow_void(a);
                }
                return err_expr(span);
            }
            let mut hargs = Vec::new();
            for (a, t) in args.iter().zip(&ptys) {
                let e = self.rvalue(a);
                hargs.push(self.convert(e, t, "argument"));
            }
            if self.spawn_depth == 0
                && self.start_depth == 0
                && self.require_depth == 0
                && let Some(f) = self.facts.get_mut(self.cur_fn.0 as usize)
            {
                f.calls.push(fid);
            }
            return rv(
                ExprKind::Call {
                    func: fid,
                    args: hargs,
                },
                ret,
                span,
            );
        }
        self.builtin(name, callee.span, args, span)
    }

    fn builtin(&mut self, name: &str, name_span: Span, args: &[ast::Expr], span: Span) -> Expr {
        let bsgp = self.lang == Language::Bsgp;
        let fork = self.lang == Language::Fork;
        if let Some((func, single)) = MathFn::from_name(name) {
            return self.math_builtin(func, single, name, args, span);
        }
        match name {
            "printf" => self.printf(args, span),
            "argi" => {
                if !self.arity(name, args, 1, 2, span) {
                    return err_expr(span);
                }
                let i = self.rvalue(&args[0]);
                let i = self.convert(i, &Type::Int, "argument index");
                let d = args.get(1).map(|a| {
                    let d = self.rvalue(a);
                    Box::new(self.convert(d, &Type::Int, "default value"))
                });
                rv(
                    ExprKind::Builtin(Builtin::Argi {
                        index: Box::new(i),
                        default: d,
                    }),
                    Type::Int,
                    span,
                )
            }
            "wtime" => {
                if !self.arity(name, args, 0, 0, span) {
                    return err_expr(span);
                }
                rv(ExprKind::Builtin(Builtin::Wtime), Type::Double, span)
            }
            "rand_u32" => {
                if !self.arity(name, args, 0, 0, span) {
                    return err_expr(span);
                }
                rv(ExprKind::Builtin(Builtin::RandU32), Type::UInt, span)
            }
            "rand_seed" => {
                if !self.arity(name, args, 1, 1, span) {
                    return err_expr(span);
                }
                let s = self.rvalue(&args[0]);
                let s = self.convert(s, &Type::ULong, "seed");
                rv(
                    ExprKind::Builtin(Builtin::RandSeed(Box::new(s))),
                    Type::Void,
                    span,
                )
            }
            "reduce" | "scan" if bsgp => {
                if !self.arity(name, args, 2, 2, span) {
                    return err_expr(span);
                }
                self.note_spmd(true);
                let op = self.collective_op(&args[0]);
                if name == "reduce" {
                    let v = self.rvalue(&args[1]);
                    if v.ty == Type::Error {
                        return err_expr(span);
                    }
                    if !v.ty.is_arithmetic() {
                        self.error(
                            codes::TYPE_MISMATCH,
                            format!("`reduce` needs a number, not `{}`", self.ts(&v.ty)),
                            v.span,
                        );
                        return err_expr(span);
                    }
                    let Some(op) = op else { return err_expr(span) };
                    let ty = v.ty.clone();
                    rv(
                        ExprKind::Reduce {
                            op,
                            value: Box::new(v),
                        },
                        ty,
                        span,
                    )
                } else {
                    let Some((var, ty)) = self.var_arg(&args[1], "`scan`") else {
                        return err_expr(span);
                    };
                    if !ty.is_arithmetic() {
                        self.error(
                            codes::TYPE_MISMATCH,
                            format!("`scan` needs a number, not `{}`", self.ts(&ty)),
                            args[1].span,
                        );
                        return err_expr(span);
                    }
                    let Some(op) = op else { return err_expr(span) };
                    rv(ExprKind::Scan { op, var }, ty, span)
                }
            }
            "compact" | "split" if bsgp => {
                if !self.arity(name, args, 4, 4, span) {
                    return err_expr(span);
                }
                self.note_spmd(true);
                let list = self.expr(&args[0]);
                let src = self.rvalue(&args[1]);
                let keep = self.cond(&args[2]);
                let flag = self.cond(&args[3]);
                if list.ty == Type::Error {
                    return err_expr(span);
                }
                let Type::Ptr(elem) = list.ty.clone() else {
                    self.error(
                        codes::TYPE_MISMATCH,
                        format!(
                            "the list of `{name}` must be a pointer variable, not `{}`",
                            self.ts(&list.ty)
                        ),
                        list.span,
                    );
                    return err_expr(span);
                };
                if !list.category.is_lvalue() {
                    self.error(
                        codes::NOT_LVALUE,
                        format!("the list of `{name}` must be a variable"),
                        list.span,
                    );
                    return err_expr(span);
                }
                let src = self.convert(src, &elem, "source value");
                let (list, src) = (Box::new(list), Box::new(src));
                let kind = if name == "compact" {
                    ExprKind::Compact {
                        list,
                        src,
                        keep: Box::new(keep),
                        flag: Box::new(flag),
                    }
                } else {
                    ExprKind::Split {
                        list,
                        src,
                        side: Box::new(keep),
                        flag: Box::new(flag),
                    }
                };
                rv(kind, Type::Int, span)
            }
            "sort_idx" if bsgp => {
                if !self.arity(name, args, 1, 1, span) {
                    return err_expr(span);
                }
                self.note_spmd(true);
                let k = self.rvalue(&args[0]);
                if k.ty != Type::Error && !k.ty.is_arithmetic() {
                    self.error(
                        codes::TYPE_MISMATCH,
                        format!("`sort_idx` needs a number, not `{}`", self.ts(&k.ty)),
                        k.span,
                    );
                    return err_expr(span);
                }
                rv(ExprKind::SortIdx(Box::new(k)), Type::Int, span)
            }
            "dtempfree" if bsgp => {
                if !self.arity(name, args, 0, 0, span) {
                    return err_expr(span);
                }
                rv(ExprKind::DTempFree, Type::Void, span)
            }
            "groupsize" if fork => {
                if !self.arity(name, args, 0, 0, span) {
                    return err_expr(span);
                }
                rv(ExprKind::GroupSize, Type::Int, span)
            }
            "mpadd" | "mpmax" | "mpand" | "mpor" if fork => {
                if !self.arity(name, args, 2, 2, span) {
                    return err_expr(span);
                }
                let op = match name {
                    "mpadd" => MpOp::Add,
                    "mpmax" => MpOp::Max,
                    "mpand" => MpOp::And,
                    _ => MpOp::Or,
                };
                let p = self.rvalue(&args[0]);
                let v = self.rvalue(&args[1]);
                let Type::Ptr(elem) = p.ty.clone() else {
                    if p.ty != Type::Error {
                        self.error(
                            codes::TYPE_MISMATCH,
                            format!("`{name}` needs a pointer, not `{}`", self.ts(&p.ty)),
                            p.span,
                        );
                    }
                    return err_expr(span);
                };
                let v = self.convert(v, &elem, "contribution");
                rv(
                    ExprKind::MultiPrefix {
                        op,
                        ptr: Box::new(p),
                        value: Box::new(v),
                    },
                    *elem,
                    span,
                )
            }
            _ => {
                let mut d = Diagnostic::error(
                    codes::UNKNOWN_FUNCTION,
                    format!("unknown function `{name}`"),
                    name_span,
                )
                .with_label_text("not defined");
                if !bsgp
                    && matches!(
                        name,
                        "reduce" | "scan" | "compact" | "split" | "sort_idx" | "dtempfree"
                    )
                {
                    d = d.with_help("this is a BSGP collective: compile the file as BSGP");
                } else if let Some(similar) = (self.diags.len() < 100)
                    .then(|| {
                        let math = MathFn::ALL.iter().map(|f| f.name());
                        suggest(name, self.func_ids.keys().map(String::as_str).chain(math))
                    })
                    .flatten()
                {
                    d = d.with_help(format!(
                        "a function with a similar name exists: `{similar}`"
                    ));
                }
                self.push(d);
                for a in args {
                    if !matches!(a.kind, AE::OpArg(_) | AE::Str(_)) {
                        self.rvalue_allow_void(a);
                    }
                }
                err_expr(span)
            }
        }
    }

    /// A `<math.h>` function: C's conversions of the arguments to `double`
    /// (`float` for the `f` forms), as for a prototyped call.
    fn math_builtin(
        &mut self,
        func: MathFn,
        single: bool,
        name: &str,
        args: &[ast::Expr],
        span: Span,
    ) -> Expr {
        let arity = func.arity();
        if !self.arity(name, args, arity, arity, span) {
            return err_expr(span);
        }
        let ty = if single { Type::Float } else { Type::Double };
        let mut converted = Vec::new();
        for (k, a) in args.iter().enumerate() {
            let what = if arity == 1 {
                format!("the argument of `{name}`")
            } else {
                format!("argument {} of `{name}`", k + 1)
            };
            let e = self.rvalue(a);
            converted.push(self.convert(e, &ty, &what));
        }
        if converted.iter().any(|e| e.ty == Type::Error) {
            return err_expr(span);
        }
        rv(
            ExprKind::Builtin(Builtin::Math {
                func,
                args: converted,
            }),
            ty,
            span,
        )
    }

    fn thread_call(&mut self, name: &str, name_span: Span, args: &[ast::Expr], span: Span) -> Expr {
        let full = format!("thread.{name}");
        match name {
            "fork" | "kill" | "sortby" | "split" => {
                if !self.arity(&full, args, 1, 1, span) {
                    return err_expr(span);
                }
                self.note_spmd(true);
                let (kind, ty) = match name {
                    "fork" => {
                        let n = self.rvalue(&args[0]);
                        let n = self.convert(n, &Type::Int, "thread count");
                        (ExprKind::ThreadFork(Box::new(n)), Type::Int)
                    }
                    "kill" => (
                        ExprKind::ThreadKill(Box::new(self.cond(&args[0]))),
                        Type::Void,
                    ),
                    "split" => (
                        ExprKind::ThreadSplit(Box::new(self.cond(&args[0]))),
                        Type::Void,
                    ),
                    _ => {
                        let k = self.rvalue(&args[0]);
                        if k.ty != Type::Error && !k.ty.is_arithmetic() {
                            self.error(
                                codes::TYPE_MISMATCH,
                                format!("`thread.sortby` needs a number, not `{}`", self.ts(&k.ty)),
                                k.span,
                            );
                            return err_expr(span);
                        }
                        (ExprKind::ThreadSortBy(Box::new(k)), Type::Void)
                    }
                };
                rv(kind, ty, span)
            }
            "get" => {
                if !self.arity(&full, args, 2, 2, span) {
                    return err_expr(span);
                }
                self.note_spmd(false);
                let r = self.rvalue(&args[0]);
                let r = self.convert(r, &Type::Int, "rank");
                let Some((var, ty)) = self.var_arg(&args[1], "`thread.get`") else {
                    return err_expr(span);
                };
                rv(
                    ExprKind::ThreadGet {
                        rank: Box::new(r),
                        var,
                    },
                    ty,
                    span,
                )
            }
            "put" => {
                if !self.arity(&full, args, 3, 3, span) {
                    return err_expr(span);
                }
                self.note_spmd(false);
                let r = self.rvalue(&args[0]);
                let r = self.convert(r, &Type::Int, "rank");
                let target = self.var_arg(&args[1], "`thread.put`");
                let v = self.rvalue(&args[2]);
                let Some((var, ty)) = target else {
                    return err_expr(span);
                };
                let v = self.convert(v, &ty, "the value");
                rv(
                    ExprKind::ThreadPut {
                        rank: Box::new(r),
                        var,
                        value: Box::new(v),
                    },
                    Type::Void,
                    span,
                )
            }
            "rank" | "size" | "oldrank" => {
                self.error(
                    codes::NOT_CALLABLE,
                    format!("`{full}` is not a function"),
                    name_span,
                );
                err_expr(span)
            }
            _ => {
                self.push(
                    Diagnostic::error(
                        codes::BAD_THREAD,
                        format!("unknown thread operation `{full}`"),
                        name_span,
                    )
                    .with_help("thread operations: fork, kill, sortby, split, get, put"),
                );
                err_expr(span)
            }
        }
    }

    fn printf(&mut self, args: &[ast::Expr], span: Span) -> Expr {
        let Some(first) = args.first() else {
            self.error(codes::ARITY, "`printf` needs a format string", span);
            return err_expr(span);
        };
        let AE::Str(fmt) = &first.kind else {
            self.push(
                Diagnostic::error(
                    codes::PRINTF_FORMAT,
                    "the format of `printf` must be a string literal",
                    first.span,
                )
                .with_help("write `printf(\"%d\\n\", x)`"),
            );
            for a in args {
                self.rvalue_allow_void(a);
            }
            return err_expr(span);
        };
        let mut hargs = Vec::new();
        for a in &args[1..] {
            let e = self.rvalue(a);
            // Default argument promotions.
            let e = match e.ty {
                Type::Bool | Type::Char => self.convert(e, &Type::Int, "argument"),
                Type::Float => self.convert(e, &Type::Double, "argument"),
                _ => e,
            };
            hargs.push(e);
        }
        let mut ok = true;
        match parse_format(fmt) {
            Err(msg) => {
                self.error(
                    codes::PRINTF_FORMAT,
                    format!("invalid printf format: {msg}"),
                    first.span,
                );
                ok = false;
            }
            Ok(specs) => {
                for (i, spec) in specs.iter().enumerate() {
                    let Some(a) = hargs.get(i) else {
                        self.push(
                            Diagnostic::error(
                                codes::PRINTF_FORMAT,
                                format!(
                                    "the format needs {} argument{}, but {} {} given",
                                    specs.len(),
                                    if specs.len() == 1 { "" } else { "s" },
                                    hargs.len(),
                                    if hargs.len() == 1 { "was" } else { "were" }
                                ),
                                span,
                            )
                            .with_label(first.span, "format here"),
                        );
                        ok = false;
                        break;
                    };
                    if a.ty == Type::Error {
                        continue;
                    }
                    let fits = match spec {
                        FmtArg::Int | FmtArg::Star => matches!(a.ty, Type::Int | Type::UInt),
                        FmtArg::Long => matches!(a.ty, Type::Long | Type::ULong),
                        FmtArg::Double => a.ty == Type::Double,
                        FmtArg::Str => a.ty == Type::Ptr(Box::new(Type::Char)),
                        FmtArg::Ptr => matches!(a.ty, Type::Ptr(_)),
                    };
                    if !fits {
                        let help = match (spec, &a.ty) {
                            (FmtArg::Int, Type::Long | Type::ULong) => "use `%ld` for `long`",
                            (FmtArg::Long, Type::Int | Type::UInt) => "use `%d` for `int`",
                            (FmtArg::Int | FmtArg::Long, t) if t.is_float() => {
                                "use `%f` for floating values, or cast to `int`"
                            }
                            (FmtArg::Double, t) if t.is_integer() => {
                                "use `%d`, or cast to `double`"
                            }
                            _ => "match the conversion to the argument's type",
                        };
                        let want = match spec {
                            FmtArg::Int | FmtArg::Star => "int",
                            FmtArg::Long => "long",
                            FmtArg::Double => "double",
                            FmtArg::Str => "char*",
                            FmtArg::Ptr => "a pointer",
                        };
                        self.push(
                            Diagnostic::error(
                                codes::PRINTF_FORMAT,
                                format!(
                                    "printf conversion {} expects `{want}`, but the argument is `{}`",
                                    i + 1,
                                    self.ts(&a.ty)
                                ),
                                a.span,
                            )
                            .with_label(first.span, "format here")
                            .with_help(help),
                        );
                        ok = false;
                    }
                }
                if ok && hargs.len() > specs.len() {
                    let extra = hargs[specs.len()].span;
                    self.push(
                        Diagnostic::error(
                            codes::PRINTF_FORMAT,
                            format!(
                                "the format uses {} argument{}, but {} {} given",
                                specs.len(),
                                if specs.len() == 1 { "" } else { "s" },
                                hargs.len(),
                                if hargs.len() == 1 { "was" } else { "were" }
                            ),
                            extra,
                        )
                        .with_label_text("extra argument")
                        .with_label(first.span, "format here"),
                    );
                    ok = false;
                }
            }
        }
        if !ok {
            return err_expr(span);
        }
        rv(
            ExprKind::Builtin(Builtin::Printf {
                format: fmt.clone(),
                args: hargs,
            }),
            Type::Int,
            span,
        )
    }
}

fn decay(e: Expr) -> Expr {
    if let Type::Array(elem, _) = &e.ty {
        let ty = Type::Ptr(elem.clone());
        let span = e.span;
        return rv(
            ExprKind::Cast {
                kind: CastKind::ArrayDecay,
                explicit: false,
                expr: Box::new(e),
            },
            ty,
            span,
        );
    }
    e
}

fn bin_op(op: ABin) -> BinaryOp {
    match op {
        ABin::Add => BinaryOp::Add,
        ABin::Sub => BinaryOp::Sub,
        ABin::Mul => BinaryOp::Mul,
        ABin::Div => BinaryOp::Div,
        ABin::Rem => BinaryOp::Rem,
        ABin::Shl => BinaryOp::Shl,
        ABin::Shr => BinaryOp::Shr,
        ABin::BitAnd => BinaryOp::BitAnd,
        ABin::BitOr => BinaryOp::BitOr,
        ABin::BitXor => BinaryOp::BitXor,
        ABin::Eq => BinaryOp::Eq,
        ABin::Ne => BinaryOp::Ne,
        ABin::Lt => BinaryOp::Lt,
        ABin::Le => BinaryOp::Le,
        ABin::Gt => BinaryOp::Gt,
        ABin::Ge => BinaryOp::Ge,
        ABin::LogAnd => BinaryOp::LogAnd,
        ABin::LogOr => BinaryOp::LogOr,
    }
}

fn op_str(op: ABin) -> &'static str {
    match op {
        ABin::Add => "+",
        ABin::Sub => "-",
        ABin::Mul => "*",
        ABin::Div => "/",
        ABin::Rem => "%",
        ABin::Shl => "<<",
        ABin::Shr => ">>",
        ABin::BitAnd => "&",
        ABin::BitOr => "|",
        ABin::BitXor => "^",
        ABin::Eq => "==",
        ABin::Ne => "!=",
        ABin::Lt => "<",
        ABin::Le => "<=",
        ABin::Gt => ">",
        ABin::Ge => ">=",
        ABin::LogAnd => "&&",
        ABin::LogOr => "||",
    }
}

/// The candidate closest to `name` by edit distance, if close enough
/// (at most a third of the name's length, at least 1).
fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (edit_distance(name, c, limit), c))
        .filter(|(d, _)| *d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)))
        .map(|(_, c)| c)
}

/// Levenshtein distance, giving up early (returning `limit + 1`) when the
/// lengths differ by more than `limit`.
fn edit_distance(a: &str, b: &str, limit: usize) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Whether control can reach the end of these statements (conservative:
/// only `return`, `if`/`else` that both return, and `while (true)`/`for (;;)`
/// loops without `break` end a path).
fn falls_through(stmts: &[Stmt]) -> bool {
    stmts.iter().all(stmt_falls_through)
}

fn stmt_falls_through(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Return(_) => false,
        StmtKind::Block(b) => falls_through(&b.stmts),
        StmtKind::If {
            then_branch,
            else_branch: Some(e),
            ..
        } => stmt_falls_through(then_branch) || stmt_falls_through(e),
        StmtKind::While { cond, body } => !is_true(cond) || has_break(body),
        StmtKind::DoWhile { body, cond } => {
            has_break(body) || (!is_true(cond) && stmt_falls_through(body))
        }
        StmtKind::For { cond, body, .. } => !cond.as_ref().is_none_or(is_true) || has_break(body),
        _ => true,
    }
}

fn is_true(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::BoolLit(b) => *b,
        ExprKind::Cast { expr, .. } => const_int(expr).is_some_and(|v| v != 0),
        _ => false,
    }
}

/// A `break` that leaves this loop body (not one of a nested loop).
fn has_break(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Break => true,
        StmtKind::Block(b) => b.stmts.iter().any(has_break),
        StmtKind::If {
            then_branch,
            else_branch,
            ..
        } => has_break(then_branch) || else_branch.as_deref().is_some_and(has_break),
        _ => false,
    }
}

/// The span of the first part of an initialiser that is not a constant
/// expression (literals, `NULL`, `sizeof`, casts, operators, `?:`).
fn non_constant(i: &Init) -> Option<Span> {
    match i {
        Init::Expr(e) => non_constant_expr(e),
        Init::List(l) => l.iter().find_map(non_constant),
    }
}

fn non_constant_expr(e: &Expr) -> Option<Span> {
    match &e.kind {
        ExprKind::IntLit(_)
        | ExprKind::FloatLit { .. }
        | ExprKind::BoolLit(_)
        | ExprKind::Null
        | ExprKind::Error => None,
        ExprKind::Cast { expr, .. } | ExprKind::Unary { operand: expr, .. } => {
            non_constant_expr(expr)
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            non_constant_expr(lhs).or_else(|| non_constant_expr(rhs))
        }
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => non_constant_expr(cond)
            .or_else(|| non_constant_expr(then_expr))
            .or_else(|| non_constant_expr(else_expr)),
        _ => Some(e.span),
    }
}

/// Value of an integer constant expression (literals, casts, arithmetic).
pub fn const_int(e: &Expr) -> Option<i128> {
    match &e.kind {
        ExprKind::IntLit(v) => Some(i128::from(*v)),
        ExprKind::BoolLit(b) => Some(i128::from(*b)),
        ExprKind::Cast { expr, .. } if e.ty.is_integer() => const_int(expr),
        ExprKind::Unary { op, operand } => {
            let v = const_int(operand)?;
            match op {
                UnaryOp::Neg => Some(-v),
                UnaryOp::BitNot => Some(!v),
                UnaryOp::Not => Some(i128::from(v == 0)),
            }
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (const_int(lhs)?, const_int(rhs)?);
            Some(match op {
                BinaryOp::Add => a.checked_add(b)?,
                BinaryOp::Sub => a.checked_sub(b)?,
                BinaryOp::Mul => a.checked_mul(b)?,
                BinaryOp::Div => a.checked_div(b)?,
                BinaryOp::Rem => a.checked_rem(b)?,
                BinaryOp::Shl => a.checked_shl(u32::try_from(b).ok()?)?,
                BinaryOp::Shr => a.checked_shr(u32::try_from(b).ok()?)?,
                BinaryOp::BitAnd => a & b,
                BinaryOp::BitOr => a | b,
                BinaryOp::BitXor => a ^ b,
                _ => return None,
            })
        }
        _ => None,
    }
}

/// Host locals a `require` body assigns and that are visible after it.
fn require_outputs(body: &Block, vars: &[VarInfo]) -> Vec<VarId> {
    struct Collect {
        assigned: Vec<VarId>,
        seen: HashSet<VarId>,
        nested_decls: HashSet<VarId>,
        depth: u32,
    }
    impl Collect {
        fn add(&mut self, v: VarId) {
            if self.seen.insert(v) {
                self.assigned.push(v);
            }
        }
    }
    impl Visitor for Collect {
        fn visit_stmt(&mut self, s: &Stmt) {
            if let StmtKind::Decl { var, .. } = &s.kind {
                if self.depth == 0 {
                    self.add(*var);
                } else {
                    self.nested_decls.insert(*var);
                }
            }
            let nests = matches!(
                s.kind,
                StmtKind::Block(_)
                    | StmtKind::If { .. }
                    | StmtKind::While { .. }
                    | StmtKind::DoWhile { .. }
                    | StmtKind::For { .. }
                    | StmtKind::Spawn { .. }
            );
            if nests {
                self.depth += 1;
            }
            walk_stmt(self, s);
            if nests {
                self.depth -= 1;
            }
        }
        fn visit_expr(&mut self, e: &Expr) {
            match &e.kind {
                ExprKind::Assign { target, .. }
                | ExprKind::CompoundAssign { target, .. }
                | ExprKind::IncDec { target, .. } => {
                    if let ExprKind::Var(v) = target.kind {
                        self.add(v);
                    }
                }
                _ => {}
            }
            walk_expr(self, e);
        }
    }
    let mut c = Collect {
        assigned: Vec::new(),
        seen: HashSet::new(),
        nested_decls: HashSet::new(),
        depth: 0,
    };
    walk_block(&mut c, body);
    c.assigned
        .into_iter()
        .filter(|v| !c.nested_decls.contains(v))
        .filter(|v| {
            vars.get(v.0 as usize)
                .is_some_and(|i| i.space == Space::Host)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(
            parse_format("%d %5.2f %ld %s %% %c %u %x %p %*d").ok(),
            Some(vec![
                FmtArg::Int,
                FmtArg::Double,
                FmtArg::Long,
                FmtArg::Str,
                FmtArg::Int,
                FmtArg::Int,
                FmtArg::Int,
                FmtArg::Ptr,
                FmtArg::Star,
                FmtArg::Int
            ])
        );
        assert!(parse_format("%q").is_err());
        assert!(parse_format("abc %").is_err());
    }

    #[test]
    fn common_types() {
        use Type::*;
        assert_eq!(Sema::common_type(&Char, &Bool), Int);
        assert_eq!(Sema::common_type(&Int, &UInt), UInt);
        assert_eq!(Sema::common_type(&Long, &UInt), Long);
        assert_eq!(Sema::common_type(&ULong, &Long), ULong);
        assert_eq!(Sema::common_type(&Int, &Float), Float);
        assert_eq!(Sema::common_type(&Float, &Double), Double);
    }
}
