//! `pgpu-lower-speculation{window=8192 warp=0 capacity=0 commit=parallel}`:
//! runs every speculative loop (`pgpu.spec.loop`, after
//! `pgpu-classify-speculation`) with GPU-TLS (seeds/gpu-tls.txt,
//! Section III), as host code and kernels (`pgpu.spawn`) that every device
//! runs.
//!
//! The loop is chopped into windows of `window` iterations (the loop's
//! `window` attribute wins), one thread per iteration. Each window runs
//! four kernels: speculative execution (the body, whose speculative reads
//! forward values from earlier threads of the same warp, Algorithm 1, and
//! whose writes are buffered with eager intra-warp checks, Algorithm 2;
//! every write also raises its address's maximum writer), lazy checking
//! (Algorithm 3), the parallel commit (Algorithm 4: an address's maximum
//! writer stores, or, when that writer must not commit, the last
//! committing writer, found in the write sets) and a clean-up that empties
//! the meta-data for the next window (for a window that covers the rest of
//! the loop, only once the read-back shows that another window follows).
//! The violation index (the first thread that must not commit) tells the
//! host where the next window starts: the sliding window re-executes
//! mis-speculated iterations together with new ones, and the first thread
//! of a window always commits, so every window makes progress. The window
//! adapts: after a violation at thread `v` the next one has `max(2v, 32)`
//! threads, after a window without one it doubles, up to `window` (a loop
//! whose every iteration depends on the one before runs windows of 32, not
//! of `window`, threads); after a window whose sets overflowed it keeps
//! its size (an overflow says nothing about dependences). `commit=serial`
//! replaces the parallel commit by one thread committing the window's
//! threads in order (the in-order commit
//! the paper compares with, Figure 8). `commit=direct` is the other scheme
//! of Figure 7, direct update (the paper's reference [5]): writes go to
//! memory in place, the first writer of an address saves the value from
//! before the window, every RAW, WAR and WAW dependence among the window's
//! threads is a violation, and instead of a commit the threads that must
//! not commit undo their writes. A window whose first thread read a value
//! that a later thread wrote in place makes no progress; the next window
//! runs that iteration alone.
//!
//! The meta-data (the library `speculation_library.mlir` describes its
//! layout) is one list of i64 words per loop, sized from the window and the
//! set capacity, not from the loop's length: an address table with open
//! addressing on the element's byte address (so hash collisions cost no
//! false dependences and no lost writes: the paper's hashed `maxWriter`
//! would drop a write whose address collides with a later thread's), and
//! per thread a read set and a write set of `capacity` entries (estimated
//! from the body when 0). A thread whose sets overflow does not commit,
//! and the host doubles the capacity before the next window. `warp` (the
//! loop's `warp` attribute wins) is the scope of forwarding and eager
//! checking; 0 takes the device's lockstep width (`pgpu.lockstep_width`:
//! 32 on a GPU, 1 on the CPU and in the interpreter).
//!
//! Direct stores to memory outside the iteration (one element per
//! iteration, `pgpu-classify-speculation`) are buffered too, without
//! tracking: a mis-speculated iteration must not leave them behind when
//! its re-execution takes another path. Direct loads of memory the loop
//! writes see the iteration's own buffered writes.
//!
//! Each speculative load and store is a region whose lockstep lanes leave
//! it together (`scf.execute_region` marked `pgpu.reconverge`, which
//! `pgpu-reconverge-warps` honours on NVPTX): its searches and probes loop
//! a different number of times per lane.
//!
//! The library and the typed helpers this pass generates (key computation,
//! loads and stores of each memref type, the per-loop commit with one
//! case per written memref) are MLIR text: functions marked
//! `pgpu.spmd_inline`, which `pgpu-inline-spmd` inlines into the kernels.
//! The loop's body becomes such a function; the host driver is inlined
//! here in place of the loop.
//!
//! We write this pass because upstream MLIR has no speculative execution.

use crate::{
    build::{Builder, Built},
    classify_speculation::{Memory, memory},
    inline_spmd::{inline_call, symbol_attribute},
    ir::{Op, Val, element_bytes},
};
use melior::{
    Context,
    ir::{BlockLike, Module, OperationRef, Type, operation::OperationLike, r#type::MemRefType},
};
use pgpu_pass_infra::{
    Pass, PassFailure, PassOption, PassOptions, RECONVERGE_ATTRIBUTE as RECONVERGE, emit_error,
};
use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;

/// The GPU-TLS library (Algorithms 1-4 on the meta-data list).
const LIBRARY: &str = include_str!("speculation_library.mlir");

/// The layout parameters every library function takes first.
const LAYOUT: &str =
    "%st: memref<?xi64>, %ctl: memref<?xi64>, %tm: index, %cap: index, %mask: index, %w: index";
const LAYOUT_TYPES: &str = "memref<?xi64>, memref<?xi64>, index, index, index, index";

/// The pass.
#[derive(Debug)]
pub struct LowerSpeculation {
    window: u64,
    warp: u64,
    capacity: u64,
    commit: Commit,
}

/// How speculative writes reach memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Commit {
    /// GPU-TLS: buffered writes, Algorithm 4's parallel commit.
    Parallel,
    /// Buffered writes, one thread committing the window in order.
    Serial,
    /// Writes in place with an undo (the direct-update scheme).
    Direct,
}

impl Default for LowerSpeculation {
    fn default() -> Self {
        Self {
            window: 8192,
            warp: 0,
            capacity: 0,
            commit: Commit::Parallel,
        }
    }
}

