//! The typed HIR: the output of semantic analysis and the input of every
//! lowering. Every name is resolved to an id ([`VarId`], [`FuncId`],
//! [`GlobalId`], [`StructId`]), every expression carries its [`Type`] and
//! [`Span`], implicit conversions are explicit [`ExprKind::Cast`] nodes,
//! lvalues are classified ([`ValueCategory`]), and BSGP/Fork constructs are
//! nodes of their own.
//!
//! Conventions the lowering can rely on:
//! - Binary arithmetic/comparison operands have the same type (the usual
//!   arithmetic conversions were applied); shifts have the promoted left
//!   type on both sides; `&&`/`||`/`!` operands and all conditions are
//!   `bool`.
//! - Arrays used as values are decayed (`Cast { kind: ArrayDecay }` to a
//!   pointer); `T[]` parameters and `dnew` results have type `Ptr(T)`.
//! - Pointer arithmetic is [`ExprKind::PtrAdd`] (offset is `long`), never
//!   `Binary`.
//! - Compound assignment `a op= b` is [`ExprKind::CompoundAssign`]: the
//!   operation happens in `op_ty`; `value` has type `op_ty` and the result is
//!   converted back to the target's type.
//! - Scopes: `par` and `require` blocks do not open a scope (variables they
//!   declare are visible after them); all other blocks do.
//! - BSGP declaration by assignment (`x = e;` with `x` unknown) is an
//!   ordinary [`StmtKind::Decl`] whose [`VarInfo::by_assignment`] is set.

use crate::span::Span;

/// A variable (parameter or local of any function), indexes [`Hir::vars`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// A function, indexes [`Hir::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

/// A global variable, indexes [`Hir::globals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalId(pub u32);

/// A struct type, indexes [`Hir::structs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StructId(pub u32);

/// A C type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// `void` (function results, `void*` only through `NULL`).
    Void,
    /// `bool` (i1).
    Bool,
    /// `char` (i8, signed).
    Char,
    /// `int` (i32).
    Int,
    /// `unsigned` / `unsigned int` (i32, unsigned operations).
    UInt,
    /// `long` (i64).
    Long,
    /// `unsigned long` (i64, unsigned operations).
    ULong,
    /// `float` (f32).
    Float,
    /// `double` (f64).
    Double,
    /// `T*`, `T[]` parameters and `dnew[n]T` results.
    Ptr(Box<Type>),
    /// `T[N]` (locals, globals, struct fields).
    Array(Box<Type>, u64),
    /// `struct S`.
    Struct(StructId),
    /// The type of `NULL` before it is converted to a concrete pointer.
    Null,
    /// The type of an expression that already produced a diagnostic; never
    /// reaches the lowering when [`crate::CheckResult::hir`] is `Some`.
    Error,
}

impl Type {
    /// bool, char, int, unsigned, long, unsigned long.
    pub fn is_integer(&self) -> bool {
        matches!(
            self,
            Type::Bool | Type::Char | Type::Int | Type::UInt | Type::Long | Type::ULong
        )
    }

    /// float or double.
    pub fn is_float(&self) -> bool {
        matches!(self, Type::Float | Type::Double)
    }

    /// Integer or floating.
    pub fn is_arithmetic(&self) -> bool {
        self.is_integer() || self.is_float()
    }

    /// Arithmetic or pointer (usable as a condition).
    pub fn is_scalar(&self) -> bool {
        self.is_arithmetic() || matches!(self, Type::Ptr(_) | Type::Null)
    }

    /// unsigned or unsigned long (and bool, which never survives promotion).
    pub fn is_unsigned(&self) -> bool {
        matches!(self, Type::UInt | Type::ULong | Type::Bool)
    }

    /// The pointee of a pointer, the element of an array.
    pub fn element(&self) -> Option<&Type> {
        match self {
            Type::Ptr(t) | Type::Array(t, _) => Some(t),
            _ => None,
        }
    }

