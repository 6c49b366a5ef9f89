//! The execution engine: resumable fibers over the compact program.
//!
//! A [`Fiber`] is one logical thread of control with an explicit stack of
//! function [`Activation`]s; each activation holds the function's slot
//! vector and a stack of [`Ctl`] entries, one per region being executed
//! (block, program counter and what the region's terminator does: return,
//! yield to an `scf.if`, next iteration of an `scf.for`, ...). Executing an
//! op never recurses in Rust for calls or structured control flow, so a
//! fiber can stop at any synchronization point and resume later: a
//! `pgpu.barrier` or collective reached inside a `func.call` to a
//! `pgpu.spmd_inline` function, inside a `pgpu.superstep`, or inside a
//! branch of a `pgpu.par` (whose branches are sub-fibers, run one after the
//! other to their next synchronization point so that the k-th barriers of
//! all branches align).
//!
//! Synchronization protocol: a fiber reaching a sync op backs its program
//! counter up, records the op in `waiting` and stops. The BSP scheduler
//! (module `spmd`) resolves the sync for all threads (computing collective
//! results into their slots), clears `waiting` and sets `passed`; resumed,
//! the fiber executes the op again, sees `passed`, and moves on (a
//! `pgpu.superstep` then enters its region). A `pgpu.range_barrier` follows
//! the same protocol under the block scheduler (module `block`), which
//! releases the threads of a range once all of them wait; outside a block
//! spawn it is an error, and inside one `pgpu.par` is.

use crate::ir::*;
use crate::memory::{AccessError, AllocKind, Memory};
use crate::scalar::*;
use crate::value::*;
use crate::{InterpError, Note, Options};
use pgpu_pass_infra::integer::{self, IntegerFault};
use pgpu_runtime::printf;
use std::rc::Rc;
use std::time::Instant;

/// What a region's terminator does.
#[derive(Debug, Clone)]
pub enum CtlKind {
    /// The fiber's run stops and returns the terminator's operands.
    Base,
    FuncBody,
    /// Results go to the op's results: scf.if, execute_region,
    /// index_switch, alloca_scope, pgpu.superstep.
    Results(OpId),
    For {
        op: OpId,
        iv: i64,
        ub: i64,
        step: i64,
        unsigned: bool,
        width: u32,
    },
    While(OpId),
    Parallel(Box<ParallelState>),
    Par(Box<ParState>),
}

#[derive(Debug, Clone)]
pub struct ParallelState {
    pub op: OpId,
    pub ivs: Vec<i64>,
    pub lbs: Vec<i64>,
    pub ubs: Vec<i64>,
    pub steps: Vec<i64>,
    pub accs: Vec<Val>,
    pub iteration: u32,
    pub owns_race: bool,
}

#[derive(Debug, Clone)]
pub struct ParState {
    pub op: OpId,
    pub branches: Vec<Fiber>,
    pub results: Vec<Option<Vec<Val>>>,
}

#[derive(Debug, Clone)]
pub struct Ctl {
    pub block: BlockId,
    pub pc: u32,
    pub kind: CtlKind,
}

#[derive(Debug, Clone)]
pub struct Activation {
    pub func: FuncId,
    pub slots: Vec<Val>,
    pub ctl: Vec<Ctl>,
    pub ret: Box<[Slot]>,
    pub allocas: Vec<u32>,
    pub dtemps: Vec<u32>,
}

#[derive(Debug, Clone, Default)]
pub struct Fiber {
    pub acts: Vec<Activation>,
    pub waiting: Option<OpId>,
    pub passed: bool,
}

/// A fiber's values at a barrier: the slots of each activation, and the
/// same of the branches of a `pgpu.par` it is running.
#[derive(Debug, Clone)]
pub struct FiberSnapshot {
    pub acts: Vec<Vec<Val>>,
    pub branches: Vec<FiberSnapshot>,
}

impl FiberSnapshot {
    pub fn of(fiber: &Fiber) -> Self {
        let branches = match fiber
            .acts
            .last()
            .and_then(|a| a.ctl.last())
            .map(|c| &c.kind)
        {
            Some(CtlKind::Par(state)) => state.branches.iter().map(Self::of).collect(),
            _ => Vec::new(),
        };
        Self {
            acts: fiber.acts.iter().map(|a| a.slots.clone()).collect(),
            branches,
        }
    }

    /// The value of `slot` in activation `depth` (1-based) of the fiber
    /// at `path` (par branch indices; `depths`: the depth of the fiber
    /// running each `pgpu.par`), if set. A branch the snapshot did not
    /// see running reads the values of the fiber that started it, whose
    /// activations it continues (its first activation is a copy of the one
    /// running the par): its `pgpu.par` began after the snapshot, or the
    /// snapshot was taken inside an earlier `pgpu.par` (a collective in a
    /// `par` ends the superstep, and the next `par` reads that barrier's
    /// values). Branches of an earlier `pgpu.par` that the path does reach
    /// started as copies of the same activation, and a `thread.get` in
    /// the later one can only name values defined before both.
    pub fn value(
        &self,
        path: &[usize],
        depths: &[usize],
        depth: usize,
        slot: usize,
    ) -> Option<&Val> {
        let (fiber, index) = self.activation(path, depths, depth.checked_sub(1)?)?;
        fiber.acts.get(index)?.get(slot).filter(|v| v.is_set())
    }

    /// The snapshot holding activation `index` (0-based) of the fiber at
    /// `path`, and its index there.
    fn activation(&self, path: &[usize], depths: &[usize], index: usize) -> Option<(&Self, usize)> {
        match path.split_first() {
            None => Some((self, index)),
            Some((&first, rest)) => match self.branches.get(first) {
                Some(branch) => branch.activation(rest, depths.get(1..)?, index),
                None => {
                    // Each missing level's first activation continues the
                    // activation that ran its par.
                    let above: usize = depths.iter().map(|d| d.saturating_sub(1)).sum();
                    Some((self, above + index))
                }
            },
        }
    }
}

pub enum Stop {
    Done(Vec<Val>),
    Sync,
}

/// Per-thread context while an SPMD thread runs.
#[derive(Debug, Default)]
pub struct ThreadCtx {
    pub rank: usize,
    pub size: usize,
    pub oldrank: Option<usize>,
    pub out: Vec<u8>,
    /// gpu ids: thread id xyz, block id xyz, block dims xyz, grid dims xyz.
    pub gpu: Option<[i64; 12]>,
    /// The current Fork group (id, rank, size) in synchronous code.
    pub group: Option<crate::fork::Group>,
}

/// A pending `pgpu.thread.put`, delivered at the next barrier.
#[derive(Debug)]
pub struct Put {
    pub target: usize,
    /// The `pgpu.par` branches leading to the putting fiber.
    pub path: Vec<usize>,
    pub depth: usize,
    pub slot: Slot,
    pub value: Val,
}

pub struct Interp<'p> {
    pub prog: &'p Program,
    pub options: &'p Options,
    pub mem: Memory,
    pub out: Vec<u8>,
    pub args: &'p [String],
    pub rng: u64,
    pub start: Instant,
    pub steps: u64,
    pub cur: Option<ThreadCtx>,
    pub in_spawn: bool,
    pub spawn_dtemps: Vec<u32>,
    pub globals: Vec<u32>,
    /// Every thread's values at the last barrier, for `pgpu.thread.get`.
    pub get_snapshot: Option<Vec<FiberSnapshot>>,
    /// The `pgpu.par` branches leading to the fiber running now (empty in a
    /// thread's own fiber).
    pub fiber_path: Vec<usize>,
    /// For each of them, the depth (activations) of the fiber running the
    /// `pgpu.par`: its branch's first activation copies that fiber's
    /// activation at this depth.
    pub fiber_depths: Vec<usize>,
    pub rr_snapshot: Option<Vec<Vec<Vec<Val>>>>,
    pub rr_claimed: Vec<bool>,
    pub puts: Vec<Put>,
    /// The thread count while a `pgpu.require` body runs (host code).
    pub require_size: Option<usize>,
    /// Lock-step execution (Fork): a fiber stops after every op.
    pub step_mode: bool,
    /// The threads of a `pgpu.spawn block` run (module `block`): range
    /// barriers are allowed, whole-spawn synchronization is not.
    pub in_block: bool,
}

pub type R<T> = Result<T, InterpError>;

fn bool_val(value: bool) -> Val {
    Val::Int(if value { -1 } else { 0 })
}

