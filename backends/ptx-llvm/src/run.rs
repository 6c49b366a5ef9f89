//! Runs PTX kernels on the CPU: the translation of [`crate::cpu`],
//! compiled in memory by LLVM's JIT, one thread per wave of a block
//! (blocks one after the other), with the block's barrier, shared and
//! local memory, the module's `.global` and `.const` images, and the
//! runtime functions the code calls (atomics on the host's atomics).
//!
//! Launches name their arguments as `pgpu run-ptx` and
//! `test-suite/ptx/cases.txt` do ([`Argument::parse`]): scalars
//! (`u32:5`) and device buffers filled by a rule (`f32[1024]:rand(7)`,
//! splitmix64, as `test-suite/ptx/record.py` fills them on the GPU), and
//! [`format_buffers`] prints the buffers after the launch in the format of
//! the recorded H200 results.

use crate::cpu::{AtomicKind, AtomicOp, CpuModule, field, runtime};
use crate::half::{half_to_f64, to_bfloat, to_half};
use crate::layout::Layout;
use inkwell::OptimizationLevel;
pub use pgpu_ptx::launch::{
    Argument, ElementType, Launch, LaunchError, SplitMix64, format_buffers, parse_dims, python_repr,
};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Why a launch failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RunError {
    /// A malformed argument or launch.
    #[error("{0}")]
    #[diagnostic(code(ptx_run::usage))]
    Usage(String),
    /// A malformed launch description.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Launch(#[from] LaunchError),
    /// The kernel does not exist.
    #[error("the module has no kernel `{0}`")]
    #[diagnostic(code(ptx_run::kernel))]
    NoKernel(String),
    /// The kernel trapped or its barriers deadlocked.
    #[error("the kernel failed: {0}")]
    #[diagnostic(code(ptx_run::kernel_failed))]
    Kernel(String),
    /// A lane accessed memory outside every buffer, window and image of
    /// the launch (the access was not made).
    #[error("out-of-bounds access: {message}")]
    #[diagnostic(
        code(ptx_run::out_of_bounds),
        help("the first such access of the launch; the kernel went on without it")
    )]
    OutOfBounds {
        /// Who accessed what.
        message: String,
        /// The instruction.
        #[label("this access")]
        span: miette::SourceSpan,
    },
    /// The JIT failed.
    #[error("LLVM JIT: {0}")]
    #[diagnostic(code(ptx_run::jit))]
    Jit(String),
}

/// A block's barrier: the waves that have not finished meet at it.
pub struct BlockSync {
    state: Mutex<BarrierState>,
    wake: Condvar,
    failure: Mutex<Option<String>>,
    broken: AtomicBool,
    /// The memory the block may touch: sorted, disjoint [start, end).
    ranges: Vec<(u64, u64)>,
    /// The first out-of-bounds access: its message and instruction offset.
    out_of_bounds: Mutex<Option<(String, usize)>>,
    /// `(x, y, z)` of the block, for messages.
    block: [u32; 3],
}

struct BarrierState {
    live: u32,
    arrived: u32,
    generation: u64,
    /// The reduction of `bar.red` over the waves arrived so far.
    accumulated: Option<u64>,
    /// The reduction of the last completed `bar.red`.
    result: u64,
}

/// The reductions of `bar.red` ([`crate::codegen`] passes their codes).
pub mod reduction {
    /// `.popc`: the sum of the counts.
    pub const POPC: u64 = 0;
    /// `.and`: all.
    pub const AND: u64 = 1;
    /// `.or`: any.
    pub const OR: u64 = 2;
}

fn combine(op: u64, a: u64, b: u64) -> u64 {
    match op {
        reduction::POPC => a + b,
        reduction::AND => a & b,
        _ => a | b,
    }
}

/// How long waves wait at a barrier before it counts as a deadlock.
const BARRIER_TIMEOUT: Duration = Duration::from_secs(20);

impl BlockSync {
    fn new(waves: u32, mut ranges: Vec<(u64, u64)>, block: [u32; 3]) -> BlockSync {
        ranges.sort_unstable();
        BlockSync {
            ranges,
            out_of_bounds: Mutex::new(None),
            block,
            state: Mutex::new(BarrierState {
                live: waves,
                arrived: 0,
                generation: 0,
                accumulated: None,
                result: 0,
            }),
            wake: Condvar::new(),
            failure: Mutex::new(None),
            broken: AtomicBool::new(false),
        }
    }