    /// Size in bytes as `sizeof` reports it (structs need the program).
    pub fn size_of(&self, structs: &[StructDef]) -> u64 {
        match self {
            Type::Void | Type::Error | Type::Null => 1,
            Type::Bool | Type::Char => 1,
            Type::Int | Type::UInt | Type::Float => 4,
            Type::Long | Type::ULong | Type::Double | Type::Ptr(_) => 8,
            Type::Array(t, n) => t.size_of(structs).saturating_mul(*n),
            Type::Struct(id) => structs
                .get(id.0 as usize)
                .map(|s| s.fields.iter().map(|f| f.ty.size_of(structs)).sum())
                .unwrap_or(0),
        }
    }
}

/// Which source language the program was parsed as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    /// Plain C subset (also the loop-speculation frontend).
    C,
    /// BSGP (seeds/bsgp.txt).
    Bsgp,
    /// Fork (seeds/fork-to-cuda.txt).
    Fork,
}

/// A checked program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Hir {
    /// The language it was parsed as.
    pub language: Language,
    /// Struct definitions, indexed by [`StructId`].
    pub structs: Vec<StructDef>,
    /// Globals in source order, indexed by [`GlobalId`].
    pub globals: Vec<Global>,
    /// Functions with bodies in source order, indexed by [`FuncId`].
    pub functions: Vec<Function>,
    /// Every parameter and local of every function, indexed by [`VarId`].
    pub vars: Vec<VarInfo>,
}

impl Hir {
    /// The variable's declaration.
    pub fn var(&self, id: VarId) -> Option<&VarInfo> {
        self.vars.get(id.0 as usize)
    }
    /// The function.
    pub fn function(&self, id: FuncId) -> Option<&Function> {
        self.functions.get(id.0 as usize)
    }
    /// The global.
    pub fn global(&self, id: GlobalId) -> Option<&Global> {
        self.globals.get(id.0 as usize)
    }
    /// The struct.
    pub fn struct_def(&self, id: StructId) -> Option<&StructDef> {
        self.structs.get(id.0 as usize)
    }
    /// The function named `name`.
    pub fn function_by_name(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// `struct S { fields };`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructDef {
    /// Its id.
    pub id: StructId,
    /// `S`.
    pub name: String,
    /// Fields in declaration order (indexed by [`ExprKind::Field::field`]).
    pub fields: Vec<FieldDef>,
    /// The whole definition.
    pub span: Span,
}

/// One struct field.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldDef {
    /// Field name.
    pub name: String,
    /// Field type (never a struct containing itself).
    pub ty: Type,
    /// The declarator.
    pub span: Span,
}

/// A global variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Global {
    /// Its id.
    pub id: GlobalId,
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: Type,
    /// The initialiser, already converted to `ty` (constant expressions are
    /// not folded; the lowering evaluates or rejects them).
    pub init: Option<Init>,
    /// Fork storage class, if written.
    pub storage: Option<Storage>,
    /// The declarator.
    pub span: Span,
}

/// Fork storage classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Storage {
    /// `sh`: shared by the group.
    Shared,
    /// `pr`: private to the processor.
    Private,
}

/// Fork function qualifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FnMode {
    /// `sync` (group code).
    Sync,
    /// `async`.
    Async,
}

/// A function with a body.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Function {
    /// Its id.
    pub id: FuncId,
    /// Its name as in the source.
    pub name: String,
    /// Result type (`Void` also for BSGP functions written without one).
    pub ret: Type,
    /// Parameters in order (their [`VarInfo::kind`] is `Param`).
    pub params: Vec<VarId>,
    /// The body.
    pub body: Block,
    /// Written with `inline`.
    pub is_inline: bool,
    /// Fork `sync`/`async`, if written.
    pub mode: Option<FnMode>,
    /// Contains (directly or through calls, outside any `spawn` of its own)
    /// a barrier, a collective or a rank-changing `thread.*` op: the lowering
    /// gives it `pgpu.spmd_inline`.
    pub spmd_inline: bool,
    /// Uses any SPMD construct (`thread.*`, `require`, barrier, collective)
    /// directly or through calls, outside a `spawn` of its own: it may only
    /// be called from spawn code (a superset of `spmd_inline`).
    pub uses_spmd: bool,
    /// Contains a `spawn` (directly).
    pub has_spawn: bool,
    /// The whole definition.
    pub span: Span,
    /// The name in the definition.
    pub name_span: Span,
}