impl<'p> Interp<'p> {
    pub fn new(prog: &'p Program, args: &'p [String], options: &'p Options) -> R<Self> {
        let mut interp = Self {
            prog,
            options,
            mem: Memory::default(),
            out: Vec::new(),
            args,
            rng: 0,
            start: Instant::now(),
            steps: 0,
            cur: None,
            in_spawn: false,
            spawn_dtemps: Vec::new(),
            globals: Vec::new(),
            get_snapshot: None,
            fiber_path: Vec::new(),
            fiber_depths: Vec::new(),
            rr_snapshot: None,
            rr_claimed: Vec::new(),
            puts: Vec::new(),
            require_size: None,
            step_mode: false,
            in_block: false,
        };
        for global in &prog.globals {
            let id = interp
                .mem
                .allocate(global.size, AllocKind::Global, global.init.clone())
                .map_err(|message| InterpError::new(message, None))?;
            interp.globals.push(id);
        }
        Ok(interp)
    }

    pub fn fail(&self, op: &Op, message: impl Into<String>) -> InterpError {
        InterpError::new(message.into(), self.prog.loc(op.loc))
    }

    pub(crate) fn access_error(&self, op: &Op, error: AccessError) -> InterpError {
        match error {
            AccessError::Message(message) => self.fail(op, message),
            AccessError::Race {
                message,
                other_loc,
                other_what,
            } => {
                let mut error = self.fail(op, message);
                error.notes.push(Note {
                    message: other_what.to_string(),
                    location: self.prog.loc(other_loc),
                });
                error
            }
        }
    }

    /// Appends program output (host output, or a flushed thread buffer).
    pub fn emit(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.options.echo_stdout {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(bytes);
            let _ = stdout.flush();
        }
        self.out.extend_from_slice(bytes);
    }

    /// Prints an executed op to stderr: location, thread, name.
    fn trace(&self, op: &Op) {
        let position = match self.prog.loc(op.loc) {
            Some(p) => format!("{}:{}:{}", p.file, p.line, p.column),
            None => "<unknown>".to_string(),
        };
        match &self.cur {
            Some(ctx) => eprintln!("[trace] {position}: thread {}: {}", ctx.rank, op.name),
            None => eprintln!("[trace] {position}: host: {}", op.name),
        }
    }

    /// A fiber that runs `func` from its entry with `args`.
    pub fn function_fiber(&self, func: FuncId, args: Vec<Val>) -> R<Fiber> {
        let f = &self.prog.funcs[func as usize];
        let Some(body) = f.body else {
            return Err(InterpError::new(
                format!("function '@{}' has no body", f.name),
                self.prog.loc(f.loc),
            ));
        };
        let entry = self.prog.regions[body as usize].blocks[0];
        let mut slots = vec![Val::Unset; f.nslots as usize];
        let params = &self.prog.blocks[entry as usize].args;
        if params.len() != args.len() {
            return Err(InterpError::new(
                format!(
                    "function '@{}' takes {} arguments, {} given",
                    f.name,
                    params.len(),
                    args.len()
                ),
                self.prog.loc(f.loc),
            ));
        }
        for (&slot, value) in params.iter().zip(args) {
            slots[slot as usize] = value;
        }
        Ok(Fiber {
            acts: vec![Activation {
                func,
                slots,
                ctl: vec![Ctl {
                    block: entry,
                    pc: 0,
                    kind: CtlKind::FuncBody,
                }],
                ret: Box::new([]),
                allocas: Vec::new(),
                dtemps: Vec::new(),
            }],
            waiting: None,
            passed: false,
        })
    }

    // -----------------------------------------------------------------
    // Operand access
    // -----------------------------------------------------------------

    fn val(&self, op: &Op, act: &Activation, index: usize) -> R<Val> {
        let slot = op.operands[index] as usize;
        match &act.slots[slot] {
            Val::Unset => Err(self.fail(
                op,
                format!(
                    "'{}' uses a value that was never defined (operand {index})",
                    op.name
                ),
            )),
            value => Ok(value.clone()),
        }
    }

    /// An integer operand; `None` for poison.
    fn int(&self, op: &Op, act: &Activation, index: usize) -> R<Option<i64>> {
        match &act.slots[op.operands[index] as usize] {
            Val::Int(value) => Ok(Some(*value)),
            Val::Poison => Ok(None),
            Val::Unset => Err(self.fail(
                op,
                format!(
                    "'{}' uses a value that was never defined (operand {index})",
                    op.name
                ),
            )),
            other => Err(self.fail(
                op,
                format!("'{}' expects an integer operand, got {other:?}", op.name),
            )),
        }
    }

    /// An integer operand that must not be poison.
    pub(crate) fn int_strict(&self, op: &Op, act: &Activation, index: usize) -> R<i64> {
        self.int(op, act, index)?
            .ok_or_else(|| self.fail(op, format!("'{}' uses a poison value", op.name)))
    }

    pub(crate) fn mem_desc(&self, op: &Op, act: &Activation, index: usize) -> R<Rc<MemDesc>> {
        match self.val(op, act, index)? {
            Val::Mem(desc) => Ok(desc),
            Val::Poison => Err(self.fail(
                op,
                "dereference of a null or poison pointer (ub.poison memref)",
            )),
            other => Err(self.fail(
                op,
                format!("'{}' expects a memref operand, got {other:?}", op.name),
            )),
        }
    }

    /// The element a read-modify-write op (`memref.atomic_rmw`,
    /// `memref.generic_atomic_rmw`, `pgpu.multiprefix`) reaches through its
    /// memref operand `memref` and the indices after it: its allocation,
    /// position and current value, which must be initialised. These ops
    /// are atomic, so the race check does not see them.
    fn rmw_element(&self, op: &Op, act: &Activation, memref: usize) -> R<(u32, usize, Val)> {
        let desc = self.mem_desc(op, act, memref)?;
        let indices = self.indices(op, act, memref + 1)?;
        let element = self
            .mem
            .element(&desc, &indices)
            .map_err(|m| self.fail(op, m))?;
        let old = self.mem.get_raw(desc.alloc, element);
        if matches!(old, Val::Uninit) {
            return Err(self.fail(
                op,
                format!("read of uninitialised memory: element {element}"),
            ));
        }
        Ok((desc.alloc, element, old))
    }

    fn indices(&self, op: &Op, act: &Activation, from: usize) -> R<Vec<i64>> {
        (from..op.operands.len())
            .map(|index| {
                self.int(op, act, index)?
                    .ok_or_else(|| self.fail(op, "memory access with a poison index"))
            })
            .collect()
    }

    fn width(&self, op: &Op, ty: Ty) -> R<u32> {
        ty.int_width()
            .ok_or_else(|| self.fail(op, format!("'{}': unsupported integer type", op.name)))
    }

    // -----------------------------------------------------------------
    // The run loop
    // -----------------------------------------------------------------

    /// Runs `fiber` until its base region ends or it reaches a sync point.
    pub fn run_fiber(&mut self, fiber: &mut Fiber) -> R<Stop> {
        let prog = self.prog;
        loop {
            let Some(act) = fiber.acts.last_mut() else {
                return Err(InterpError::new("internal error: empty fiber".into(), None));
            };
            let Some(ctl) = act.ctl.last_mut() else {
                return Err(InterpError::new(
                    "internal error: empty control stack".into(),
                    None,
                ));
            };
            if matches!(ctl.kind, CtlKind::Par(_)) {
                match self.step_par(fiber)? {
                    Some(stop) => return Ok(stop),
                    None => continue,
                }
            }
            let block = &prog.blocks[ctl.block as usize];
            let Some(&op_id) = block.ops.get(ctl.pc as usize) else {
                return Err(InterpError::new(
                    "internal error: block without terminator".into(),
                    None,
                ));
            };
            ctl.pc += 1;
            let op = &prog.ops[op_id as usize];
            self.steps += 1;
            if self.options.trace {
                self.trace(op);
            }
            if self.options.max_steps != 0 && self.steps > self.options.max_steps {
                return Err(self.fail(
                    op,
                    format!(
                        "step limit of {} operations exceeded",
                        self.options.max_steps
                    ),
                ));
            }
            if let Some(stop) = self.exec(fiber, op_id, op)? {
                return Ok(stop);
            }
            if self.step_mode {
                // One lock-step step done; `waiting` stays empty.
                return Ok(Stop::Sync);
            }
        }
    }

    pub(crate) fn set_results(act: &mut Activation, op: &Op, values: Vec<Val>) {
        for (&slot, value) in op.results.iter().zip(values) {
            act.slots[slot as usize] = value;
        }
    }

