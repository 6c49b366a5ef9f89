//! Accuracy of the device math library, on the CPU: the functions that
//! `pgpu-define-device-math` inserts into a `gpu.module` (for declared
//! `__nv_*` functions, as `convert-gpu-to-nvvm` leaves them) are moved to
//! a host module, compiled with MLIR's execution engine and compared with
//! the host's libm (glibc, through Rust's `f64::exp` etc.) over many
//! inputs: random ones in several ranges and random bit patterns, and
//! edge cases (zeros, subnormals, huge values, infinities, NaN, the
//! overflow and underflow thresholds, pow's special cases, arguments of
//! sin and cos near multiples of pi/2).
//!
//! The library is IEEE arithmetic without fast-math flags, so the CPU
//! computes bit for bit what the GPU does. The report (`cargo test -p
//! pgpu-backend-nvptx --test device_math -- --nocapture`) gives the
//! largest difference from libm per function, in ulps (units in the last
//! place: the distance between the two results counted in representable
//! numbers). Bounds: 2 ulp for exp, log, pow, sin and cos (in f64; glibc
//! itself is within about 0.5 ulp of the exact result, we are within
//! about 0.72, so 1 is what we see), 1 ulp for their f32 forms, 0 for
//! fmod and the exact operations. Special values must match exactly
//! (NaN for NaN, the sign of a zero, infinities).

use melior::{
    ExecutionEngine,
    ir::{BlockLike, Module, RegionLike, operation::OperationLike},
    pass::PassManager,
};
use pgpu_backend_nvptx::{
    DEVICE_MATH_PREFIX, EXACT_MATH_FUNCTIONS, LIBDEVICE_PREFIX, WIDENED_MATH_FUNCTIONS,
};
use pgpu_pass_infra::tool;
use std::collections::BTreeMap;
use std::fmt::Write as _;

type F64x1 = extern "C" fn(f64) -> f64;
type F64x2 = extern "C" fn(f64, f64) -> f64;
type F64x3 = extern "C" fn(f64, f64, f64) -> f64;
type F32x1 = extern "C" fn(f32) -> f32;
type F32x2 = extern "C" fn(f32, f32) -> f32;
type F32x3 = extern "C" fn(f32, f32, f32) -> f32;

/// Every supported libdevice function with its number of operands.
fn libdevice_functions() -> Vec<(String, usize)> {
    let mut functions = Vec::new();
    for (name, _, arity) in EXACT_MATH_FUNCTIONS {
        functions.push((name.to_string(), *arity));
    }
    for (name, arity) in WIDENED_MATH_FUNCTIONS {
        functions.push((name.to_string(), *arity));
    }
    functions
}

/// A `gpu.module` that declares every supported `__nv_*` function in f64
/// and f32 and exports `t_<name>` calling it.
fn kernel_module() -> String {
    let mut text = String::from("module attributes {gpu.container_module} {\n  gpu.module @m {\n");
    for (name, arity) in libdevice_functions() {
        for (suffix, ty) in [("", "f64"), ("f", "f32")] {
            let types = vec![ty; arity].join(", ");
            let parameters: Vec<String> = (0..arity).map(|i| format!("%a{i}: {ty}")).collect();
            let arguments: Vec<String> = (0..arity).map(|i| format!("%a{i}")).collect();
            let _ = write!(
                text,
                "    llvm.func @{LIBDEVICE_PREFIX}{name}{suffix}({types}) -> {ty}\n    \
                 llvm.func @t_{name}{suffix}({}) -> {ty} {{\n      \
                 %r = llvm.call @{LIBDEVICE_PREFIX}{name}{suffix}({}) : ({types}) -> {ty}\n      \
                 llvm.return %r : {ty}\n    }}\n",
                parameters.join(", "),
                arguments.join(", ")
            );
        }
    }
    text.push_str("  }\n}\n");
    text
}

/// The compiled functions of the pass's output.
struct Library {
    engine: ExecutionEngine,
}