impl Pass for LowerSpeculation {
    const ARGUMENT: &'static str = "pgpu-lower-speculation";
    const SUMMARY: &'static str =
        "Run speculative loops with GPU-TLS: windows of speculative threads, checks and commit";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const OPTIONS: &'static [PassOption] = &[
        PassOption {
            name: "window",
            description: "iterations per window (one thread each) unless the loop says",
            default: "8192",
        },
        PassOption {
            name: "warp",
            description: "threads that forward values to each other unless the loop says; 0: the device's lockstep width",
            default: "0",
        },
        PassOption {
            name: "capacity",
            description: "initial entries per read and write set (doubled on overflow); 0: from the loop body",
            default: "0",
        },
        PassOption {
            name: "commit",
            description: "parallel (Algorithm 4), serial (one thread commits in iteration order) or direct (writes in place, undone on a violation)",
            default: "parallel",
        },
    ];

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        let window: u64 = options.parse("window")?;
        if window == 0 {
            return Err("window must be at least 1".into());
        }
        let commit = match options.string("commit")? {
            "parallel" => Commit::Parallel,
            "serial" => Commit::Serial,
            "direct" => Commit::Direct,
            other => {
                return Err(format!(
                    "commit must be parallel, serial or direct, not `{other}`"
                ));
            }
        };
        Ok(Self {
            window,
            warp: options.parse("warp")?,
            capacity: options.parse("capacity")?,
            commit,
        })
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let loops: Vec<Op> = module
            .nested()
            .into_iter()
            .filter(|op| op.is("pgpu.spec.loop"))
            .collect();
        let Some(first) = loops.first() else {
            return Ok(());
        };
        let mut generated = Generated {
            module,
            names: module
                .nested()
                .into_iter()
                .filter(|op| op.is("func.func"))
                .filter_map(|op| symbol_attribute(op, "sym_name"))
                .collect(),
        };
        generated.insert(LIBRARY, *first)?;
        for (number, spec) in loops.into_iter().enumerate() {
            self.lower(&mut generated, spec, number)?;
        }
        Ok(())
    }
}

/// How a memory access of the body is rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// `pgpu.spec.load`: forwarding, read set.
    Speculative,
    /// `pgpu.spec.store` (tracked) or a direct store to memory outside
    /// the iteration (untracked): buffered, with its site.
    Buffered { site: usize, tracked: bool },
    /// A direct load of memory the loop writes: the iteration's own
    /// buffered write first.
    Own,
}

/// The accesses of a loop to rewrite and the memrefs of its store sites.
type Classified = (Vec<(Op, Access)>, Vec<Val>);

/// The functions of the module and the ones this pass adds.
struct Generated {
    module: Op,
    names: HashSet<String>,
}

impl Generated {
    /// Parses `text` and moves its functions that the module does not
    /// define yet before the function holding `near`, with `near`'s
    /// location.
    fn insert(&mut self, text: &str, near: Op) -> Built<()> {
        let context_ref = near.melior().context();
        // SAFETY: the context outlives the pass run.
        let context: &Context = unsafe { context_ref.to_ref() };
        let text = format!("{}{text}", self.declarations());
        let parsed = Module::parse(context, &text).ok_or_else(|| {
            emit_error(
                near.melior_location(),
                "internal error: generated speculation code does not parse",
            )
        })?;
        let anchor = near.ancestor_under(self.module).unwrap_or(near);
        let mut current = parsed.body().first_operation().map(|op| Op(op.to_raw()));
        while let Some(op) = current {
            current = op.next();
            let Some(name) = symbol_attribute(op, "sym_name") else {
                continue;
            };
            if !self.names.insert(name) {
                continue;
            }
            for nested in std::iter::once(op).chain(op.nested()) {
                nested.set_location(near.location());
            }
            op.move_before(anchor);
        }
        Ok(())
    }

    /// Declarations of the functions this pass added so far, for the
    /// generated text that calls them (parsing verifies symbol uses).
    fn declarations(&self) -> String {
        let Some(block) = self.module.entry_block(0) else {
            return String::new();
        };
        let mut text = String::new();
        for op in block.ops() {
            let Some(name) =
                symbol_attribute(op, "sym_name").filter(|name| name.starts_with("__pgpu_"))
            else {
                continue;
            };
            if let Ok(ty) = op.melior().attribute("function_type") {
                let ty = ty.to_string();
                let ty = ty.strip_suffix(" -> ()").unwrap_or(&ty);
                let _ = writeln!(text, "func.func private @{name}{ty}");
            }
        }
        text
    }

    /// The function named `name`.
    fn function(&self, name: &str) -> Option<Op> {
        self.module.entry_block(0)?.ops().into_iter().find(|op| {
            op.is("func.func") && symbol_attribute(*op, "sym_name").as_deref() == Some(name)
        })
    }

    /// A function name not used yet, from `stem`.
    fn fresh(&self, stem: &str) -> String {
        (0..)
            .map(|n| format!("{stem}{n}"))
            .find(|name| !self.names.contains(name))
            .unwrap_or_default()
    }
}