    fn enter(
        act: &mut Activation,
        prog: &Program,
        region: RegionId,
        args: &[Val],
        kind: CtlKind,
    ) -> bool {
        let Some(&entry) = prog.regions[region as usize].blocks.first() else {
            return false;
        };
        for (&slot, value) in prog.blocks[entry as usize].args.iter().zip(args) {
            act.slots[slot as usize] = value.clone();
        }
        act.ctl.push(Ctl {
            block: entry,
            pc: 0,
            kind,
        });
        true
    }

    /// The sync protocol; `Some(Stop::Sync)` when the fiber must wait.
    fn sync_point(&self, fiber: &mut Fiber, op_id: OpId, op: &Op) -> R<Option<Stop>> {
        if fiber.passed {
            fiber.passed = false;
            return Ok(None);
        }
        if self.cur.is_none() {
            return Err(self.fail(
                op,
                format!(
                    "'{}' outside an SPMD region (pgpu.spawn or gpu kernel)",
                    op.name
                ),
            ));
        }
        if let Some(ctl) = fiber.acts.last_mut().and_then(|act| act.ctl.last_mut()) {
            ctl.pc -= 1;
        }
        fiber.waiting = Some(op_id);
        Ok(Some(Stop::Sync))
    }

    fn thread(&self, op: &Op) -> R<&ThreadCtx> {
        self.cur
            .as_ref()
            .ok_or_else(|| self.fail(op, format!("'{}' outside an SPMD region", op.name)))
    }

