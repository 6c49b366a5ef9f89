//! The PTX IR: a module of variables and functions whose bodies are
//! statements (register declarations, labels, instructions, nested blocks).
//!
//! Instructions are kept close to the text: an [`Opcode`], its modifiers
//! in the order written (each one typed: a [`ScalarType`], a
//! [`StateSpace`], a vector width or a [`Flag`]) and its operands. What a
//! modifier means depends on the opcode (`.and` is a boolean operation on
//! `setp` and an atomic operation on `atom`); the accessors on
//! [`Instruction`] answer the questions the translators ask. Spans never
//! take part in comparisons ([`Span`]).

use crate::error::Span;

/// Declares a C-like enum with the PTX spelling of each variant and the
/// conversions both ways.
macro_rules! spelled {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every variant.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The PTX spelling (without a dot).
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// The variant spelled `text`.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

spelled! {
    /// A fundamental PTX type.
    ScalarType {
        B8 = "b8", B16 = "b16", B32 = "b32", B64 = "b64", B128 = "b128",
        U8 = "u8", U16 = "u16", U32 = "u32", U64 = "u64",
        S8 = "s8", S16 = "s16", S32 = "s32", S64 = "s64",
        F16 = "f16", F16x2 = "f16x2", Bf16 = "bf16", Bf16x2 = "bf16x2",
        F32 = "f32", F64 = "f64", Pred = "pred",
    }
}

/// How a type's bits are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeClass {
    /// `.b*`: untyped bits.
    Bits,
    /// `.u*`.
    Unsigned,
    /// `.s*`.
    Signed,
    /// `.f*`, `.bf16*`.
    Float,
    /// `.pred`.
    Predicate,
}

impl ScalarType {
    /// Size in bits (a predicate counts as 1).
    pub fn bits(self) -> u32 {
        use ScalarType::*;
        match self {
            Pred => 1,
            B8 | U8 | S8 => 8,
            B16 | U16 | S16 | F16 | Bf16 => 16,
            B32 | U32 | S32 | F32 | F16x2 | Bf16x2 => 32,
            B64 | U64 | S64 | F64 => 64,
            B128 => 128,
        }
    }

    /// Size in bytes in memory (a predicate is not addressable: 0).
    pub fn bytes(self) -> u32 {
        if self == ScalarType::Pred {
            0
        } else {
            self.bits() / 8
        }
    }

    /// How the bits are read.
    pub fn class(self) -> TypeClass {
        use ScalarType::*;
        match self {
            B8 | B16 | B32 | B64 | B128 => TypeClass::Bits,
            U8 | U16 | U32 | U64 => TypeClass::Unsigned,
            S8 | S16 | S32 | S64 => TypeClass::Signed,
            F16 | F16x2 | Bf16 | Bf16x2 | F32 | F64 => TypeClass::Float,
            Pred => TypeClass::Predicate,
        }
    }
}

spelled! {
    /// A state space (where a variable or an access lives).
    StateSpace {
        Reg = "reg", Sreg = "sreg", Const = "const", Global = "global",
        Local = "local", Param = "param", ParamEntry = "param::entry",
        ParamFunc = "param::func", Shared = "shared", SharedCta = "shared::cta",
        SharedCluster = "shared::cluster", Tex = "tex",
    }
}

