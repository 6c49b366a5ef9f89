//! Property test of the kernel-formation passes on random BSGP programs
//! (seeds/bsgp.txt, Sections 4.2 and 4.3).
//!
//! A seeded SplitMix64 generates BSGP programs: one spawn of `n` threads
//! (3..=9, passed from `main` through `argi`), 2..=6 supersteps separated by
//! `barrier;` or `barrier(RANK_REASSIGNED); thread.oldrank = <permutation>;`,
//! int and float values (two size classes) loaded from memory by rank, read
//! from a scratch array written in an earlier superstep by other threads,
//! derived from `thread.rank`/`thread.size` (recomputed, not saved), and
//! arithmetic on earlier values of this or of earlier supersteps; some values
//! are dead. `GET_PUT_PERCENT` of the programs also communicate (Section 5,
//! "Communication Intrinsics"): values `thread.get((thread.rank + off) %
//! thread.size, vX)` of an int `vX` defined in an earlier superstep (it reads
//! `vX` as the thread of that rank had it at the last barrier; after
//! `barrier(RANK_REASSIGNED)` the rank `thread.rank` is the new one, while
//! the rank passed to get still names the thread by its rank at the barrier,
//! i.e. its old rank, as the interpreter and the compiled code, which reads
//! slot `r` of the buffer saved under the old ranks, both do), and
//! statements `pN = 0; thread.put((thread.rank + off) % thread.size, pN,
//! vX);` in supersteps before the last (the targets form a permutation, so
//! every thread receives exactly one value, delivered at the next barrier;
//! later supersteps read `pN`). The last superstep stores sums of values into
//! output arrays and `main` prints checksums. For every program the test
//!
//! 1. runs `pgpu emit --debug-info` and interprets the result (`pgpu run`),
//!    comparing the printed checksums with a model of the program evaluated
//!    here (per-thread contexts shuffled at each rank reassignment; gets read
//!    the contexts as they were at the barrier, puts are delivered after
//!    every thread has run the superstep);
//! 2. runs the kernel pipeline under `pgpu-opt --pgpu-check-semantics`
//!    (the split program must print what the unsplit one prints);
//! 3. prints the buffer allocation and checks, from the printed segments
//!    alone, that every size class uses exactly the fewest buffers an
//!    exhaustive search finds, and that the printed assignment is valid.
//!    A segment `[a->b]` is written in superstep `a` and last read in `b`;
//!    the allocation marks it `put` when `thread.put` writes it (other
//!    threads' slots, at any time during `a`) and `get` when `thread.get`
//!    reads it in `b` (other threads' slots, at any time during `b`). The
//!    test computes the marks from the program (a segment is `put` when it
//!    is the first one of a put target, `get` when a get of its value lies
//!    in `b`), fails when the printed ones differ, and uses its own in the
//!    rule: segment B may follow segment A in one buffer iff A's last read
//!    superstep comes before B's write superstep, or they are the same and
//!    A is read locally (not by get, and that superstep is not
//!    rank-reassigned, where loads use the old ranks) and B is written
//!    locally (not by put). The test also asserts that programs with gets
//!    and with puts, marked segments, buffers reused around them, and
//!    classes whose optimum the marks raise occur often enough;
//! 4. checks that the saved segments are the ones the generator predicts: a
//!    value defined in superstep `s` and last used in `t > s` is saved as
//!    `[s->t]`, cut at every rank-reassigned superstep in between (loaded by
//!    old rank there and saved again); dead values and values recomputed from
//!    ranks, sizes and host values have none. A value that a later
//!    superstep gets or puts is saved even when it could be recomputed
//!    (pgpu-save-values saves communicated values), and a put target is
//!    saved from the put's superstep on (named by the put's line). Where two
//!    answers are right, either is accepted: uses by dead code may count or
//!    not (the pass does no dead-code elimination today; a dead get may
//!    mark a segment `get` or not), and a load-free value built from values
//!    of earlier supersteps may be saved or recomputed.
//!
//! Set `PGPU_RANDOM_SUPERSTEPS_DIR` to keep every generated program (and
//! its emitted module) there. All failures are collected; the test fails at
//! the end with a summary and the first failing programs of each kind (all
//! of them are written to `$CARGO_TARGET_TMPDIR/random_supersteps/`).
//!
//! Besides the paper's pipeline (every barrier kept), step 2 also checks
//! the default kernel pipeline, which eliminates barriers first.
//!
//! `RANK_CHAIN_PERCENT` of the programs also combine rank- or size-derived
//! values of an earlier superstep (`w = r + 1` with `r = thread.rank * 3`
//! defined before a barrier). Those expose a bug of `pgpu-save-values` that
//! `recomputed_operand_regression` below pins down: after `r` is recomputed
//! into `w`'s superstep, `w` becomes recomputable itself, but save-values
//! kept it as a superstep result, and `pgpu-split-kernels` and
//! `pgpu-print-buffer-allocation` then reject the module ("this value
//! crosses supersteps but need not be saved: run pgpu-save-values first").
//!
//! Programs with consecutive barriers that `pgpu-eliminate-barriers` all
//! removes make that pass read ops it has erased (it walks a list of the
//! spawn body's ops collected before erasing); depending on the heap this
//! aborts ("memory allocation of ... bytes failed" in `Op::name`) in the
//! default-pipeline check. `eliminate_barriers_regression` pins one down.
//!
//! Gets and puts also send uniform values (built from `thread.size`, `k`
//! and constants, which the compiler keeps on the host). They found two
//! `pgpu-split-kernels` bugs, pinned by `put_of_uniform_value_regression`
//! (a put of a host value defined in an earlier superstep: its host copy
//! came out after its use, "operand #0 does not dominate this use") and
//! `get_of_uniform_value_regression` (a get of a host value stayed a
//! `pgpu.thread.get` outside the SPMD region).

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt::Write as _,
    path::{Path, PathBuf},
    process::Command,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Instant,
};

/// How many programs the property test generates.
const NUM_PROGRAMS: usize = 300;
/// The generator's base seed.
const BASE_SEED: u64 = 0x5eed_b5c9_2024_0001;
/// Percentage of programs whose values may combine rank- or size-derived
/// values of earlier supersteps (the pattern of `recomputed_operand_regression`).
const RANK_CHAIN_PERCENT: u64 = 12;
/// Largest same-superstep chain of rank/size arithmetic the generator builds
/// (in ops, as the frontend lowers them); well under the pass's limit of 16.
const MAX_CHAIN_OPS: usize = 12;
/// Percentage of programs that communicate with `thread.get` and
/// `thread.put`.
const GET_PUT_PERCENT: u64 = 55;
/// In those programs, the percentage of values after the first superstep
/// that are `thread.get` of an int value of an earlier superstep.
const GET_PERCENT: u64 = 30;
/// In those programs, the percentage of supersteps before the last that put
/// into one or two new values.
const PUT_PERCENT: u64 = 60;
/// Worker threads running the tools.
const WORKERS: usize = 2;

/// The paper's algorithm: every barrier kept.
const PIPELINE: &str =
    "builtin.module(pgpu-inline-spmd,pgpu-form-supersteps,pgpu-save-values,pgpu-split-kernels)";
/// The default kernel pipeline (`pgpu_kernel_passes::KERNEL_PIPELINE`, what
/// `pgpu emit --stage kernels` runs): barrier elimination too.
const DEFAULT_PIPELINE: &str = "builtin.module(pgpu-inline-spmd,pgpu-eliminate-barriers,\
     pgpu-form-supersteps,pgpu-save-values,pgpu-split-kernels)";

// ---------------------------------------------------------------------------
// Random numbers.
// ---------------------------------------------------------------------------

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn percent(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

// ---------------------------------------------------------------------------
// Programs.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Int,
    Float,
}

impl Ty {
    /// The MLIR element type the allocation prints.
    fn mlir(self) -> &'static str {
        match self {
            Ty::Int => "i32",
            Ty::Float => "f32",
        }
    }
}

/// Float constants, exactly representable, as (source text, value).
const FLOAT_CONSTS: [(&str, f32); 4] =
    [("0.5f", 0.5), ("1.5f", 1.5), ("0.25f", 0.25), ("2.0f", 2.0)];

/// A value's defining expression; operands are value ids.
#[derive(Debug, Clone)]
enum Expr {
    /// `gin[(thread.rank + off) % thread.size]`
    LoadIn {
        off: usize,
    },
    /// `gfin[(thread.rank + off) % thread.size]`
    LoadFin {
        off: usize,
    },
    /// `sc[row * n + (thread.rank + off) % thread.size]`: another thread's
    /// store of superstep `row`.
    LoadSc {
        row: usize,
        off: usize,
    },
    /// `thread.rank * mul + add`
    RankAff {
        mul: i32,
        add: i32,
    },
    /// `thread.size * mul + k` (uniform)
    SizeAff {
        mul: i32,
    },
    Add(usize, usize),
    Sub(usize, usize),
    MulC(usize, i32),
    AddC(usize, i32),
    /// `a * FLOAT_CONSTS[c]`
    FMulC(usize, usize),
    FAdd(usize, usize),
    FSub(usize, usize),
    /// `(float)a`
    ToF(usize),
    /// `thread.get((thread.rank + off) % thread.size, vsrc)`: `src` as the
    /// thread of that rank had it at the last barrier (`src` is an int of
    /// an earlier superstep).
    Get {
        off: usize,
        src: usize,
    },
    /// `pN = 0; thread.put((thread.rank + off) % thread.size, pN, vsrc);`:
    /// the value is `pN` as the put delivers it at the next barrier (the
    /// sender's `src`); no thread reads it in its own superstep.
    Put {
        off: usize,
        src: usize,
    },
}