    /// Executes one op. `Some(stop)` ends the fiber's run.
    fn exec(&mut self, fiber: &mut Fiber, op_id: OpId, op: &'p Op) -> R<Option<Stop>> {
        let prog = self.prog;
        let depth = fiber.acts.len();
        let Some(act) = fiber.acts.last_mut() else {
            return Err(InterpError::new("internal error: empty fiber".into(), None));
        };
        match &op.kind {
            K::Const(value) => {
                act.slots[op.results[0] as usize] = value.clone();
            }
            K::IBin(kind) => {
                let width = self.width(op, op.in_ty)?;
                let result = match (self.int(op, act, 0)?, self.int(op, act, 1)?) {
                    (Some(a), Some(b)) => self.ibin(op, *kind, a, b, width)?,
                    _ => Val::Poison,
                };
                act.slots[op.results[0] as usize] = result;
            }
            K::CmpI(predicate) => {
                let width = self.width(op, op.in_ty)?;
                let result = match (self.int(op, act, 0)?, self.int(op, act, 1)?) {
                    (Some(a), Some(b)) => bool_val(
                        integer::compare(*predicate, a, b, width)
                            .ok_or_else(|| self.fail(op, "unknown cmpi predicate"))?,
                    ),
                    _ => Val::Poison,
                };
                act.slots[op.results[0] as usize] = result;
            }
            K::FBin(kind) => {
                let result = match (self.val(op, act, 0)?, self.val(op, act, 1)?) {
                    (Val::F64(a), Val::F64(b)) => Val::F64(fbin64(*kind, a, b)),
                    (Val::F32(a), Val::F32(b)) => Val::F32(fbin32(*kind, a, b)),
                    (Val::Poison, _) | (_, Val::Poison) => Val::Poison,
                    _ => {
                        return Err(
                            self.fail(op, format!("'{}' expects f32 or f64 operands", op.name))
                        );
                    }
                };
                act.slots[op.results[0] as usize] = result;
            }
            K::FUn(kind) => {
                let result = match self.val(op, act, 0)? {
                    Val::F64(a) => Val::F64(fun64(*kind, a)),
                    Val::F32(a) => Val::F32(fun32(*kind, a)),
                    Val::Poison => Val::Poison,
                    _ => {
                        return Err(
                            self.fail(op, format!("'{}' expects an f32 or f64 operand", op.name))
                        );
                    }
                };
                act.slots[op.results[0] as usize] = result;
            }
            K::Fma => {
                let result = match (
                    self.val(op, act, 0)?,
                    self.val(op, act, 1)?,
                    self.val(op, act, 2)?,
                ) {
                    (Val::F64(a), Val::F64(b), Val::F64(c)) => Val::F64(a.mul_add(b, c)),
                    (Val::F32(a), Val::F32(b), Val::F32(c)) => Val::F32(a.mul_add(b, c)),
                    _ => Val::Poison,
                };
                act.slots[op.results[0] as usize] = result;
            }
            K::AbsI => {
                let width = self.width(op, op.in_ty)?;
                let result = match self.int(op, act, 0)? {
                    Some(a) => Val::Int(sext(a.wrapping_abs(), width)),
                    None => Val::Poison,
                };
                act.slots[op.results[0] as usize] = result;
            }
            K::IPowI => {
                let width = self.width(op, op.in_ty)?;
                let result = match (self.int(op, act, 0)?, self.int(op, act, 1)?) {
                    (Some(base), Some(exponent)) => {
                        let value = if exponent < 0 {
                            match base {
                                1 => 1,
                                -1 => {
                                    if exponent % 2 == 0 {
                                        1
                                    } else {
                                        -1
                                    }
                                }
                                0 => {
                                    return Err(
                                        self.fail(op, "math.ipowi: zero to a negative power")
                                    );
                                }
                                _ => 0,
                            }
                        } else {
                            let mut value: i64 = 1;
                            for _ in 0..exponent.min(128) {
                                value = value.wrapping_mul(base);
                            }
                            value
                        };
                        Val::Int(sext(value, width))
                    }
                    _ => Val::Poison,
                };
                act.slots[op.results[0] as usize] = result;
            }
            K::FPowI => {
                let exponent = self.int(op, act, 1)?;
                let result = match (self.val(op, act, 0)?, exponent) {
                    (Val::F64(a), Some(e)) => Val::F64(a.powi(e as i32)),
                    (Val::F32(a), Some(e)) => Val::F32(a.powi(e as i32)),
                    _ => Val::Poison,
                };
                act.slots[op.results[0] as usize] = result;
            }
            K::CmpF(predicate) => {
                let (a, b) = match (self.val(op, act, 0)?, self.val(op, act, 1)?) {
                    (Val::F64(a), Val::F64(b)) => (a, b),
                    (Val::F32(a), Val::F32(b)) => (a as f64, b as f64),
                    (Val::Poison, _) | (_, Val::Poison) => {
                        act.slots[op.results[0] as usize] = Val::Poison;
                        return Ok(None);
                    }
                    _ => return Err(self.fail(op, "arith.cmpf expects float operands")),
                };
                let unordered = a.is_nan() || b.is_nan();
                let result = match predicate {
                    0 => false,
                    1 => !unordered && a == b,
                    2 => !unordered && a > b,
                    3 => !unordered && a >= b,
                    4 => !unordered && a < b,
                    5 => !unordered && a <= b,
                    6 => !unordered && a != b,
                    7 => !unordered,
                    8 => unordered || a == b,
                    9 => unordered || a > b,
                    10 => unordered || a >= b,
                    11 => unordered || a < b,
                    12 => unordered || a <= b,
                    13 => unordered || a != b,
                    14 => unordered,
                    15 => true,
                    _ => return Err(self.fail(op, "unknown cmpf predicate")),
                };
                act.slots[op.results[0] as usize] = bool_val(result);
            }
            K::Select => {
                let result = match self.int(op, act, 0)? {
                    Some(c) if c != 0 => self.val(op, act, 1)?,
                    Some(_) => self.val(op, act, 2)?,
                    None => Val::Poison,
                };
                act.slots[op.results[0] as usize] = result;
            }
            K::Cast(kind) => {
                let value = self.val(op, act, 0)?;
                let result = self.cast(op, *kind, value)?;
                act.slots[op.results[0] as usize] = result;
            }
            K::Poison => {
                act.slots[op.results[0] as usize] = Val::Poison;
            }

            // ---------------------------------------------------- control
            K::Call(func) => {
                let f = &prog.funcs[*func as usize];
                if depth >= self.options.max_call_depth {
                    return Err(self.fail(
                        op,
                        format!(
                            "call stack overflow: more than {} nested calls",
                            self.options.max_call_depth
                        ),
                    ));
                }
                let args: Vec<Val> = (0..op.operands.len())
                    .map(|index| self.val(op, act, index))
                    .collect::<R<_>>()?;
                let Some(body) = f.body else {
                    return Err(
                        self.fail(op, format!("call to function '@{}' without a body", f.name))
                    );
                };
                if f.spmd_inline && self.cur.is_none() {
                    return Err(self.fail(
                        op,
                        format!(
                            "call of the pgpu.spmd_inline function '@{}' outside an SPMD region",
                            f.name
                        ),
                    ));
                }
                let mut callee = Activation {
                    func: *func,
                    slots: vec![Val::Unset; f.nslots as usize],
                    ctl: Vec::new(),
                    ret: op.results.clone(),
                    allocas: Vec::new(),
                    dtemps: Vec::new(),
                };
                Self::enter(&mut callee, prog, body, &args, CtlKind::FuncBody);
                fiber.acts.push(callee);
            }
            K::If => {
                let condition = self
                    .int(op, act, 0)?
                    .ok_or_else(|| self.fail(op, "scf.if on a poison condition"))?;
                let region = op.regions[if condition != 0 { 0 } else { 1 }];
                if !Self::enter(act, prog, region, &[], CtlKind::Results(op_id))
                    && !op.results.is_empty()
                {
                    return Err(self.fail(op, "scf.if without else region has results"));
                }
            }
            K::For { unsigned } => {
                let width = self.width(op, op.in_ty)?;
                let lb = self.int_strict(op, act, 0)?;
                let ub = self.int_strict(op, act, 1)?;
                let step = self.int_strict(op, act, 2)?;
                if step <= 0 && !(*unsigned && step != 0) {
                    return Err(self.fail(op, format!("scf.for with non-positive step {step}")));
                }
                let inits: Vec<Val> = (3..op.operands.len())
                    .map(|index| self.val(op, act, index))
                    .collect::<R<_>>()?;
                let runs = if *unsigned {
                    zext(lb, width) < zext(ub, width)
                } else {
                    lb < ub
                };
                if runs {
                    let mut args = vec![Val::Int(lb)];
                    args.extend(inits);
                    Self::enter(
                        act,
                        prog,
                        op.regions[0],
                        &args,
                        CtlKind::For {
                            op: op_id,
                            iv: lb,
                            ub,
                            step,
                            unsigned: *unsigned,
                            width,
                        },
                    );
                } else {
                    Self::set_results(act, op, inits);
                }
            }
            K::While => {
                let inits: Vec<Val> = (0..op.operands.len())
                    .map(|index| self.val(op, act, index))
                    .collect::<R<_>>()?;
                Self::enter(act, prog, op.regions[0], &inits, CtlKind::While(op_id));
            }
            K::ExecuteRegion | K::AllocaScope => {
                Self::enter(act, prog, op.regions[0], &[], CtlKind::Results(op_id));
            }
            K::IndexSwitch(cases) => {
                let value = self.int_strict(op, act, 0)?;
                let region = cases
                    .iter()
                    .position(|&case| case == value)
                    .map_or(op.regions[0], |index| op.regions[index + 1]);
                Self::enter(act, prog, region, &[], CtlKind::Results(op_id));
            }
            K::Parallel => {
                let Some(&entry) = prog.regions[op.regions[0] as usize].blocks.first() else {
                    return Err(self.fail(op, "scf.parallel without a body"));
                };
                let rank = prog.blocks[entry as usize].args.len();
                let get = |from: usize| -> R<Vec<i64>> {
                    (from..from + rank)
                        .map(|index| self.int_strict(op, act, index))
                        .collect()
                };
                let lbs = get(0)?;
                let ubs = get(rank)?;
                let steps = get(2 * rank)?;
                if steps.iter().any(|&s| s <= 0) {
                    return Err(self.fail(op, "scf.parallel with a non-positive step"));
                }
                let accs: Vec<Val> = (3 * rank..op.operands.len())
                    .map(|index| self.val(op, act, index))
                    .collect::<R<_>>()?;
                if lbs.iter().zip(&ubs).any(|(lb, ub)| lb >= ub) {
                    Self::set_results(act, op, accs);
                } else {
                    let owns_race = self.options.race_detection
                        && self.mem.race_thread.is_none()
                        && self.cur.is_none();
                    if owns_race {
                        self.mem.clear_shadow();
                        self.mem.race_thread = Some(0);
                    }
                    let args: Vec<Val> = lbs.iter().map(|&v| Val::Int(v)).collect();
                    Self::enter(
                        act,
                        prog,
                        op.regions[0],
                        &args,
                        CtlKind::Parallel(Box::new(ParallelState {
                            op: op_id,
                            ivs: lbs.clone(),
                            lbs,
                            ubs,
                            steps,
                            accs,
                            iteration: 0,
                            owns_race,
                        })),
                    );
                }
            }
            K::Br | K::CondBr => {
                let target = if matches!(op.kind, K::Br) {
                    0
                } else {
                    match self.int(op, act, 0)? {
                        Some(c) if c != 0 => 0,
                        Some(_) => 1,
                        None => return Err(self.fail(op, "cf.cond_br on a poison condition")),
                    }
                };
                let (block, slots) = &op.succs[target];
                let values: Vec<Val> = slots
                    .iter()
                    .map(|&s| act.slots[s as usize].clone())
                    .collect();
                for (&slot, value) in prog.blocks[*block as usize].args.iter().zip(values) {
                    act.slots[slot as usize] = value;
                }
                if let Some(ctl) = act.ctl.last_mut() {
                    ctl.block = *block;
                    ctl.pc = 0;
                }
            }
            K::Assert(message) => {
                if self.int(op, act, 0)? == Some(0) {
                    return Err(self.fail(op, format!("assertion failed: {message}")));
                }
            }
            K::Return
            | K::Yield
            | K::Condition
            | K::Reduce
            | K::ReduceReturn
            | K::PYield
            | K::GpuTerminator
            | K::AtomicYield
            | K::AllocaScopeReturn => {
                let values: Vec<Val> = (0..op.operands.len())
                    .map(|index| self.val(op, act, index))
                    .collect::<R<_>>()?;
                return self.terminate(fiber, op, values);
            }

            // ---------------------------------------------------- memref
            K::Alloc { stack } => {
                let desc = self.allocate(
                    op,
                    act,
                    0,
                    if *stack {
                        AllocKind::Stack
                    } else {
                        AllocKind::Heap
                    },
                )?;
                if *stack {
                    act.allocas.push(desc.alloc);
                }
                act.slots[op.results[0] as usize] = Val::Mem(desc);
            }
            K::DNew { temp } => {
                let desc = self.allocate(
                    op,
                    act,
                    0,
                    if *temp {
                        AllocKind::DeviceTemp
                    } else {
                        AllocKind::Device
                    },
                )?;
                if *temp {
                    if self.in_spawn {
                        self.spawn_dtemps.push(desc.alloc);
                    } else {
                        act.dtemps.push(desc.alloc);
                    }
                }
                act.slots[op.results[0] as usize] = Val::Mem(desc);
            }
            K::DTempFree => {
                let list = if self.in_spawn {
                    std::mem::take(&mut self.spawn_dtemps)
                } else {
                    std::mem::take(&mut act.dtemps)
                };
                for id in list {
                    if self.mem.allocs[id as usize].live {
                        self.mem
                            .free(id, "dtempfree")
                            .map_err(|m| self.fail(op, m))?;
                    }
                }
            }
            K::Dealloc => {
                let desc = self.mem_desc(op, act, 0)?;
                let kind = self.mem.allocs[desc.alloc as usize].kind;
                if kind != AllocKind::Heap && kind != AllocKind::Device {
                    return Err(self.fail(
                        op,
                        format!(
                            "memref.dealloc of {} memory",
                            crate::memory::kind_name(kind)
                        ),
                    ));
                }
                self.mem
                    .free(desc.alloc, "memref.dealloc")
                    .map_err(|m| self.fail(op, m))?;
            }
            K::Load => {
                let desc = self.mem_desc(op, act, 0)?;
                let indices = self.indices(op, act, 1)?;
                let value = self
                    .mem
                    .load(&desc, &indices, op.loc)
                    .map_err(|e| self.access_error(op, e))?;
                act.slots[op.results[0] as usize] = value;
            }
            K::Fence => {}
            K::Store => {
                let value = self.val(op, act, 0)?;
                let desc = self.mem_desc(op, act, 1)?;
                let indices = self.indices(op, act, 2)?;
                self.mem
                    .store(&desc, &indices, value, op.loc)
                    .map_err(|e| self.access_error(op, e))?;
            }
            K::MemCast => {
                let value = self.val(op, act, 0)?;
                if let (Val::Mem(desc), Some(ty)) = (&value, prog.memty(op.out_ty)) {
                    for (dim, (static_size, &size)) in ty.shape.iter().zip(&desc.sizes).enumerate()
                    {
                        if let Some(expected) = static_size
                            && *expected != size
                        {
                            return Err(self.fail(
                                op,
                                format!("memref.cast to a static size {expected} in dimension {dim}, but the size is {size}"),
                            ));
                        }
                    }
                }
                act.slots[op.results[0] as usize] = value;
            }
            K::Dim => {
                let desc = self.mem_desc(op, act, 0)?;
                let index = self.int_strict(op, act, 1)?;
                let size = desc.sizes.get(index as usize).copied().ok_or_else(|| {
                    self.fail(op, format!("memref.dim of dimension {index} out of range"))
                })?;
                act.slots[op.results[0] as usize] = Val::Int(size);
            }
            K::Rank => {
                let desc = self.mem_desc(op, act, 0)?;
                act.slots[op.results[0] as usize] = Val::Int(desc.sizes.len() as i64);
            }
            K::GetGlobal(global) => {
                let ty = prog
                    .memty(op.out_ty)
                    .ok_or_else(|| self.fail(op, "global of non-memref type"))?;
                let sizes: Vec<i64> = ty.shape.iter().map(|d| d.unwrap_or(0)).collect();
                let strides = contiguous_strides(&sizes);
                act.slots[op.results[0] as usize] = Val::Mem(Rc::new(MemDesc {
                    alloc: self.globals[*global as usize],
                    offset: 0,
                    sizes,
                    strides,
                }));
            }
            K::Subview(info) => {
                let desc = self.mem_desc(op, act, 0)?;
                let mut next = 1;
                let mut take = |list: &[Option<i64>]| -> R<Vec<i64>> {
                    list.iter()
                        .map(|entry| match entry {
                            Some(v) => Ok(*v),
                            None => {
                                next += 1;
                                self.int_strict(op, act, next - 1)
                            }
                        })
                        .collect()
                };
                let offsets = take(&info.offsets)?;
                let sizes = take(&info.sizes)?;
                let strides = take(&info.strides)?;
                let mut offset = desc.offset;
                let mut new_sizes = Vec::new();
                let mut new_strides = Vec::new();
                for dim in 0..offsets.len().min(desc.strides.len()) {
                    offset = offset.wrapping_add(offsets[dim].wrapping_mul(desc.strides[dim]));
                    if info.kept.get(dim).copied().unwrap_or(true) {
                        new_sizes.push(sizes[dim]);
                        new_strides.push(desc.strides[dim].wrapping_mul(strides[dim]));
                    }
                }
                act.slots[op.results[0] as usize] = Val::Mem(Rc::new(MemDesc {
                    alloc: desc.alloc,
                    offset,
                    sizes: new_sizes,
                    strides: new_strides,
                }));
            }
            K::ReinterpretCast(info) => {
                let desc = self.mem_desc(op, act, 0)?;
                let mut next = 1;
                let mut take = |list: &[Option<i64>]| -> R<Vec<i64>> {
                    list.iter()
                        .map(|entry| match entry {
                            Some(v) => Ok(*v),
                            None => {
                                next += 1;
                                self.int_strict(op, act, next - 1)
                            }
                        })
                        .collect()
                };
                let offsets = take(&info.offsets)?;
                let sizes = take(&info.sizes)?;
                let strides = take(&info.strides)?;
                act.slots[op.results[0] as usize] = Val::Mem(Rc::new(MemDesc {
                    alloc: desc.alloc,
                    offset: offsets.first().copied().unwrap_or(0),
                    sizes,
                    strides,
                }));
            }
            K::ExtractStridedMetadata => {
                let desc = self.mem_desc(op, act, 0)?;
                let mut values = vec![
                    Val::Mem(Rc::new(MemDesc {
                        alloc: desc.alloc,
                        offset: 0,
                        sizes: Vec::new(),
                        strides: Vec::new(),
                    })),
                    Val::Int(desc.offset),
                ];
                values.extend(desc.sizes.iter().map(|&s| Val::Int(s)));
                values.extend(desc.strides.iter().map(|&s| Val::Int(s)));
                Self::set_results(act, op, values);
            }
            K::Copy => {
                let source = self.mem_desc(op, act, 0)?;
                let target = self.mem_desc(op, act, 1)?;
                if source.sizes != target.sizes {
                    return Err(self.fail(
                        op,
                        format!(
                            "memref.copy between shapes {:?} and {:?}",
                            source.sizes, target.sizes
                        ),
                    ));
                }
                let count: i64 = source
                    .sizes
                    .iter()
                    .fold(1i64, |acc, &s| acc.saturating_mul(s));
                let mut index = vec![0i64; source.sizes.len()];
                for _ in 0..count.max(0) {
                    let from = self
                        .mem
                        .element(&source, &index)
                        .map_err(|m| self.fail(op, m))?;
                    let to = self
                        .mem
                        .element(&target, &index)
                        .map_err(|m| self.fail(op, m))?;
                    let value = self.mem.get_raw(source.alloc, from);
                    self.mem.set_raw(target.alloc, to, value);
                    for dim in (0..index.len()).rev() {
                        index[dim] += 1;
                        if index[dim] < source.sizes[dim] {
                            break;
                        }
                        index[dim] = 0;
                    }
                }
            }
            K::AtomicRmw(kind) => {
                let value = self.val(op, act, 0)?;
                let (alloc, element, old) = self.rmw_element(op, act, 1)?;
                let width = op.out_ty.int_width().unwrap_or(64);
                let new = rmw(*kind, &old, &value, width)
                    .ok_or_else(|| self.fail(op, "memref.atomic_rmw on mismatched values"))?;
                self.mem.set_raw(alloc, element, new);
                act.slots[op.results[0] as usize] = old;
            }
            K::GenericAtomicRmw => {
                let (alloc, element, old) = self.rmw_element(op, act, 0)?;
                let body = op
                    .regions
                    .first()
                    .copied()
                    .filter(|&region| !prog.regions[region as usize].blocks.is_empty())
                    .ok_or_else(|| self.fail(op, "memref.generic_atomic_rmw without a body"))?;
                // The body runs to its `memref.atomic_yield` at once, so no
                // other thread sees the element between the read and the
                // write (its ops have no side effects: the verifier's rule).
                let new = self
                    .run_region(fiber, body, std::slice::from_ref(&old))?
                    .into_iter()
                    .next()
                    .ok_or_else(|| self.fail(op, "memref.atomic_yield without a value"))?;
                self.mem.set_raw(alloc, element, new);
                let Some(act) = fiber.acts.last_mut() else {
                    return Err(InterpError::new("internal error: empty fiber".into(), None));
                };
                act.slots[op.results[0] as usize] = old;
            }
            K::ExtractAlignedPointer => {
                let address = match self.val(op, act, 0)? {
                    Val::Mem(desc) => {
                        Val::Int(Memory::aligned_pointer(desc.alloc).ok_or_else(|| {
                            self.fail(op, "too many allocations for distinct addresses")
                        })?)
                    }
                    // A null pointer's address is no number either.
                    Val::Poison => Val::Poison,
                    other => {
                        return Err(self.fail(
                            op,
                            format!("'{}' expects a memref operand, got {other:?}", op.name),
                        ));
                    }
                };
                act.slots[op.results[0] as usize] = address;
            }

            // ---------------------------------------------------- pgpu
            K::Spawn { synchronous, block } => {
                let count = self.int_strict(op, act, 0)?;
                if count < 0 {
                    return Err(
                        self.fail(op, format!("pgpu.spawn of a negative thread count {count}"))
                    );
                }
                let host = act.clone();
                let dtemps = if *synchronous {
                    self.run_sync_spawn(&host, op, count as usize)?
                } else if *block {
                    self.run_block_spawn(&host, op, count as usize)?
                } else {
                    self.run_spawn(&host, op, count as usize)?
                };
                if let Some(act) = fiber.acts.last_mut() {
                    act.dtemps.extend(dtemps);
                }
            }
            K::Barrier { .. }
            | K::Require
            | K::ThreadFork
            | K::ThreadKill
            | K::ThreadSortBy
            | K::ThreadSplit
            | K::PReduce(_)
            | K::Scan { .. }
            | K::Compact
            | K::SplitList
            | K::SortIdx
            | K::GpuBarrier => {
                if let Some(stop) = self.sync_point(fiber, op_id, op)? {
                    return Ok(Some(stop));
                }
            }
            K::RangeBarrier => {
                // Only the block scheduler (module `block`) resolves it.
                if !self.in_block {
                    return Err(self.fail(
                        op,
                        "'pgpu.range_barrier' outside a block spawn: only the threads of a 'pgpu.spawn block' (and the pgpu.block_group functions they call) synchronize in ranges",
                    ));
                }
                if let Some(stop) = self.sync_point(fiber, op_id, op)? {
                    return Ok(Some(stop));
                }
            }
            K::Superstep { .. } => {
                if let Some(stop) = self.sync_point(fiber, op_id, op)? {
                    return Ok(Some(stop));
                }
                if let Some(act) = fiber.acts.last_mut() {
                    Self::enter(act, prog, op.regions[0], &[], CtlKind::Results(op_id));
                }
            }
            K::Par => {
                if self.cur.is_none() {
                    return Err(self.fail(op, "'pgpu.par' outside an SPMD region"));
                }
                if self.in_block {
                    return Err(self.fail(
                        op,
                        "'pgpu.par' cannot run in a block spawn: its branches align whole-spawn barriers, and a block's threads synchronize in ranges with 'pgpu.range_barrier'",
                    ));
                }
                let mut branches = Vec::new();
                for &region in op.regions.iter() {
                    let mut branch = Activation {
                        func: act.func,
                        slots: act.slots.clone(),
                        ctl: Vec::new(),
                        ret: Box::new([]),
                        allocas: Vec::new(),
                        dtemps: Vec::new(),
                    };
                    Self::enter(&mut branch, prog, region, &[], CtlKind::Base);
                    branches.push(Fiber {
                        acts: vec![branch],
                        waiting: None,
                        passed: false,
                    });
                }
                let count = branches.len();
                act.ctl.push(Ctl {
                    block: 0,
                    pc: 0,
                    kind: CtlKind::Par(Box::new(ParState {
                        op: op_id,
                        branches,
                        results: vec![None; count],
                    })),
                });
            }
            K::GroupRank | K::GroupId | K::GroupSize => {
                let group = self.cur.as_ref().and_then(|ctx| ctx.group).ok_or_else(|| {
                    self.fail(op, format!("'{}' outside synchronous (Fork) code", op.name))
                })?;
                let value = match op.kind {
                    K::GroupId => group.0,
                    K::GroupRank => group.1,
                    _ => group.2,
                };
                act.slots[op.results[0] as usize] = Val::Int(value);
            }
            K::GroupSplit | K::GroupFork | K::GroupAlloc | K::Seq | K::Farm => {
                // The group resolves these and moves the fiber past them.
                if self.cur.as_ref().and_then(|ctx| ctx.group).is_none() {
                    return Err(
                        self.fail(op, format!("'{}' outside synchronous (Fork) code", op.name))
                    );
                }
                if let Some(stop) = self.sync_point(fiber, op_id, op)? {
                    return Ok(Some(stop));
                }
            }
            K::GroupMerge => {
                if let Some(stop) = self.sync_point(fiber, op_id, op)? {
                    return Ok(Some(stop));
                }
                let Some(act) = fiber.acts.last() else {
                    return Ok(None);
                };
                let values: Vec<Val> = (0..op.operands.len())
                    .map(|index| self.val(op, act, index))
                    .collect::<R<_>>()?;
                return self.terminate(fiber, op, values);
            }
            K::PRank => {
                let rank = self.thread(op)?.rank;
                act.slots[op.results[0] as usize] = Val::Int(rank as i64);
            }
            K::PSize => {
                let size = match self.require_size.filter(|_| self.cur.is_none()) {
                    Some(size) => size,
                    None => self.thread(op)?.size,
                };
                act.slots[op.results[0] as usize] = Val::Int(size as i64);
            }
            K::OldRank => {
                let oldrank = self
                    .thread(op)?
                    .oldrank
                    .ok_or_else(|| self.fail(op, "pgpu.oldrank before any rank reassignment"))?;
                act.slots[op.results[0] as usize] = Val::Int(oldrank as i64);
            }
            K::SetOldRank => {
                let old = self.int_strict(op, act, 0)?;
                let ctx = self.thread(op)?;
                let rank = ctx.rank;
                let size = ctx.size;
                if old < 0 || old as usize >= size {
                    return Err(self.fail(
                        op,
                        format!("pgpu.set_oldrank {old} is not a rank of the {size} threads"),
                    ));
                }
                let old = old as usize;
                if let Some(snapshot) = &self.rr_snapshot {
                    if self.rr_claimed.get(old).copied().unwrap_or(false) {
                        return Err(self.fail(
                            op,
                            format!("pgpu.set_oldrank: two threads claim the old rank {old}"),
                        ));
                    }
                    let (Some(own), Some(source)) = (snapshot.get(rank), snapshot.get(old)) else {
                        return Err(self.fail(op, "pgpu.set_oldrank: no saved context"));
                    };
                    // Values defined since the barrier stay; the rest is
                    // the context of the thread that had rank `old`.
                    for (depth, act) in fiber.acts.iter_mut().enumerate() {
                        let (Some(own), Some(source)) = (own.get(depth), source.get(depth)) else {
                            continue;
                        };
                        for (slot, value) in act.slots.iter_mut().enumerate() {
                            // Defined (or changed) since the barrier: keep.
                            let defined_since = value.is_set() && !value.same(&own[slot]);
                            if !defined_since {
                                *value = source[slot].clone();
                            }
                        }
                    }
                    if let Some(claim) = self.rr_claimed.get_mut(old) {
                        *claim = true;
                    }
                }
                if let Some(ctx) = self.cur.as_mut() {
                    ctx.oldrank = Some(old);
                }
            }
            K::ThreadGet => {
                let rank = self.int_strict(op, act, 0)?;
                let slot = op.operands[1] as usize;
                let snapshot = self.get_snapshot.as_ref().ok_or_else(|| {
                    self.fail(op, "pgpu.thread.get before any barrier: undefined result")
                })?;
                let value = usize::try_from(rank)
                    .ok()
                    .and_then(|r| snapshot.get(r))
                    .ok_or_else(|| {
                        self.fail(
                            op,
                            format!("pgpu.thread.get of rank {rank}, which is not a valid rank: undefined result"),
                        )
                    })?
                    .value(&self.fiber_path, &self.fiber_depths, depth, slot)
                    .cloned()
                    .ok_or_else(|| {
                        self.fail(op, "pgpu.thread.get of a value not defined in the previous superstep: undefined result")
                    })?;
                act.slots[op.results[0] as usize] = value;
            }
            K::ThreadPut { forwards } => {
                let rank = self.int_strict(op, act, 0)?;
                let value = self.val(op, act, 2)?;
                let size = self.thread(op)?.size;
                if rank >= 0 && (rank as usize) < size {
                    for &slot in std::iter::once(&op.results[0]).chain(forwards.iter()) {
                        self.puts.push(Put {
                            target: rank as usize,
                            path: self.fiber_path.clone(),
                            depth: depth - 1,
                            slot,
                            value: value.clone(),
                        });
                    }
                }
                act.slots[op.results[0] as usize] = Val::Poison;
            }
            K::Multiprefix(kind) => {
                let value = self.val(op, act, 0)?;
                let (alloc, element, old) = self.rmw_element(op, act, 1)?;
                let width = op.out_ty.int_width().unwrap_or(64);
                let new = combine(*kind, &old, &value, width)
                    .ok_or_else(|| self.fail(op, "pgpu.multiprefix on mismatched values"))?;
                self.mem.set_raw(alloc, element, new);
                act.slots[op.results[0] as usize] = old;
            }

            // ---------------------------------------------------- host I/O
            K::Printf(pieces, types) => {
                let mut text = Vec::new();
                let mut operand = 0;
                for piece in pieces {
                    match piece {
                        FmtPiece::Text(bytes) => text.extend_from_slice(bytes),
                        FmtPiece::Conv(spec) => {
                            let value = self.val(op, act, operand)?;
                            let ty = types.get(operand).copied().unwrap_or_default();
                            operand += 1;
                            match value {
                                Val::Int(v) => {
                                    let width = ty.int_width().unwrap_or(64);
                                    let signed = if width == 1 { zext(v, 1) as i64 } else { v };
                                    if spec.is_float() {
                                        return Err(self
                                            .fail(op, "printf: a float conversion of an integer"));
                                    }
                                    printf::format_int(&mut text, spec, signed, zext(v, width));
                                }
                                Val::F32(v) if spec.is_float() => {
                                    printf::format_float(&mut text, spec, v as f64)
                                }
                                Val::F64(v) if spec.is_float() => {
                                    printf::format_float(&mut text, spec, v)
                                }
                                Val::Poison => {
                                    return Err(self.fail(op, format!("printf of a poison (undefined) value (argument {operand})")));
                                }
                                other => {
                                    return Err(self.fail(
                                        op,
                                        format!(
                                            "printf: conversion does not match argument {other:?}"
                                        ),
                                    ));
                                }
                            }
                        }
                    }
                }
                match self.cur.as_mut() {
                    Some(ctx) => ctx.out.extend_from_slice(&text),
                    None => self.emit(&text),
                }
            }
            K::ArgI => {
                let position = self.int_strict(op, act, 0)?;
                let width = self.width(op, op.out_ty)?;
                let value = match usize::try_from(position)
                    .ok()
                    .and_then(|p| self.args.get(p))
                {
                    None => self.val(op, act, 1)?,
                    Some(text) => {
                        let parsed: Option<i64> = text.trim().parse().ok();
                        let fits = |v: i64| {
                            width >= 64 || (v >= -(1i64 << (width - 1)) && v < (1i64 << width))
                        };
                        match parsed.filter(|&v| fits(v)) {
                            Some(v) => Val::Int(sext(v, width)),
                            None => {
                                return Err(self.fail(
                                    op,
                                    format!("program argument {position} ('{text}') is not an i{width} integer"),
                                ));
                            }
                        }
                    }
                };
                act.slots[op.results[0] as usize] = value;
            }
            K::WTime => {
                act.slots[op.results[0] as usize] = Val::F64(self.start.elapsed().as_secs_f64());
            }
            // The interpreter runs every spawn with whole-group barriers, so
            // a grid spawn of any size is fine: the grid version is taken.
            K::GridCapacity => {
                act.slots[op.results[0] as usize] = Val::Int(i64::MAX);
            }
            K::BlockCapacity => {
                act.slots[op.results[0] as usize] = Val::Int(BLOCK_CAPACITY as i64);
            }
            K::Multiprocessors | K::LockstepWidth => {
                act.slots[op.results[0] as usize] = Val::Int(1);
            }
            K::RandSeed => {
                let seed = self.int_strict(op, act, 0)?;
                self.rng = seed as u64;
            }
            K::RandU32 => {
                let value = printf::splitmix64_next(&mut self.rng);
                act.slots[op.results[0] as usize] = Val::Int(value as i32 as i64);
            }

            // ---------------------------------------------------- gpu
            K::GpuId { what, dim } => {
                let ids =
                    self.cur.as_ref().and_then(|ctx| ctx.gpu).ok_or_else(|| {
                        self.fail(op, format!("'{}' outside a gpu kernel", op.name))
                    })?;
                let base = match what {
                    GpuIdKind::ThreadId => 0,
                    GpuIdKind::BlockId => 3,
                    GpuIdKind::BlockDim => 6,
                    GpuIdKind::GridDim => 9,
                };
                act.slots[op.results[0] as usize] = Val::Int(ids[base + *dim as usize]);
            }
            K::GpuLaunch {
                segments,
                workgroup,
                attributions,
            } => {
                let host = act.clone();
                self.run_gpu_launch(&host, op, segments, *workgroup, attributions)?;
            }
            K::GpuLaunchFunc(func, segments) => {
                let host = act.clone();
                self.run_gpu_launch_func(&host, op, *func, segments)?;
            }
            K::List(list) => self.exec_list(op, *list, act)?,
            K::Unsupported(message) => return Err(self.fail(op, message.clone())),
        }
        Ok(None)
    }

