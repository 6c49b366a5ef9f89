//! The untyped syntax tree of every supported language (C subset, BSGP,
//! Fork). Names are unresolved strings; semantic analysis ([`crate::sema`])
//! turns it into the typed [`crate::hir`].

use crate::hir::{FnMode, Storage};
use crate::span::Span;

/// A parsed file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ast {
    /// Top-level items in order.
    pub items: Vec<Item>,
}

/// A name and where it is written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Name {
    /// The identifier.
    pub text: String,
    /// Its span.
    pub span: Span,
}

/// Top-level items.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Item {
    /// A function definition or prototype.
    Function(FnDef),
    /// A global declaration (`int a = 1, *b;`).
    Global(Decl),
    /// `struct S { ... };`
    Struct(StructDecl),
}

/// Base type keywords.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BaseType {
    /// `void`
    Void,
    /// `bool`
    Bool,
    /// `char`
    Char,
    /// `int`, `signed`
    Int,
    /// `unsigned`, `unsigned int`
    UInt,
    /// `long`, `long int`, `long long`
    Long,
    /// `unsigned long`
    ULong,
    /// `float`
    Float,
    /// `double`
    Double,
    /// `struct S`
    Struct(Name),
}

/// A type as written in casts, `sizeof`, `dnew` and parameters: a base type
/// and a number of `*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TypeName {
    /// The base.
    pub base: BaseType,
    /// Number of `*`.
    pub pointers: u32,
    /// Its span.
    pub span: Span,
}

/// `struct S { T a; U b[4]; };`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructDecl {
    /// `S`.
    pub name: Name,
    /// The field declarations.
    pub fields: Vec<Decl>,
    /// Whole span.
    pub span: Span,
}

/// A declaration: `[storage] T d1, d2, ...;`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Decl {
    /// Fork `sh`/`pr`.
    pub storage: Option<Storage>,
    /// The base type (pointers are per declarator).
    pub base: BaseType,
    /// Span of the base type.
    pub base_span: Span,
    /// The declarators.
    pub declarators: Vec<Declarator>,
    /// Whole span.
    pub span: Span,
}

/// One declarator: `*p`, `a[4]`, `x = 1`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Declarator {
    /// The name.
    pub name: Name,
    /// Number of `*`.
    pub pointers: u32,
    /// Array dimensions, outermost first (`None` for `[]`).
    pub dims: Vec<Option<Expr>>,
    /// Initialiser.
    pub init: Option<Initializer>,
    /// Whole span.
    pub span: Span,
}

/// `= e` or `= { ... }`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Initializer {
    /// `= e`
    Expr(Expr),
    /// `= { a, b }`
    List(Vec<Initializer>, Span),
}

/// A function parameter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    /// Fork storage class, if written (`sh`: shared by the calling group).
    pub storage: Option<Storage>,
    /// Its type (a `T name[]` parameter adds one pointer).
    pub ty: TypeName,
    /// Its name (prototypes may omit it).
    pub name: Option<Name>,
    /// Whole span.
    pub span: Span,
}

/// A function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FnDef {
    /// Its name.
    pub name: Name,
    /// Result type; `None` for BSGP functions written without one (void).
    pub ret: Option<TypeName>,
    /// Parameters (`(void)` gives none).
    pub params: Vec<Param>,
    /// The body; `None` for a prototype.
    pub body: Option<Block>,
    /// `inline`.
    pub is_inline: bool,
    /// Fork `sync`/`async`.
    pub mode: Option<FnMode>,
    /// Whole span.
    pub span: Span,
}

/// `{ ... }`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Block {
    /// Statements.
    pub stmts: Vec<Stmt>,
    /// Braces included.
    pub span: Span,
}

/// A statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stmt {
    /// What.
    pub kind: StmtKind,
    /// Where.
    pub span: Span,
}