/// What kind of variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VarKind {
    /// A function parameter (index in the parameter list).
    Param(u32),
    /// A local (declared or declared by assignment).
    Local,
}

/// Where a variable lives in BSGP terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// Host (CPU) code: outside any spawn, or declared in a `require` block.
    Host,
    /// Per-thread: declared inside a spawn body (outside `require`), or a
    /// local/parameter of a function that [`Function::uses_spmd`].
    Thread,
}

/// A parameter or local.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VarInfo {
    /// Its id.
    pub id: VarId,
    /// Its name (not unique: shadowing gives new ids).
    pub name: String,
    /// Its type (for declaration by assignment, the right-hand side's type
    /// after array decay; `NULL` gives `Error` + a diagnostic).
    pub ty: Type,
    /// Parameter or local.
    pub kind: VarKind,
    /// The function it belongs to.
    pub func: FuncId,
    /// Host or thread.
    pub space: Space,
    /// BSGP declaration by assignment (`x = e;`).
    pub by_assignment: bool,
    /// Fork storage class, if written.
    pub storage: Option<Storage>,
    /// The declaring name.
    pub span: Span,
}

/// `{ ... }`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Block {
    /// Statements in order.
    pub stmts: Vec<Stmt>,
    /// From `{` to `}` (or the single statement's span).
    pub span: Span,
}

/// A statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stmt {
    /// What it is.
    pub kind: StmtKind,
    /// Its source.
    pub span: Span,
}

/// An initialiser.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Init {
    /// `= e`, converted to the declared type.
    Expr(Expr),
    /// `= { a, b, ... }` for arrays and structs; each element converted to
    /// the element/field type; missing elements are zero.
    List(Vec<Init>),
}

/// `#pragma pgpu speculate [window(N)] [warp(W)]` on a `for`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Speculate {
    /// `window(N)`.
    pub window: Option<u64>,
    /// `warp(W)`.
    pub warp: Option<u64>,
    /// The pragma line.
    pub span: Span,
}

/// Statement kinds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StmtKind {
    /// `e;`
    Expr(Expr),
    /// `T x = init;` (one per declarator) or BSGP `x = e;` declaring `x`.
    Decl {
        /// The variable.
        var: VarId,
        /// Its initialiser.
        init: Option<Init>,
    },
    /// `{ ... }`
    Block(Block),
    /// `if (c) s else s`
    If {
        /// Condition (`bool`).
        cond: Expr,
        /// Then branch.
        then_branch: Box<Stmt>,
        /// Else branch.
        else_branch: Option<Box<Stmt>>,
    },
    /// `while (c) s`
    While {
        /// Condition (`bool`).
        cond: Expr,
        /// Body.
        body: Box<Stmt>,
    },
    /// `do s while (c);`
    DoWhile {
        /// Body.
        body: Box<Stmt>,
        /// Condition (`bool`).
        cond: Expr,
    },
    /// `for (init; cond; step) body`. The init's declarations are scoped to
    /// the loop.
    For {
        /// `Decl`s or an `Expr` statement.
        init: Vec<Stmt>,
        /// Condition (`bool`); `None` is true.
        cond: Option<Expr>,
        /// Step expression.
        step: Option<Expr>,
        /// Body.
        body: Box<Stmt>,
        /// The speculation pragma attached to this loop.
        speculate: Option<Speculate>,
    },
    /// `break;`
    Break,
    /// `continue;`
    Continue,
    /// `return e;` (converted to the function's result type).
    Return(Option<Expr>),
    /// `;`
    Empty,
    /// BSGP `spawn(n) body`; `count` is `int`.
    Spawn {
        /// Number of threads.
        count: Expr,
        /// Body (a single statement is wrapped in a block).
        body: Block,
    },
    /// BSGP `barrier;` / `barrier(RANK_REASSIGNED);`
    Barrier {
        /// `RANK_REASSIGNED`.
        rank_reassigned: bool,
    },
    /// BSGP `require stmt` (host code before the superstep).
    Require {
        /// The host code (does not open a scope).
        body: Block,
        /// Host locals (not globals) that the body assigns or declares and
        /// that are visible after it: the results of `pgpu.require`, in
        /// first-assignment order.
        outputs: Vec<VarId>,
    },
    /// BSGP `par { s1 s2 ... }`: one branch per statement.
    Par {
        /// The independent statements (no scope of their own).
        branches: Vec<Stmt>,
    },
    /// Fork `start(e) stmt`.
    Start {
        /// Group size.
        count: Expr,
        /// Body.
        body: Box<Stmt>,
    },
    /// Fork `fork(k; @ = e1; $ = e2) stmt`.
    Fork {
        /// Number of subgroups.
        groups: Expr,
        /// New group id.
        group_id: Expr,
        /// New group-relative rank.
        rank: Expr,
        /// Body.
        body: Box<Stmt>,
    },
    /// Fork `seq stmt`.
    Seq(Box<Stmt>),
    /// Fork `farm stmt`.
    Farm(Box<Stmt>),
}