impl Expr {
    fn operands(&self) -> Vec<usize> {
        match *self {
            Expr::LoadIn { .. }
            | Expr::LoadFin { .. }
            | Expr::LoadSc { .. }
            | Expr::RankAff { .. }
            | Expr::SizeAff { .. } => vec![],
            Expr::Add(a, b) | Expr::Sub(a, b) | Expr::FAdd(a, b) | Expr::FSub(a, b) => vec![a, b],
            Expr::MulC(a, _) | Expr::AddC(a, _) | Expr::FMulC(a, _) | Expr::ToF(a) => vec![a],
            Expr::Get { src, .. } | Expr::Put { src, .. } => vec![src],
        }
    }

    /// Whether the expression reads memory: a load, or a get or put (which
    /// read and write temporary buffers). Such values are never recomputed.
    fn is_load(&self) -> bool {
        matches!(
            self,
            Expr::LoadIn { .. }
                | Expr::LoadFin { .. }
                | Expr::LoadSc { .. }
                | Expr::Get { .. }
                | Expr::Put { .. }
        )
    }

    fn is_put(&self) -> bool {
        matches!(self, Expr::Put { .. })
    }

    fn uses_rank(&self) -> bool {
        matches!(self, Expr::RankAff { .. })
    }

    /// Ops the frontend emits for this expression itself (operands apart).
    fn own_ops(&self) -> usize {
        match self {
            Expr::LoadIn { .. } | Expr::LoadFin { .. } | Expr::LoadSc { .. } => 8,
            Expr::Get { .. } | Expr::Put { .. } => 6,
            Expr::RankAff { .. } => 6,
            Expr::SizeAff { .. } => 5,
            Expr::Add(..) | Expr::Sub(..) | Expr::FAdd(..) | Expr::FSub(..) | Expr::ToF(_) => 1,
            Expr::MulC(..) | Expr::AddC(..) | Expr::FMulC(..) => 2,
        }
    }
}

#[derive(Debug, Clone)]
struct Value {
    ty: Ty,
    step: usize,
    expr: Expr,
    /// 1-based source line of its definition.
    line: usize,
}

#[derive(Debug, Clone, Copy)]
enum Perm {
    /// `thread.oldrank = (thread.rank + k) % thread.size;`
    Rotate(usize),
    /// `thread.oldrank = thread.size - 1 - thread.rank;`
    Reverse,
}

impl Perm {
    fn old_rank(self, rank: usize, n: usize) -> usize {
        match self {
            Perm::Rotate(k) => (rank + k) % n,
            Perm::Reverse => n - 1 - rank,
        }
    }

    fn source(self) -> String {
        match self {
            Perm::Rotate(k) => format!("thread.oldrank = (thread.rank + {k}) % thread.size;"),
            Perm::Reverse => "thread.oldrank = thread.size - 1 - thread.rank;".to_string(),
        }
    }
}

#[derive(Debug, Clone)]
enum Stmt {
    Def(usize),
    /// `sc[step * n + thread.rank] = v;`
    StoreSc(usize),
    /// `out[thread.rank] = c + ints...;` and `fout[thread.rank] = 0.5f + floats...;`
    StoreOut {
        int_const: i32,
        ints: Vec<usize>,
        add_rank: bool,
        floats: Vec<usize>,
    },
}

#[derive(Debug, Clone)]
struct Step {
    /// Set when the superstep follows `barrier(RANK_REASSIGNED)`.
    perm: Option<Perm>,
    stmts: Vec<Stmt>,
}

#[derive(Debug, Clone)]
struct Program {
    index: usize,
    seed: u64,
    n: usize,
    k: i32,
    rank_chains: bool,
    /// Whether the program uses `thread.get` and `thread.put`.
    get_put: bool,
    values: Vec<Value>,
    steps: Vec<Step>,
    source: String,
    /// Input data, as `main` initializes it.
    gin: Vec<i32>,
    gfin: Vec<f32>,
}

fn render_index(off: usize) -> String {
    if off == 0 {
        "thread.rank".to_string()
    } else {
        format!("(thread.rank + {off}) % thread.size")
    }
}

/// The source name of value `id`: `pN` for a put target, `vN` otherwise.
fn name(values: &[Value], id: usize) -> String {
    if values[id].expr.is_put() {
        format!("p{id}")
    } else {
        format!("v{id}")
    }
}

/// The right-hand side of a value's definition (a put has none).
fn render_expr(values: &[Value], expr: &Expr) -> String {
    let v = |id: usize| name(values, id);
    match *expr {
        Expr::LoadIn { off } => format!("gin[{}]", render_index(off)),
        Expr::LoadFin { off } => format!("gfin[{}]", render_index(off)),
        Expr::LoadSc { row, off } => format!("sc[{row} * n + {}]", render_index(off)),
        Expr::RankAff { mul, add } => format!("thread.rank * {mul} + {add}"),
        Expr::SizeAff { mul } => format!("thread.size * {mul} + k"),
        Expr::Add(a, b) | Expr::FAdd(a, b) => format!("{} + {}", v(a), v(b)),
        Expr::Sub(a, b) | Expr::FSub(a, b) => format!("{} - {}", v(a), v(b)),
        Expr::MulC(a, c) => format!("{} * {c}", v(a)),
        Expr::AddC(a, c) => format!("{} + {c}", v(a)),
        Expr::FMulC(a, c) => format!("{} * {}", v(a), FLOAT_CONSTS[c].0),
        Expr::ToF(a) => format!("(float){}", v(a)),
        Expr::Get { off, src } => format!("thread.get({}, {})", render_index(off), v(src)),
        Expr::Put { .. } => unreachable!("a put is a statement"),
    }
}

/// Generation state: which values exist and what they are made of.
struct Gen<'a> {
    rng: &'a mut SplitMix64,
    values: Vec<Value>,
    rank_chains: bool,
    get_put: bool,
    /// The superstep being generated: its put targets are not readable yet.
    current_step: usize,
}

impl Gen<'_> {
    /// Whether `id`'s whole expression tree (across supersteps) is free of
    /// loads: it depends only on ranks, sizes, `k` and constants.
    fn pure(&self, id: usize) -> bool {
        let value = &self.values[id];
        !value.expr.is_load() && value.expr.operands().iter().all(|op| self.pure(*op))
    }

    /// Ops of the chain recomputing a pure expression in `step` (operands of
    /// `step` itself followed, earlier values counted as recomputed too).
    fn chain_ops(&self, expr: &Expr) -> usize {
        expr.own_ops()
            + expr
                .operands()
                .iter()
                .map(|op| self.chain_ops(&self.values[*op].expr))
                .sum::<usize>()
    }

    /// Whether `expr` in `step` is acceptable: in programs without rank
    /// chains, a pure value may not take values of earlier supersteps; a
    /// pure chain stays short.
    fn acceptable(&self, expr: &Expr, step: usize) -> bool {
        let operands = expr.operands();
        let pure = !expr.is_load() && operands.iter().all(|op| self.pure(*op));
        if !pure {
            return true;
        }
        if self.chain_ops(expr) > MAX_CHAIN_OPS {
            return false;
        }
        self.rank_chains || operands.iter().all(|op| self.values[*op].step == step)
    }

    /// An operand of type `ty` defined before, preferring earlier
    /// supersteps (cross-superstep uses). In programs with rank chains, half
    /// the picks are among load-free values only, so that chains of rank-
    /// and size-derived values form.
    fn operand(&mut self, ty: Ty, step: usize) -> Option<usize> {
        let only_pure = self.rank_chains && self.rng.percent(50);
        let candidates: Vec<usize> = (0..self.values.len())
            .filter(|id| self.values[*id].ty == ty && (!only_pure || self.pure(*id)))
            .filter(|id| self.readable(*id))
            .collect();
        let earlier: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|id| self.values[*id].step < step)
            .collect();
        let here: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|id| self.values[*id].step == step)
            .collect();
        let from_earlier = !earlier.is_empty() && (here.is_empty() || self.rng.percent(70));
        if from_earlier {
            Some(self.rng.pick(&earlier))
        } else if !here.is_empty() {
            Some(self.rng.pick(&here))
        } else {
            None
        }
    }

    /// Whether value `id` may be read in the current superstep: a put
    /// target only from the next one on.
    fn readable(&self, id: usize) -> bool {
        let value = &self.values[id];
        !(value.expr.is_put() && value.step >= self.current_step)
    }

    /// Int values a get or put may send: defined in a superstep before
    /// `step` (for a get) or readable here (for a put).
    fn communicable(&self, step: usize, get: bool) -> Vec<usize> {
        (0..self.values.len())
            .filter(|id| self.values[*id].ty == Ty::Int)
            .filter(|id| {
                if get {
                    self.values[*id].step < step
                } else {
                    self.readable(*id)
                }
            })
            .collect()
    }

    fn random_expr(&mut self, step: usize, n: usize, stored_rows: &[usize]) -> (Ty, Expr) {
        let off = if self.rng.percent(50) {
            0
        } else {
            self.rng.range(1, n - 1)
        };
        if self.get_put && step > 0 && self.rng.percent(GET_PERCENT) {
            let candidates = self.communicable(step, true);
            if !candidates.is_empty() {
                let src = self.rng.pick(&candidates);
                // Mostly another thread's value.
                let off = if self.rng.percent(20) {
                    0
                } else {
                    self.rng.range(1, n - 1)
                };
                return (Ty::Int, Expr::Get { off, src });
            }
        }
        match self.rng.below(12) {
            0 | 1 => (Ty::Int, Expr::LoadIn { off }),
            2 => (Ty::Float, Expr::LoadFin { off }),
            3 if !stored_rows.is_empty() => {
                let row = self.rng.pick(stored_rows);
                (
                    Ty::Int,
                    Expr::LoadSc {
                        row,
                        off: self.rng.range(1, n - 1),
                    },
                )
            }
            4 => (
                Ty::Int,
                Expr::RankAff {
                    mul: self.rng.range(2, 5) as i32,
                    add: self.rng.range(0, 9) as i32,
                },
            ),
            5 => (
                Ty::Int,
                Expr::SizeAff {
                    mul: self.rng.range(1, 4) as i32,
                },
            ),
            6 | 7 => {
                let (Some(a), Some(b)) = (self.operand(Ty::Int, step), self.operand(Ty::Int, step))
                else {
                    return (Ty::Int, Expr::LoadIn { off });
                };
                if self.rng.percent(60) {
                    (Ty::Int, Expr::Add(a, b))
                } else {
                    (Ty::Int, Expr::Sub(a, b))
                }
            }
            8 => {
                let Some(a) = self.operand(Ty::Int, step) else {
                    return (Ty::Int, Expr::LoadIn { off });
                };
                if self.rng.percent(50) {
                    (Ty::Int, Expr::MulC(a, self.rng.range(2, 3) as i32))
                } else {
                    (Ty::Int, Expr::AddC(a, self.rng.range(1, 20) as i32))
                }
            }
            9 => {
                let (Some(a), Some(b)) =
                    (self.operand(Ty::Float, step), self.operand(Ty::Float, step))
                else {
                    return (Ty::Float, Expr::LoadFin { off });
                };
                if self.rng.percent(60) {
                    (Ty::Float, Expr::FAdd(a, b))
                } else {
                    (Ty::Float, Expr::FSub(a, b))
                }
            }
            10 => {
                let Some(a) = self.operand(Ty::Float, step) else {
                    return (Ty::Float, Expr::LoadFin { off });
                };
                (
                    Ty::Float,
                    Expr::FMulC(a, self.rng.below(FLOAT_CONSTS.len())),
                )
            }
            _ => {
                let Some(a) = self.operand(Ty::Int, step) else {
                    return (Ty::Float, Expr::LoadFin { off });
                };
                (Ty::Float, Expr::ToF(a))
            }
        }
    }
}