    pub(crate) fn allocate(
        &mut self,
        op: &Op,
        act: &Activation,
        first: usize,
        kind: AllocKind,
    ) -> R<Rc<MemDesc>> {
        let ty = self
            .prog
            .memty(op.out_ty)
            .ok_or_else(|| self.fail(op, format!("'{}' of a non-memref type", op.name)))?;
        let mut next = first;
        let mut sizes = Vec::new();
        for dim in &ty.shape {
            let size = match dim {
                Some(size) => *size,
                None => {
                    next += 1;
                    self.int_strict(op, act, next - 1)?
                }
            };
            if size < 0 {
                return Err(self.fail(op, format!("allocation with a negative size {size}")));
            }
            sizes.push(size);
        }
        let count = sizes
            .iter()
            .try_fold(1usize, |acc, &s| acc.checked_mul(s as usize));
        let count = count.ok_or_else(|| self.fail(op, "allocation size overflows"))?;
        let strides = match &ty.strides {
            Some(strides) if strides.iter().all(Option::is_some) && ty.offset == Some(0) => {
                strides.iter().map(|s| s.unwrap_or(1)).collect()
            }
            _ => contiguous_strides(&sizes),
        };
        let alloc = self
            .mem
            .allocate(count, kind, None)
            .map_err(|m| self.fail(op, m))?;
        Ok(Rc::new(MemDesc {
            alloc,
            offset: 0,
            sizes,
            strides,
        }))
    }