/// Whether an expression designates storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueCategory {
    /// A value only.
    RValue,
    /// A local or parameter (`Var`), or a field of one.
    Local,
    /// A global (`Global`), or a field/element of one.
    Global,
    /// Memory reached through a pointer (`Deref`, `Index`, `->`).
    Memory,
    /// `thread.oldrank` (assignable, Listing 3).
    OldRank,
}

impl ValueCategory {
    /// Assignable.
    pub fn is_lvalue(self) -> bool {
        self != ValueCategory::RValue
    }
}

/// An expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Its type (arrays only where the expression is an array lvalue that
    /// is indexed or `sizeof`'d; elsewhere they were decayed).
    pub ty: Type,
    /// lvalue classification.
    pub category: ValueCategory,
    /// Its source.
    pub span: Span,
}

/// Unary operators (operand already promoted / converted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-e`
    Neg,
    /// `!e` (operand and result `bool`)
    Not,
    /// `~e`
    BitNot,
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `<<`
    Shl,
    /// `>>` (arithmetic for signed, logical for unsigned)
    Shr,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `==` (result `bool`)
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&` (short-circuit; `bool` operands)
    LogAnd,
    /// `||` (short-circuit; `bool` operands)
    LogOr,
}

impl BinaryOp {
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
}

/// Conversions (the target type is the `Cast` expression's `ty`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CastKind {
    /// Same representation (e.g. int <-> unsigned, pointer to same pointer).
    NoOp,
    /// Narrower integer (trunci).
    IntTrunc,
    /// Wider integer: sign-extends if the source is signed, else zero-extends.
    IntExtend,
    /// Integer to floating (sitofp / uitofp by the source's signedness).
    IntToFloat,
    /// Floating to integer (fptosi / fptoui by the target's signedness).
    FloatToInt,
    /// float -> double.
    FloatExtend,
    /// double -> float.
    FloatTrunc,
    /// Any scalar to `bool` (`!= 0`, `!= null`).
    ToBool,
    /// `bool` to an integer (zero-extend) -- also `IntExtend` would do.
    BoolToInt,
    /// `bool` to floating (0.0 / 1.0).
    BoolToFloat,
    /// `T[N]` lvalue to `T*`.
    ArrayDecay,
    /// `NULL` to `T*`.
    NullToPtr,
    /// `T*` to `U*` (explicit casts only).
    PtrToPtr,
    /// To `void` (explicit `(void)e`).
    ToVoid,
}

/// Collective / reduction operators of `reduce` and `scan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveOp {
    /// `+`
    Add,
    /// `*`
    Mul,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `&`
    And,
    /// `|`
    Or,
    /// `^`
    Xor,
}

/// Fork multiprefix operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MpOp {
    /// `mpadd`
    Add,
    /// `mpmax`
    Max,
    /// `mpand`
    And,
    /// `mpor`
    Or,
}

/// The `<math.h>` functions of the C subset. Each has a `double` form
/// (`sqrt`) and a `float` form (`sqrtf`); [`Builtin::Math`]'s type says
/// which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    /// `sqrt`: `math.sqrt`.
    Sqrt,
    /// `exp`: `math.exp`.
    Exp,
    /// `log` (natural logarithm): `math.log`.
    Log,
    /// `fabs`: `math.absf`.
    Fabs,
    /// `pow(x, y)`: `math.powf`.
    Pow,
    /// `sin`: `math.sin`.
    Sin,
    /// `cos`: `math.cos`.
    Cos,
    /// `floor`: `math.floor`.
    Floor,
}

