//! Lowering of the typed HIR to MLIR at stage `pgpu` (docs/frontend-ir.md).
//!
//! One [`LowerCx`] holds the whole lowering state: the MLIR context and
//! module, the cursor new ops go to, the SSA environment of the function
//! being lowered and the diagnostics. Locals are SSA values: the
//! environment maps every visible variable (and the control flags of
//! `break`, `continue` and early `return`) to its current value, and the
//! structured-control-flow helpers in [`control`] thread the variables a
//! construct changes through `scf.if` results and `scf.while` iteration
//! arguments.
//!
//! Constructs of a particular source language (BSGP's `spawn`, `barrier`,
//! collectives, ...) are lowered by an [`Extension`] that the language's
//! crate supplies; without one they are reported as unsupported.
//!
//! Submodules: [`builder`] (op construction), [`types`] (C types to MLIR
//! types), [`env`](mod@self::env) (values and the environment), [`control`] (if/loops and
//! flags), [`expr`], [`stmt`], [`program`] (functions and globals).

pub mod builder;
pub mod control;
pub mod env;
pub mod expr;
pub mod program;
pub mod stmt;
pub mod types;

use crate::{
    diag::Diagnostic,
    hir::{Expr, Function, Hir, Stmt, Type},
    span::{LineIndex, Span},
};
use builder::{B, Builder, V};
use env::Env;
use melior::{
    Context,
    ir::{Location, Module},
};
use std::collections::HashMap;

pub use env::{Key, ListLen, Rv};

/// Code of a construct the lowering does not support.
pub const E_UNSUPPORTED: &str = "csubset::E900";
/// Code of a `#pragma pgpu speculate` loop that cannot be speculated.
pub const E_SPECULATE: &str = "csubset::E910";
/// Code of an internal error of the lowering (a bug, not the user's fault).
pub const E_INTERNAL: &str = "csubset::E999";

/// Result of a lowering step; the error is a diagnostic ready to render.
pub type LowerResult<T> = Result<T, Diagnostic>;

/// The constructs of one source language that the common lowering does not
/// know. Every method has a default that reports the construct as
/// unsupported.
pub trait Extension {
    /// Lowers a language statement (`spawn`, `barrier`, `require`, `par`, ...).
    fn lower_stmt<'c>(&self, cx: &mut LowerCx<'c, '_>, stmt: &Stmt) -> LowerResult<()> {
        Err(cx.unsupported(stmt.span, "this statement"))
    }

    /// Lowers a language expression (`thread.rank`, collectives, `dnew`, ...).
    fn lower_expr<'c>(&self, cx: &mut LowerCx<'c, '_>, expr: &Expr) -> LowerResult<Rv<'c>> {
        Err(cx.unsupported(expr.span, "this expression"))
    }

    /// The memory of a shared local variable (Fork's `sh`): a memref of
    /// `memref_type` (a scalar cell or an array) that every member of the
    /// group executing the declaration shares.
    fn shared_local<'c>(
        &self,
        cx: &mut LowerCx<'c, '_>,
        memref_type: melior::ir::Type<'c>,
        span: Span,
    ) -> LowerResult<V<'c>> {
        let _ = memref_type;
        Err(cx.unsupported(span, "a shared local variable"))
    }

    /// Stores `value` (an `int`) into `thread.oldrank`.
    fn assign_oldrank<'c>(
        &self,
        cx: &mut LowerCx<'c, '_>,
        value: V<'c>,
        span: Span,
    ) -> LowerResult<()> {
        let _ = value;
        Err(cx.unsupported(span, "assigning 'thread.oldrank'"))
    }

    /// After a call of an `inline` function that may change the threads'
    /// ranks (BSGP: the old rank after it is the callee's).
    fn after_rank_changing_call<'c>(
        &self,
        cx: &mut LowerCx<'c, '_>,
        span: Span,
    ) -> LowerResult<()> {
        let _ = (cx, span);
        Ok(())
    }

    /// Unit attributes of the `func.func` of `function`.
    fn function_attributes(&self, hir: &Hir, function: &Function) -> Vec<&'static str> {
        let _ = (hir, function);
        Vec::new()
    }

    /// Hidden parameters of `function`, after its own: a name and a scalar
    /// type each (Fork's `$`, which a called function inherits from its
    /// caller). The lowering binds each name in [`LowerCx::hidden`] to its
    /// block argument for the body.
    fn hidden_parameters(&self, hir: &Hir, function: &Function) -> Vec<(&'static str, Type)> {
        let _ = (hir, function);
        Vec::new()
    }

    /// The values of `callee`'s hidden parameters (see
    /// [`Extension::hidden_parameters`]) at a call at `span`, passed after
    /// the arguments.
    fn hidden_arguments<'c>(
        &self,
        cx: &mut LowerCx<'c, '_>,
        callee: &Function,
        span: Span,
    ) -> LowerResult<Vec<V<'c>>> {
        let _ = (cx, callee, span);
        Ok(Vec::new())
    }

    /// Called at the end of `function`'s body, before its `func.return`.
    fn finish_function<'c>(
        &self,
        cx: &mut LowerCx<'c, '_>,
        function: &Function,
    ) -> LowerResult<()> {
        let _ = (cx, function);
        Ok(())
    }
}