    /// Whether `[address, address + bytes)` lies in one range.
    fn owns(&self, address: u64, bytes: u64) -> bool {
        let index = self.ranges.partition_point(|&(start, _)| start <= address);
        index > 0 && {
            let (_, end) = self.ranges[index - 1];
            address.checked_add(bytes).is_some_and(|last| last <= end)
        }
    }

    fn fail(&self, why: String) {
        if let Ok(mut failure) = self.failure.lock() {
            failure.get_or_insert(why);
        }
        self.broken.store(true, Ordering::SeqCst);
        self.wake.notify_all();
    }

    /// Waits at the barrier; with `contribution` (`bar.red`: the reduction
    /// and this wave's value), returns the reduction over the block.
    fn arrive(&self, contribution: Option<(u64, u64)>) -> u64 {
        if self.broken.load(Ordering::SeqCst) {
            return 0;
        }
        let Ok(mut state) = self.state.lock() else {
            return 0;
        };
        if let Some((op, value)) = contribution {
            state.accumulated = Some(match state.accumulated {
                Some(so_far) => combine(op, so_far, value),
                None => value,
            });
        }
        state.arrived += 1;
        if state.arrived >= state.live {
            state.arrived = 0;
            state.generation += 1;
            state.result = state.accumulated.take().unwrap_or(0);
            self.wake.notify_all();
            return state.result;
        }
        let generation = state.generation;
        let start = Instant::now();
        while state.generation == generation && !self.broken.load(Ordering::SeqCst) {
            let left = BARRIER_TIMEOUT.saturating_sub(start.elapsed());
            if left.is_zero() {
                drop(state);
                self.fail("waves of a block wait at different barriers (deadlock)".into());
                return 0;
            }
            state = match self.wake.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(_) => return 0,
            };
        }
        state.result
    }

    fn finish(&self) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.live = state.live.saturating_sub(1);
        if state.arrived > 0 && state.arrived >= state.live {
            state.arrived = 0;
            state.generation += 1;
            state.result = state.accumulated.take().unwrap_or(0);
            self.wake.notify_all();
        }
    }
}

fn block_of(context: *mut u64) -> *const BlockSync {
    // SAFETY: the generated code passes the context the runner made.
    unsafe { *context.add(field::BLOCK as usize) as *const BlockSync }
}

extern "C" fn barrier(context: *mut u64) {
    // SAFETY: the block outlives its waves.
    unsafe { &*block_of(context) }.arrive(None);
}

extern "C" fn barrier_reduce(context: *mut u64, op: u64, value: u64) -> u64 {
    // SAFETY: the block outlives its waves.
    unsafe { &*block_of(context) }.arrive(Some((op, value)))
}

extern "C" fn trap(context: *mut u64) {
    // SAFETY: as above.
    unsafe { &*block_of(context) }.fail("`trap` executed".into());
}

extern "C" fn check(
    context: *mut u64,
    address: u64,
    bytes: u64,
    instruction: u64,
    lane: u32,
) -> u64 {
    // SAFETY: as above.
    let sync = unsafe { &*block_of(context) };
    if sync.owns(address, bytes) {
        return 1;
    }
    // SAFETY: the context the runner made.
    let wave = unsafe { *context.add(field::WAVE as usize) };
    let [x, y, z] = sync.block;
    if let Ok(mut first) = sync.out_of_bounds.lock() {
        first.get_or_insert((
            format!(
                "block ({x}, {y}, {z}), wave {wave}, lane {lane}: {bytes} bytes at {address:#x} are outside every buffer of the launch"
            ),
            instruction as usize,
        ));
    }
    0
}

