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
use crate::layout::Layout;
use inkwell::OptimizationLevel;
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
    /// The kernel does not exist.
    #[error("the module has no kernel `{0}`")]
    #[diagnostic(code(ptx_run::kernel))]
    NoKernel(String),
    /// The kernel trapped or its barriers deadlocked.
    #[error("the kernel failed: {0}")]
    #[diagnostic(code(ptx_run::kernel_failed))]
    Kernel(String),
    /// The JIT failed.
    #[error("LLVM JIT: {0}")]
    #[diagnostic(code(ptx_run::jit))]
    Jit(String),
}

/// An element type of an argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementType {
    /// i8.
    I8,
    /// u8.
    U8,
    /// i16.
    I16,
    /// u16.
    U16,
    /// i32.
    I32,
    /// u32.
    U32,
    /// i64.
    I64,
    /// u64.
    U64,
    /// f32.
    F32,
    /// f64.
    F64,
}

impl ElementType {
    fn parse(text: &str) -> Option<ElementType> {
        use ElementType::*;
        Some(match text {
            "i8" => I8,
            "u8" => U8,
            "i16" => I16,
            "u16" => U16,
            "i32" => I32,
            "u32" => U32,
            "i64" => I64,
            "u64" => U64,
            "f32" => F32,
            "f64" => F64,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        use ElementType::*;
        match self {
            I8 => "i8",
            U8 => "u8",
            I16 => "i16",
            U16 => "u16",
            I32 => "i32",
            U32 => "u32",
            I64 => "i64",
            U64 => "u64",
            F32 => "f32",
            F64 => "f64",
        }
    }

    /// Size in bytes.
    pub fn bytes(self) -> usize {
        use ElementType::*;
        match self {
            I8 | U8 => 1,
            I16 | U16 => 2,
            I32 | U32 | F32 => 4,
            I64 | U64 | F64 => 8,
        }
    }

    /// Little-endian bytes of a value given as text.
    fn scalar(self, text: &str) -> Option<Vec<u8>> {
        use ElementType::*;
        let bytes = match self {
            F32 => text.parse::<f32>().ok()?.to_le_bytes().to_vec(),
            F64 => text.parse::<f64>().ok()?.to_le_bytes().to_vec(),
            I8 | I16 | I32 | I64 => {
                text.parse::<i64>().ok()?.to_le_bytes()[..self.bytes()].to_vec()
            }
            U8 | U16 | U32 | U64 => {
                text.parse::<u64>().ok()?.to_le_bytes()[..self.bytes()].to_vec()
            }
        };
        Some(bytes)
    }

    /// Element `k` of a buffer filled from `next()` values.
    fn random(self, value: u64) -> Vec<u8> {
        match self {
            ElementType::F32 => (((value >> 40) as f32) * (1.0 / 16_777_216.0))
                .to_le_bytes()
                .to_vec(),
            ElementType::F64 => (((value >> 11) as f64) * (1.0 / 9_007_199_254_740_992.0))
                .to_le_bytes()
                .to_vec(),
            other => value.to_le_bytes()[..other.bytes()].to_vec(),
        }
    }

    /// Text of the element at `bytes`, as the recorded results print it.
    fn format(self, bytes: &[u8]) -> String {
        use ElementType::*;
        let mut raw = [0u8; 8];
        raw[..bytes.len()].copy_from_slice(bytes);
        let u = u64::from_le_bytes(raw);
        let shift = 64 - 8 * self.bytes() as u32;
        match self {
            F32 => python_repr(f64::from(f32::from_bits(u as u32))),
            F64 => python_repr(f64::from_bits(u)),
            I8 | I16 | I32 | I64 => (((u << shift) as i64) >> shift).to_string(),
            U8 | U16 | U32 | U64 => u.to_string(),
        }
    }
}

/// Python's `repr` of a float: the shortest digits that read back to the
/// same value, in fixed notation for exponents from -4 to 15 and in
/// scientific notation (`1e-05`, `1.5e+16`) outside.
pub fn python_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // The number of digits of the shortest representation that reads
    // back, then those digits rounded half to even from the exact value
    // (Rust breaks exact ties upwards, Python to even).
    let shortest = format!("{x:e}");
    let (mantissa, _) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let negative = mantissa.starts_with('-');
    let count = mantissa.chars().filter(char::is_ascii_digit).count();
    let exact = format!("{:.780e}", x.abs());
    let (exact_mantissa, exact_exponent) = exact.split_once('e').unwrap_or((&exact, "0"));
    let all: Vec<u8> = exact_mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    let mut exponent: i32 = exact_exponent.parse().unwrap_or(0);
    let mut kept: Vec<u8> = all[..count.min(all.len())].to_vec();
    let rest = &all[count.min(all.len())..];
    let round_up = match rest.first() {
        Some(&d) if d > 5 => true,
        Some(&5) => rest[1..].iter().any(|&d| d != 0) || kept.last().is_some_and(|d| d % 2 == 1),
        _ => false,
    };
    if round_up {
        let mut at = kept.len();
        loop {
            if at == 0 {
                kept.insert(0, 1);
                kept.pop();
                exponent += 1;
                break;
            }
            at -= 1;
            if kept[at] == 9 {
                kept[at] = 0;
            } else {
                kept[at] += 1;
                break;
            }
        }
    }
    while kept.len() > 1 && kept.last() == Some(&0) {
        kept.pop();
    }
    let digits: String = kept.iter().map(|d| char::from(b'0' + d)).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exponent) {
        let point = exponent + 1;
        let text = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{text}")
    } else {
        let mantissa = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exponent.abs())
    }
}