impl LowerSpeculation {
    fn lower(&self, generated: &mut Generated, spec: Op, number: usize) -> Built<()> {
        let at = Builder::before(spec);
        let body = spec
            .entry_block(0)
            .ok_or_else(|| at.fail("pgpu.spec.loop without a body"))?;
        let induction = body.arguments()[0];
        let capacity = if self.capacity > 0 {
            self.capacity
        } else {
            estimated_capacity(spec)
        };
        hoist_store_targets(spec)?;
        let (accesses, sites) = classify_accesses(spec)?;
        let free = free_values(spec);

        // The typed helpers of every memref type the rewritten accesses use.
        let mut types = BTreeSet::new();
        for (op, _) in &accesses {
            types.insert(memref_operand(*op).melior_type().to_string());
        }
        let direct = self.commit == Commit::Direct;
        for ty in &types {
            generated.insert(&typed_helpers(ty, direct, spec)?, spec)?;
        }

        // The body becomes a function of the iteration, the thread and the
        // loop's free values.
        let body_name = generated.fresh(&format!("__pgpu_spec_body_{number}_"));
        let free_parameters: String = free
            .iter()
            .enumerate()
            .map(|(k, value)| format!(", %f{k}: {}", value.melior_type()))
            .collect();
        generated.insert(
            &format!(
                "func.func private @{body_name}(%i: index, %tid: index, {LAYOUT}{free_parameters}) \
                 attributes {{pgpu.spmd_inline}} {{\n  return\n}}\n"
            ),
            spec,
        )?;
        let function = generated
            .function(&body_name)
            .ok_or_else(|| at.fail("internal error: the body function is missing"))?;
        let entry = function
            .entry_block(0)
            .ok_or_else(|| at.fail("internal error: the body function has no block"))?;
        let end = entry
            .terminator()
            .ok_or_else(|| at.fail("internal error: the body function has no return"))?;
        for op in body.ops() {
            if !op.is("pgpu.spec.commit") {
                op.move_before(end);
            }
        }
        let arguments = entry.arguments();
        replace_uses_within(induction, arguments[0], function);
        for (k, value) in free.iter().enumerate() {
            replace_uses_within(*value, arguments[8 + k], function);
        }
        for (op, access) in &accesses {
            rewrite_access(*op, *access, direct, &arguments[1..8])?;
        }
        inline_into_kernel(generated, function)?;

        // The commit of one thread's buffered writes: one case per site.
        let commit_name = generated.fresh(&format!("__pgpu_spec_commit_{number}_"));
        let site_types: Vec<String> = sites
            .iter()
            .map(|site| site.melior_type().to_string())
            .collect();
        generated.insert(&commit_function(&commit_name, direct, &site_types), spec)?;

        // The host driver, inlined in place of the loop.
        let driver_name = generated.fresh(&format!("__pgpu_spec_loop_{number}_"));
        let site_arguments: Vec<usize> = sites
            .iter()
            .map(|site| {
                free.iter()
                    .position(|value| value == site)
                    .ok_or_else(|| at.fail("internal error: a written memref is not a free value"))
            })
            .collect::<Built<_>>()?;
        let text = self.driver(
            spec,
            capacity,
            &driver_name,
            &body_name,
            &commit_name,
            &free,
            &site_arguments,
            &site_types,
        )?;
        generated.insert(&text, spec)?;
        let driver = generated
            .function(&driver_name)
            .ok_or_else(|| at.fail("internal error: the driver is missing"))?;
        let mut operands = spec.operands();
        operands.extend(free.iter().copied());
        let callee = at.parse_attribute(&format!("@{driver_name}"))?;
        let call = at.op("func.call", &operands, &[], &[("callee", callee)])?;
        spec.erase();
        inline_call(call, driver)?;
        driver.erase();
        generated.names.remove(&driver_name);
        Ok(())
    }