impl MathFn {
    /// Every function, in the order of the documentation.
    pub const ALL: [MathFn; 8] = [
        MathFn::Sqrt,
        MathFn::Exp,
        MathFn::Log,
        MathFn::Fabs,
        MathFn::Pow,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Floor,
    ];

    /// The C name of the `double` form (the `float` form appends `f`).
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Sqrt => "sqrt",
            MathFn::Exp => "exp",
            MathFn::Log => "log",
            MathFn::Fabs => "fabs",
            MathFn::Pow => "pow",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Floor => "floor",
        }
    }

    /// The upstream `math` dialect op that computes it.
    pub fn op_name(self) -> &'static str {
        match self {
            MathFn::Sqrt => "math.sqrt",
            MathFn::Exp => "math.exp",
            MathFn::Log => "math.log",
            MathFn::Fabs => "math.absf",
            MathFn::Pow => "math.powf",
            MathFn::Sin => "math.sin",
            MathFn::Cos => "math.cos",
            MathFn::Floor => "math.floor",
        }
    }

    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow => 2,
            _ => 1,
        }
    }

    /// The function a C name calls and whether it is the `float` form
    /// (`sqrtf`), if the name is one of them.
    pub fn from_name(name: &str) -> Option<(MathFn, bool)> {
        MathFn::ALL.into_iter().find_map(|f| {
            if name == f.name() {
                Some((f, false))
            } else if name.strip_suffix('f') == Some(f.name()) {
                Some((f, true))
            } else {
                None
            }
        })
    }
}

/// Host I/O and math builtins.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `printf("fmt", args...)`; `format` is the unescaped literal; args are
    /// promoted (float -> double, small ints -> int) and checked against it.
    Printf {
        /// Unescaped format string.
        format: String,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// `argi(k)` / `argi(k, d)` -> `int`.
    Argi {
        /// Index (`int`).
        index: Box<Expr>,
        /// Default (`int`); `None` is 0.
        default: Option<Box<Expr>>,
    },
    /// `wtime()` -> `double`.
    Wtime,
    /// `rand_seed(s)` -> `void`; `s` converted to `unsigned long`.
    RandSeed(Box<Expr>),
    /// `rand_u32()` -> `unsigned`.
    RandU32,
    /// A `<math.h>` function: `sqrt(x)` etc. on `double`, `sqrtf(x)` etc. on
    /// `float` (the expression's type says which); the arguments are
    /// converted to that type.
    Math {
        /// Which function.
        func: MathFn,
        /// Its arguments ([`MathFn::arity`] of them).
        args: Vec<Expr>,
    },
}