    /// A region's terminator with operand values `values`.
    fn terminate(&mut self, fiber: &mut Fiber, op: &Op, values: Vec<Val>) -> R<Option<Stop>> {
        let prog = self.prog;
        let Some(act) = fiber.acts.last_mut() else {
            return Err(InterpError::new("internal error: empty fiber".into(), None));
        };
        let Some(ctl) = act.ctl.last_mut() else {
            return Err(InterpError::new(
                "internal error: empty control stack".into(),
                None,
            ));
        };
        match &mut ctl.kind {
            CtlKind::Base => {
                act.ctl.pop();
                Ok(Some(Stop::Done(values)))
            }
            CtlKind::FuncBody => {
                let Some(done) = fiber.acts.pop() else {
                    return Ok(None);
                };
                for id in &done.allocas {
                    let _ = self.mem.free(*id, "return");
                }
                match fiber.acts.last_mut() {
                    None => Ok(Some(Stop::Done(values))),
                    Some(caller) => {
                        for (&slot, value) in done.ret.iter().zip(values) {
                            caller.slots[slot as usize] = value;
                        }
                        caller.dtemps.extend(done.dtemps);
                        Ok(None)
                    }
                }
            }
            CtlKind::Results(owner) => {
                let owner = &prog.ops[*owner as usize];
                act.ctl.pop();
                Self::set_results(act, owner, values);
                Ok(None)
            }
            CtlKind::For {
                op: owner,
                iv,
                ub,
                step,
                unsigned,
                width,
            } => {
                let (next, continues) = if *unsigned {
                    let sum = zext(*iv, *width) as u128 + zext(*step, *width) as u128;
                    (sext(sum as i64, *width), sum < zext(*ub, *width) as u128)
                } else {
                    let sum = *iv as i128 + *step as i128;
                    (sum as i64, sum < *ub as i128)
                };
                if continues {
                    *iv = next;
                    ctl.pc = 0;
                    let block = &prog.blocks[ctl.block as usize];
                    act.slots[block.args[0] as usize] = Val::Int(next);
                    for (&slot, value) in block.args[1..].iter().zip(values) {
                        act.slots[slot as usize] = value;
                    }
                } else {
                    let owner = &prog.ops[*owner as usize];
                    act.ctl.pop();
                    Self::set_results(act, owner, values);
                }
                Ok(None)
            }
            CtlKind::While(owner) => {
                let owner = &prog.ops[*owner as usize];
                if matches!(op.kind, K::Condition) {
                    let condition = match values.first() {
                        Some(Val::Int(c)) => *c != 0,
                        _ => return Err(self.fail(op, "scf.condition on a poison condition")),
                    };
                    if condition {
                        let Some(&entry) = prog.regions[owner.regions[1] as usize].blocks.first()
                        else {
                            return Err(self.fail(op, "scf.while without an after region"));
                        };
                        for (&slot, value) in
                            prog.blocks[entry as usize].args.iter().zip(&values[1..])
                        {
                            act.slots[slot as usize] = value.clone();
                        }
                        ctl.block = entry;
                        ctl.pc = 0;
                    } else {
                        act.ctl.pop();
                        Self::set_results(act, owner, values[1..].to_vec());
                    }
                } else {
                    let Some(&entry) = prog.regions[owner.regions[0] as usize].blocks.first()
                    else {
                        return Err(self.fail(op, "scf.while without a before region"));
                    };
                    for (&slot, value) in prog.blocks[entry as usize].args.iter().zip(&values) {
                        act.slots[slot as usize] = value.clone();
                    }
                    ctl.block = entry;
                    ctl.pc = 0;
                }
                Ok(None)
            }
            CtlKind::Parallel(_) => {
                // scf.reduce: combine each operand into its accumulator.
                let CtlKind::Parallel(mut state) = std::mem::replace(&mut ctl.kind, CtlKind::Base)
                else {
                    return Ok(None);
                };
                for (index, value) in values.into_iter().enumerate() {
                    let Some(&region) = op.regions.get(index) else {
                        break;
                    };
                    let acc = state.accs[index].clone();
                    let combined = self.run_region(fiber, region, &[acc, value])?;
                    state.accs[index] = combined.into_iter().next().unwrap_or(Val::Poison);
                }
                let Some(act) = fiber.acts.last_mut() else {
                    return Ok(None);
                };
                // Next iteration, last dimension fastest.
                let mut finished = true;
                for dim in (0..state.ivs.len()).rev() {
                    state.ivs[dim] = state.ivs[dim].saturating_add(state.steps[dim]);
                    if state.ivs[dim] < state.ubs[dim] {
                        finished = false;
                        break;
                    }
                    state.ivs[dim] = state.lbs[dim];
                }
                if finished {
                    if state.owns_race {
                        self.mem.race_thread = None;
                        self.mem.clear_shadow();
                    }
                    let owner = &prog.ops[state.op as usize];
                    act.ctl.pop();
                    Self::set_results(act, owner, state.accs);
                } else {
                    state.iteration += 1;
                    if state.owns_race {
                        self.mem.race_thread = Some(state.iteration);
                    }
                    if let Some(ctl) = act.ctl.last_mut() {
                        ctl.pc = 0;
                        let block = &prog.blocks[ctl.block as usize];
                        for (&slot, &iv) in block.args.iter().zip(&state.ivs) {
                            act.slots[slot as usize] = Val::Int(iv);
                        }
                        ctl.kind = CtlKind::Parallel(state);
                    }
                }
                Ok(None)
            }
            CtlKind::Par(_) => Err(self.fail(op, "internal error: terminator in a par")),
        }
    }