    /// The host driver of one loop: the window loop, its kernels and the
    /// growth of the sets.
    #[allow(clippy::too_many_arguments)]
    fn driver(
        &self,
        spec: Op,
        capacity: u64,
        name: &str,
        body: &str,
        commit: &str,
        free: &[Val],
        site_arguments: &[usize],
        site_types: &[String],
    ) -> Built<String> {
        let attribute = |name: &str| spec.integer_attribute(name);
        let window = attribute("window").map_or(self.window, |value| value.max(1) as u64);
        let warp = attribute("warp").map_or(self.warp, |value| value.max(1) as u64);
        let parameters: String = free
            .iter()
            .enumerate()
            .map(|(k, value)| format!(", %f{k}: {}", value.melior_type()))
            .collect();
        let free_names: String = (0..free.len()).map(|k| format!(", %f{k}")).collect();
        let free_types: String = free
            .iter()
            .map(|value| format!(", {}", value.melior_type()))
            .collect();
        let sites: String = site_arguments.iter().map(|k| format!(", %f{k}")).collect();
        let site_type_list: String = site_types.iter().map(|ty| format!(", {ty}")).collect();
        let warp_value = if warp == 0 {
            "%w = pgpu.lockstep_width : index".to_string()
        } else {
            format!("%w = arith.constant {warp} : index")
        };
        let commit_call = |thread: &str, last: &str| {
            let last_type = if self.commit == Commit::Direct {
                "index"
            } else {
                "i1"
            };
            format!(
                "func.call @{commit}(%st, %ctl, %tm, %cap, %mask, %w, {thread}, {last}{sites}) : \
                 ({LAYOUT_TYPES}, index, {last_type}{site_type_list}) -> ()"
            )
        };
        let check_call = if self.commit == Commit::Direct {
            "func.call @__pgpu_du_check(%st, %ctl, %tm, %cap, %mask, %t) : (memref<?xi64>, memref<?xi64>, index, index, index, index) -> ()".to_string()
        } else {
            format!(
                "func.call @__pgpu_tls_check(%st, %ctl, %tm, %cap, %mask, %w, %t) : ({LAYOUT_TYPES}, index) -> ()"
            )
        };
        let commit_kernels = match self.commit {
            Commit::Serial => format!(
                "pgpu.spawn %c1 {{
      %v64c = memref.load %ctl[%c0] : memref<?xi64>
      %vc = arith.index_cast %v64c : i64 to index
      scf.for %t = %c0 to %vc step %c1 {{
        {}
      }}
    }}",
                commit_call("%t", "%true")
            ),
            Commit::Direct => format!(
                "pgpu.spawn %k {{
      %t = pgpu.rank : index
      {}
    }}",
                commit_call("%t", "%k")
            ),
            Commit::Parallel => format!(
                "pgpu.spawn %k {{
      %t = pgpu.rank : index
      {}
    }}",
                commit_call("%t", "%false")
            ),
        };
        let allocate = |suffix: &str, capacity: &str| {
            format!(
                "%tc{suffix} = arith.muli %tm, {capacity} : index
    %need{suffix} = arith.muli %tc{suffix}, %c4 : index
    %hk{suffix} = scf.while (%p{suffix} = %c1) : (index) -> index {{
      %lt{suffix} = arith.cmpi ult, %p{suffix}, %need{suffix} : index
      scf.condition(%lt{suffix}) %p{suffix} : index
    }} do {{
    ^bb0(%q{suffix}: index):
      %q2{suffix} = arith.muli %q{suffix}, %c2 : index
      scf.yield %q2{suffix} : index
    }}
    %mask{suffix} = arith.subi %hk{suffix}, %c1 : index
    %tables{suffix} = arith.muli %hk{suffix}, %c4 : index
    %counts{suffix} = arith.muli %tm, %c2 : index
    %sets{suffix} = arith.muli %tc{suffix}, %c9 : index
    %head{suffix} = arith.addi %tables{suffix}, %counts{suffix} : index
    %size{suffix} = arith.addi %head{suffix}, %sets{suffix} : index
    %st{suffix} = memref.alloc(%size{suffix}) : memref<?xi64>
    pgpu.spawn %size{suffix} {{
      %j = pgpu.rank : index
      func.call @__pgpu_tls_init(%st{suffix}, %mask{suffix}, %j) : (memref<?xi64>, index, index) -> ()
    }}"
            )
        };
        // The clean-up empties the meta-data for the next window. A
        // window that covers the rest of the loop is likely the last: its
        // clean-up is launched only when the read-back shows that another
        // window follows on the same meta-data (a violation without
        // overflow; an overflow allocates fresh meta-data).
        let cleanup = "pgpu.spawn %k {
        %t = pgpu.rank : index
        func.call @__pgpu_tls_cleanup(%st, %tm, %cap, %mask, %t) : (memref<?xi64>, index, index, index, index) -> ()
      }";
        let first = allocate("0", "%cap0");
        let grown = allocate("2", "%cap2");
        Ok(format!(
            "func.func private @{name}(%lb: index, %ub: index, %step: index{parameters}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c9 = arith.constant 9 : index
  %c32 = arith.constant 32 : index
  %z = arith.constant 0 : i64
  %true = arith.constant true
  %false = arith.constant false
  %span = arith.subi %ub, %lb : index
  %positive = arith.cmpi sgt, %span, %c0 : index
  %quotient = arith.ceildivsi %span, %step : index
  %trip = arith.select %positive, %quotient, %c0 : index
  %window = arith.constant {window} : index
  %tm0 = arith.minsi %window, %trip : index
  %tm = arith.maxsi %tm0, %c1 : index
  {warp_value}
  %ctl = memref.alloc(%c2) : memref<?xi64>
  %cap0 = arith.constant {capacity} : index
  {first}
  %r:5 = scf.while (%s = %c0, %cur = %tm, %cap = %cap0, %mask = %mask0, %st = %st0) : (index, index, index, index, memref<?xi64>) -> (index, index, index, index, memref<?xi64>) {{
    %more = arith.cmpi slt, %s, %trip : index
    scf.condition(%more) %s, %cur, %cap, %mask, %st : index, index, index, index, memref<?xi64>
  }} do {{
  ^bb0(%s: index, %cur: index, %cap: index, %mask: index, %st: memref<?xi64>):
    %left = arith.subi %trip, %s : index
    %k = arith.minsi %cur, %left : index
    %ki = arith.index_cast %k : index to i64
    memref.store %ki, %ctl[%c0] : memref<?xi64>
    memref.store %z, %ctl[%c1] : memref<?xi64>
    pgpu.spawn %k {{
      %t = pgpu.rank : index
      %g = arith.addi %s, %t : index
      %gs = arith.muli %g, %step : index
      %i = arith.addi %lb, %gs : index
      func.call @{body}(%i, %t, %st, %ctl, %tm, %cap, %mask, %w{free_names}) : (index, index, {LAYOUT_TYPES}{free_types}) -> ()
    }}
    pgpu.spawn %k {{
      %t = pgpu.rank : index
      {check_call}
    }}
    {commit_kernels}
    %last = arith.cmpi eq, %k, %left : index
    scf.if %last {{
    }} else {{
      {cleanup}
    }}
    %v64 = memref.load %ctl[%c0] : memref<?xi64>
    %v = arith.index_cast %v64 : i64 to index
    %overflow = memref.load %ctl[%c1] : memref<?xi64>
    %grow = arith.cmpi ne, %overflow, %z : i64
    %short = arith.cmpi slt, %v, %k : index
    %kept = arith.xori %grow, %true : i1
    %again = arith.andi %short, %kept : i1
    %late = arith.andi %last, %again : i1
    scf.if %late {{
      {cleanup}
    }}
    %s2 = arith.addi %s, %v : index
    %all = arith.cmpi eq, %v, %k : index
    %doubled = arith.muli %cur, %c2 : index
    %wider = arith.minsi %doubled, %tm : index
    %twice = arith.muli %v, %c2 : index
    %narrower0 = arith.maxsi %twice, %c32 : index
    %narrower = arith.minsi %narrower0, %tm : index
    %shrunk = arith.select %all, %wider, %narrower : index
    %stuck = arith.cmpi eq, %v, %c0 : index
    %alone = arith.select %stuck, %c1, %shrunk : index
    %cur2 = arith.select %grow, %cur, %alone : index
    %n:3 = scf.if %grow -> (index, index, memref<?xi64>) {{
      memref.dealloc %st : memref<?xi64>
      %cap2 = arith.muli %cap, %c2 : index
      {grown}
      scf.yield %cap2, %mask2, %st2 : index, index, memref<?xi64>
    }} else {{
      scf.yield %cap, %mask, %st : index, index, memref<?xi64>
    }}
    scf.yield %s2, %cur2, %n#0, %n#1, %n#2 : index, index, index, index, memref<?xi64>
  }}
  memref.dealloc %r#4 : memref<?xi64>
  memref.dealloc %ctl : memref<?xi64>
  return
}}
"
        ))
    }
}