fn generate(index: usize) -> Program {
    let seed = BASE_SEED ^ (index as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
    let mut rng = SplitMix64(seed);
    let n = rng.range(3, 9);
    let k = rng.range(0, 7) as i32;
    let num_steps = rng.range(2, 6);
    let rank_chains = rng.percent(RANK_CHAIN_PERCENT);
    let get_put = rng.percent(GET_PUT_PERCENT);
    let gin: Vec<i32> = (0..n).map(|_| rng.range(0, 40) as i32 - 20).collect();
    let gfin: Vec<f32> = (0..n)
        .map(|_| rng.range(0, 32) as f32 * 0.25 - 3.0)
        .collect();
    let mut steps = vec![];
    let mut stored_rows = vec![];
    let mut g = Gen {
        rng: &mut rng,
        values: vec![],
        rank_chains,
        get_put,
        current_step: 0,
    };
    for step in 0..num_steps {
        g.current_step = step;
        let perm = (step > 0 && g.rng.percent(35)).then(|| {
            if g.rng.percent(70) {
                Perm::Rotate(g.rng.range(1, n - 1))
            } else {
                Perm::Reverse
            }
        });
        let mut stmts = vec![];
        let last = step + 1 == num_steps;
        // The first superstep loads one value of each class; later ones
        // define 0..=3 values (1..=3 before the last).
        let count = if step == 0 {
            g.rng.range(2, 4)
        } else if last {
            g.rng.range(0, 2)
        } else {
            g.rng.range(1, 3)
        };
        for i in 0..count {
            let (ty, expr) = if step == 0 && i == 0 {
                (Ty::Int, Expr::LoadIn { off: 0 })
            } else if step == 0 && i == 1 {
                (Ty::Float, Expr::LoadFin { off: 0 })
            } else {
                let mut found = None;
                for _ in 0..16 {
                    let (ty, expr) = g.random_expr(step, n, &stored_rows);
                    if g.acceptable(&expr, step) {
                        found = Some((ty, expr));
                        break;
                    }
                }
                found.unwrap_or((Ty::Int, Expr::LoadIn { off: 0 }))
            };
            stmts.push(Stmt::Def(g.values.len()));
            g.values.push(Value {
                ty,
                step,
                expr,
                line: 0,
            });
        }
        // Puts into new values, read from the next superstep on (a put in
        // the last superstep would be read by nobody).
        if get_put && !last && g.rng.percent(PUT_PERCENT) {
            for _ in 0..g.rng.range(1, 2) {
                let candidates = g.communicable(step, false);
                if candidates.is_empty() {
                    break;
                }
                let src = g.rng.pick(&candidates);
                let off = if g.rng.percent(15) {
                    0
                } else {
                    g.rng.range(1, n - 1)
                };
                // After the superstep's other definitions, or as early as
                // possible: first, or right after `src`'s definition.
                let position = if g.rng.percent(35) {
                    stmts
                        .iter()
                        .position(|stmt| matches!(stmt, Stmt::Def(id) if *id == src))
                        .map_or(0, |p| p + 1)
                } else {
                    stmts.len()
                };
                stmts.insert(position, Stmt::Def(g.values.len()));
                g.values.push(Value {
                    ty: Ty::Int,
                    step,
                    expr: Expr::Put { off, src },
                    line: 0,
                });
            }
        }
        if last {
            let ints: Vec<usize> = (0..g.values.len())
                .filter(|id| g.values[*id].ty == Ty::Int)
                .filter(|_| g.rng.percent(45))
                .collect();
            let floats: Vec<usize> = (0..g.values.len())
                .filter(|id| g.values[*id].ty == Ty::Float)
                .filter(|_| g.rng.percent(45))
                .collect();
            stmts.push(Stmt::StoreOut {
                int_const: g.rng.range(0, 9) as i32,
                ints,
                add_rank: g.rng.percent(30),
                floats,
            });
        } else if g.rng.percent(45)
            && let Some(v) = g.operand(Ty::Int, step + 1)
        {
            stmts.push(Stmt::StoreSc(v));
            stored_rows.push(step);
        }
        steps.push(Step { perm, stmts });
    }
    let mut values = g.values;
    let source = render_program(n, k, &gin, &gfin, &mut values, &steps);
    Program {
        index,
        seed,
        n,
        k,
        rank_chains,
        get_put,
        values,
        steps,
        source,
        gin,
        gfin,
    }
}

/// The program's text; records each value's line.
fn render_program(
    n: usize,
    k: i32,
    gin: &[i32],
    gfin: &[f32],
    values: &mut [Value],
    steps: &[Step],
) -> String {
    let mut lines: Vec<String> = vec![
        "// Generated by tools/pgpu-opt/tests/random_supersteps.rs.".to_string(),
        "void kern(int* gin, float* gfin, int* sc, int* out, float* fout, int n, int k){"
            .to_string(),
        "  spawn(n){".to_string(),
    ];
    for (index, step) in steps.iter().enumerate() {
        if index > 0 {
            match step.perm {
                Some(perm) => {
                    lines.push("    barrier(RANK_REASSIGNED);".to_string());
                    lines.push(format!("    {}", perm.source()));
                }
                None => lines.push("    barrier;".to_string()),
            }
        }
        lines.push(format!("    // superstep {}", index + 1));
        for stmt in &step.stmts {
            match stmt {
                Stmt::Def(id) => {
                    let target = name(values, *id);
                    if let Expr::Put { off, src } = values[*id].expr {
                        lines.push(format!("    {target} = 0;"));
                        lines.push(format!(
                            "    thread.put({}, {target}, {});",
                            render_index(off),
                            name(values, src)
                        ));
                    } else {
                        let text = render_expr(values, &values[*id].expr);
                        lines.push(format!("    {target} = {text};"));
                    }
                    // A put target is named by the put (its new version).
                    values[*id].line = lines.len();
                }
                Stmt::StoreSc(v) => {
                    let v = name(values, *v);
                    lines.push(format!("    sc[{index} * n + thread.rank] = {v};"));
                }
                Stmt::StoreOut {
                    int_const,
                    ints,
                    add_rank,
                    floats,
                } => {
                    let mut int_sum = int_const.to_string();
                    for v in ints {
                        let _ = write!(int_sum, " + {}", name(values, *v));
                    }
                    if *add_rank {
                        int_sum.push_str(" + thread.rank");
                    }
                    let mut float_sum = "0.5f".to_string();
                    for v in floats {
                        let _ = write!(float_sum, " + {}", name(values, *v));
                    }
                    lines.push(format!("    out[thread.rank] = {int_sum};"));
                    lines.push(format!("    fout[thread.rank] = {float_sum};"));
                }
            }
        }
    }
    lines.push("  }".to_string());
    lines.push("}".to_string());
    lines.push(String::new());
    lines.push("int main() {".to_string());
    lines.push(format!("  int n = argi(0, {n});"));
    lines.push(format!("  int k = argi(1, {k});"));
    lines.push("  int* gin = dnew[n]int;".to_string());
    lines.push("  float* gfin = dnew[n]float;".to_string());
    lines.push(format!("  int* sc = dnew[n * {}]int;", steps.len()));
    lines.push("  int* out = dnew[n]int;".to_string());
    lines.push("  float* fout = dnew[n]float;".to_string());
    for (i, value) in gin.iter().enumerate() {
        lines.push(format!("  gin[{i}] = {value};"));
    }
    for (i, value) in gfin.iter().enumerate() {
        lines.push(format!("  gfin[{i}] = {value:?}f;"));
    }
    lines.push(format!(
        "  for (int i = 0; i < n * {}; i++) sc[i] = 0;",
        steps.len()
    ));
    lines.push("  for (int i = 0; i < n; i++) { out[i] = 0; fout[i] = 0.0f; }".to_string());
    lines.push("  kern(gin, gfin, sc, out, fout, n, k);".to_string());
    lines.push("  long isum = 0;".to_string());
    lines.push("  float fsum = 0.0f;".to_string());
    lines.push("  for (int i = 0; i < n; i++) {".to_string());
    lines.push("    isum = isum + (long)out[i] * (long)(i + 1);".to_string());
    lines.push("    fsum = fsum + fout[i] * (float)(i + 1);".to_string());
    lines.push("  }".to_string());
    lines.push("  printf(\"isum %ld fsum %f\\n\", isum, fsum);".to_string());
    lines.push("  return 0;".to_string());
    lines.push("}".to_string());
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

// ---------------------------------------------------------------------------
// The model: what the program prints.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum V {
    I(i32),
    F(f32),
}

impl V {
    fn i(self) -> i32 {
        match self {
            V::I(x) => x,
            V::F(_) => panic!("int expected"),
        }
    }

    fn f(self) -> f32 {
        match self {
            V::F(x) => x,
            V::I(_) => panic!("float expected"),
        }
    }
}

fn expected_output(program: &Program) -> String {
    let n = program.n;
    let num_steps = program.steps.len();
    let mut sc = vec![0i32; n * num_steps];
    let mut out = vec![0i32; n];
    let mut fout = vec![0f32; n];
    let mut contexts: Vec<Vec<Option<V>>> = vec![vec![None; program.values.len()]; n];
    for (index, step) in program.steps.iter().enumerate() {
        // `thread.get(r, v)` reads `v` as the thread of rank `r` at the
        // barrier had it: by the ranks before any reassignment (the
        // interpreter's semantics, and the compiled code's, which reads slot
        // `r` of the buffer saved under those ranks).
        let at_barrier = contexts.clone();
        if let Some(perm) = step.perm {
            contexts = (0..n)
                .map(|rank| contexts[perm.old_rank(rank, n)].clone())
                .collect();
        }
        // Puts of the superstep: (target rank, value id, value), delivered
        // when every thread has run it.
        let mut puts: Vec<(usize, usize, V)> = vec![];
        // Threads of one superstep touch disjoint memory (scratch rows of
        // earlier supersteps are read-only, gets read the barrier's
        // contexts, puts are delivered afterwards), so any order will do.
        for (rank, context) in contexts.iter_mut().enumerate() {
            let get =
                |context: &Vec<Option<V>>, id: usize| context[id].expect("defined before use");
            for stmt in &step.stmts {
                match stmt {
                    Stmt::Def(id) => {
                        let c = &*context;
                        let value = match program.values[*id].expr {
                            Expr::LoadIn { off } => V::I(program.gin[(rank + off) % n]),
                            Expr::LoadFin { off } => V::F(program.gfin[(rank + off) % n]),
                            Expr::LoadSc { row, off } => V::I(sc[row * n + (rank + off) % n]),
                            Expr::RankAff { mul, add } => {
                                V::I((rank as i32).wrapping_mul(mul).wrapping_add(add))
                            }
                            Expr::SizeAff { mul } => {
                                V::I((n as i32).wrapping_mul(mul).wrapping_add(program.k))
                            }
                            Expr::Add(a, b) => V::I(get(c, a).i().wrapping_add(get(c, b).i())),
                            Expr::Sub(a, b) => V::I(get(c, a).i().wrapping_sub(get(c, b).i())),
                            Expr::MulC(a, m) => V::I(get(c, a).i().wrapping_mul(m)),
                            Expr::AddC(a, m) => V::I(get(c, a).i().wrapping_add(m)),
                            Expr::FMulC(a, m) => V::F(get(c, a).f() * FLOAT_CONSTS[m].1),
                            Expr::FAdd(a, b) => V::F(get(c, a).f() + get(c, b).f()),
                            Expr::FSub(a, b) => V::F(get(c, a).f() - get(c, b).f()),
                            Expr::ToF(a) => V::F(get(c, a).i() as f32),
                            Expr::Get { off, src } => get(&at_barrier[(rank + off) % n], src),
                            Expr::Put { off, src } => {
                                puts.push(((rank + off) % n, *id, get(c, src)));
                                continue;
                            }
                        };
                        context[*id] = Some(value);
                    }
                    Stmt::StoreSc(v) => sc[index * n + rank] = get(context, *v).i(),
                    Stmt::StoreOut {
                        int_const,
                        ints,
                        add_rank,
                        floats,
                    } => {
                        let mut sum = *int_const;
                        for v in ints {
                            sum = sum.wrapping_add(get(context, *v).i());
                        }
                        if *add_rank {
                            sum = sum.wrapping_add(rank as i32);
                        }
                        out[rank] = sum;
                        let mut fsum = 0.5f32;
                        for v in floats {
                            fsum += get(context, *v).f();
                        }
                        fout[rank] = fsum;
                    }
                }
            }
        }
        for (target, id, value) in puts {
            assert!(
                contexts[target][id].replace(value).is_none(),
                "two puts into {id} of thread {target}"
            );
        }
    }
    let mut isum = 0i64;
    let mut fsum = 0f32;
    for i in 0..n {
        isum = isum.wrapping_add(i64::from(out[i]).wrapping_mul(i as i64 + 1));
        fsum += fout[i] * (i as f32 + 1.0);
    }
    format!("isum {isum} fsum {:.6}\n", f64::from(fsum))
}

// ---------------------------------------------------------------------------
// The predicted saved segments.
// ---------------------------------------------------------------------------

/// A saved segment: class (element type), written at the end of superstep
/// `a`, last read at the beginning of superstep `b` (1-based).
type Seg = (String, usize, usize);

/// A segment as the allocation rule sees it (1-based supersteps): written
/// in superstep `a` (at its end, or during it into other threads' slots
/// when `put`), last read in superstep `b` (at its beginning from the
/// thread's own slot, or during it from other threads' slots when `get`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Span {
    a: usize,
    b: usize,
    put: bool,
    get: bool,
}