    /// Runs `region` to its terminator on the current activation.
    pub(crate) fn run_region(
        &mut self,
        fiber: &mut Fiber,
        region: RegionId,
        args: &[Val],
    ) -> R<Vec<Val>> {
        let step_mode = std::mem::replace(&mut self.step_mode, false);
        let result = self.run_region_inner(fiber, region, args);
        self.step_mode = step_mode;
        result
    }

    fn run_region_inner(
        &mut self,
        fiber: &mut Fiber,
        region: RegionId,
        args: &[Val],
    ) -> R<Vec<Val>> {
        let prog = self.prog;
        let Some(act) = fiber.acts.last_mut() else {
            return Err(InterpError::new("internal error: empty fiber".into(), None));
        };
        Self::enter(act, prog, region, args, CtlKind::Base);
        let waiting = fiber.waiting;
        match self.run_fiber(fiber)? {
            Stop::Done(values) => Ok(values),
            Stop::Sync => {
                let op = fiber.waiting.or(waiting).map(|id| &prog.ops[id as usize]);
                Err(match op {
                    Some(op) => self.fail(op, "synchronization inside a reduction region"),
                    None => {
                        InterpError::new("synchronization inside a reduction region".into(), None)
                    }
                })
            }
        }
    }

    /// Runs the branches of the `pgpu.par` on top of the fiber's control
    /// stack to their next synchronization point; `None` when all ended
    /// and the par's results are set.
    fn step_par(&mut self, fiber: &mut Fiber) -> R<Option<Stop>> {
        let prog = self.prog;
        let depth = fiber.acts.len();
        let Some(act) = fiber.acts.last_mut() else {
            return Ok(None);
        };
        let Some(ctl) = act.ctl.last_mut() else {
            return Ok(None);
        };
        let CtlKind::Par(mut state) = std::mem::replace(&mut ctl.kind, CtlKind::Base) else {
            return Ok(None);
        };
        let mut waiting = false;
        for index in 0..state.branches.len() {
            if state.results[index].is_some() {
                continue;
            }
            self.fiber_path.push(index);
            self.fiber_depths.push(depth);
            let result = self.run_fiber(&mut state.branches[index]);
            self.fiber_path.pop();
            self.fiber_depths.pop();
            match result {
                Ok(Stop::Done(values)) => state.results[index] = Some(values),
                Ok(Stop::Sync) => waiting = true,
                Err(error) => {
                    ctl.kind = CtlKind::Par(state);
                    return Err(error);
                }
            }
        }
        if waiting {
            ctl.kind = CtlKind::Par(state);
            return Ok(Some(Stop::Sync));
        }
        act.ctl.pop();
        let owner = &prog.ops[state.op as usize];
        let values: Vec<Val> = state.results.into_iter().flatten().flatten().collect();
        Self::set_results(act, owner, values);
        Ok(None)
    }