/// `#pragma pgpu speculate` clauses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pragma {
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
    /// `T a = 1, b;`
    Decl(Decl),
    /// `{ ... }`
    Block(Block),
    /// `if`
    If {
        /// Condition.
        cond: Expr,
        /// Then.
        then_branch: Box<Stmt>,
        /// Else.
        else_branch: Option<Box<Stmt>>,
    },
    /// `while`
    While {
        /// Condition.
        cond: Expr,
        /// Body.
        body: Box<Stmt>,
    },
    /// `do ... while`
    DoWhile {
        /// Body.
        body: Box<Stmt>,
        /// Condition.
        cond: Expr,
    },
    /// `for`
    For {
        /// A `Decl` or `Expr` statement.
        init: Option<Box<Stmt>>,
        /// Condition.
        cond: Option<Expr>,
        /// Step.
        step: Option<Expr>,
        /// Body.
        body: Box<Stmt>,
        /// Attached `#pragma pgpu speculate`.
        pragma: Option<Pragma>,
    },
    /// `break;`
    Break,
    /// `continue;`
    Continue,
    /// `return [e];`
    Return(Option<Expr>),
    /// `;`
    Empty,
    /// BSGP `spawn(e) stmt`.
    Spawn {
        /// Thread count.
        count: Expr,
        /// Body.
        body: Box<Stmt>,
    },
    /// `barrier;` / `barrier(RANK_REASSIGNED);` (BSGP, Fork).
    Barrier {
        /// `RANK_REASSIGNED`.
        rank_reassigned: bool,
    },
    /// BSGP `require stmt`.
    Require(Box<Stmt>),
    /// BSGP `par { ... }`.
    Par(Block),
    /// Fork `start(e) stmt`.
    Start {
        /// Group size.
        count: Expr,
        /// Body.
        body: Box<Stmt>,
    },
    /// Fork `fork(k; @ = e1; $ = e2) stmt`.
    Fork {
        /// Number of groups.
        groups: Expr,
        /// `@ = e1`.
        group_id: Expr,
        /// `$ = e2`.
        rank: Expr,
        /// Body.
        body: Box<Stmt>,
    },
    /// Fork `seq stmt`.
    Seq(Box<Stmt>),
    /// Fork `farm stmt`.
    Farm(Box<Stmt>),
    /// A statement that did not parse (already diagnosed).
    Error,
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-`
    Neg,
    /// `+`
    Plus,
    /// `!`
    Not,
    /// `~`
    BitNot,
    /// `*`
    Deref,
    /// `&`
    AddrOf,
    /// `++x`
    PreInc,
    /// `--x`
    PreDec,
    /// `x++`
    PostInc,
    /// `x--`
    PostDec,
}

/// Binary operators (also the operator of a compound assignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
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
    /// `>>`
    Shr,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `==`
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
    /// `&&`
    LogAnd,
    /// `||`
    LogOr,
}

/// Expressions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Expr {
    /// What.
    pub kind: ExprKind,
    /// Where.
    pub span: Span,
}

/// Expression kinds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ExprKind {
    /// Integer literal.
    Int {
        /// Value.
        value: u64,
        /// `u` suffix.
        unsigned: bool,
        /// `l` suffix.
        long: bool,
        /// Hex or octal.
        non_decimal: bool,
    },
    /// Floating literal.
    Float {
        /// `f64` bits.
        bits: u64,
        /// `f` suffix.
        single: bool,
    },
    /// Character literal.
    Char(u8),
    /// String literal (adjacent literals concatenated).
    Str(String),
    /// `true` / `false`.
    Bool(bool),
    /// `NULL`.
    Null,
    /// A name.
    Ident(String),
    /// Prefix and postfix unary operators.
    Unary {
        /// Operator.
        op: UnOp,
        /// Operand.
        operand: Box<Expr>,
    },
    /// Binary operators.
    Binary {
        /// Operator.
        op: BinOp,
        /// Left.
        lhs: Box<Expr>,
        /// Right.
        rhs: Box<Expr>,
    },
    /// `=` (op `None`) and `op=`.
    Assign {
        /// Compound operator.
        op: Option<BinOp>,
        /// Target.
        lhs: Box<Expr>,
        /// Value.
        rhs: Box<Expr>,
    },
    /// `c ? a : b`
    Cond {
        /// Condition.
        cond: Box<Expr>,
        /// Then.
        then_expr: Box<Expr>,
        /// Else.
        else_expr: Box<Expr>,
    },
    /// `(T)e`
    Cast {
        /// Target type.
        ty: TypeName,
        /// Operand.
        expr: Box<Expr>,
    },
    /// `sizeof(T)`
    SizeofType(TypeName),
    /// `sizeof e`
    SizeofExpr(Box<Expr>),
    /// `a[i]`
    Index {
        /// Base.
        base: Box<Expr>,
        /// Index.
        index: Box<Expr>,
    },
    /// `f(args)` (also builtins, collectives and `thread.f(args)`).
    Call {
        /// Callee.
        callee: Box<Expr>,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// `a.f` / `a->f` (also `thread.rank`).
    Member {
        /// Base.
        base: Box<Expr>,
        /// Field name.
        field: Name,
        /// `->`.
        arrow: bool,
    },
    /// `a, b`
    Comma {
        /// Left.
        lhs: Box<Expr>,
        /// Right.
        rhs: Box<Expr>,
    },
    /// BSGP `thread` (only as the base of a member access).
    Thread,
    /// BSGP `dnew[n]T` / `dtempnew[n]T`.
    DNew {
        /// `dtempnew`.
        temp: bool,
        /// Count.
        count: Box<Expr>,
        /// Element type.
        ty: TypeName,
    },
    /// A bare operator as the first argument of `reduce`/`scan` (`+`).
    OpArg(BinOp),
    /// Fork `$` (the group-relative processor ID).
    Dollar,
    /// Fork `$$` (the group rank).
    DollarDollar,
    /// Fork `@`.
    At,
    /// Did not parse (already diagnosed).
    Error,
}