/// A span without marks.
fn span(a: usize, b: usize) -> Span {
    Span {
        a,
        b,
        put: false,
        get: false,
    }
}

impl Program {
    fn reassigned(&self, step: usize) -> bool {
        self.steps[step].perm.is_some()
    }

    /// Per value, whether it is live: every value without `live_only`;
    /// with it, the values stores use, directly or through other values.
    fn live(&self, live_only: bool) -> Vec<bool> {
        let mut live = vec![!live_only; self.values.len()];
        if live_only {
            let mut work: Vec<usize> = vec![];
            for step in &self.steps {
                for stmt in &step.stmts {
                    match stmt {
                        Stmt::Def(_) => {}
                        Stmt::StoreSc(v) => work.push(*v),
                        Stmt::StoreOut { ints, floats, .. } => {
                            work.extend(ints.iter().chain(floats));
                        }
                    }
                }
            }
            while let Some(id) = work.pop() {
                if !live[id] {
                    live[id] = true;
                    work.extend(self.values[id].expr.operands());
                }
            }
        }
        live
    }

    /// Per value, the supersteps other than its own that reference it;
    /// with `live_only`, only references by stores and by live values.
    fn uses(&self, live_only: bool) -> Vec<BTreeSet<usize>> {
        let live = self.live(live_only);
        let mut uses = vec![BTreeSet::new(); self.values.len()];
        for (index, step) in self.steps.iter().enumerate() {
            for stmt in &step.stmts {
                let used: Vec<usize> = match stmt {
                    Stmt::Def(id) if live[*id] => self.values[*id].expr.operands(),
                    Stmt::Def(_) => vec![],
                    Stmt::StoreSc(v) => vec![*v],
                    Stmt::StoreOut { ints, floats, .. } => {
                        ints.iter().chain(floats).copied().collect()
                    }
                };
                for v in used {
                    if self.values[v].step != index {
                        uses[v].insert(index);
                    }
                }
            }
        }
        uses
    }

    /// Per value, the supersteps where `thread.get` reads it; with
    /// `live_only`, only gets whose result is live.
    fn get_reads(&self, live_only: bool) -> Vec<BTreeSet<usize>> {
        let live = self.live(live_only);
        let mut reads = vec![BTreeSet::new(); self.values.len()];
        for (id, value) in self.values.iter().enumerate() {
            if let Expr::Get { src, .. } = value.expr
                && live[id]
            {
                reads[src].insert(value.step);
            }
        }
        reads
    }

    /// Per value, whether a later superstep communicates it: `thread.get`
    /// reads it or `thread.put` sends it (with `live_only`, only gets and
    /// puts whose result is live). pgpu-save-values saves such values
    /// instead of recomputing them.
    fn communicated(&self, live_only: bool) -> Vec<bool> {
        let live = self.live(live_only);
        let mut communicated = vec![false; self.values.len()];
        for (id, value) in self.values.iter().enumerate() {
            if let Expr::Get { src, .. } | Expr::Put { src, .. } = value.expr
                && live[id]
                && self.values[src].step != value.step
            {
                communicated[src] = true;
            }
        }
        communicated
    }

    /// The marks the allocation must print on value `line`'s segment
    /// `[a->b]` (1-based), as `(put, get)`: `put` on the first segment of a
    /// put target, `get` when `thread.get` reads the value in superstep `b`.
    /// Two answers where only a dead get reads it there (kept or not).
    fn expected_marks(&self, line: usize, a: usize, b: usize) -> BTreeSet<(bool, bool)> {
        let Some(id) = self.values.iter().position(|value| value.line == line) else {
            return BTreeSet::from([(false, false)]);
        };
        let value = &self.values[id];
        let put = value.expr.is_put() && a == value.step + 1;
        [false, true]
            .into_iter()
            .map(|live_only| {
                let get = b
                    .checked_sub(1)
                    .is_some_and(|step| self.get_reads(live_only)[id].contains(&step));
                (put, get)
            })
            .collect()
    }

    /// Whether the value's tree (across supersteps) has no load.
    fn pure(&self, id: usize) -> bool {
        let value = &self.values[id];
        !value.expr.is_load() && value.expr.operands().iter().all(|op| self.pure(*op))
    }

    /// Whether the value is uniform (`thread.size`, `k` and constants only).
    fn uniform(&self, id: usize) -> bool {
        let expr = &self.values[id].expr;
        !expr.is_load() && !expr.uses_rank() && expr.operands().iter().all(|op| self.uniform(*op))
    }