    fn ibin(&self, op: &Op, kind: IBin, a: i64, b: i64, width: u32) -> R<Val> {
        match kind.evaluate(a, b, width) {
            Ok(value) => Ok(Val::Int(value)),
            Err(IntegerFault::ShiftOutOfRange) => Ok(Val::Poison),
            Err(IntegerFault::DivisionByZero) => {
                Err(self.fail(op, format!("division by zero in '{}'", op.name)))
            }
            Err(IntegerFault::SignedDivisionOverflow) => {
                Err(self.fail(op, format!("signed division overflow in '{}'", op.name)))
            }
        }
    }

    fn cast(&self, op: &Op, kind: CastOp, value: Val) -> R<Val> {
        if matches!(value, Val::Poison) {
            return Ok(Val::Poison);
        }
        let out = op.out_ty;
        let float_out = |v: f64| match out {
            Ty::F32 => Val::F32(v as f32),
            _ => Val::F64(v),
        };
        Ok(match (kind, value) {
            (CastOp::ExtS, Val::Int(v)) => Val::Int(v),
            (CastOp::ExtU, Val::Int(v)) => {
                let in_width = self.width(op, op.in_ty)?;
                Val::Int(sext(zext(v, in_width) as i64, self.width(op, out)?))
            }
            (CastOp::Trunc | CastOp::IndexCast, Val::Int(v)) => {
                Val::Int(sext(v, self.width(op, out)?))
            }
            (CastOp::IndexCastU, Val::Int(v)) => {
                let (in_width, out_width) = (self.width(op, op.in_ty)?, self.width(op, out)?);
                if out_width > in_width {
                    Val::Int(zext(v, in_width) as i64)
                } else {
                    Val::Int(sext(v, out_width))
                }
            }
            (CastOp::SIToFP, Val::Int(v)) => match out {
                Ty::F32 => Val::F32(v as f32),
                _ => Val::F64(v as f64),
            },
            (CastOp::UIToFP, Val::Int(v)) => {
                let unsigned = zext(v, self.width(op, op.in_ty)?);
                match out {
                    Ty::F32 => Val::F32(unsigned as f32),
                    _ => Val::F64(unsigned as f64),
                }
            }
            (CastOp::FPToSI | CastOp::FPToUI, value) => {
                let f = match value {
                    Val::F32(f) => f as f64,
                    Val::F64(f) => f,
                    _ => return Err(self.fail(op, "float cast of a non-float")),
                };
                let width = self.width(op, out)?;
                let truncated = f.trunc();
                let fits = if kind == CastOp::FPToSI {
                    let limit = 2f64.powi(width as i32 - 1);
                    truncated >= -limit && truncated < limit
                } else {
                    truncated >= 0.0 && truncated < 2f64.powi(width as i32)
                };
                if !fits || f.is_nan() {
                    Val::Poison
                } else if kind == CastOp::FPToSI {
                    Val::Int(truncated as i64)
                } else {
                    Val::Int(sext(truncated as u64 as i64, width))
                }
            }
            (CastOp::ExtF | CastOp::TruncF, Val::F32(f)) => float_out(f as f64),
            (CastOp::ExtF | CastOp::TruncF, Val::F64(f)) => float_out(f),
            (CastOp::Bitcast, Val::Int(v)) => match out {
                Ty::F32 => Val::F32(f32::from_bits(v as u32)),
                Ty::F64 => Val::F64(f64::from_bits(v as u64)),
                _ => Val::Int(v),
            },
            (CastOp::Bitcast, Val::F32(f)) => match out {
                Ty::F32 => Val::F32(f),
                _ => Val::Int(f.to_bits() as i32 as i64),
            },
            (CastOp::Bitcast, Val::F64(f)) => match out {
                Ty::F64 => Val::F64(f),
                _ => Val::Int(f.to_bits() as i64),
            },
            (_, other) => {
                return Err(self.fail(
                    op,
                    format!("'{}' of an unexpected value {other:?}", op.name),
                ));
            }
        })
    }
}