impl Library {
    fn build() -> Self {
        let context = tool::create_context(&[pgpu_backend_nvptx::register_passes]);
        let mut module =
            tool::parse_module(&context, &kernel_module(), "device-math").expect("module parses");
        let pass_manager = PassManager::new(&context);
        melior::utility::parse_pass_pipeline(
            pass_manager.as_operation_pass_manager(),
            "builtin.module(pgpu-define-device-math)",
        )
        .expect("pipeline parses");
        pass_manager.run(&mut module).expect("the pass runs");
        // The gpu.module's functions, as a host module.
        let gpu_module = module.body().first_operation().expect("the gpu.module");
        let body = gpu_module
            .region(0)
            .expect("a region")
            .first_block()
            .expect("a block");
        let mut host = String::from("module {\n");
        let mut op = body.first_operation();
        while let Some(current) = op {
            assert!(
                !current.to_string().contains(LIBDEVICE_PREFIX),
                "a libdevice name is left: {current}"
            );
            host.push_str(&current.to_string());
            host.push('\n');
            op = current.next_in_block();
        }
        host.push_str("}\n");
        assert!(host.contains(DEVICE_MATH_PREFIX));
        let host = Module::parse(&context, &host).expect("host module parses");
        let engine = ExecutionEngine::new(&host, 2, &[], false, false);
        Self { engine }
    }

    fn pointer(&self, name: &str) -> *mut () {
        let pointer = self.engine.lookup(&format!("t_{name}"));
        assert!(!pointer.is_null(), "t_{name} not found");
        pointer
    }

    /// `t_<name>` as a function pointer of type `F` (one of the `F64x*`
    /// and `F32x*` types, the type the library exports it with).
    fn typed<F: Copy>(&self, name: &str) -> F {
        let pointer = self.pointer(name);
        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut ()>());
        // SAFETY: t_<name> is an exported function of type F (the callers
        // below fix F by the function's signature).
        unsafe { std::mem::transmute_copy::<*mut (), F>(&pointer) }
    }
    fn f64_1(&self, name: &str) -> F64x1 {
        self.typed(name)
    }
    fn f64_2(&self, name: &str) -> F64x2 {
        self.typed(name)
    }
    fn f64_3(&self, name: &str) -> F64x3 {
        self.typed(name)
    }
    fn f32_1(&self, name: &str) -> F32x1 {
        self.typed(name)
    }
    fn f32_2(&self, name: &str) -> F32x2 {
        self.typed(name)
    }
    fn f32_3(&self, name: &str) -> F32x3 {
        self.typed(name)
    }
}

/// SplitMix64: reproducible inputs.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_133E_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [low, high).
    fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
    /// Uniform in magnitude over binades: exp(uniform(low, high)), random sign if asked.
    fn log_uniform(&mut self, low: f64, high: f64, signed: bool) -> f64 {
        let value = self.uniform(low, high).exp();
        if signed && self.next() & 1 == 1 {
            -value
        } else {
            value
        }
    }
    fn bits64(&mut self) -> f64 {
        f64::from_bits(self.next())
    }
    fn bits32(&mut self) -> f32 {
        f32::from_bits((self.next() >> 32) as u32)
    }
}

/// Position of `x` on the line of doubles (negative ones below the zeros).
fn order64(x: f64) -> i128 {
    let bits = x.to_bits() as i64;
    if bits < 0 {
        i128::from(i64::MIN) - i128::from(bits)
    } else {
        i128::from(bits)
    }
}

fn order32(x: f32) -> i64 {
    let bits = x.to_bits() as i32;
    if bits < 0 {
        i64::from(i32::MIN) - i64::from(bits)
    } else {
        i64::from(bits)
    }
}