    /// Whether the value's tree within its own superstep reads `thread.rank`.
    fn rank_in_own_step(&self, id: usize) -> bool {
        let value = &self.values[id];
        value.expr.uses_rank()
            || value
                .expr
                .operands()
                .iter()
                .any(|op| self.values[*op].step == value.step && self.rank_in_own_step(*op))
    }

    /// Whether pgpu-save-values recomputes the value instead of saving it:
    /// its chain within its superstep reads only ranks, sizes, `k` and
    /// constants, with no rank reassignment up to its last use. `None` when
    /// the chain might exceed the pass's length limit.
    fn recomputable(&self, id: usize, last: usize) -> Option<bool> {
        let value = &self.values[id];
        let mut ops = 0;
        let mut stack = vec![id];
        while let Some(current) = stack.pop() {
            let node = &self.values[current];
            if node.step != value.step || node.expr.is_load() {
                return Some(false);
            }
            ops += node.expr.own_ops();
            stack.extend(node.expr.operands());
        }
        let rank_blocked =
            self.rank_in_own_step(id) && (value.step + 1..=last).any(|step| self.reassigned(step));
        if rank_blocked {
            Some(false)
        } else if ops > MAX_CHAIN_OPS {
            None
        } else {
            Some(true)
        }
    }

    /// The segments of value `id` used in `uses`: `[s->t]` cut at every
    /// rank-reassigned superstep in between.
    fn segments(&self, id: usize, uses: &BTreeSet<usize>) -> Vec<Seg> {
        let value = &self.values[id];
        let Some(&last) = uses.last() else {
            return vec![];
        };
        let class = value.ty.mlir().to_string();
        let mut segments = vec![];
        let mut start = value.step;
        for step in value.step + 1..=last {
            if self.reassigned(step) {
                segments.push((class.clone(), start + 1, step + 1));
                start = step;
            }
        }
        if start < last {
            segments.push((class, start + 1, last + 1));
        }
        segments
    }

    /// Per value line, the sorted segment lists the allocation may print.
    fn predicted(&self) -> BTreeMap<usize, BTreeSet<Vec<Seg>>> {
        let mut options: BTreeMap<usize, BTreeSet<Vec<Seg>>> = BTreeMap::new();
        for live_only in [false, true] {
            let uses = self.uses(live_only);
            let communicated = self.communicated(live_only);
            for (id, value) in self.values.iter().enumerate() {
                let entry = options.entry(value.line).or_default();
                let Some(&last) = uses[id].last() else {
                    entry.insert(vec![]);
                    continue;
                };
                let mut saved = self.segments(id, &uses[id]);
                saved.sort();
                if communicated[id] && !self.uniform(id) {
                    // Communicated values are saved, whatever they are made
                    // of (value_saving); uniform ones are host values.
                    entry.insert(saved);
                    continue;
                }
                match self.recomputable(id, last) {
                    Some(true) => {
                        entry.insert(vec![]);
                    }
                    None => {
                        entry.insert(vec![]);
                        entry.insert(saved);
                    }
                    Some(false) => {
                        // A pure value built from values of earlier
                        // supersteps becomes recomputable once those are
                        // recomputed into its superstep: either is right.
                        let rank_blocked = self.rank_in_own_step(id)
                            && (value.step + 1..=last).any(|step| self.reassigned(step));
                        if self.pure(id) && !rank_blocked {
                            entry.insert(vec![]);
                        }
                        entry.insert(saved);
                    }
                }
            }
        }
        options
    }
}

// ---------------------------------------------------------------------------
// The printed allocation and the brute force.
// ---------------------------------------------------------------------------

#[derive(Debug)]
struct PrintedBuffer {
    class: String,
    epoch: usize,
    /// (definition line, span with the printed marks)
    members: Vec<(usize, Span)>,
}

#[derive(Debug)]
struct PrintedPlan {
    supersteps: usize,
    num_buffers: usize,
    num_segments: usize,
    buffers: Vec<PrintedBuffer>,
    naive_bytes: usize,
}

fn parse_plan(text: &str) -> Result<PrintedPlan, String> {
    let mut lines = text.lines().filter(|line| !line.trim().is_empty());
    let header = lines.next().ok_or("no output")?;
    // spawn at L:C: N supersteps, B buffers for S saved segments
    let rest = header
        .strip_prefix("spawn at ")
        .ok_or_else(|| format!("bad header {header:?}"))?;
    let (_, rest) = rest
        .split_once(": ")
        .ok_or_else(|| format!("bad header {header:?}"))?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let number = |index: usize| -> Result<usize, String> {
        words
            .get(index)
            .and_then(|word| word.trim_end_matches(',').parse().ok())
            .ok_or_else(|| format!("bad header {header:?}"))
    };
    let supersteps = number(0)?;
    let num_buffers = number(2)?;
    let num_segments = number(5)?;
    let mut buffers = vec![];
    let mut naive_bytes = None;
    for line in lines {
        let line = line.trim();
        if line.starts_with("spawn at ") {
            return Err("more than one spawn".to_string());
        }
        if let Some(rest) = line.strip_prefix("buffer ") {
            // i (TY x threads of epoch E): members
            let (_, rest) = rest
                .split_once(" (")
                .ok_or_else(|| format!("bad line {line:?}"))?;
            let (class_text, members_text) = rest
                .split_once("): ")
                .ok_or_else(|| format!("bad line {line:?}"))?;
            let class = class_text
                .split_whitespace()
                .next()
                .ok_or_else(|| format!("bad class in {line:?}"))?
                .to_string();
            let epoch = class_text
                .rsplit(' ')
                .next()
                .and_then(|word| word.parse().ok())
                .ok_or_else(|| format!("bad epoch in {line:?}"))?;
            let mut members = vec![];
            for member in members_text.split(", ") {
                // op L:C [a->b], [a->b get], [a->b put] or [a->b put get]
                let (head, range) = member
                    .strip_suffix(']')
                    .and_then(|member| member.split_once(" ["))
                    .ok_or_else(|| format!("bad member {member:?} in {line:?}"))?;
                let parts: Vec<&str> = head.split_whitespace().collect();
                let [_, position] = parts[..] else {
                    return Err(format!("bad member {member:?} in {line:?}"));
                };
                let def_line = position
                    .split(':')
                    .next()
                    .and_then(|l| l.parse().ok())
                    .ok_or_else(|| format!("bad position in {member:?}"))?;
                let (range, marks) = range.split_once(' ').unwrap_or((range, ""));
                let (put, get) = match marks {
                    "" => (false, false),
                    "put" => (true, false),
                    "get" => (false, true),
                    "put get" => (true, true),
                    _ => return Err(format!("bad marks in {member:?}")),
                };
                let (a, b) = range
                    .split_once("->")
                    .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                    .ok_or_else(|| format!("bad range in {member:?}"))?;
                members.push((def_line, Span { a, b, put, get }));
            }
            buffers.push(PrintedBuffer {
                class,
                epoch,
                members,
            });
        } else if let Some(rest) = line.strip_prefix("peak bytes per thread: ") {
            naive_bytes = rest
                .split_once("(one buffer per value: ")
                .and_then(|(_, naive)| naive.trim_end_matches(')').parse().ok());
        } else if line.starts_with("host: ") || line.starts_with("collective output: ") {
            // Neither is expected here: checked by the caller through the
            // segments (a value placed on the host has no segment).
        } else {
            return Err(format!("unexpected line {line:?}"));
        }
    }
    Ok(PrintedPlan {
        supersteps,
        num_buffers,
        num_segments,
        buffers,
        naive_bytes: naive_bytes.ok_or("no peak bytes line")?,
    })
}

/// Whether a buffer may hold `next` after `prev`: `prev`'s last read comes
/// before `next`'s write, that is `prev.b < next.a`, or both are in one
/// superstep (`prev.b == next.a`) with `prev` read at its beginning from the
/// thread's own slot and `next` written at its end into the thread's own
/// slot. Reads by `thread.get` and loads in a rank-reassigned superstep (by
/// old rank, while saving by new) read other threads' slots at any time
/// during the superstep; `thread.put` writes them at any time.
fn may_follow(prev: Span, next: Span, reassigned: &[bool]) -> bool {
    let local_read = !prev.get && !reassigned[prev.b - 1];
    prev.b < next.a || (prev.b == next.a && local_read && !next.put)
}

/// Whether `segments` (in any order) can share one buffer.
fn is_chain(segments: &[Span], reassigned: &[bool]) -> bool {
    let mut sorted = segments.to_vec();
    sorted.sort();
    sorted
        .windows(2)
        .all(|pair| may_follow(pair[0], pair[1], reassigned))
}

/// The fewest buffers holding `segments`, by exhaustive search: segments in
/// order of their write, each appended to any buffer whose last segment it
/// may follow, or to a new one. Every valid assignment is reachable this
/// way (a buffer's segments are written in increasing order), so the
/// smallest count found is the optimum. Fails beyond `limit` search nodes.
fn brute_force_min_buffers(
    segments: &[Span],
    reassigned: &[bool],
    limit: &mut u64,
) -> Result<usize, String> {
    let mut sorted = segments.to_vec();
    sorted.sort();
    fn search(
        index: usize,
        sorted: &[Span],
        reassigned: &[bool],
        lasts: &mut Vec<Span>,
        best: &mut usize,
        limit: &mut u64,
    ) -> Result<(), String> {
        if *limit == 0 {
            return Err("brute force search limit reached".to_string());
        }
        *limit -= 1;
        if lasts.len() >= *best {
            return Ok(());
        }
        let Some(&segment) = sorted.get(index) else {
            *best = lasts.len();
            return Ok(());
        };
        let mut tried = BTreeSet::new();
        for buffer in 0..lasts.len() {
            let last = lasts[buffer];
            // Buffers ending in the same segment shape are interchangeable.
            if may_follow(last, segment, reassigned) && tried.insert(last) {
                lasts[buffer] = segment;
                search(index + 1, sorted, reassigned, lasts, best, limit)?;
                lasts[buffer] = last;
            }
        }
        lasts.push(segment);
        search(index + 1, sorted, reassigned, lasts, best, limit)?;
        lasts.pop();
        Ok(())
    }
    let mut best = sorted.len();
    search(0, &sorted, reassigned, &mut vec![], &mut best, limit)?;
    Ok(best)
}