/// The splitmix64 generator of the test inputs.
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next value.
    pub fn next_value(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A kernel argument.
#[derive(Clone, Debug)]
pub enum Argument {
    /// A scalar's bytes.
    Scalar(ElementType, Vec<u8>),
    /// A device buffer's type, element count and contents.
    Buffer(ElementType, usize, Vec<u8>),
}

impl Argument {
    /// Parses `TYPE:VALUE` or `TYPE[COUNT]:INIT` (INIT: `zero`, `iota`,
    /// `rand(SEED)`, `randmod(SEED,M)`).
    pub fn parse(text: &str) -> Result<Argument, RunError> {
        let bad = |why: &str| RunError::Usage(format!("argument `{text}`: {why}"));
        let (head, value) = text
            .split_once(':')
            .ok_or_else(|| bad("expected TYPE:VALUE or TYPE[COUNT]:INIT"))?;
        if let Some((ty, count)) = head.split_once('[') {
            let ty = ElementType::parse(ty).ok_or_else(|| bad("unknown element type"))?;
            let count: usize = count
                .strip_suffix(']')
                .and_then(|c| c.parse().ok())
                .filter(|&c| c <= 1 << 28)
                .ok_or_else(|| bad("expected a count such as [1024]"))?;
            let mut bytes = Vec::with_capacity(count * ty.bytes());
            let call = |name: &str| {
                value
                    .strip_prefix(name)
                    .and_then(|v| v.strip_prefix('('))
                    .and_then(|v| v.strip_suffix(')'))
            };
            if value == "zero" {
                bytes.resize(count * ty.bytes(), 0);
            } else if value == "iota" {
                for k in 0..count {
                    let v = match ty {
                        ElementType::F32 => (k as f32).to_le_bytes().to_vec(),
                        ElementType::F64 => (k as f64).to_le_bytes().to_vec(),
                        other => (k as u64).to_le_bytes()[..other.bytes()].to_vec(),
                    };
                    bytes.extend(v);
                }
            } else if let Some(seed) = call("rand") {
                let mut generator = SplitMix64::new(
                    seed.trim()
                        .parse()
                        .map_err(|_| bad("expected rand(SEED)"))?,
                );
                for _ in 0..count {
                    bytes.extend(ty.random(generator.next_value()));
                }
            } else if let Some(args) = call("randmod") {
                let (seed, modulus) = args
                    .split_once(',')
                    .ok_or_else(|| bad("expected randmod(SEED,M)"))?;
                let seed: u64 = seed
                    .trim()
                    .parse()
                    .map_err(|_| bad("expected randmod(SEED,M)"))?;
                let modulus: u64 = modulus
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&m| m > 0)
                    .ok_or_else(|| bad("M must be positive"))?;
                if matches!(ty, ElementType::F32 | ElementType::F64) {
                    return Err(bad("randmod needs an integer type"));
                }
                let mut generator = SplitMix64::new(seed);
                for _ in 0..count {
                    bytes.extend(&(generator.next_value() % modulus).to_le_bytes()[..ty.bytes()]);
                }
            } else {
                return Err(bad(
                    "unknown initializer (zero, iota, rand(SEED), randmod(SEED,M))",
                ));
            }
            Ok(Argument::Buffer(ty, count, bytes))
        } else {
            let ty = ElementType::parse(head).ok_or_else(|| bad("unknown type"))?;
            let bytes = ty.scalar(value).ok_or_else(|| bad("malformed value"))?;
            Ok(Argument::Scalar(ty, bytes))
        }
    }
}

/// A kernel launch.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The kernel.
    pub kernel: String,
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory bytes.
    pub shared: u64,
    /// The arguments.
    pub arguments: Vec<Argument>,
}