/// The extension of the plain C subset: no constructs of its own.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoExtension;

impl Extension for NoExtension {}

/// The lowering state.
pub struct LowerCx<'c, 'x> {
    /// The MLIR context.
    pub context: &'c Context,
    /// The program.
    pub hir: &'x Hir,
    /// The language constructs' lowering.
    pub ext: &'x dyn Extension,
    /// The module being built.
    pub module: Module<'c>,
    /// The file name locations carry.
    file: String,
    /// Byte offsets to lines and columns.
    lines: LineIndex,
    /// Where new ops go.
    pub block: B<'c>,
    /// The SSA environment of the function being lowered.
    pub env: Env<'c>,
    /// The function being lowered.
    pub function: Option<&'x Function>,
    /// Diagnostics so far (lowering goes on with the next function).
    pub diagnostics: Vec<Diagnostic>,
    /// Memory cells (`memref.alloca() : memref<T>`) of host variables that
    /// a `require` inside the enclosing SPMD region assigns: SPMD regions
    /// have no results, so the new value reaches the code after the region
    /// through memory.
    pub cells: HashMap<crate::hir::VarId, Rv<'c>>,
    /// Scalar variables that live in memory cells (`memref<T>` per leaf)
    /// for their whole life: Fork's shared (`sh`) locals.
    pub memory_vars: HashMap<crate::hir::VarId, Rv<'c>>,
    /// The entry block of the innermost allocation scope (the function, or
    /// the `pgpu.spawn` body whose threads own private memory): where
    /// `memref.alloca`s go.
    pub alloca_scope: Option<B<'c>>,
    /// Whether the cursor is in host code inside an SPMD region (BSGP's
    /// `require`), where per-thread queries are not allowed.
    pub in_host_region: bool,
    /// Values a language extension binds by name for the code being
    /// lowered: the function's hidden parameters
    /// ([`Extension::hidden_parameters`]) and what the extension's own
    /// constructs set inside their bodies (Fork's `$` in `start` and `fork`).
    pub hidden: HashMap<&'static str, V<'c>>,
    /// The span of the construct being lowered (for internal errors).
    pub span: Span,
    /// Cache of parsed types.
    type_cache: HashMap<String, melior::ir::Type<'c>>,
    /// Byte offset of each line's start.
    line_starts: Vec<u32>,
}

impl std::fmt::Debug for LowerCx<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LowerCx").field("file", &self.file).finish()
    }
}