/// The distance in ulps; special values must be identical (any NaN for a
/// NaN, the same zero, the same infinity): u64::MAX otherwise.
fn ulps64(ours: f64, reference: f64) -> u64 {
    if ours.is_nan() || reference.is_nan() {
        return if ours.is_nan() && reference.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let special = |x: f64| x == 0.0 || x.is_infinite();
    if (special(ours) || special(reference)) && ours.to_bits() != reference.to_bits() {
        return u64::MAX;
    }
    (order64(ours) - order64(reference)).unsigned_abs() as u64
}

fn ulps32(ours: f32, reference: f32) -> u64 {
    if ours.is_nan() || reference.is_nan() {
        return if ours.is_nan() && reference.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let special = |x: f32| x == 0.0 || x.is_infinite();
    if (special(ours) || special(reference)) && ours.to_bits() != reference.to_bits() {
        return u64::MAX;
    }
    (order32(ours) - order32(reference)).unsigned_abs()
}

/// The largest error per function and where it was seen.
#[derive(Default)]
struct Report {
    worst: BTreeMap<String, (u64, String)>,
}

impl Report {
    fn record(&mut self, function: &str, error: u64, input: impl FnOnce() -> String) {
        let entry = self
            .worst
            .entry(function.to_string())
            .or_insert((0, "-".to_string()));
        if error > entry.0 {
            *entry = (error, input());
        }
    }
}

/// The edge cases every function sees (and pow and fmod in all pairs).
fn edge_cases() -> Vec<f64> {
    let mut cases = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        1.5,
        -1.5,
        0.1,
        10.0,
        100.0,
        1e-20,
        -1e-20,
        1e22,
        -1e22,
        1e300,
        -1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        1e-310,
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        1.0 - f64::EPSILON / 2.0,
        1.0 + f64::EPSILON,
        // exp's overflow and underflow thresholds
        709.782712893384,
        709.7827128933841,
        -708.3964185322641,
        -745.1332191019411,
        -745.1332191019412,
        710.0,
        -746.0,
        // near multiples of pi/2, and the reductions' boundary
        std::f64::consts::FRAC_PI_2,
        std::f64::consts::PI,
        -std::f64::consts::PI,
        std::f64::consts::FRAC_PI_4,
        1073741824.0,
        1073741823.9999999,
        355.0,
        103993.0,
        // integers where pow's parity matters
        9007199254740993.0,
        4503599627370497.0,
        -9007199254740994.0,
        -4503599627370497.0,
        -1e-300,
    ];
    for k in [1.0, 2.0, 3.0, 100.0, 12345.0, 1e6, 1e9] {
        let x = k * std::f64::consts::FRAC_PI_2;
        cases.extend([
            x,
            f64::from_bits(x.to_bits() + 1),
            f64::from_bits(x.to_bits() - 1),
        ]);
    }
    cases
}

/// A double whose distance to a multiple of pi/2 is the smallest of all
/// doubles (about 2^-61: cos(x) = -4.687e-19), and cos of it correctly
/// rounded (computed with 3000-bit arithmetic). glibc 2.36 is 8 ulp off
/// here, so this case is checked against the exact value instead.
/// 6381956970095103 * 2^797.
const HARD_COS_ARGUMENT: f64 = f64::from_bits(0x7506AC5B262CA1FF);
const HARD_COS_VALUE: u64 = 0xBC214AE72E6BA22F;

#[test]
fn device_math_matches_libm() {
    let library = Library::build();
    let mut random = Random(20250607);
    let mut report = Report::default();
    const N: usize = 100_000;

    // f64, one operand: random values in ranges, random bits, edge cases.
    type Reference = fn(f64) -> f64;
    type Ranges = &'static [(f64, f64)];
    let unary: [(&str, Reference, Ranges); 4] = [
        (
            "exp",
            f64::exp,
            &[(-745.2, 709.8), (-1.0, 1.0), (-1e-9, 1e-9)],
        ),
        ("log", f64::ln, &[(0.0, 10.0), (0.5, 2.0), (0.999, 1.001)]),
        ("sin", f64::sin, &[(-10.0, 10.0), (-1e6, 1e6), (-2e9, 2e9)]),
        ("cos", f64::cos, &[(-10.0, 10.0), (-1e6, 1e6), (-2e9, 2e9)]),
    ];
    for (name, reference, ranges) in unary {
        let ours = library.f64_1(name);
        let check = |x: f64, report: &mut Report| {
            if name == "cos" && x.abs() == HARD_COS_ARGUMENT {
                return;
            }
            let error = ulps64(ours(x), reference(x));
            report.record(name, error, || format!("{x:e}"));
        };
        for (low, high) in ranges {
            for _ in 0..N {
                check(random.uniform(*low, *high), &mut report);
            }
        }
        // over every binade (log: positive only)
        for _ in 0..N {
            let x = random.log_uniform(-745.0, 709.0, name != "log");
            check(x, &mut report);
            check(random.bits64(), &mut report);
        }
        for x in edge_cases() {
            check(x, &mut report);
        }
    }
    let cos = library.f64_1("cos");
    let hard = cos(HARD_COS_ARGUMENT);
    report.record("cos", ulps64(hard, f64::from_bits(HARD_COS_VALUE)), || {
        format!("{HARD_COS_ARGUMENT:e} (exact reference)")
    });

    // pow and fmod
    let pow = library.f64_2("pow");
    let fmod = library.f64_2("fmod");
    let check2 = |x: f64, y: f64, report: &mut Report| {
        report.record("pow", ulps64(pow(x, y), x.powf(y)), || {
            format!("{x:e}, {y:e}")
        });
        report.record("fmod", ulps64(fmod(x, y), x % y), || {
            format!("{x:e}, {y:e}")
        });
    };
    for _ in 0..N {
        check2(
            random.uniform(0.0, 10.0),
            random.uniform(-300.0, 300.0),
            &mut report,
        );
        check2(
            random.uniform(0.9, 1.1),
            random.uniform(-7000.0, 7000.0),
            &mut report,
        );
        check2(
            random.uniform(-10.0, 10.0),
            random.uniform(-40.0, 40.0).floor(),
            &mut report,
        );
        check2(
            random.log_uniform(-700.0, 700.0, true),
            random.log_uniform(-40.0, 6.0, true),
            &mut report,
        );
        check2(random.bits64(), random.bits64(), &mut report);
    }
    let edges = edge_cases();
    for &x in &edges {
        for &y in &edges {
            check2(x, y, &mut report);
        }
    }

    // The exact operations, f64 and f32, on random values, random bits
    // and edge cases. fmax and fmin may return either zero for +0 and -0
    // (C leaves it open), so there the zeros compare equal.
    let arguments = |random: &mut Random, i: usize| -> [f64; 3] {
        if i < N {
            [0; 3].map(|_| {
                if random.next() & 1 == 0 {
                    random.bits64()
                } else {
                    random.uniform(-1e3, 1e3)
                }
            })
        } else {
            let at = |k: usize| edges[(i * k) % edges.len()];
            [edges[i - N], at(7), at(13)]
        }
    };
    // Rust's own correctly rounded operation, for either float type.
    macro_rules! exact_reference {
        ($name:expr, $a:expr) => {{
            let a = $a;
            match $name {
                "sqrt" => a[0].sqrt(),
                "fabs" => a[0].abs(),
                "floor" => a[0].floor(),
                "ceil" => a[0].ceil(),
                "rint" => a[0].round_ties_even(),
                "round" => a[0].round(),
                "fma" => a[0].mul_add(a[1], a[2]),
                "copysign" => a[0].copysign(a[1]),
                "fmax" => a[0].max(a[1]),
                _ => a[0].min(a[1]),
            }
        }};
    }
    for (name, _, arity) in EXACT_MATH_FUNCTIONS {
        let zeros_equal = matches!(*name, "fmax" | "fmin");
        let name32 = format!("{name}f");
        let ours: Box<dyn Fn([f64; 3]) -> f64> = match arity {
            1 => {
                let f = library.f64_1(name);
                Box::new(move |a| f(a[0]))
            }
            2 => {
                let f = library.f64_2(name);
                Box::new(move |a| f(a[0], a[1]))
            }
            _ => {
                let f = library.f64_3(name);
                Box::new(move |a| f(a[0], a[1], a[2]))
            }
        };
        let ours32: Box<dyn Fn([f32; 3]) -> f32> = match arity {
            1 => {
                let f = library.f32_1(&name32);
                Box::new(move |a| f(a[0]))
            }
            2 => {
                let f = library.f32_2(&name32);
                Box::new(move |a| f(a[0], a[1]))
            }
            _ => {
                let f = library.f32_3(&name32);
                Box::new(move |a| f(a[0], a[1], a[2]))
            }
        };
        for i in 0..N + edges.len() {
            let a = arguments(&mut random, i);
            let (value, expected) = (ours(a), exact_reference!(*name, a));
            let error = if zeros_equal && value == expected {
                0
            } else {
                ulps64(value, expected)
            };
            report.record(name, error, || format!("{a:?}"));
            let a32 = if i < N {
                [0; 3].map(|_| random.bits32())
            } else {
                a.map(|x| x as f32)
            };
            let (value, expected) = (ours32(a32), exact_reference!(*name, a32));
            let error = if zeros_equal && value == expected {
                0
            } else {
                ulps32(value, expected)
            };
            report.record(&name32, error, || format!("{a32:?}"));
        }
    }

    // f32: the widened functions against glibc's f32 functions, the exact
    // ones against Rust's f32 operations.
    type Reference32 = fn(f32) -> f32;
    let unary32: [(&str, Reference32); 4] = [
        ("expf", f32::exp),
        ("logf", f32::ln),
        ("sinf", f32::sin),
        ("cosf", f32::cos),
    ];
    for (name, reference) in unary32 {
        let ours = library.f32_1(name);
        for i in 0..N {
            let x = match i % 3 {
                0 => random.bits32(),
                1 => random.uniform(-100.0, 100.0) as f32,
                _ => random.log_uniform(-100.0, 88.0, name != "logf") as f32,
            };
            report.record(name, ulps32(ours(x), reference(x)), || format!("{x:e}"));
        }
        for x in edge_cases() {
            let x = x as f32;
            report.record(name, ulps32(ours(x), reference(x)), || format!("{x:e}"));
        }
    }
    type Reference32x2 = fn(f32, f32) -> f32;
    let binary32: [(&str, Reference32x2); 2] = [("powf", f32::powf), ("fmodf", |x, y| x % y)];
    for (name, reference) in binary32 {
        let ours = library.f32_2(name);
        for i in 0..N {
            let (x, y) = if i % 2 == 0 {
                (random.bits32(), random.bits32())
            } else {
                (
                    random.uniform(0.0, 10.0) as f32,
                    random.uniform(-30.0, 30.0) as f32,
                )
            };
            report.record(name, ulps32(ours(x, y), reference(x, y)), || {
                format!("{x:e}, {y:e}")
            });
        }
        for &x in &edges {
            for &y in &edges {
                let (x, y) = (x as f32, y as f32);
                report.record(name, ulps32(ours(x, y), reference(x, y)), || {
                    format!("{x:e}, {y:e}")
                });
            }
        }
    }

    // Report and bounds.
    let bound = |name: &str| match name {
        "exp" | "log" | "pow" | "sin" | "cos" => 2,
        "expf" | "logf" | "powf" | "sinf" | "cosf" => 1,
        _ => 0,
    };
    let mut failures = Vec::new();
    println!("device math vs libm: max error in ulps (bound), at");
    for (name, (error, input)) in &report.worst {
        let shown = if *error == u64::MAX {
            "special value differs".to_string()
        } else {
            error.to_string()
        };
        println!("  {name:10} {shown:>8} ({})  {input}", bound(name));
        if *error > bound(name) {
            failures.push(format!("{name}: {shown} ulp at {input}"));
        }
    }
    assert!(failures.is_empty(), "out of bounds: {failures:#?}");
    assert_eq!(
        report.worst.len(),
        2 * (EXACT_MATH_FUNCTIONS.len() + WIDENED_MATH_FUNCTIONS.len())
    );
}