// ---------------------------------------------------------------------------
// Running the tools.
// ---------------------------------------------------------------------------

struct Tools {
    pgpu: PathBuf,
    pgpu_opt: PathBuf,
}

fn tools() -> Option<Tools> {
    let pgpu_opt = PathBuf::from(env!("CARGO_BIN_EXE_pgpu-opt"));
    let pgpu = pgpu_opt
        .parent()
        .expect("pgpu-opt has a directory")
        .join(format!("pgpu{}", std::env::consts::EXE_SUFFIX));
    if !pgpu.exists() {
        eprintln!(
            "SKIPPED: {} is missing; build it with `cargo build -p pgpu` to run this test",
            pgpu.display()
        );
        return None;
    }
    Some(Tools { pgpu, pgpu_opt })
}

struct Output {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `command` so that a crash prints no backtrace (symbolizing one in
/// the debug binaries takes seconds).
fn quiet_run(command: &mut Command) -> Output {
    run(command.env("RUST_BACKTRACE", "0"))
}

fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("cannot run {command:?}: {error}"));
    let mut stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        let _ = write!(stderr, "\n[{}]", output.status);
    }
    Output {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Emit,
    Interpreter,
    SemanticCheck,
    DefaultPipeline,
    PrintAllocation,
    Counts,
    Segments,
    Marks,
    InvalidAssignment,
    NotOptimal,
}

#[derive(Default)]
struct Stats {
    programs: usize,
    rank_chain_programs: usize,
    with_reassignment: usize,
    supersteps: usize,
    values: usize,
    segments: usize,
    buffers: usize,
    float_buffers: usize,
    classes_with_sharing: usize,
    strict_reassignment_rule_used: usize,
    /// Consecutive segments of a buffer where the first is read by get or
    /// the second written by put.
    get_put_reuse: usize,
    /// Classes whose optimum is larger with the marks than without.
    classes_where_marks_cost_buffers: usize,
    get_segments: usize,
    put_segments: usize,
    get_put_programs: usize,
    programs_with_get: usize,
    programs_with_put: usize,
    max_segments_per_class: usize,
    /// Values no other superstep uses.
    dead_values: usize,
    /// Values used by later supersteps but predicted to be recomputed.
    recomputed_values: usize,
    /// Values that may be saved or recomputed (rank/size chains).
    ambiguous_values: usize,
}

struct Failure {
    kind: Kind,
    program: Program,
    detail: String,
}

/// Runs one program through the tools; returns its failures.
fn check_program(
    tools: &Tools,
    dir: &Path,
    program: &Program,
    stats: &Mutex<Stats>,
) -> Vec<Failure> {
    let fail = |kind: Kind, detail: String| Failure {
        kind,
        program: program.clone(),
        detail,
    };
    let source_path = dir.join(format!("prog{}.bsgp", program.index));
    let mlir_path = dir.join(format!("prog{}.mlir", program.index));
    std::fs::write(&source_path, &program.source).expect("write the program");
    let emitted = quiet_run(
        Command::new(&tools.pgpu)
            .arg("emit")
            .arg(&source_path)
            .arg("--debug-info"),
    );
    if !emitted.ok {
        return vec![fail(Kind::Emit, emitted.stderr)];
    }
    std::fs::write(&mlir_path, &emitted.stdout).expect("write the emitted module");
    let mut failures = vec![];
    let predicted = program.predicted();
    {
        let uses = program.uses(false);
        let mut stats = stats.lock().expect("stats");
        for (id, value) in program.values.iter().enumerate() {
            let options = &predicted[&value.line];
            if uses[id].is_empty() {
                stats.dead_values += 1;
            } else if options.len() > 1 {
                stats.ambiguous_values += 1;
            } else if options.contains(&vec![]) {
                stats.recomputed_values += 1;
            }
        }
    }

    // The unsplit program under the interpreter against the model.
    let ran = quiet_run(Command::new(&tools.pgpu).arg("run").arg(&mlir_path));
    let expected = expected_output(program);
    if !ran.ok || ran.stdout != expected {
        failures.push(fail(
            Kind::Interpreter,
            format!(
                "expected {expected:?}, the interpreter printed {:?} (ok: {}); stderr:\n{}",
                ran.stdout, ran.ok, ran.stderr
            ),
        ));
    }

    // The split program computes what the unsplit one does.
    let checked = quiet_run(
        Command::new(&tools.pgpu_opt)
            .arg("--pgpu-check-semantics")
            .arg(format!("--pass-pipeline={PIPELINE}"))
            .arg(&mlir_path)
            .arg("-o")
            .arg("/dev/null"),
    );
    if !checked.ok {
        failures.push(fail(Kind::SemanticCheck, checked.stderr));
    }
    let checked = quiet_run(
        Command::new(&tools.pgpu_opt)
            .arg("--pgpu-check-semantics")
            .arg(format!("--pass-pipeline={DEFAULT_PIPELINE}"))
            .arg(&mlir_path)
            .arg("-o")
            .arg("/dev/null"),
    );
    if !checked.ok {
        failures.push(fail(Kind::DefaultPipeline, checked.stderr));
    }

    // The buffer allocation.
    let printed = quiet_run(
        Command::new(&tools.pgpu_opt)
            .args([
                "--pgpu-inline-spmd",
                "--pgpu-form-supersteps",
                "--pgpu-save-values",
                "--pgpu-print-buffer-allocation",
                "-o",
                "/dev/null",
            ])
            .arg(&mlir_path),
    );
    if !printed.ok {
        failures.push(fail(Kind::PrintAllocation, printed.stderr));
        return failures;
    }
    let plan = match parse_plan(&printed.stderr) {
        Ok(plan) => plan,
        Err(error) => {
            failures.push(fail(
                Kind::PrintAllocation,
                format!("{error}; output:\n{}", printed.stderr),
            ));
            return failures;
        }
    };
    let context = format!("allocation:\n{}", printed.stderr);
    let num_steps = program.steps.len();
    let reassigned: Vec<bool> = (0..num_steps)
        .map(|step| program.reassigned(step))
        .collect();
    let listed: usize = plan.buffers.iter().map(|buffer| buffer.members.len()).sum();
    if plan.supersteps != num_steps
        || plan.num_buffers != plan.buffers.len()
        || plan.num_segments != listed
        || plan.naive_bytes != 4 * listed
    {
        failures.push(fail(
            Kind::Counts,
            format!(
                "expected {num_steps} supersteps, the header's buffer and segment counts to \
                 match the {} buffers and {listed} segments listed, and 4 bytes per segment \
                 for one buffer per value; {context}",
                plan.buffers.len()
            ),
        ));
    }

    // Saved segments against the prediction, per value (by line).
    let mut by_line: BTreeMap<usize, Vec<Seg>> = BTreeMap::new();
    for buffer in &plan.buffers {
        if buffer.epoch != 0 {
            failures.push(fail(
                Kind::Segments,
                format!(
                    "no thread-count change, yet epoch {}; {context}",
                    buffer.epoch
                ),
            ));
        }
        for &(line, span) in &buffer.members {
            by_line
                .entry(line)
                .or_default()
                .push((buffer.class.clone(), span.a, span.b));
        }
    }
    let mut mismatches = String::new();
    for (line, options) in &predicted {
        let mut got = by_line.remove(line).unwrap_or_default();
        got.sort();
        if !options.contains(&got) {
            let _ = writeln!(
                mismatches,
                "  line {line}: printed {got:?}, expected one of {options:?}"
            );
        }
    }
    for (line, got) in &by_line {
        let _ = writeln!(
            mismatches,
            "  line {line} is no value definition, printed {got:?}"
        );
    }
    if !mismatches.is_empty() {
        failures.push(fail(
            Kind::Segments,
            format!("saved segments differ from the prediction:\n{mismatches}{context}"),
        ));
    }

    // The printed get and put marks against the program's: the spans the
    // rule below sees carry the expected marks.
    let mut mark_mismatches = String::new();
    let mut spans_of_buffer: Vec<Vec<Span>> = vec![];
    for buffer in &plan.buffers {
        let mut spans = vec![];
        for &(line, printed) in &buffer.members {
            let expected = program.expected_marks(line, printed.a, printed.b);
            let (put, get) = if expected.contains(&(printed.put, printed.get)) {
                (printed.put, printed.get)
            } else {
                let _ = writeln!(
                    mark_mismatches,
                    "  line {line} [{}->{}]: printed (put, get) = {:?}, expected {expected:?}",
                    printed.a,
                    printed.b,
                    (printed.put, printed.get)
                );
                *expected.first().expect("one option at least")
            };
            spans.push(Span {
                put,
                get,
                ..printed
            });
        }
        spans_of_buffer.push(spans);
    }
    if !mark_mismatches.is_empty() {
        failures.push(fail(
            Kind::Marks,
            format!("get/put marks differ from the program's:\n{mark_mismatches}{context}"),
        ));
    }

    // Validity and optimality per class.
    // Per (element type, epoch): buffers and their segments.
    type Classes = BTreeMap<(String, usize), (usize, Vec<Span>)>;
    let mut classes = Classes::new();
    let mut strict_used = 0;
    let mut get_put_reuse = 0;
    for (buffer, ranges) in plan.buffers.iter().zip(spans_of_buffer) {
        let valid_ranges = ranges
            .iter()
            .all(|span| 1 <= span.a && span.a < span.b && span.b <= num_steps);
        if !valid_ranges || !is_chain(&ranges, &reassigned) {
            failures.push(fail(
                Kind::InvalidAssignment,
                format!(
                    "a {} buffer holds {ranges:?}, which cannot share one buffer (rank-reassigned \
                     supersteps, 1-based: {:?}); {context}",
                    buffer.class,
                    (1..=num_steps)
                        .filter(|s| reassigned[s - 1])
                        .collect::<Vec<_>>()
                ),
            ));
        }
        let mut sorted = ranges.clone();
        sorted.sort();
        if valid_ranges {
            strict_used += sorted
                .windows(2)
                .filter(|pair| reassigned[pair[0].b - 1] && pair[1].a > pair[0].b)
                .count();
            get_put_reuse += sorted
                .windows(2)
                .filter(|pair| pair[0].get || pair[1].put)
                .count();
        }
        let entry = classes
            .entry((buffer.class.clone(), buffer.epoch))
            .or_default();
        entry.0 += 1;
        entry.1.extend(ranges);
    }
    let mut sharing = 0;
    let mut max_per_class = 0;
    let mut marks_cost_buffers = 0;
    for ((class, epoch), (count, segments)) in &classes {
        max_per_class = max_per_class.max(segments.len());
        if *count < segments.len() {
            sharing += 1;
        }
        let mut limit = 20_000_000;
        let best = brute_force_min_buffers(segments, &reassigned, &mut limit);
        // How many buffers the marks cost: the optimum without them.
        if let Ok(best) = best {
            let unmarked: Vec<Span> = segments.iter().map(|s| span(s.a, s.b)).collect();
            if let Ok(fewer) = brute_force_min_buffers(&unmarked, &reassigned, &mut limit)
                && fewer < best
            {
                marks_cost_buffers += 1;
            }
        }
        match best {
            Ok(best) if best == *count => {}
            Ok(best) => failures.push(fail(
                Kind::NotOptimal,
                format!(
                    "class {class} (epoch {epoch}): {count} buffers, the brute force needs {best} \
                     for {segments:?}; {context}"
                ),
            )),
            Err(error) => failures.push(fail(Kind::NotOptimal, format!("{error}; {context}"))),
        }
    }
    let mut stats = stats.lock().expect("stats");
    stats.segments += listed;
    stats.buffers += plan.buffers.len();
    stats.float_buffers += plan.buffers.iter().filter(|b| b.class == "f32").count();
    stats.classes_with_sharing += sharing;
    stats.strict_reassignment_rule_used += strict_used;
    stats.get_put_reuse += get_put_reuse;
    stats.classes_where_marks_cost_buffers += marks_cost_buffers;
    for span in plan.buffers.iter().flat_map(|buffer| &buffer.members) {
        stats.get_segments += usize::from(span.1.get);
        stats.put_segments += usize::from(span.1.put);
    }
    stats.max_segments_per_class = stats.max_segments_per_class.max(max_per_class);
    failures
}