/// Makes the functions that `function` calls, directly or not, inline into
/// the kernel with it: each gets a `pgpu.spmd_inline` copy that the calls
/// name (`pgpu-classify-speculation` let only calls of functions without
/// memory effects through; the copies keep the kernel free of calls, so
/// that it can run on a GPU). Recursive functions stay calls.
fn inline_into_kernel(generated: &mut Generated, function: Op) -> Built<()> {
    let mut pending = vec![function];
    while let Some(caller) = pending.pop() {
        for call in caller.nested() {
            let Some(callee) =
                symbol_attribute(call, "callee").filter(|name| !name.starts_with("__pgpu_"))
            else {
                continue;
            };
            if !call.is("func.call") || calls_itself(generated, &callee) {
                continue;
            }
            let Some(original) = generated.function(&callee) else {
                continue;
            };
            if original.entry_block(0).is_none() {
                continue;
            }
            let copy_name = format!("__pgpu_spec_device_{callee}");
            let at = Builder::before(call);
            if generated.function(&copy_name).is_none() {
                let copy = original.clone_detached();
                copy.set_attribute("sym_name", at.parse_attribute(&format!("\"{copy_name}\""))?);
                copy.set_attribute("sym_visibility", at.parse_attribute("\"private\"")?);
                copy.set_unit_attribute("pgpu.spmd_inline");
                Builder::before(original).insert_detached(copy);
                generated.names.insert(copy_name.clone());
                pending.push(copy);
            }
            call.set_attribute("callee", at.parse_attribute(&format!("@{copy_name}"))?);
        }
    }
    Ok(())
}

/// Whether the function `name` can reach a call of itself.
fn calls_itself(generated: &Generated, name: &str) -> bool {
    let mut seen: Vec<String> = vec![];
    let mut pending = vec![name.to_string()];
    while let Some(current) = pending.pop() {
        let Some(function) = generated.function(&current) else {
            continue;
        };
        for call in function.nested() {
            let Some(callee) = symbol_attribute(call, "callee") else {
                continue;
            };
            if callee == name {
                return true;
            }
            if !seen.contains(&callee) {
                seen.push(callee.clone());
                pending.push(callee);
            }
        }
    }
    false
}

/// The memref operand of a load or store.
fn memref_operand(op: Op) -> Val {
    op.operand(usize::from(
        op.is("memref.store") || op.is("pgpu.spec.store"),
    ))
}

/// Moves the definitions of memrefs that stores in the loop write through
/// (a global's address, casts of values from before the loop) before the
/// loop: the commit, which runs after the body, writes through them.
fn hoist_store_targets(spec: Op) -> Built<()> {
    for op in spec.nested() {
        if !(op.is("memref.store") || op.is("pgpu.spec.store")) {
            continue;
        }
        if memory(memref_operand(op), spec) == Memory::Private {
            continue;
        }
        let mut chain = vec![];
        let mut value = memref_operand(op);
        while let Some(def) = value.defining_op().filter(|def| def.is_within(spec)) {
            match def.name().as_str() {
                "memref.get_global" => {
                    chain.push(def);
                    break;
                }
                "memref.cast" | "memref.reinterpret_cast" | "memref.subview" => {
                    if def.operands()[1..]
                        .iter()
                        .any(|operand| operand.is_defined_within(spec))
                    {
                        return Err(not_hoistable(op));
                    }
                    chain.push(def);
                    value = def.operand(0);
                }
                _ => return Err(not_hoistable(op)),
            }
        }
        for def in chain.into_iter().rev() {
            def.move_before(spec);
        }
    }
    Ok(())
}

fn not_hoistable(op: Op) -> PassFailure {
    emit_error(
        op.melior_location(),
        "a speculative loop stores through a pointer it computes: the commit cannot reach it",
    )
}

/// The accesses of the loop to rewrite, in program order, and the memrefs
/// its buffered stores write, by site number.
fn classify_accesses(spec: Op) -> Built<Classified> {
    let nested = spec.nested();
    let shared = |op: &Op| memory(memref_operand(*op), spec) != Memory::Private;
    let written: BTreeSet<Memory> = nested
        .iter()
        .filter(|op| op.is("pgpu.spec.store") || (op.is("memref.store") && shared(op)))
        .map(|op| memory(memref_operand(*op), spec))
        .collect();
    let mut sites: Vec<Val> = vec![];
    let mut accesses = vec![];
    for op in nested {
        let access = match op.name().as_str() {
            "pgpu.spec.load" => Access::Speculative,
            "pgpu.spec.store" | "memref.store" if op.is("pgpu.spec.store") || shared(&op) => {
                let memref = memref_operand(op);
                let site = sites
                    .iter()
                    .position(|site| *site == memref)
                    .unwrap_or_else(|| {
                        sites.push(memref);
                        sites.len() - 1
                    });
                Access::Buffered {
                    site,
                    tracked: op.is("pgpu.spec.store"),
                }
            }
            "memref.load" if shared(&op) && written.contains(&memory(op.operand(0), spec)) => {
                Access::Own
            }
            "memref.atomic_rmw" | "memref.generic_atomic_rmw" | "memref.copy"
                if memory(op.operand(usize::from(op.is("memref.atomic_rmw"))), spec)
                    != Memory::Private =>
            {
                return Err(emit_error(
                    op.melior_location(),
                    &format!(
                        "a speculative loop cannot run '{}' on memory outside the iteration",
                        op.name()
                    ),
                ));
            }
            _ => continue,
        };
        accesses.push((op, access));
    }
    Ok((accesses, sites))
}

/// The values the loop uses that are defined before it, in first-use order.
fn free_values(spec: Op) -> Vec<Val> {
    let mut free: Vec<Val> = vec![];
    for op in spec.nested() {
        for operand in op.operands() {
            if !operand.is_defined_within(spec) && !free.contains(&operand) {
                free.push(operand);
            }
        }
    }
    free
}

/// Replaces the uses of `value` inside `scope` by `with`.
fn replace_uses_within(value: Val, with: Val, scope: Op) {
    for found in value.uses() {
        if found.owner.is_within(scope) {
            found.owner.set_operand(found.index, with);
        }
    }
}

