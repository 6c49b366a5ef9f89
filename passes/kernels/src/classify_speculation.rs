//! `pgpu-classify-speculation{remarks=false}`: decides, for each memory
//! access of a speculative loop (`pgpu.spec.loop`, a `for` loop marked
//! `#pragma pgpu speculate`), whether it may stay a direct access or must
//! become a speculative one (`pgpu.spec.load` / `pgpu.spec.store`,
//! seeds/gpu-tls.txt, Section III), and refuses loops that cannot be
//! speculated.
//!
//! Accesses are grouped by the memory they reach (a global, a memref
//! defined before the loop, through casts and views). Memory allocated in
//! the body is private to the iteration; memory the loop never writes is
//! read-only; memory that every access reaches with the same subscripts,
//! one of which is `a * i + c` (the induction variable `i`, a non-zero
//! constant `a`, a loop-invariant `c`, through integer casts) touches a
//! different element in every iteration: all of these stay direct.
//! Everything else is speculative: indirect subscripts (`A[r[i]]`),
//! subscripts that differ between accesses (`A[i]` and `A[i + 1]`), and the
//! cells the frontend gives scalars that the loop assigns. With `remarks`
//! (`pgpu compile --pgpu-remark-speculation`) each access gets a remark
//! saying why.
//!
//! A loop with output, random numbers, the clock, nested parallel or
//! speculative regions, heap allocation, list collectives, indirect calls,
//! or calls of functions that touch memory is an error: its iterations
//! cannot be re-executed or reordered safely.
//!
//! We write this pass because upstream MLIR has no notion of speculative
//! execution; its affine dependence analysis needs `affine` ops, which the
//! frontends do not produce.

use crate::{
    build::{Builder, Built},
    inline_spmd::symbol_attribute,
    ir::{Op, Val},
};
use melior::ir::OperationRef;
use pgpu_pass_infra::{
    Pass, PassFailure, PassOption, PassOptions, Severity, emit_diagnostic, emit_error,
};
use std::collections::{BTreeMap, HashMap};

/// The pass.
#[derive(Debug, Default)]
pub struct ClassifySpeculation {
    remarks: bool,
}

impl Pass for ClassifySpeculation {
    const ARGUMENT: &'static str = "pgpu-classify-speculation";
    const SUMMARY: &'static str =
        "Make the accesses of speculative loops that may depend across iterations speculative";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const OPTIONS: &'static [PassOption] = &[PassOption {
        name: "remarks",
        description: "emit a remark per access saying how it is classified and why",
        default: "false",
    }];

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        Ok(Self {
            remarks: options.flag("remarks")?,
        })
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let functions: HashMap<String, Op> = module
            .nested()
            .into_iter()
            .filter(|op| op.is("func.func"))
            .filter_map(|op| Some((symbol_attribute(op, "sym_name")?, op)))
            .collect();
        let loops: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| op.is("pgpu.spec.loop"))
            .collect();
        for spec in loops {
            self.classify(spec, &functions)?;
        }
        Ok(())
    }
}

/// The memory an access reaches.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Memory {
    /// A global, by name.
    Global(String),
    /// A memref defined before the loop (its value, as a pointer).
    Outside(usize),
    /// Memory allocated in the body.
    Private,
}