extern "C" fn clock() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// One atomic read-modify-write; returns the old value's bits.
///
/// # Safety
/// `pointer` is valid and aligned for the kind's size.
unsafe extern "C" fn atomic(op: u32, kind: u32, pointer: *mut u8, b: u64, c: u64) -> u64 {
    let wide = kind == AtomicKind::U64 as u32
        || kind == AtomicKind::S64 as u32
        || kind == AtomicKind::F64 as u32;
    let update = |old: u64| -> u64 {
        let float = |bits: u64| {
            if wide {
                f64::from_bits(bits)
            } else {
                f64::from(f32::from_bits(bits as u32))
            }
        };
        let unfloat = |v: f64| {
            if wide {
                v.to_bits()
            } else {
                u64::from((v as f32).to_bits())
            }
        };
        let signed = |bits: u64| {
            if wide {
                bits as i64
            } else {
                i64::from(bits as u32 as i32)
            }
        };
        let is_float = kind == AtomicKind::F32 as u32 || kind == AtomicKind::F64 as u32;
        let is_signed = kind == AtomicKind::S32 as u32 || kind == AtomicKind::S64 as u32;
        let mask = if wide { u64::MAX } else { 0xffff_ffff };
        let result = match op {
            x if x == AtomicOp::Add as u32 && is_float => unfloat(float(old) + float(b)),
            x if x == AtomicOp::Add as u32 => old.wrapping_add(b),
            x if x == AtomicOp::Min as u32 && is_float => unfloat(float(old).min(float(b))),
            x if x == AtomicOp::Max as u32 && is_float => unfloat(float(old).max(float(b))),
            x if x == AtomicOp::Min as u32 && is_signed => {
                if signed(b) < signed(old) {
                    b
                } else {
                    old
                }
            }
            x if x == AtomicOp::Max as u32 && is_signed => {
                if signed(b) > signed(old) {
                    b
                } else {
                    old
                }
            }
            x if x == AtomicOp::Min as u32 => old.min(b & mask),
            x if x == AtomicOp::Max as u32 => old.max(b & mask),
            x if x == AtomicOp::Inc as u32 => {
                if old >= (b & mask) {
                    0
                } else {
                    old + 1
                }
            }
            x if x == AtomicOp::Dec as u32 => {
                if old == 0 || old > (b & mask) {
                    b
                } else {
                    old - 1
                }
            }
            x if x == AtomicOp::And as u32 => old & b,
            x if x == AtomicOp::Or as u32 => old | b,
            x if x == AtomicOp::Xor as u32 => old ^ b,
            x if x == AtomicOp::Exch as u32 => b,
            _ => {
                if (old & mask) == (b & mask) {
                    c
                } else {
                    old
                }
            }
        };
        result & mask
    };
    if wide {
        // SAFETY: the caller's contract.
        let cell = unsafe { &*(pointer as *const AtomicU64) };
        match cell.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |old| Some(update(old))) {
            Ok(old) | Err(old) => old,
        }
    } else {
        // SAFETY: the caller's contract.
        let cell = unsafe { &*(pointer as *const AtomicU32) };
        match cell.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |old| {
            Some(update(u64::from(old)) as u32)
        }) {
            Ok(old) | Err(old) => u64::from(old),
        }
    }
}

type WaveFunction = unsafe extern "C" fn(*mut u8, *mut u64);

/// compiler-rt's half and bfloat conversions: name, argument bits, result
/// bits (a 16-bit value travels in the low bits of an `xmm` register, as an
/// f32 would: the functions below take and return it as f32).
const SOFT_FLOAT: &[(&str, u32, u32)] = &[
    ("__extendhfsf2", 32, 32),
    ("__truncsfhf2", 32, 32),
    ("__truncdfhf2", 64, 32),
    ("__truncsfbf2", 32, 32),
    ("__truncdfbf2", 64, 32),
];

extern "C" fn extend_half(half: f32) -> f32 {
    half_to_f64(half.to_bits() as u16) as f32
}

extern "C" fn truncate_to_half(x: f32) -> f32 {
    f32::from_bits(u32::from(to_half(f64::from(x))))
}

extern "C" fn truncate_double_to_half(x: f64) -> f32 {
    f32::from_bits(u32::from(to_half(x)))
}

extern "C" fn truncate_to_bfloat(x: f32) -> f32 {
    f32::from_bits(u32::from(to_bfloat(f64::from(x))))
}

extern "C" fn truncate_double_to_bfloat(x: f64) -> f32 {
    f32::from_bits(u32::from(to_bfloat(x)))
}

/// The range `[pointer, pointer + bytes)` as addresses.
fn range<T>(pointer: *const T, bytes: usize) -> (u64, u64) {
    let start = pointer as u64;
    (start, start + bytes as u64)
}