/// The initial set capacity: the loop's speculative reads or writes (the
/// larger count), 16 times that when they sit in inner loops (whose trip
/// counts are not known here: 16 saved MD with 16 partners per atom two
/// overflowing passes of its first window, at 50 MB of meta-data for 8192
/// threads), at least 4.
fn estimated_capacity(spec: Op) -> u64 {
    let nested = spec.nested();
    let count = |name: &str| nested.iter().filter(|op| op.is(name)).count() as u64;
    let sites = count("pgpu.spec.load")
        .max(count("pgpu.spec.store") + count("memref.store"))
        .max(1);
    let in_loops = nested.iter().any(|op| {
        (op.is("pgpu.spec.load") || op.is("pgpu.spec.store")) && in_inner_loop(*op, spec)
    });
    let capacity = if in_loops { sites * 16 } else { sites };
    capacity.max(4).next_power_of_two()
}

fn in_inner_loop(op: Op, spec: Op) -> bool {
    let mut current = op.parent();
    while let Some(parent) = current {
        if parent == spec {
            return false;
        }
        if parent.is("scf.for") || parent.is("scf.while") {
            return true;
        }
        current = parent.parent();
    }
    false
}

/// Replaces `op` by a call of its typed helper (of the direct-update
/// scheme when `direct`); `layout` is the body function's thread and
/// layout arguments (%tid, %st, %ctl, %tm, %cap, %mask, %w).
fn rewrite_access(op: Op, access: Access, direct: bool, layout: &[Val]) -> Built<()> {
    let scheme = if direct { "du" } else { "tls" };
    let at = Builder::before(op).at_location_of(op);
    let memref = memref_operand(op);
    let mangled = mangle(&memref.melior_type().to_string());
    let (tid, state) = (layout[0], &layout[1..]);
    let call = |name: &str, operands: &[Val], results: &[Type]| -> Built<Op> {
        let callee = at.parse_attribute(&format!("@{name}"))?;
        at.op("func.call", operands, results, &[("callee", callee)])
    };
    match access {
        Access::Speculative => {
            let mut operands = state.to_vec();
            operands.push(tid);
            operands.extend(op.operands());
            let ty = op.result(0).melior_type();
            let loaded = call(&format!("__pgpu_{scheme}_load_{mangled}"), &operands, &[ty])?;
            op.result(0).replace_all_uses(loaded.result(0));
        }
        Access::Own => {
            let operands = [state[0], state[2], state[3], state[4], tid];
            let mut operands = operands.to_vec();
            operands.extend(op.operands());
            let ty = op.result(0).melior_type();
            let loaded = call(&format!("__pgpu_tls_ownload_{mangled}"), &operands, &[ty])?;
            op.result(0).replace_all_uses(loaded.result(0));
        }
        Access::Buffered { site, tracked } => {
            let mut operands = state.to_vec();
            operands.push(tid);
            operands.extend(op.operands());
            operands.push(at.constant(at.parse_type("i64")?, site as i64)?);
            operands.push(at.constant(at.parse_type("i1")?, i64::from(tracked))?);
            call(&format!("__pgpu_{scheme}_store_{mangled}"), &operands, &[])?;
        }
    }
    op.erase();
    Ok(())
}