spelled! {
    /// An instruction modifier that is neither a type, a state space nor a
    /// vector width. Some spellings mean different things on different
    /// opcodes (`.and`, `.min`, `.uni`, `.lo`); the instruction's opcode
    /// says which.
    Flag {
        // Rounding.
        Rn = "rn", Rz = "rz", Rm = "rm", Rp = "rp", Rna = "rna",
        Rni = "rni", Rzi = "rzi", Rmi = "rmi", Rpi = "rpi",
        // Comparisons (setp, set, slct, testp-like).
        Eq = "eq", Ne = "ne", Lt = "lt", Le = "le", Gt = "gt", Ge = "ge",
        Lo = "lo", Ls = "ls", Hi = "hi", Hs = "hs",
        Equ = "equ", Neu = "neu", Ltu = "ltu", Leu = "leu", Gtu = "gtu", Geu = "geu",
        Num = "num", Nan = "nan",
        // Boolean and atomic operations.
        And = "and", Or = "or", Xor = "xor", Add = "add", Inc = "inc", Dec = "dec",
        Min = "min", Max = "max", Exch = "exch", Cas = "cas",
        // Arithmetic.
        Ftz = "ftz", Sat = "sat", Approx = "approx", Full = "full", Wide = "wide",
        Cc = "cc", Noftz = "noftz", Shiftamt = "shiftamt", Relu = "relu",
        NaN = "NaN", Xorsign = "xorsign", Abs = "abs",
        // Control and synchronization.
        Uni = "uni", Sync = "sync", Aligned = "aligned", Arrive = "arrive",
        Red = "red", Popc = "popc", Warp = "warp", All = "all", Any = "any",
        Ballot = "ballot",
        // Memory consistency.
        Volatile = "volatile", Relaxed = "relaxed", Acquire = "acquire",
        Release = "release", AcqRel = "acq_rel", Sc = "sc", Weak = "weak",
        Mmio = "mmio", Cta = "cta", Gpu = "gpu", Sys = "sys", Cluster = "cluster",
        Gl = "gl",
        // Caching.
        Nc = "nc", Ca = "ca", Cg = "cg", Cs = "cs", Lu = "lu", Cv = "cv",
        Wb = "wb", Wt = "wt", L1EvictNormal = "L1::evict_normal",
        L1EvictUnchanged = "L1::evict_unchanged", L1EvictFirst = "L1::evict_first",
        L1EvictLast = "L1::evict_last", L1NoAllocate = "L1::no_allocate",
        L2EvictNormal = "L2::evict_normal", L2EvictFirst = "L2::evict_first",
        L2EvictLast = "L2::evict_last", L2_64B = "L2::64B", L2_128B = "L2::128B",
        L2_256B = "L2::256B", L2CacheHint = "L2::cache_hint", L1 = "L1", L2 = "L2",
        // shfl modes.
        Up = "up", Down = "down", Bfly = "bfly", Idx = "idx",
        // cvta.
        To = "to",
        // griddepcontrol.
        Wait = "wait", LaunchDependents = "launch_dependents",
        // shf.
        L = "l", R = "r", Wrap = "wrap", Clamp = "clamp",
        // prmt modes.
        F4e = "f4e", B4e = "b4e", Rc8 = "rc8", Ecl = "ecl", Ecr = "ecr", Rc16 = "rc16",
        // testp.
        Finite = "finite", Infinite = "infinite", Number = "number",
        Notanumber = "notanumber", Normal = "normal", Subnormal = "subnormal",
    }
}

/// One modifier of an instruction, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modifier {
    /// A type: `.f32`.
    Type(ScalarType),
    /// A state space: `.global`.
    Space(StateSpace),
    /// A vector width: `.v2`, `.v4`, `.v8`.
    Vector(u8),
    /// Anything else: `.rn`, `.sync`, `.eq`.
    Flag(Flag),
}

impl Modifier {
    /// The modifier spelled `text` (without its dot), as a flag if a name is
    /// both a flag and something else (none is).
    pub fn parse(text: &str) -> Option<Modifier> {
        if let Some(ty) = ScalarType::parse(text) {
            return Some(Modifier::Type(ty));
        }
        if let Some(space) = StateSpace::parse(text) {
            return Some(Modifier::Space(space));
        }
        match text {
            "v2" => return Some(Modifier::Vector(2)),
            "v4" => return Some(Modifier::Vector(4)),
            "v8" => return Some(Modifier::Vector(8)),
            _ => {}
        }
        Flag::parse(text).map(Modifier::Flag)
    }
}

impl std::fmt::Display for Modifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Modifier::Type(ty) => write!(f, ".{ty}"),
            Modifier::Space(space) => write!(f, ".{space}"),
            Modifier::Vector(n) => write!(f, ".v{n}"),
            Modifier::Flag(flag) => write!(f, ".{flag}"),
        }
    }
}

spelled! {
    /// The PTX instructions this frontend supports.
    Opcode {
        Abs = "abs", Activemask = "activemask", Add = "add", Addc = "addc",
        And = "and", Atom = "atom", Bar = "bar", Barrier = "barrier", Bfe = "bfe",
        Bfi = "bfi", Bfind = "bfind", Bra = "bra", Brev = "brev", Call = "call",
        Clz = "clz", Cnot = "cnot", Copysign = "copysign", Cos = "cos", Cvt = "cvt",
        Cvta = "cvta", Div = "div", Ex2 = "ex2", Exit = "exit", Fence = "fence",
        Fma = "fma", Griddepcontrol = "griddepcontrol", Isspacep = "isspacep", Ld = "ld", Ldu = "ldu", Lg2 = "lg2",
        Lop3 = "lop3", Mad = "mad", Mad24 = "mad24", Madc = "madc", Max = "max",
        Membar = "membar", Min = "min", Mov = "mov", Mul = "mul", Mul24 = "mul24",
        Nanosleep = "nanosleep", Neg = "neg", Not = "not", Or = "or", Popc = "popc",
        Prefetch = "prefetch", Prmt = "prmt", Rcp = "rcp", Red = "red", Rem = "rem",
        Ret = "ret", Rsqrt = "rsqrt", Sad = "sad", Selp = "selp", Set = "set",
        Setp = "setp", Shf = "shf", Shfl = "shfl", Shl = "shl", Shr = "shr", Sin = "sin",
        Slct = "slct", Sqrt = "sqrt", St = "st", Sub = "sub", Subc = "subc",
        Tanh = "tanh", Testp = "testp", Trap = "trap", Vote = "vote", Xor = "xor",
    }
}