/// Parses `X,Y,Z` (missing dimensions are 1).
pub fn parse_dims(text: &str) -> Result<[u32; 3], RunError> {
    let mut dims = [1u32; 3];
    let parts: Vec<&str> = text.split(',').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(RunError::Usage(format!(
            "dimensions `{text}`: expected X[,Y[,Z]]"
        )));
    }
    for (dim, part) in dims.iter_mut().zip(parts) {
        *dim = part.trim().parse().ok().filter(|&d| d > 0).ok_or_else(|| {
            RunError::Usage(format!("dimensions `{text}`: expected positive integers"))
        })?;
    }
    Ok(dims)
}

/// A block's barrier: the waves that have not finished meet at it.
pub struct BlockSync {
    state: Mutex<BarrierState>,
    wake: Condvar,
    failure: Mutex<Option<String>>,
    broken: AtomicBool,
}

struct BarrierState {
    live: u32,
    arrived: u32,
    generation: u64,
}

/// How long waves wait at a barrier before it counts as a deadlock.
const BARRIER_TIMEOUT: Duration = Duration::from_secs(20);

impl BlockSync {
    fn new(waves: u32) -> BlockSync {
        BlockSync {
            state: Mutex::new(BarrierState {
                live: waves,
                arrived: 0,
                generation: 0,
            }),
            wake: Condvar::new(),
            failure: Mutex::new(None),
            broken: AtomicBool::new(false),
        }
    }

    fn fail(&self, why: String) {
        if let Ok(mut failure) = self.failure.lock() {
            failure.get_or_insert(why);
        }
        self.broken.store(true, Ordering::SeqCst);
        self.wake.notify_all();
    }

    fn arrive(&self) {
        if self.broken.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.arrived += 1;
        if state.arrived >= state.live {
            state.arrived = 0;
            state.generation += 1;
            self.wake.notify_all();
            return;
        }
        let generation = state.generation;
        let start = Instant::now();
        while state.generation == generation && !self.broken.load(Ordering::SeqCst) {
            let left = BARRIER_TIMEOUT.saturating_sub(start.elapsed());
            if left.is_zero() {
                drop(state);
                self.fail("waves of a block wait at different barriers (deadlock)".into());
                return;
            }
            state = match self.wake.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(_) => return,
            };
        }
    }

    fn finish(&self) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.live = state.live.saturating_sub(1);
        if state.arrived > 0 && state.arrived >= state.live {
            state.arrived = 0;
            state.generation += 1;
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
    unsafe { &*block_of(context) }.arrive();
}

extern "C" fn trap(context: *mut u64) {
    // SAFETY: as above.
    unsafe { &*block_of(context) }.fail("`trap` executed".into());
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
            Argument::Scalar(..) => None,
        })
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
    let engine = translated
        .module
        .create_jit_execution_engine(OptimizationLevel::Default)
        .map_err(|e| RunError::Jit(e.to_string()))?;
    for (name, address) in [
        (runtime::BARRIER, barrier as *const () as usize),
        (runtime::TRAP, trap as *const () as usize),
        (runtime::CLOCK, clock as *const () as usize),
        (runtime::ATOMIC, atomic as *const () as usize),
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
    let shared_bytes = (layout.shared_bytes + launch.shared) as usize;
    let local_bytes = layout.local_bytes.max(1);
    for z in 0..launch.grid[2] {
        for y in 0..launch.grid[1] {
            for x in 0..launch.grid[0] {
                let mut shared = vec![0u64; shared_bytes.div_ceil(8).max(1)];
                let mut local = vec![0u64; (local_bytes * wave * waves).div_ceil(8) as usize];
                let sync = BlockSync::new(waves as u32);
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

/// The recorded-results text of a launch's buffers: `case NAME kernel K`,
/// then per buffer `arg INDEX TYPE[COUNT]` and its values, 8 per line.
pub fn format_buffers(case: &str, launch: &Launch, buffers: &[Option<Vec<u8>>]) -> String {
    let mut out = format!("case {case} kernel {}\n", launch.kernel);
    for (index, (argument, contents)) in launch.arguments.iter().zip(buffers).enumerate() {
        let (Argument::Buffer(ty, count, _), Some(bytes)) = (argument, contents) else {
            continue;
        };
        out.push_str(&format!("arg {index} {}[{count}]\n", ty.name()));
        let values: Vec<String> = bytes
            .chunks(ty.bytes())
            .map(|chunk| ty.format(chunk))
            .collect();
        for line in values.chunks(8) {
            out.push_str(&line.join(" "));
            out.push('\n');
        }
    }
    out
}