/// A function-name fragment for the memref type written `ty`.
fn mangle(ty: &str) -> String {
    ty.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The element type, rank and element bytes of the memref type `ty`.
fn memref_shape(ty: &str, near: Op) -> Built<(String, usize, usize)> {
    let context_ref = near.melior().context();
    // SAFETY: the context outlives the pass run.
    let context: &Context = unsafe { context_ref.to_ref() };
    let fail = || {
        emit_error(
            near.melior_location(),
            &format!("a speculative loop accesses memory of type {ty}, which it cannot buffer"),
        )
    };
    let parsed = Type::parse(context, ty).ok_or_else(fail)?;
    let memref = MemRefType::try_from(parsed).map_err(|_| fail())?;
    let element = melior::ir::r#type::ShapedTypeLike::element(&memref).to_string();
    let rank = melior::ir::r#type::ShapedTypeLike::rank(&memref);
    let bytes = element_bytes(&element).ok_or_else(fail)?;
    Ok((element, rank, bytes))
}

/// `%{out}` = the i64 bits of `%{value}` of type `element`.
fn to_bits(element: &str, value: &str, out: &str) -> String {
    match element {
        "i64" => format!(
            "%{out}_zero = arith.constant 0 : i64\n    %{out} = arith.ori %{value}, %{out}_zero : i64"
        ),
        "f64" => format!("%{out} = arith.bitcast %{value} : f64 to i64"),
        "index" => format!("%{out} = arith.index_cast %{value} : index to i64"),
        "f32" | "f16" | "bf16" => {
            let width = if element == "f32" { 32 } else { 16 };
            format!(
                "%{out}_int = arith.bitcast %{value} : {element} to i{width}\n    \
                 %{out} = arith.extui %{out}_int : i{width} to i64"
            )
        }
        integer => format!("%{out} = arith.extui %{value} : {integer} to i64"),
    }
}

/// `%{out}` of type `element` from the i64 bits `%{bits}`.
fn from_bits(element: &str, bits: &str, out: &str) -> String {
    match element {
        "i64" => format!(
            "%{out}_zero = arith.constant 0 : i64\n    %{out} = arith.ori %{bits}, %{out}_zero : i64"
        ),
        "f64" => format!("%{out} = arith.bitcast %{bits} : i64 to f64"),
        "index" => format!("%{out} = arith.index_cast %{bits} : i64 to index"),
        "f32" | "f16" | "bf16" => {
            let width = if element == "f32" { 32 } else { 16 };
            format!(
                "%{out}_int = arith.trunci %{bits} : i64 to i{width}\n    \
                 %{out} = arith.bitcast %{out}_int : i{width} to {element}"
            )
        }
        integer => format!("%{out} = arith.trunci %{bits} : i64 to {integer}"),
    }
}

/// The helpers of memref type `ty`: the key (byte address) and element
/// offset of an element, the speculative load, the buffered store, the
/// load that sees the iteration's own writes, and the commit's store; with
/// `direct`, also the direct-update scheme's load and in-place store.
fn typed_helpers(ty: &str, direct: bool, near: Op) -> Built<String> {
    let (element, rank, bytes) = memref_shape(ty, near)?;
    let name = mangle(ty);
    let indices: String = (0..rank).map(|d| format!(", %i{d}: index")).collect();
    let index_names: String = (0..rank).map(|d| format!(", %i{d}")).collect();
    let index_list: String = (0..rank)
        .map(|d| format!("%i{d}"))
        .collect::<Vec<_>>()
        .join(", ");
    let index_types: String = (0..rank).map(|_| ", index").collect();
    let metadata_types: String = std::iter::once(format!("memref<{element}>"))
        .chain((0..1 + 2 * rank).map(|_| "index".to_string()))
        .collect::<Vec<_>>()
        .join(", ");
    let results = 2 + 2 * rank;
    let mut key = String::new();
    let _ = writeln!(
        key,
        "    %md:{results} = memref.extract_strided_metadata %m : {ty} -> {metadata_types}"
    );
    let _ = writeln!(
        key,
        "    %ptr = memref.extract_aligned_pointer_as_index %m : {ty} -> index"
    );
    let mut offset = "%md#1".to_string();
    for d in 0..rank {
        let _ = writeln!(
            key,
            "    %step{d} = arith.muli %i{d}, %md#{} : index",
            2 + rank + d
        );
        let _ = writeln!(key, "    %off{d} = arith.addi {offset}, %step{d} : index");
        offset = format!("%off{d}");
    }
    let _ = writeln!(key, "    %bytes = arith.constant {bytes} : index");
    let _ = writeln!(key, "    %eb = arith.muli {offset}, %bytes : index");
    let _ = writeln!(key, "    %a = arith.addi %ptr, %eb : index");
    let _ = writeln!(key, "    %key = arith.index_cast %a : index to i64");
    let _ = writeln!(key, "    %elem = arith.index_cast {offset} : index to i64");
    let load_bits = to_bits(&element, "loaded", "lb");
    let result = from_bits(&element, "bits", "r");
    let value_bits = to_bits(&element, "v", "vb");
    // The start of both schemes' speculative loads: master memory's value,
    // loaded first (its latency overlaps the searches; the sequential loop
    // loads the element too), the thread's own write of the element, and
    // whether the read set has room.
    let load_start = format!(
        "    %k:2 = func.call @__pgpu_tls_key_{name}(%m{index_names}) : ({ty}{index_types}) -> (i64, i64)
    %c0 = arith.constant 0 : index
    %m1 = arith.constant -1 : i64
    %loaded = memref.load %m[{index_list}] : {ty}
    {load_bits}
    %own:3 = func.call @__pgpu_tls_find_write(%st, %tm, %cap, %mask, %tid, %k#0) : (memref<?xi64>, index, index, index, index, i64) -> (i1, i64, index)
    %bits = scf.if %own#0 -> (i64) {{
      scf.yield %own#1 : i64
    }} else {{
      %n = func.call @__pgpu_tls_count(%st, %tm, %mask, %c0, %tid) : (memref<?xi64>, index, index, index, index) -> index
      %room = arith.cmpi ult, %n, %cap : index
"
    );
    // Each speculative access is a region whose lockstep lanes leave it
    // together (`pgpu.reconverge`): its searches and atomics loop a
    // different number of times per lane, and GPUs with independent
    // thread scheduling may otherwise run the rest of the iteration,
    // arithmetic included, once per diverged group of lanes.
    let open_value = format!("    %rc = scf.execute_region -> {element} no_inline {{\n");
    let close_value = format!(
        "      scf.yield %r : {element}\n    }} {{{RECONVERGE}}}\n    return %rc : {element}\n"
    );
    let open_none = "    scf.execute_region no_inline {\n";
    let close_none = format!("      scf.yield\n    }} {{{RECONVERGE}}}\n    return\n");
    let direct_helpers = if direct {
        format!(
            "func.func private @__pgpu_du_load_{name}({LAYOUT}, %tid: index, %m: {ty}{indices}) -> {element} attributes {{pgpu.spmd_inline}} {{
{open_value}{load_start}      scf.if %room {{
        %slot = func.call @__pgpu_tls_slot(%st, %mask, %k#0) : (memref<?xi64>, index, i64) -> index
        %tmi = arith.index_cast %tm : index to i64
        %tidi = arith.index_cast %tid : index to i64
        %rank = arith.subi %tmi, %tidi : i64
        func.call @__pgpu_tls_record_read(%st, %tm, %cap, %mask, %tid, %k#0, %slot, %m1, %lb, %rank) : (memref<?xi64>, index, index, index, index, i64, index, i64, i64, i64) -> ()
      }} else {{
        func.call @__pgpu_tls_overflow(%ctl, %tid) : (memref<?xi64>, index) -> ()
      }}
      scf.yield %lb : i64
    }}
    {result}
{close_value}}}
func.func private @__pgpu_du_store_{name}({LAYOUT}, %tid: index, %v: {element}, %m: {ty}{indices}, %site: i64, %tracked: i1) attributes {{pgpu.spmd_inline}} {{
{open_none}    %k:2 = func.call @__pgpu_tls_key_{name}(%m{index_names}) : ({ty}{index_types}) -> (i64, i64)
    {value_bits}
    %loaded = memref.load %m[{index_list}] : {ty}
    {load_bits}
    %goes = func.call @__pgpu_du_write(%st, %ctl, %tm, %cap, %mask, %tid, %k#0, %vb, %lb, %site, %k#1) : (memref<?xi64>, memref<?xi64>, index, index, index, index, i64, i64, i64, i64, i64) -> i1
    scf.if %goes {{
      memref.store %v, %m[{index_list}] : {ty}
    }}
{close_none}}}
"
        )
    } else {
        String::new()
    };
    Ok(format!(
        "func.func private @__pgpu_tls_key_{name}(%m: {ty}{indices}) -> (i64, i64) attributes {{pgpu.spmd_inline}} {{
{key}    return %key, %elem : i64, i64
}}
func.func private @__pgpu_tls_load_{name}({LAYOUT}, %tid: index, %m: {ty}{indices}) -> {element} attributes {{pgpu.spmd_inline}} {{
{open_value}{load_start}      %read = scf.if %room -> (i64) {{
        %slot:2 = func.call @__pgpu_tls_claim_slot(%st, %mask, %k#0) : (memref<?xi64>, index, i64) -> (index, i1)
        %f:2 = func.call @__pgpu_tls_forward(%st, %tm, %cap, %mask, %w, %tid, %k#0, %slot#0, %slot#1) : (memref<?xi64>, index, index, index, index, index, i64, index, i1) -> (i64, i64)
        %master = arith.cmpi eq, %f#0, %m1 : i64
        %got = arith.select %master, %lb, %f#1 : i64
        %rank = arith.index_cast %tid : index to i64
        func.call @__pgpu_tls_record_read(%st, %tm, %cap, %mask, %tid, %k#0, %slot#0, %f#0, %got, %rank) : (memref<?xi64>, index, index, index, index, i64, index, i64, i64, i64) -> ()
        scf.yield %got : i64
      }} else {{
        func.call @__pgpu_tls_overflow(%ctl, %tid) : (memref<?xi64>, index) -> ()
        scf.yield %lb : i64
      }}
      scf.yield %read : i64
    }}
    {result}
{close_value}}}
func.func private @__pgpu_tls_ownload_{name}(%st: memref<?xi64>, %tm: index, %cap: index, %mask: index, %tid: index, %m: {ty}{indices}) -> {element} attributes {{pgpu.spmd_inline}} {{
    %k:2 = func.call @__pgpu_tls_key_{name}(%m{index_names}) : ({ty}{index_types}) -> (i64, i64)
    %f:3 = func.call @__pgpu_tls_find_write(%st, %tm, %cap, %mask, %tid, %k#0) : (memref<?xi64>, index, index, index, index, i64) -> (i1, i64, index)
    %bits = scf.if %f#0 -> (i64) {{
      scf.yield %f#1 : i64
    }} else {{
      %loaded = memref.load %m[{index_list}] : {ty}
      {load_bits}
      scf.yield %lb : i64
    }}
    {result}
    return %r : {element}
}}
func.func private @__pgpu_tls_store_{name}({LAYOUT}, %tid: index, %v: {element}, %m: {ty}{indices}, %site: i64, %tracked: i1) attributes {{pgpu.spmd_inline}} {{
{open_none}    %k:2 = func.call @__pgpu_tls_key_{name}(%m{index_names}) : ({ty}{index_types}) -> (i64, i64)
    {value_bits}
    func.call @__pgpu_tls_write(%st, %ctl, %tm, %cap, %mask, %w, %tid, %k#0, %vb, %site, %k#1, %tracked) : ({LAYOUT_TYPES}, index, i64, i64, i64, i64, i1) -> ()
{close_none}}}
func.func private @__pgpu_tls_put_{name}(%m: {ty}, %elem: index, %bits: i64) attributes {{pgpu.spmd_inline}} {{
    %md:{results} = memref.extract_strided_metadata %m : {ty} -> {metadata_types}
    %c1 = arith.constant 1 : index
    %n = arith.addi %elem, %c1 : index
    %flat = memref.reinterpret_cast %md#0 to offset: [0], sizes: [%n], strides: [1] : memref<{element}> to memref<?x{element}>
    {result}
    memref.store %r, %flat[%elem] : memref<?x{element}>
    return
}}
{direct_helpers}",
    ))
}