/// PTX instructions that exist but that this frontend does not translate:
/// they are reported by name, never mistranslated.
pub const UNSUPPORTED_OPCODES: &[&str] = &[
    "alloca",
    "applypriority",
    "bmsk",
    "brkpt",
    "brx",
    "clusterlaunchcontrol",
    "cp",
    "createpolicy",
    "discard",
    "dp2a",
    "dp4a",
    "elect",
    "fns",
    "getctarank",
    "istypep",
    "ldmatrix",
    "mapa",
    "match",
    "mbarrier",
    "mma",
    "multimem",
    "pmevent",
    "prefetchu",
    "redux",
    "setmaxnreg",
    "stackrestore",
    "stacksave",
    "stmatrix",
    "suld",
    "suq",
    "sured",
    "sust",
    "szext",
    "tcgen05",
    "tensormap",
    "tex",
    "tld4",
    "txq",
    "vabsdiff",
    "vabsdiff2",
    "vabsdiff4",
    "vadd",
    "vadd2",
    "vadd4",
    "vavrg2",
    "vavrg4",
    "vmad",
    "vmax",
    "vmax2",
    "vmax4",
    "vmin",
    "vmin2",
    "vmin4",
    "vset",
    "vset2",
    "vset4",
    "vshl",
    "vshr",
    "vsub",
    "vsub2",
    "vsub4",
    "wgmma",
    "wmma",
];

/// A vector component of a register (`%tid.x`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// `.x` (`.r`).
    X,
    /// `.y` (`.g`).
    Y,
    /// `.z` (`.b`).
    Z,
    /// `.w` (`.a`).
    W,
}

impl Component {
    /// The component spelled `text`.
    pub fn parse(text: &str) -> Option<Component> {
        match text {
            "x" | "r" => Some(Component::X),
            "y" | "g" => Some(Component::Y),
            "z" | "b" => Some(Component::Z),
            "w" | "a" => Some(Component::W),
            _ => None,
        }
    }

    /// Its index, 0 to 3.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The spelling `x`..`w`.
    pub fn as_str(self) -> &'static str {
        ["x", "y", "z", "w"][self as usize]
    }
}

/// An immediate value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Immediate {
    /// An integer; its bits, two's complement for negative values.
    Int(i64),
    /// An unsigned integer (`U` suffix or too large for i64).
    Uint(u64),
    /// An f32 (`0fXXXXXXXX`), as bits.
    F32(u32),
    /// An f64 (`0dXXXXXXXXXXXXXXXX` or decimal), as bits.
    F64(u64),
}

impl Immediate {
    /// Its bits as a u64 (integers two's complement; an f32 in the low 32
    /// bits).
    pub fn bits(self) -> u64 {
        match self {
            Immediate::Int(v) => v as u64,
            Immediate::Uint(v) | Immediate::F64(v) => v,
            Immediate::F32(v) => u64::from(v),
        }
    }
}

/// An instruction operand.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A register, a variable, a label or a function, by name; the
    /// checker ([`crate::check`]) says which.
    Name(String),
    /// A vector component of a register: `%tid.x`.
    Component(String, Component),
    /// An immediate.
    Immediate(Immediate),
    /// A memory address: `[base]`, `[base+offset]`, `[offset]`.
    Address(Address),
    /// A vector of operands: `{%f1, %f2}`.
    Vector(Vec<Operand>),
    /// Two destinations: `%r1|%p1` (shfl, setp).
    Pair(Box<Operand>, Box<Operand>),
    /// A negated predicate: `!%p1`.
    Not(Box<Operand>),
    /// An argument list of `call`: `(param0, param1)`.
    List(Vec<Operand>),
    /// `_`: a result nobody reads.
    Sink,
}

/// A memory address operand.
#[derive(Clone, Debug, PartialEq)]
pub struct Address {
    /// The register or variable at the base; None for an absolute address.
    pub base: Option<String>,
    /// A byte offset.
    pub offset: i64,
}