/// Expression kinds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ExprKind {
    /// Integer literal (value in the expression's integer type; bit pattern
    /// for negative numbers is never produced: `-1` is `Neg(1)`).
    IntLit(u64),
    /// Floating literal; `f64::from_bits(bits)` (the type says f32/f64).
    FloatLit {
        /// Bits of the `f64` value.
        bits: u64,
    },
    /// `true` / `false`.
    BoolLit(bool),
    /// A string literal (unescaped), type `Ptr(Char)`; only valid as the
    /// format of `printf` in this subset.
    StrLit(String),
    /// `NULL` (type `Null` until cast with `NullToPtr`).
    Null,
    /// A local or parameter.
    Var(VarId),
    /// A global.
    Global(GlobalId),
    /// Unary arithmetic.
    Unary {
        /// Operator.
        op: UnaryOp,
        /// Operand.
        operand: Box<Expr>,
    },
    /// Binary arithmetic, comparison, logic.
    Binary {
        /// Operator.
        op: BinaryOp,
        /// Left.
        lhs: Box<Expr>,
        /// Right.
        rhs: Box<Expr>,
    },
    /// `ptr + offset` / `ptr - offset` (`offset` is `long`, already negated
    /// for `-`).
    PtrAdd {
        /// The pointer.
        ptr: Box<Expr>,
        /// Element offset (`long`).
        offset: Box<Expr>,
    },
    /// `p - q` of two pointers into one allocation -> `long`.
    PtrDiff {
        /// Left.
        lhs: Box<Expr>,
        /// Right.
        rhs: Box<Expr>,
    },
    /// `target = value` (value converted to the target's type); the result
    /// is the stored value.
    Assign {
        /// An lvalue.
        target: Box<Expr>,
        /// Converted value.
        value: Box<Expr>,
    },
    /// `target op= value`.
    CompoundAssign {
        /// Operator (arithmetic/bitwise only; `PtrAdd` for pointer `+=`/`-=`
        /// is expressed as `op: Add/Sub` with a pointer target and `long`
        /// value).
        op: BinaryOp,
        /// An lvalue.
        target: Box<Expr>,
        /// Converted to `op_ty`.
        value: Box<Expr>,
        /// The type the operation is done in.
        op_ty: Type,
    },
    /// `++x`, `x++`, `--x`, `x--` (pointers step by one element).
    IncDec {
        /// An lvalue.
        target: Box<Expr>,
        /// `++` (else `--`).
        increment: bool,
        /// Prefix (the result is the new value), else postfix (old value).
        prefix: bool,
    },
    /// `c ? a : b` (`a` and `b` converted to the result type).
    Cond {
        /// `bool`.
        cond: Box<Expr>,
        /// Then.
        then_expr: Box<Expr>,
        /// Else.
        else_expr: Box<Expr>,
    },
    /// A conversion to the expression's type.
    Cast {
        /// Which conversion.
        kind: CastKind,
        /// Written in the source (`(T)e`), else implicit.
        explicit: bool,
        /// Operand.
        expr: Box<Expr>,
    },
    /// `base[index]`: `base` is a pointer value or an array lvalue; `index`
    /// is `long`.
    Index {
        /// Pointer or array.
        base: Box<Expr>,
        /// `long`.
        index: Box<Expr>,
    },
    /// `base.field` (`p->f` is `Field { base: Deref(p) }`).
    Field {
        /// A struct-typed expression.
        base: Box<Expr>,
        /// Index into [`StructDef::fields`].
        field: u32,
    },
    /// `*p`.
    Deref(Box<Expr>),
    /// `&lvalue` (of memory, a global or array element; not of a scalar
    /// local -- the lowering reports those).
    AddrOf(Box<Expr>),
    /// A call of a user function (arguments converted to parameter types).
    Call {
        /// Callee.
        func: FuncId,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// A host I/O builtin.
    Builtin(Builtin),
    /// `a, b` (value of `b`).
    Comma {
        /// Evaluated and dropped.
        lhs: Box<Expr>,
        /// The value.
        rhs: Box<Expr>,
    },
    /// `thread.rank` (`int`).
    ThreadRank,
    /// `thread.size` (`int`).
    ThreadSize,
    /// `thread.oldrank` (`int`, assignable).
    ThreadOldRank,
    /// `thread.fork(n)` -> `int` child id.
    ThreadFork(Box<Expr>),
    /// `thread.kill(flag)` -> void (`flag` is `bool`).
    ThreadKill(Box<Expr>),
    /// `thread.sortby(key)` -> void.
    ThreadSortBy(Box<Expr>),
    /// `thread.split(side)` -> void (`side` is `bool`).
    ThreadSplit(Box<Expr>),
    /// `thread.get(r, v)`: `v`'s value before the last barrier in thread
    /// `r` (`r` is `int`); type of `v`.
    ThreadGet {
        /// Source rank.
        rank: Box<Expr>,
        /// A thread-local variable.
        var: VarId,
    },
    /// `thread.put(r, p, v)`: an assignment to `p` in thread `r` -> void.
    ThreadPut {
        /// Target rank.
        rank: Box<Expr>,
        /// A thread-local variable.
        var: VarId,
        /// Converted to `var`'s type.
        value: Box<Expr>,
    },
    /// `reduce(op, x)` -> type of `x`.
    Reduce {
        /// Operator.
        op: CollectiveOp,
        /// Value.
        value: Box<Expr>,
    },
    /// `scan(op, x)`: `x` (a thread-local variable) becomes the exclusive
    /// scan; the result (type of `x`) is the total.
    Scan {
        /// Operator.
        op: CollectiveOp,
        /// The scanned variable.
        var: VarId,
    },
    /// `compact(list, src, keep, flag)` -> `int` new length.
    Compact {
        /// A pointer lvalue (the list).
        list: Box<Expr>,
        /// Converted to the list's element type.
        src: Box<Expr>,
        /// `bool`.
        keep: Box<Expr>,
        /// `bool`: clear the list first.
        flag: Box<Expr>,
    },
    /// `split(list, src, side, flag)` -> `int` new length.
    Split {
        /// A pointer lvalue (the list).
        list: Box<Expr>,
        /// Converted to the list's element type.
        src: Box<Expr>,
        /// `bool`.
        side: Box<Expr>,
        /// `bool`: clear the list first.
        flag: Box<Expr>,
    },
    /// `sort_idx(key)` -> `int`.
    SortIdx(Box<Expr>),
    /// `dnew[n]T` / `dtempnew[n]T` -> `Ptr(T)`; `count` is `int`.
    DNew {
        /// `dtempnew`.
        temp: bool,
        /// Element count.
        count: Box<Expr>,
        /// Element type.
        elem: Type,
    },
    /// `dtempfree()` -> void.
    DTempFree,
    /// Fork `$` (`int`): the group-relative processor ID, set by `start`
    /// (`0 .. P-1`) and by `fork`'s `$ = e`, inherited unchanged by the
    /// subgroups of a private `if`, `?:` or loop and by called functions.
    ProcessorId,
    /// Fork `$$` (`int`): the group rank, renumbered `0 .. groupsize()-1`
    /// in the parent's order at every split.
    GroupRank,
    /// Fork `@` (`int`).
    GroupId,
    /// Fork `groupsize()` (`int`): the size of the current group.
    GroupSize,
    /// Fork `mpadd(p, v)` etc. -> old value.
    MultiPrefix {
        /// Operator.
        op: MpOp,
        /// Pointer to the shared cell.
        ptr: Box<Expr>,
        /// Contribution (converted to the pointee type).
        value: Box<Expr>,
    },
    /// An expression that already produced a diagnostic.
    Error,
}