/// The first `lines` lines of `text` (a crash's backtrace is long).
fn shorten(text: &str, lines: usize) -> String {
    let count = text.lines().count();
    let mut kept: Vec<&str> = text.lines().take(lines).collect();
    if count > lines {
        kept.push("...");
        kept.extend(text.lines().last());
    }
    kept.join("\n")
}

fn report(failures: &[Failure]) -> String {
    let mut by_kind: BTreeMap<Kind, Vec<&Failure>> = BTreeMap::new();
    for failure in failures {
        by_kind.entry(failure.kind).or_default().push(failure);
    }
    let saved_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("random_supersteps");
    let _ = std::fs::create_dir_all(&saved_dir);
    let mut text = String::new();
    for (kind, list) in &by_kind {
        let indices: Vec<usize> = list.iter().map(|f| f.program.index).collect();
        let _ = writeln!(
            text,
            "{kind:?}: {} failures, programs {indices:?}",
            list.len()
        );
    }
    for (kind, list) in &by_kind {
        for failure in list {
            let path = saved_dir.join(format!("prog{}.bsgp", failure.program.index));
            let _ = std::fs::write(&path, &failure.program.source);
        }
        for failure in list.iter().take(2) {
            let program = &failure.program;
            let _ = writeln!(
                text,
                "\n=== {kind:?}: program {} (seed {:#x}, rank chains: {}), saved as {}/prog{}.bsgp\n{}\n{}",
                program.index,
                program.seed,
                program.rank_chains,
                saved_dir.display(),
                program.index,
                shorten(failure.detail.trim_end(), 24),
                program.source
            );
        }
    }
    text
}

#[test]
fn random_programs_split_correctly_with_optimal_buffers() {
    let Some(tools) = tools() else {
        return;
    };
    let started = Instant::now();
    // PGPU_RANDOM_SUPERSTEPS_DIR keeps every program and emitted module.
    let temporary = tempfile::tempdir().expect("temporary directory");
    let dir = match std::env::var_os("PGPU_RANDOM_SUPERSTEPS_DIR") {
        Some(path) => {
            let path = PathBuf::from(path);
            std::fs::create_dir_all(&path).expect("create PGPU_RANDOM_SUPERSTEPS_DIR");
            path
        }
        None => temporary.path().to_path_buf(),
    };
    let programs: Vec<Program> = (0..NUM_PROGRAMS).map(generate).collect();
    let stats = Mutex::new(Stats::default());
    let failures = Mutex::new(vec![]);
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(program) = programs.get(index) else {
                        break;
                    };
                    let found = check_program(&tools, &dir, program, &stats);
                    failures.lock().expect("failures").extend(found);
                }
            });
        }
    });
    let mut failures = failures.into_inner().expect("failures");
    failures.sort_by_key(|failure| (failure.kind, failure.program.index));
    let mut stats = stats.into_inner().expect("stats");
    for program in &programs {
        stats.programs += 1;
        stats.rank_chain_programs += usize::from(program.rank_chains);
        stats.get_put_programs += usize::from(program.get_put);
        let has = |f: fn(&Expr) -> bool| program.values.iter().any(|v| f(&v.expr));
        stats.programs_with_get += usize::from(has(|e| matches!(e, Expr::Get { .. })));
        stats.programs_with_put += usize::from(has(Expr::is_put));
        stats.with_reassignment += usize::from(program.steps.iter().any(|s| s.perm.is_some()));
        stats.supersteps += program.steps.len();
        stats.values += program.values.len();
    }
    eprintln!(
        "{} programs ({} with rank reassignment, {} with rank chains), {} supersteps, {} values \
         ({} dead, {} recomputed, {} either recomputed or saved); {} saved segments in {} buffers ({} f32), {} classes sharing buffers, the strict \
         reassignment rule applied {} times, at most {} segments per class; {:.1} s",
        stats.programs,
        stats.with_reassignment,
        stats.rank_chain_programs,
        stats.supersteps,
        stats.values,
        stats.dead_values,
        stats.recomputed_values,
        stats.ambiguous_values,
        stats.segments,
        stats.buffers,
        stats.float_buffers,
        stats.classes_with_sharing,
        stats.strict_reassignment_rule_used,
        stats.max_segments_per_class,
        started.elapsed().as_secs_f64()
    );
    eprintln!(
        "get/put: {} programs ({} with get, {} with put), {} segments marked get, {} marked put, \
         {} buffers reused after a get or for a put, {} classes where the marks cost buffers",
        stats.get_put_programs,
        stats.programs_with_get,
        stats.programs_with_put,
        stats.get_segments,
        stats.put_segments,
        stats.get_put_reuse,
        stats.classes_where_marks_cost_buffers,
    );
    assert!(
        failures.is_empty(),
        "{} failures in {} programs:\n{}",
        failures.len(),
        NUM_PROGRAMS,
        report(&failures)
    );
    // The generator exercises the communication cases often (the counts
    // are about twice these for the fixed seeds).
    let enough = |count: usize, per_100: usize| count * 100 >= NUM_PROGRAMS * per_100;
    assert!(
        enough(stats.programs_with_get, 20),
        "{}",
        stats.programs_with_get
    );
    assert!(
        enough(stats.programs_with_put, 25),
        "{}",
        stats.programs_with_put
    );
    assert!(enough(stats.get_segments, 25), "{}", stats.get_segments);
    assert!(enough(stats.put_segments, 50), "{}", stats.put_segments);
    assert!(enough(stats.get_put_reuse, 10), "{}", stats.get_put_reuse);
    assert!(
        enough(stats.classes_where_marks_cost_buffers, 3),
        "{}",
        stats.classes_where_marks_cost_buffers
    );
}

// ---------------------------------------------------------------------------
// The brute force itself, on known instances.
// ---------------------------------------------------------------------------