/// A guard predicate: `@%p1` or `@!%p1`.
#[derive(Clone, Debug, PartialEq)]
pub struct Guard {
    /// The predicate register.
    pub predicate: String,
    /// `@!`: run when the predicate is false.
    pub negated: bool,
}

/// One instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// Its guard, if any.
    pub guard: Option<Guard>,
    /// The operation.
    pub opcode: Opcode,
    /// The modifiers, in the order written.
    pub modifiers: Vec<Modifier>,
    /// The operands, destinations first.
    pub operands: Vec<Operand>,
    /// Where: from the guard (or opcode) to the semicolon.
    pub span: Span,
}

impl Instruction {
    /// Whether the instruction carries `flag`.
    pub fn has(&self, flag: Flag) -> bool {
        self.modifiers.contains(&Modifier::Flag(flag))
    }

    /// The types written, in order (`cvt.f32.s32` has two).
    pub fn types(&self) -> Vec<ScalarType> {
        self.modifiers
            .iter()
            .filter_map(|m| match m {
                Modifier::Type(ty) => Some(*ty),
                _ => None,
            })
            .collect()
    }

    /// The last type written (the operation's type; `cvt`'s destination is
    /// the first).
    pub fn ty(&self) -> Option<ScalarType> {
        self.types().last().copied()
    }

    /// The state space written, if any.
    pub fn space(&self) -> Option<StateSpace> {
        self.modifiers.iter().find_map(|m| match m {
            Modifier::Space(space) => Some(*space),
            _ => None,
        })
    }

    /// The vector width written, if any.
    pub fn vector(&self) -> Option<u8> {
        self.modifiers.iter().find_map(|m| match m {
            Modifier::Vector(n) => Some(*n),
            _ => None,
        })
    }

    /// The first flag among `flags` that the instruction carries.
    pub fn one_of(&self, flags: &[Flag]) -> Option<Flag> {
        self.modifiers.iter().find_map(|m| match m {
            Modifier::Flag(flag) if flags.contains(flag) => Some(*flag),
            _ => None,
        })
    }
}

/// A variable's or register's type: a scalar, or a vector of 2, 4 or 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueType {
    /// The vector width, if it is one.
    pub vector: Option<u8>,
    /// The element type.
    pub scalar: ScalarType,
}

impl ValueType {
    /// A scalar type.
    pub fn scalar(scalar: ScalarType) -> ValueType {
        ValueType {
            vector: None,
            scalar,
        }
    }
}

/// A register declaration: `.reg .b32 %r<6>;` (`%r0` to `%r5`) or
/// `.reg .f32 a, b;`.
#[derive(Clone, Debug, PartialEq)]
pub struct RegisterDecl {
    /// The registers' type.
    pub ty: ValueType,
    /// The names, each with its count when written `name<count>`.
    pub names: Vec<(String, Option<u32>)>,
    /// Where.
    pub span: Span,
}

impl RegisterDecl {
    /// Every register the declaration makes.
    pub fn registers(&self) -> impl Iterator<Item = String> + '_ {
        self.names.iter().flat_map(|(name, count)| match count {
            None => vec![name.clone()],
            Some(n) => (0..*n).map(|i| format!("{name}{i}")).collect(),
        })
    }
}

spelled! {
    /// Linkage of a module-level variable or function.
    Linkage {
        Visible = "visible", Extern = "extern", Weak = "weak", Common = "common",
    }
}

/// An initializer of a variable.
#[derive(Clone, Debug, PartialEq)]
pub enum Initializer {
    /// A constant.
    Immediate(Immediate),
    /// The address of a variable or function, plus an offset;
    /// `generic(name)` takes its generic address.
    Symbol {
        /// The variable.
        name: String,
        /// Byte offset.
        offset: i64,
        /// `generic(...)`.
        generic: bool,
    },
    /// `{a, b, ...}`.
    List(Vec<Initializer>),
}

/// A variable: module-level (`.global`, `.const`, `.shared`) or in a
/// function (`.local`, `.shared`, `.param`).
#[derive(Clone, Debug, PartialEq)]
pub struct Variable {
    /// Linkage (module level only).
    pub linkage: Option<Linkage>,
    /// The state space.
    pub space: StateSpace,
    /// `.align n`.
    pub align: Option<u32>,
    /// The element type.
    pub ty: ValueType,
    /// The name.
    pub name: String,
    /// Array dimensions, outermost first; None for `[]` (size from the
    /// initializer, or an external array of unknown size).
    pub dims: Vec<Option<u64>>,
    /// The initializer.
    pub init: Option<Initializer>,
    /// Where.
    pub span: Span,
}