/// Runs `launch` on the translated module; returns the buffers'
/// contents afterwards, in argument order (None for scalars).
pub fn run(translated: CpuModule<'_>, launch: &Launch) -> Result<Vec<Option<Vec<u8>>>, RunError> {
    let info = translated
        .kernels
        .iter()
        .find(|k| k.name == launch.kernel)
        .cloned()
        .ok_or_else(|| RunError::NoKernel(launch.kernel.clone()))?;
    let layout: &Layout = &info.layout;
    if launch.arguments.len() != layout.params.len() {
        return Err(RunError::Usage(format!(
            "kernel `{}` takes {} arguments, {} given",
            launch.kernel,
            layout.params.len(),
            launch.arguments.len()
        )));
    }
    let threads: u64 = launch.block.iter().map(|&d| u64::from(d)).product();
    if threads > 1024 {
        return Err(RunError::Usage(format!(
            "{threads} threads per block: at most 1024"
        )));
    }
    // Device buffers, then the parameter buffer pointing at them.
    let mut buffers: Vec<Option<Vec<u64>>> = launch
        .arguments
        .iter()
        .map(|argument| match argument {
            Argument::Buffer(_, _, bytes) => {
                let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)];
                // SAFETY: words has at least bytes.len() bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        words.as_mut_ptr() as *mut u8,
                        bytes.len(),
                    )
                };
                Some(words)
            }
            Argument::Scalar(..) | Argument::Ref(_) => None,
        })
        .collect();
    let addresses: Vec<Option<u64>> = buffers
        .iter_mut()
        .map(|words| words.as_mut().map(|w| w.as_mut_ptr() as u64))
        .collect();
    let mut params = vec![0u64; (layout.param_bytes as usize).div_ceil(8).max(1)];
    let param_bytes = params.as_mut_ptr() as *mut u8;
    for ((argument, buffer), (name, offset, size)) in launch
        .arguments
        .iter()
        .zip(&mut buffers)
        .zip(&layout.params)
    {
        let bytes: Vec<u8> = match (argument, buffer) {
            (Argument::Scalar(_, bytes), _) => bytes.clone(),
            (Argument::Buffer(..), Some(words)) => {
                (words.as_mut_ptr() as u64).to_le_bytes().to_vec()
            }
            (Argument::Ref(target), _) => addresses
                .get(*target)
                .copied()
                .flatten()
                .ok_or_else(|| {
                    RunError::Usage(format!("ref({target}) does not name a buffer argument"))
                })?
                .to_le_bytes()
                .to_vec(),
            _ => Vec::new(),
        };
        if bytes.len() as u64 > *size {
            return Err(RunError::Usage(format!(
                "argument for `{name}` is {} bytes, the parameter {size}",
                bytes.len()
            )));
        }
        // SAFETY: offset + size is inside the parameter buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                param_bytes.add(*offset as usize),
                bytes.len(),
            )
        };
    }
    let mut global = translated.images.global.clone();
    global.resize(global.len().max(8), 0);
    let mut constant = translated.images.constant.clone();
    constant.resize(constant.len().max(8), 0);

    let wave = u64::from(translated.wave);
    // LLVM's x86 code generator converts half and bfloat values by calling
    // compiler-rt's functions, which this process does not have: declared
    // here, they resolve to ours below (the JIT would leave them null).
    let context = translated.module.get_context();
    for (name, from, to) in SOFT_FLOAT {
        if translated.module.get_function(name).is_none() {
            let float = |bits: u32| -> inkwell::types::BasicMetadataTypeEnum {
                match bits {
                    64 => context.f64_type().into(),
                    _ => context.f32_type().into(),
                }
            };
            let ret = if *to == 64 {
                context.f64_type()
            } else {
                context.f32_type()
            };
            translated
                .module
                .add_function(name, ret.fn_type(&[float(*from)], false), None);
        }
    }
    let engine = translated
        .module
        .create_jit_execution_engine(OptimizationLevel::Default)
        .map_err(|e| RunError::Jit(e.to_string()))?;
    for (name, address) in [
        ("__extendhfsf2", extend_half as *const () as usize),
        ("__truncsfhf2", truncate_to_half as *const () as usize),
        (
            "__truncdfhf2",
            truncate_double_to_half as *const () as usize,
        ),
        ("__truncsfbf2", truncate_to_bfloat as *const () as usize),
        (
            "__truncdfbf2",
            truncate_double_to_bfloat as *const () as usize,
        ),
    ] {
        if let Some(function) = translated.module.get_function(name) {
            engine.add_global_mapping(&function, address);
        }
    }
    for (name, address) in [
        (runtime::BARRIER, barrier as *const () as usize),
        (runtime::TRAP, trap as *const () as usize),
        (runtime::CLOCK, clock as *const () as usize),
        (runtime::ATOMIC, atomic as *const () as usize),
        (runtime::CHECK, check as *const () as usize),
        (
            runtime::BARRIER_REDUCE,
            barrier_reduce as *const () as usize,
        ),
    ] {
        if let Some(function) = translated.module.get_function(name) {
            engine.add_global_mapping(&function, address);
        }
    }
    let address = engine
        .get_function_address(&launch.kernel)
        .map_err(|e| RunError::Jit(e.to_string()))?;
    // SAFETY: the translation's signature.
    let kernel: WaveFunction = unsafe { std::mem::transmute::<usize, WaveFunction>(address) };

    let waves = threads.div_ceil(wave);
    // What every block may touch besides its own shared and local memory.
    let mut launch_ranges = vec![
        range(params.as_ptr(), layout.param_bytes as usize),
        range(global.as_ptr(), translated.images.global.len()),
        range(constant.as_ptr(), translated.images.constant.len()),
    ];
    for (argument, words) in launch.arguments.iter().zip(&buffers) {
        if let (Argument::Buffer(_, _, bytes), Some(words)) = (argument, words) {
            launch_ranges.push(range(words.as_ptr(), bytes.len()));
        }
    }
    let shared_bytes = (layout.shared_bytes + launch.shared) as usize;
    let local_bytes = layout.local_bytes.max(1);
    for z in 0..launch.grid[2] {
        for y in 0..launch.grid[1] {
            for x in 0..launch.grid[0] {
                let mut shared = vec![0u64; shared_bytes.div_ceil(8).max(1)];
                let mut local = vec![0u64; (local_bytes * wave * waves).div_ceil(8) as usize];
                let mut ranges = vec![
                    range(shared.as_ptr(), shared_bytes),
                    range(local.as_ptr(), local.len() * 8),
                ];
                ranges.extend_from_slice(&launch_ranges);
                let sync = BlockSync::new(waves as u32, ranges, [x, y, z]);
                let mut contexts: Vec<[u64; field::COUNT as usize]> = (0..waves)
                    .map(|w| {
                        let mut c = [0u64; field::COUNT as usize];
                        c[field::CTAID as usize..][..3].copy_from_slice(&[
                            u64::from(x),
                            u64::from(y),
                            u64::from(z),
                        ]);
                        c[field::NCTAID as usize..][..3]
                            .copy_from_slice(&launch.grid.map(u64::from));
                        c[field::NTID as usize..][..3]
                            .copy_from_slice(&launch.block.map(u64::from));
                        c[field::WAVE as usize] = w;
                        c[field::THREADS as usize] = threads;
                        c[field::SHARED as usize] = shared.as_mut_ptr() as u64;
                        c[field::LOCAL as usize] =
                            local.as_mut_ptr() as u64 + w * wave * local_bytes;
                        c[field::GLOBAL as usize] = global.as_mut_ptr() as u64;
                        c[field::CONST as usize] = constant.as_mut_ptr() as u64;
                        c[field::LOCAL_BYTES as usize] = local_bytes;
                        c[field::DYNAMIC_SHARED as usize] = launch.shared;
                        c[field::BLOCK as usize] = &sync as *const BlockSync as u64;
                        c
                    })
                    .collect();
                let params_address = param_bytes as usize;
                std::thread::scope(|scope| {
                    for context in contexts.iter_mut() {
                        let context_address = context.as_mut_ptr() as usize;
                        let sync = &sync;
                        scope.spawn(move || {
                            // SAFETY: the buffers outlive the scope.
                            unsafe {
                                kernel(params_address as *mut u8, context_address as *mut u64)
                            };
                            sync.finish();
                        });
                    }
                });
                if let Ok(first) = sync.out_of_bounds.lock()
                    && let Some((message, offset)) = first.as_ref()
                {
                    return Err(RunError::OutOfBounds {
                        message: message.clone(),
                        span: (*offset, 0).into(),
                    });
                }
                if let Ok(failure) = sync.failure.lock()
                    && let Some(why) = failure.as_ref()
                {
                    return Err(RunError::Kernel(format!("block ({x}, {y}, {z}): {why}")));
                }
            }
        }
    }
    Ok(launch
        .arguments
        .iter()
        .zip(buffers)
        .map(|(argument, words)| match (argument, words) {
            (Argument::Buffer(_, _, bytes), Some(words)) => {
                // SAFETY: words holds at least bytes.len() bytes.
                Some(
                    unsafe { std::slice::from_raw_parts(words.as_ptr() as *const u8, bytes.len()) }
                        .to_vec(),
                )
            }
            _ => None,
        })
        .collect())
}