impl<'c, 'x> LowerCx<'c, 'x> {
    /// A lowering of `hir` (parsed from `text`, named `file`) into a new
    /// module of `context`.
    pub fn new(
        context: &'c Context,
        hir: &'x Hir,
        ext: &'x dyn Extension,
        file: &str,
        text: &str,
    ) -> Self {
        let location = Location::new(context, file, 1, 1);
        let module = Module::new(location);
        let block = builder::detach_block(module.body());
        Self {
            context,
            hir,
            ext,
            module,
            file: file.to_string(),
            lines: LineIndex::new(text),
            block,
            env: Env::default(),
            function: None,
            diagnostics: Vec::new(),
            cells: HashMap::new(),
            memory_vars: HashMap::new(),
            alloca_scope: None,
            in_host_region: false,
            hidden: HashMap::new(),
            span: Span::default(),
            type_cache: HashMap::new(),
            line_starts: std::iter::once(0)
                .chain(
                    text.bytes()
                        .enumerate()
                        .filter(|(_, b)| *b == b'\n')
                        .map(|(i, _)| u32::try_from(i + 1).unwrap_or(u32::MAX)),
                )
                .collect(),
        }
    }

    /// The builder at the cursor.
    pub fn b(&self) -> Builder<'c> {
        Builder::new(self.context, self.block)
    }

    /// The `FileLineColLoc` of the start of `span`.
    pub fn loc(&self, span: Span) -> Location<'c> {
        let (line, column) = self.lines.line_col(span.start);
        Location::new(self.context, &self.file, line as usize, column as usize)
    }

    /// The byte offset of a 1-based line and column.
    pub fn offset_of(&self, line: u32, column: u32) -> usize {
        let start = self
            .line_starts
            .get(line.saturating_sub(1) as usize)
            .copied()
            .unwrap_or(0);
        (start + column.saturating_sub(1)) as usize
    }

    /// An "unsupported" diagnostic at `span`.
    pub fn unsupported(&self, span: Span, what: &str) -> Diagnostic {
        Diagnostic::error(
            E_UNSUPPORTED,
            format!("{what} is not supported by the MLIR lowering"),
            span,
        )
    }

    /// An error diagnostic with code `code` at `span`.
    pub fn error(&self, code: &'static str, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::error(code, message, span)
    }

    /// An internal-error diagnostic at the current construct.
    pub fn internal(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(E_INTERNAL, message, self.span)
            .with_help("this is a bug in pgpu's lowering; please report it")
    }

    /// Runs `f` with the cursor at `block`, then restores it.
    pub fn at_block<T>(
        &mut self,
        block: B<'c>,
        f: impl FnOnce(&mut Self) -> LowerResult<T>,
    ) -> LowerResult<T> {
        let saved = self.block;
        self.block = block;
        let result = f(self);
        self.block = saved;
        result
    }

    /// `memref.alloca() : ty` at the start of the allocation scope (at the
    /// cursor when there is none).
    pub fn alloca(&self, ty: melior::ir::Type<'c>, location: Location<'c>) -> LowerResult<V<'c>> {
        match self.alloca_scope {
            Some(scope) => self.b().alloca_at(scope, ty, location),
            None => self.b().alloca(ty, location),
        }
    }

    /// Parses an MLIR type (cached).
    pub fn parse_type(&mut self, text: &str) -> LowerResult<melior::ir::Type<'c>> {
        if let Some(ty) = self.type_cache.get(text) {
            return Ok(*ty);
        }
        let ty = melior::ir::Type::parse(self.context, text)
            .ok_or_else(|| self.internal(format!("cannot parse type '{text}'")))?;
        self.type_cache.insert(text.to_string(), ty);
        Ok(ty)
    }
}

/// Lowers a checked program into a verified module of `context`.
///
/// `file` is the name the locations carry; `text` the source (for line and
/// column numbers). Lowering goes on after a function with an error, so
/// that one run reports the errors of every function.
pub fn lower_hir<'c>(
    context: &'c Context,
    hir: &Hir,
    ext: &dyn Extension,
    file: &str,
    text: &str,
) -> Result<Module<'c>, Vec<Diagnostic>> {
    let mut cx = LowerCx::new(context, hir, ext, file, text);
    program::lower_program(&mut cx);
    if !cx.diagnostics.is_empty() {
        return Err(cx.diagnostics);
    }
    program::verify(cx)
}