impl Variable {
    /// Size in bytes (0 for an unsized array).
    pub fn bytes(&self) -> u64 {
        let element = u64::from(self.ty.scalar.bytes()) * u64::from(self.ty.vector.unwrap_or(1));
        self.dims
            .iter()
            .try_fold(element, |size, dim| dim.map(|d| size * d))
            .unwrap_or(0)
    }
}

/// A parameter of an entry or function: `.param .u64 .ptr .global .align 1
/// name`, `.param .align 8 .b8 name[16]` or (functions) `.reg .b32 name`.
#[derive(Clone, Debug, PartialEq)]
pub struct Parameter {
    /// `.param` or `.reg`.
    pub space: StateSpace,
    /// `.align n`.
    pub align: Option<u32>,
    /// The type.
    pub ty: ValueType,
    /// `.ptr` attributes: the pointee's state space and alignment.
    pub pointer: Option<PointerAttribute>,
    /// The name.
    pub name: String,
    /// Array dimensions (`.b8 name[16]`).
    pub dims: Vec<Option<u64>>,
    /// Where.
    pub span: Span,
}

/// `.ptr [.space] [.align n]` on a kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct PointerAttribute {
    /// `.global`, `.shared`, `.const` or `.local`.
    pub space: Option<StateSpace>,
    /// `.align n`.
    pub align: Option<u32>,
}

/// Kernel or device function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    /// `.entry`: a kernel.
    Entry,
    /// `.func`: a device function.
    Func,
}

/// A performance-tuning directive of a function: `.maxntid 256, 1, 1`,
/// `.reqntid`, `.minnctapersm`, `.maxnreg`, `.noreturn`, `.pragma "..."`.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDirective {
    /// The directive's name (without the dot).
    pub name: String,
    /// Its integer arguments.
    pub values: Vec<u64>,
    /// Its string arguments (`.pragma`).
    pub strings: Vec<String>,
}

/// A statement of a function body.
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    /// `.reg` declaration.
    Registers(RegisterDecl),
    /// A variable in a state space (`.local`, `.shared`, `.param`).
    Variable(Variable),
    /// `name:`.
    Label(String, Span),
    /// An instruction.
    Instruction(Instruction),
    /// `{ ... }`: a nested scope.
    Block(Vec<Statement>),
    /// `.pragma "...";`.
    Pragma(Vec<String>),
    /// `.loc file line column`: a source position for what follows.
    Location {
        /// The `.file` index.
        file: u32,
        /// Line.
        line: u32,
        /// Column.
        column: u32,
        /// `, function_name NAME, inlined_at FILE LINE COLUMN`: the
        /// function inlined here and where.
        inlined: Option<(String, [u32; 3])>,
    },
}

/// A kernel or device function.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Linkage.
    pub linkage: Option<Linkage>,
    /// `.entry` or `.func`.
    pub kind: FunctionKind,
    /// Return parameters (`.func` only).
    pub returns: Vec<Parameter>,
    /// The name.
    pub name: String,
    /// The parameters.
    pub params: Vec<Parameter>,
    /// Performance directives, in order.
    pub directives: Vec<FunctionDirective>,
    /// The body; None for a declaration (`.extern .func f(...);`).
    pub body: Option<Vec<Statement>>,
    /// Where the header is.
    pub span: Span,
}

/// A module-level item.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A variable.
    Variable(Variable),
    /// A kernel or function.
    Function(Function),
    /// `.file index "name" [, timestamp, size]`.
    File {
        /// Its index.
        index: u32,
        /// The path.
        name: String,
        /// Optional timestamp and size.
        extra: Vec<u64>,
    },
}

/// A PTX module.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// `.version major.minor`.
    pub version: (u32, u32),
    /// `.target` entries: `sm_90`, `texmode_independent`, `debug`.
    pub target: Vec<String>,
    /// `.address_size` (64 when absent).
    pub address_size: u32,
    /// The items in order.
    pub items: Vec<Item>,
}

impl Module {
    /// The functions (kernels and device functions), in order.
    pub fn functions(&self) -> impl Iterator<Item = &Function> {
        self.items.iter().filter_map(|item| match item {
            Item::Function(f) => Some(f),
            _ => None,
        })
    }

    /// The kernel named `name`.
    pub fn kernel(&self, name: &str) -> Option<&Function> {
        self.functions()
            .find(|f| f.kind == FunctionKind::Entry && f.name == name)
    }
}