/// Read-only traversal of the HIR. Override `visit_*` and call the
/// matching `walk_*` to continue into children.
pub trait Visitor {
    /// A statement.
    fn visit_stmt(&mut self, s: &Stmt) {
        walk_stmt(self, s);
    }
    /// An expression.
    fn visit_expr(&mut self, e: &Expr) {
        walk_expr(self, e);
    }
}

/// Visit the statements of a block.
pub fn walk_block<V: Visitor + ?Sized>(v: &mut V, b: &Block) {
    for s in &b.stmts {
        v.visit_stmt(s);
    }
}

fn walk_init<V: Visitor + ?Sized>(v: &mut V, i: &Init) {
    match i {
        Init::Expr(e) => v.visit_expr(e),
        Init::List(l) => {
            for i in l {
                walk_init(v, i);
            }
        }
    }
}

/// Visit a statement's children in source order.
pub fn walk_stmt<V: Visitor + ?Sized>(v: &mut V, s: &Stmt) {
    match &s.kind {
        StmtKind::Expr(e) => v.visit_expr(e),
        StmtKind::Decl { init, .. } => {
            if let Some(i) = init {
                walk_init(v, i);
            }
        }
        StmtKind::Block(b) => walk_block(v, b),
        StmtKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            v.visit_expr(cond);
            v.visit_stmt(then_branch);
            if let Some(e) = else_branch {
                v.visit_stmt(e);
            }
        }
        StmtKind::While { cond, body } => {
            v.visit_expr(cond);
            v.visit_stmt(body);
        }
        StmtKind::DoWhile { body, cond } => {
            v.visit_stmt(body);
            v.visit_expr(cond);
        }
        StmtKind::For {
            init,
            cond,
            step,
            body,
            ..
        } => {
            for s in init {
                v.visit_stmt(s);
            }
            if let Some(c) = cond {
                v.visit_expr(c);
            }
            v.visit_stmt(body);
            if let Some(st) = step {
                v.visit_expr(st);
            }
        }
        StmtKind::Return(Some(e)) => v.visit_expr(e),
        StmtKind::Return(None)
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Empty
        | StmtKind::Barrier { .. } => {}
        StmtKind::Spawn { count, body } => {
            v.visit_expr(count);
            walk_block(v, body);
        }
        StmtKind::Require { body, .. } => walk_block(v, body),
        StmtKind::Par { branches } => {
            for b in branches {
                v.visit_stmt(b);
            }
        }
        StmtKind::Start { count, body } => {
            v.visit_expr(count);
            v.visit_stmt(body);
        }
        StmtKind::Fork {
            groups,
            group_id,
            rank,
            body,
        } => {
            v.visit_expr(groups);
            v.visit_expr(group_id);
            v.visit_expr(rank);
            v.visit_stmt(body);
        }
        StmtKind::Seq(b) | StmtKind::Farm(b) => v.visit_stmt(b),
    }
}