/// How an access is run, and why.
enum Class {
    Direct(&'static str),
    Speculative(&'static str),
}

impl ClassifySpeculation {
    fn classify(&self, spec: Op, functions: &HashMap<String, Op>) -> Built<()> {
        let Some(body) = spec.entry_block(0) else {
            return Err(emit_error(
                spec.melior_location(),
                "pgpu.spec.loop without a body",
            ));
        };
        let induction = body.arguments()[0];
        let mut accesses: BTreeMap<Memory, Vec<Op>> = BTreeMap::new();
        for op in spec.nested() {
            if let Some(why) = forbidden(op, functions) {
                let message = format!(
                    "the loop marked `#pragma pgpu speculate` at {} cannot be speculated: {why}",
                    spec.source_position()
                );
                return Err(emit_error(op.melior_location(), &message));
            }
            if op.is("memref.load") || op.is("memref.store") {
                let memref = op.operand(usize::from(op.is("memref.store")));
                accesses.entry(memory(memref, spec)).or_default().push(op);
            }
        }
        for (reached, ops) in accesses {
            let class = match reached {
                Memory::Private => Class::Direct("memory of the iteration"),
                _ if ops.iter().all(|op| op.is("memref.load")) => {
                    Class::Direct("read-only in the loop")
                }
                _ => shared_class(&ops, induction, spec),
            };
            for op in ops {
                let at = Builder::before(op);
                match class {
                    Class::Direct(why) => self.remark(op, &format!("direct access: {why}")),
                    Class::Speculative(why) => {
                        self.remark(op, &format!("speculative access: {why}"));
                        make_speculative(op, spec, &at)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn remark(&self, op: Op, message: &str) {
        if self.remarks {
            emit_diagnostic(op.melior_location(), Severity::Remark, message);
        }
    }
}

/// Why `op` keeps its loop from being speculated, if it does.
fn forbidden(op: Op, functions: &HashMap<String, Op>) -> Option<String> {
    let name = op.name();
    Some(match name.as_str() {
        "pgpu.printf" => "it prints (output cannot be re-executed or reordered)".into(),
        "pgpu.rand_u32" | "pgpu.rand_seed" => {
            "it draws random numbers (their order is the program's)".into()
        }
        "pgpu.wtime" => "it reads the clock".into(),
        "pgpu.spec.loop" => "a speculative loop inside a speculative loop".into(),
        "memref.alloc" | "memref.dealloc" | "pgpu.dnew" | "pgpu.dtempnew" | "pgpu.dtempfree" => {
            "it allocates or frees heap memory".into()
        }
        "func.call_indirect" => "it calls through a function pointer (unknown effects)".into(),
        "func.call" => {
            let callee = symbol_attribute(op, "callee").unwrap_or_default();
            if touches_memory(&callee, functions, &mut Vec::new()) {
                format!("it calls `{callee}`, which reads or writes memory or has other effects")
            } else {
                return None;
            }
        }
        "memref.copy" => "it copies whole arrays".into(),
        _ if name.starts_with("pgpu.list.") => "it runs a collective".into(),
        _ if name.starts_with("pgpu.spawn") || name.starts_with("pgpu.group") => {
            "it runs parallel code".into()
        }
        _ => return None,
    })
}

/// Whether calling `name` may touch memory other than its own locals or
/// have other effects (I/O, unknown code). `visiting` breaks recursion.
fn touches_memory(name: &str, functions: &HashMap<String, Op>, visiting: &mut Vec<String>) -> bool {
    let Some(function) = functions.get(name) else {
        return true;
    };
    if function.entry_block(0).is_none() {
        // A declaration: math functions of libm are pure.
        return !is_pure_math(name);
    }
    if visiting.iter().any(|seen| seen == name) {
        return false;
    }
    visiting.push(name.to_string());
    let touches = function
        .nested()
        .into_iter()
        .any(|op| match op.name().as_str() {
            "memref.load" | "memref.store" => {
                let memref = op.operand(usize::from(op.is("memref.store")));
                !is_local_alloca(memref, *function)
            }
            "func.call" => symbol_attribute(op, "callee")
                .is_none_or(|callee| touches_memory(&callee, functions, visiting)),
            "memref.get_global" | "memref.copy" | "func.call_indirect" | "memref.alloc"
            | "memref.dealloc" => true,
            other => other.starts_with("pgpu."),
        });
    visiting.pop();
    touches
}

fn is_pure_math(name: &str) -> bool {
    matches!(
        name,
        "sqrt"
            | "sqrtf"
            | "exp"
            | "expf"
            | "log"
            | "logf"
            | "sin"
            | "sinf"
            | "cos"
            | "cosf"
            | "fabs"
            | "fabsf"
            | "pow"
            | "powf"
            | "floor"
            | "ceil"
            | "tanh"
            | "erf"
            | "erff"
    )
}

/// Whether `memref` is an `alloca` of `function` itself.
fn is_local_alloca(memref: Val, function: Op) -> bool {
    root(memref)
        .defining_op()
        .is_some_and(|op| op.is("memref.alloca") && op.is_within(function))
}

/// The value at the start of the cast and view chain that `memref` comes
/// from.
fn root(memref: Val) -> Val {
    let mut value = memref;
    while let Some(op) = value.defining_op() {
        match op.name().as_str() {
            "memref.cast"
            | "memref.subview"
            | "memref.reinterpret_cast"
            | "memref.view"
            | "memref.collapse_shape"
            | "memref.expand_shape" => value = op.operand(0),
            _ => break,
        }
    }
    value
}

/// The memory `memref` reaches, seen from the loop `spec`.
pub(crate) fn memory(memref: Val, spec: Op) -> Memory {
    let start = root(memref);
    match start.defining_op() {
        Some(op) if op.is("memref.get_global") => {
            Memory::Global(symbol_attribute(op, "name").unwrap_or_default())
        }
        Some(op) if op.is_within(spec) => Memory::Private,
        _ => Memory::Outside(start.0.ptr as usize),
    }
}

/// The class of the accesses `ops` to memory the loop writes.
fn shared_class(ops: &[Op], induction: Val, spec: Op) -> Class {
    let subscripts = |op: Op| -> Vec<Val> {
        let first = if op.is("memref.store") { 2 } else { 1 };
        op.operands()[first..].to_vec()
    };
    let first = subscripts(ops[0]);
    if first.is_empty() {
        return Class::Speculative("a scalar the loop assigns (one cell for all iterations)");
    }
    if first.iter().any(|index| depends_on_memory(*index, spec)) {
        return Class::Speculative("an indirect subscript (read from memory in the loop)");
    }
    // Every access through the same memref (a global's address counts as
    // one wherever it is taken): views could shift the subscripts.
    let view = |op: &Op| -> String {
        let memref = op.operand(usize::from(op.is("memref.store")));
        match memref.defining_op() {
            Some(def) if def.is("memref.get_global") => {
                format!("@{}", symbol_attribute(def, "name").unwrap_or_default())
            }
            _ => format!("{:?}", memref.0.ptr),
        }
    };
    let same_view = ops.iter().all(|op| view(op) == view(&ops[0]));
    let same = ops.iter().all(|op| {
        let other = subscripts(*op);
        other.len() == first.len() && other.iter().zip(&first).all(|(a, b)| equal_values(*a, *b))
    });
    if !same || !same_view {
        return Class::Speculative(
            "the loop reaches this memory with different subscripts (iterations may overlap)",
        );
    }
    if first
        .iter()
        .any(|index| is_injective(*index, induction, spec))
    {
        Class::Direct("subscript a * i + c: one element per iteration, no overlap")
    } else {
        Class::Speculative("a subscript that does not change with the iteration")
    }
}

/// `value` through integer casts.
fn strip_int_casts(value: Val) -> Val {
    let mut value = value;
    while let Some(op) = value.defining_op() {
        if op.is("arith.index_cast") || op.is("arith.extsi") || op.is("arith.index_castui") {
            value = op.operand(0);
        } else {
            break;
        }
    }
    value
}

/// Whether `a` and `b` are the same value inside the loop (through integer
/// casts, the same constant, or the same pure computation of equal
/// operands).
fn equal_values(a: Val, b: Val) -> bool {
    let (a, b) = (strip_int_casts(a), strip_int_casts(b));
    if a == b {
        return true;
    }
    if let (Some(x), Some(y)) = (a.constant_integer(), b.constant_integer()) {
        return x == y;
    }
    match (a.defining_op(), b.defining_op()) {
        (Some(x), Some(y)) => {
            x.name() == y.name()
                && x.name().starts_with("arith.")
                && x.num_operands() == y.num_operands()
                && x.num_results() == 1
                && x.operands()
                    .into_iter()
                    .zip(y.operands())
                    .all(|(p, q)| equal_values(p, q))
        }
        _ => false,
    }
}

/// Whether `value` is `a * i + c` with `a` a non-zero constant and `c`
/// defined outside the loop (through integer casts).
fn is_injective(value: Val, induction: Val, spec: Op) -> bool {
    let value = strip_int_casts(value);
    if value == induction {
        return true;
    }
    let Some(op) = value.defining_op() else {
        return false;
    };
    let invariant = |v: Val| !v.is_defined_within(spec);
    let nonzero = |v: Val| {
        strip_int_casts(v)
            .constant_integer()
            .is_some_and(|k| k != 0)
    };
    match op.name().as_str() {
        "arith.addi" | "arith.subi" => {
            let (x, y) = (op.operand(0), op.operand(1));
            (is_injective(x, induction, spec) && invariant(y))
                || (op.is("arith.addi") && invariant(x) && is_injective(y, induction, spec))
        }
        "arith.muli" => {
            let (x, y) = (op.operand(0), op.operand(1));
            (is_injective(x, induction, spec) && nonzero(y))
                || (nonzero(x) && is_injective(y, induction, spec))
        }
        _ => false,
    }
}

/// Whether `value` is computed (in the loop) from a memory read.
fn depends_on_memory(value: Val, spec: Op) -> bool {
    let mut pending = vec![value];
    let mut seen = Vec::new();
    while let Some(value) = pending.pop() {
        if seen.contains(&value) {
            continue;
        }
        seen.push(value);
        let Some(op) = value.defining_op() else {
            continue;
        };
        if !op.is_within(spec) {
            continue;
        }
        if op.is("memref.load") || op.is("pgpu.spec.load") {
            return true;
        }
        pending.extend(op.operands());
    }
    false
}

/// Replaces the load or store `op` by its speculative form, moving the
/// memref's definition before the loop where it is in the loop (a global's
/// address or a view of invariant values).
fn make_speculative(op: Op, spec: Op, at: &Builder) -> Built<()> {
    let position = usize::from(op.is("memref.store"));
    let memref = op.operand(position);
    hoist(memref, spec, at)?;
    let operands = op.operands();
    if op.is("memref.load") {
        let ty = op.result(0).melior_type();
        let loaded = at.value("pgpu.spec.load", &operands, ty, &[])?;
        op.result(0).replace_all_uses(loaded);
    } else {
        at.op("pgpu.spec.store", &operands, &[], &[])?;
    }
    op.erase();
    Ok(())
}

/// Moves the definition of `value` (and of its operands) before `spec`
/// where it is inside it: a global's address, a view of one, or a
/// constant; anything else computed in the loop is an error.
fn hoist(value: Val, spec: Op, at: &Builder) -> Built<()> {
    if !value.is_defined_within(spec) {
        return Ok(());
    }
    let movable = value.defining_op().filter(|op| {
        matches!(
            op.name().as_str(),
            "memref.get_global"
                | "memref.cast"
                | "memref.subview"
                | "memref.reinterpret_cast"
                | "arith.constant"
        )
    });
    let Some(op) = movable else {
        return Err(at.fail(
            "this loop cannot be speculated: it reaches shared memory through a view computed \
             in the loop",
        ));
    };
    // Operands first, then the op, all before the loop.
    for operand in op.operands() {
        hoist(operand, spec, at)?;
    }
    op.move_before(spec);
    Ok(())
}