/// The commit of thread %tid's write set for one loop whose buffered
/// stores write `site_types` (one memref per site); with `direct`, the
/// direct-update scheme's undo instead (its last parameter is the window's
/// thread count, not the serial flag).
fn commit_function(name: &str, direct: bool, site_types: &[String]) -> String {
    let parameters: String = site_types
        .iter()
        .enumerate()
        .map(|(k, ty)| format!(", %m{k}: {ty}"))
        .collect();
    let cases: String = site_types
        .iter()
        .enumerate()
        .map(|(k, ty)| {
            format!(
                "        case {k} {{
          func.call @__pgpu_tls_put_{}(%m{k}, %entry#2, %entry#3) : ({ty}, index, i64) -> ()
          scf.yield
        }}
",
                mangle(ty)
            )
        })
        .collect();
    let (last, entry) = if direct {
        (
            "%k: index",
            "@__pgpu_du_entry(%st, %ctl, %tm, %cap, %mask, %tid, %e, %k) : (memref<?xi64>, memref<?xi64>, index, index, index, index, index, index)",
        )
    } else {
        (
            "%serial: i1",
            "@__pgpu_tls_entry(%st, %ctl, %tm, %cap, %mask, %tid, %e, %serial) : (memref<?xi64>, memref<?xi64>, index, index, index, index, index, i1)",
        )
    };
    format!(
        "func.func private @{name}({LAYOUT}, %tid: index, {last}{parameters}) attributes {{pgpu.spmd_inline}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = func.call @__pgpu_tls_count(%st, %tm, %mask, %c1, %tid) : (memref<?xi64>, index, index, index, index) -> index
  scf.for %e = %c0 to %n step %c1 {{
    %entry:4 = func.call {entry} -> (i1, index, index, i64)
    scf.if %entry#0 {{
      scf.index_switch %entry#1
{cases}        default {{
          scf.yield
        }}
    }}
  }}
  return
}}
"
    )
}