/// Visit an expression's children in evaluation order.
pub fn walk_expr<V: Visitor + ?Sized>(v: &mut V, e: &Expr) {
    use ExprKind::*;
    match &e.kind {
        IntLit(_)
        | FloatLit { .. }
        | BoolLit(_)
        | StrLit(_)
        | Null
        | Var(_)
        | Global(_)
        | ThreadRank
        | ThreadSize
        | ThreadOldRank
        | DTempFree
        | ProcessorId
        | GroupRank
        | GroupId
        | GroupSize
        | Error => {}
        Unary { operand, .. } => v.visit_expr(operand),
        Binary { lhs, rhs, .. } | PtrDiff { lhs, rhs } | Comma { lhs, rhs } => {
            v.visit_expr(lhs);
            v.visit_expr(rhs);
        }
        PtrAdd { ptr, offset } => {
            v.visit_expr(ptr);
            v.visit_expr(offset);
        }
        Assign { target, value } | CompoundAssign { target, value, .. } => {
            v.visit_expr(target);
            v.visit_expr(value);
        }
        IncDec { target, .. } => v.visit_expr(target),
        Cond {
            cond,
            then_expr,
            else_expr,
        } => {
            v.visit_expr(cond);
            v.visit_expr(then_expr);
            v.visit_expr(else_expr);
        }
        Cast { expr, .. } | Deref(expr) | AddrOf(expr) => v.visit_expr(expr),
        Index { base, index } => {
            v.visit_expr(base);
            v.visit_expr(index);
        }
        Field { base, .. } => v.visit_expr(base),
        Call { args, .. } => {
            for a in args {
                v.visit_expr(a);
            }
        }
        Builtin(b) => match b {
            self::Builtin::Printf { args, .. } => {
                for a in args {
                    v.visit_expr(a);
                }
            }
            self::Builtin::Argi { index, default } => {
                v.visit_expr(index);
                if let Some(d) = default {
                    v.visit_expr(d);
                }
            }
            self::Builtin::RandSeed(s) => v.visit_expr(s),
            self::Builtin::Wtime | self::Builtin::RandU32 => {}
            self::Builtin::Math { args, .. } => {
                for a in args {
                    v.visit_expr(a);
                }
            }
        },
        ThreadFork(x) | ThreadKill(x) | ThreadSortBy(x) | ThreadSplit(x) | SortIdx(x) => {
            v.visit_expr(x)
        }
        ThreadGet { rank, .. } => v.visit_expr(rank),
        ThreadPut { rank, value, .. } => {
            v.visit_expr(rank);
            v.visit_expr(value);
        }
        Reduce { value, .. } => v.visit_expr(value),
        Scan { .. } => {}
        Compact {
            list,
            src,
            keep,
            flag,
        } => {
            v.visit_expr(list);
            v.visit_expr(src);
            v.visit_expr(keep);
            v.visit_expr(flag);
        }
        Split {
            list,
            src,
            side,
            flag,
        } => {
            v.visit_expr(list);
            v.visit_expr(src);
            v.visit_expr(side);
            v.visit_expr(flag);
        }
        DNew { count, .. } => v.visit_expr(count),
        MultiPrefix { ptr, value, .. } => {
            v.visit_expr(ptr);
            v.visit_expr(value);
        }
    }
}