#[test]
fn brute_force_on_known_instances() {
    let mut limit = 1_000_000;
    let spans = |pairs: &[(usize, usize)]| -> Vec<Span> {
        pairs.iter().map(|&(a, b)| span(a, b)).collect()
    };
    // Listing 5 (Table 2): v0 [1->2], v1 [1->4], v2 [2->3], v3 [3->4]: two.
    let listing5 = spans(&[(1, 2), (1, 4), (2, 3), (3, 4)]);
    assert_eq!(
        brute_force_min_buffers(&listing5, &[false; 4], &mut limit),
        Ok(2)
    );
    // Listing 3/4: f [1->2], v [1->2], v again [2->3] after the rank
    // reassignment at superstep 2: three, two without the reassignment.
    let listing3 = spans(&[(1, 2), (1, 2), (2, 3)]);
    assert_eq!(
        brute_force_min_buffers(&listing3, &[false, true, false], &mut limit),
        Ok(3)
    );
    assert_eq!(
        brute_force_min_buffers(&listing3, &[false; 3], &mut limit),
        Ok(2)
    );
    // A buffer last read before a reassigned superstep may be written there.
    assert_eq!(
        brute_force_min_buffers(
            &spans(&[(1, 2), (3, 4)]),
            &[false, false, true, false],
            &mut limit
        ),
        Ok(1)
    );
    assert!(!is_chain(
        &spans(&[(1, 3), (3, 4)]),
        &[false, false, true, false]
    ));
    assert!(is_chain(&spans(&[(1, 3), (3, 4)]), &[false; 4]));
    // get-two-supersteps.bsgp: a0 [1->2 get], a1 [2->3 get]: two buffers,
    // one when a0 is read from the own slot only.
    let get = |a, b| Span {
        get: true,
        ..span(a, b)
    };
    let put = |a, b| Span {
        put: true,
        ..span(a, b)
    };
    assert_eq!(
        brute_force_min_buffers(&[get(1, 2), get(2, 3)], &[false; 3], &mut limit),
        Ok(2)
    );
    assert_eq!(
        brute_force_min_buffers(&[span(1, 2), get(2, 3)], &[false; 3], &mut limit),
        Ok(1)
    );
    // A buffer read by get may be written a superstep later.
    assert!(is_chain(&[get(1, 2), span(3, 4)], &[false; 4]));
    // put-during-load.bsgp: a [1->2], b [2->3], p [2->3 put]: p may not
    // take a's buffer, b may.
    assert_eq!(
        brute_force_min_buffers(
            &[span(1, 2), span(2, 3), put(2, 3)],
            &[false; 3],
            &mut limit
        ),
        Ok(2)
    );
    assert!(!is_chain(&[span(1, 2), put(2, 3)], &[false; 3]));
    assert!(is_chain(&[span(1, 2), put(3, 4)], &[false; 4]));
    assert!(!is_chain(&[get(1, 3), put(3, 4)], &[false; 4]));
    assert!(is_chain(&[get(1, 2), put(3, 4)], &[false; 4]));
}

// ---------------------------------------------------------------------------
// A bug the random programs found, minimised.
// ---------------------------------------------------------------------------

/// `r` is rank-derived and recomputed into superstep 2, where `w = r + 1`
/// is then rank-derived too; pgpu-save-values decided on the original
/// module that `w` must be saved (its operand was a superstep result), so
/// the module it leaves still has `w` as a superstep result, which
/// pgpu-split-kernels and pgpu-print-buffer-allocation reject as "crosses
/// supersteps but need not be saved". The same happens with a size-derived
/// `u2 = u + 1`.
#[test]
fn recomputed_operand_regression() {
    let Some(tools) = tools() else {
        return;
    };
    let source = "\
void kern(int* out, int n){
  spawn(n){
    r = thread.rank * 3;
    barrier;
    w = r + 1;
    barrier;
    out[thread.rank] = w;
  }
}

int main() {
  int n = argi(0, 5);
  int* out = dnew[n]int;
  kern(out, n);
  long sum = 0;
  for (int i = 0; i < n; i++) sum = sum + (long)out[i] * (long)(i + 1);
  printf(\"sum %ld\\n\", sum);
  return 0;
}
";
    let dir = tempfile::tempdir().expect("temporary directory");
    let source_path = dir.path().join("recomputed_operand.bsgp");
    let mlir_path = dir.path().join("recomputed_operand.mlir");
    std::fs::write(&source_path, source).expect("write the program");
    let emitted = run(Command::new(&tools.pgpu)
        .arg("emit")
        .arg(&source_path)
        .arg("--debug-info"));
    assert!(emitted.ok, "pgpu emit failed:\n{}", emitted.stderr);
    std::fs::write(&mlir_path, &emitted.stdout).expect("write the module");
    let ran = run(Command::new(&tools.pgpu).arg("run").arg(&mlir_path));
    assert_eq!(ran.stdout, "sum 135\n", "interpreter:\n{}", ran.stderr);
    let checked = run(Command::new(&tools.pgpu_opt)
        .arg("--pgpu-check-semantics")
        .arg(format!("--pass-pipeline={PIPELINE}"))
        .arg(&mlir_path)
        .arg("-o")
        .arg("/dev/null"));
    assert!(
        checked.ok,
        "the kernel pipeline fails on\n{source}\n{}",
        checked.stderr
    );
    let printed = run(Command::new(&tools.pgpu_opt)
        .args([
            "--pgpu-inline-spmd",
            "--pgpu-form-supersteps",
            "--pgpu-save-values",
            "--pgpu-print-buffer-allocation",
            "-o",
            "/dev/null",
        ])
        .arg(&mlir_path));
    assert!(
        printed.ok,
        "pgpu-print-buffer-allocation fails on\n{source}\n{}",
        printed.stderr
    );
}

/// `pgpu-eliminate-barriers` collects the spawn body's ops once, erases
/// each removable barrier, and for the next barrier walks back over that
/// list (`segment(ops[..position].iter().rev())`), reading the erased
/// barrier's name: a use after free. Here all three barriers go; the read
/// of freed memory aborts ("memory allocation of ... bytes failed" from
/// `Op::name` in `eliminate_barriers::segment`) in most runs under
/// `--pgpu-check-semantics` (a generated program, minimised; `main` never
/// even calls `kern`). Run a few times: whether it aborts depends on the heap.
#[test]
fn eliminate_barriers_regression() {
    let Some(tools) = tools() else {
        return;
    };
    let source = "\
void kern(int* gin, float* gfin, int* sc, int* out, float* fout, int n, int k){
  spawn(n){
    v0 = gin[thread.rank];
    v1 = gfin[thread.rank];
    barrier;
    barrier;
    v3 = v1 * 2.0f;
    sc[2 * n + thread.rank] = v0;
    barrier;
    barrier(RANK_REASSIGNED);
    thread.oldrank = thread.size - 1 - thread.rank;
  }
}

int main() {
  int n = argi(0, 5);
  for (int i = 0; i < n; i++) {
  }
}
";
    let dir = tempfile::tempdir().expect("temporary directory");
    let source_path = dir.path().join("eliminate_barriers.bsgp");
    let mlir_path = dir.path().join("eliminate_barriers.mlir");
    std::fs::write(&source_path, source).expect("write the program");
    let emitted = run(Command::new(&tools.pgpu)
        .arg("emit")
        .arg(&source_path)
        .arg("--debug-info"));
    assert!(emitted.ok, "pgpu emit failed:\n{}", emitted.stderr);
    std::fs::write(&mlir_path, &emitted.stdout).expect("write the module");
    for attempt in 0..3 {
        let checked = run(Command::new(&tools.pgpu_opt)
            .arg("--pgpu-check-semantics")
            .arg(format!("--pass-pipeline={DEFAULT_PIPELINE}"))
            .arg(&mlir_path)
            .arg("-o")
            .arg("/dev/null"));
        assert!(
            checked.ok,
            "the default kernel pipeline fails (attempt {attempt}) on\n{source}\n{}",
            shorten(&checked.stderr, 24)
        );
    }
}

/// Interprets `source` (it must print `expected`), then checks that the
/// kernel pipeline keeps its meaning.
fn assert_pipeline_keeps_meaning(tools: &Tools, name: &str, source: &str, expected: &str) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let source_path = dir.path().join(format!("{name}.bsgp"));
    let mlir_path = dir.path().join(format!("{name}.mlir"));
    std::fs::write(&source_path, source).expect("write the program");
    let emitted = run(Command::new(&tools.pgpu)
        .arg("emit")
        .arg(&source_path)
        .arg("--debug-info"));
    assert!(emitted.ok, "pgpu emit failed:\n{}", emitted.stderr);
    std::fs::write(&mlir_path, &emitted.stdout).expect("write the module");
    let interpreted = quiet_run(
        Command::new(&tools.pgpu)
            .args(["run", "--interpret"])
            .arg(&source_path),
    );
    assert_eq!(
        interpreted.stdout, expected,
        "interpreter:\n{}",
        interpreted.stderr
    );
    let checked = quiet_run(
        Command::new(&tools.pgpu_opt)
            .arg("--pgpu-check-semantics")
            .arg(format!("--pass-pipeline={PIPELINE}"))
            .arg(&mlir_path)
            .arg("-o")
            .arg("/dev/null"),
    );
    assert!(
        checked.ok,
        "the kernel pipeline fails on\n{source}\n{}",
        shorten(&checked.stderr, 24)
    );
}

/// A put sending a uniform value (a host value) of an earlier superstep:
/// pgpu-split-kernels leaves the put using the host value inside the
/// kernel ("operand #0 does not dominate this use"). Found by the random
/// programs.
#[test]
fn put_of_uniform_value_regression() {
    let Some(tools) = tools() else {
        return;
    };
    let source = "\
void kern(int* out, int n, int k){
  spawn(n){
    u = thread.size * 2 + k;
    barrier;
    p = 0;
    thread.put((thread.rank + 2) % thread.size, p, u);
    barrier;
    out[thread.rank] = p;
  }
}

int main() {
  int n = argi(0, 4);
  int* out = dnew[n]int;
  kern(out, n, 3);
  for (int i = 0; i < n; i++) printf(\" %d\", out[i]);
  printf(\"\\n\");
  return 0;
}
";
    assert_pipeline_keeps_meaning(&tools, "put_of_uniform", source, " 11 11 11 11\n");
}

/// A get of a uniform value (a host value) of an earlier superstep:
/// pgpu-split-kernels leaves `pgpu.thread.get` outside the SPMD region
/// ("must be nested in an SPMD region"). Found by the random programs.
#[test]
fn get_of_uniform_value_regression() {
    let Some(tools) = tools() else {
        return;
    };
    let source = "\
void kern(int* out, int n, int k){
  spawn(n){
    u = thread.size * 3 + k;
    barrier;
    g = thread.get((thread.rank + 1) % thread.size, u);
    barrier;
    out[thread.rank] = g;
  }
}

int main() {
  int n = argi(0, 4);
  int* out = dnew[n]int;
  kern(out, n, 3);
  for (int i = 0; i < n; i++) printf(\" %d\", out[i]);
  printf(\"\\n\");
  return 0;
}
";
    assert_pipeline_keeps_meaning(&tools, "get_of_uniform", source, " 15 15 15 15\n");
}
