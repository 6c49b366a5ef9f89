//! Kernel launches described as text, shared by `pgpu run-ptx` (the CPU
//! wave emulation), `pgpu-run-ptx-cuda` (the same launch on a CUDA GPU)
//! and the recorded results of the test kernels (`test-suite/ptx`):
//! arguments (`u32:5`, `f32[1024]:rand(7)`: scalars and device buffers
//! filled by a rule, the rule's generator splitmix64 as
//! `test-suite/ptx/record.py` has it), launch lines of a cases file, and
//! the text of the buffers after a launch (floats as Python's `repr`).

/// A malformed launch or argument.
#[derive(Clone, Debug, PartialEq, thiserror::Error, miette::Diagnostic)]
#[error("{0}")]
#[diagnostic(code(ptx::launch))]
pub struct LaunchError(pub String);

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
    /// `ref(N)`: the device address of buffer argument N again (a memref
    /// passes its allocated and its aligned pointer).
    Ref(usize),
}

/// Checks that every `ref(N)` names a buffer argument.
pub fn check_references(arguments: &[Argument]) -> Result<(), LaunchError> {
    for (index, argument) in arguments.iter().enumerate() {
        if let Argument::Ref(target) = argument
            && !matches!(arguments.get(*target), Some(Argument::Buffer(..)))
        {
            return Err(LaunchError(format!(
                "argument {index}: ref({target}) does not name a buffer argument"
            )));
        }
    }
    Ok(())
}

impl Argument {
    /// Parses `TYPE:VALUE`, `TYPE[COUNT]:INIT` (INIT: `zero`, `iota`,
    /// `rand(SEED)`, `randmod(SEED,M)`) or `ref(N)`.
    pub fn parse(text: &str) -> Result<Argument, LaunchError> {
        let bad = |why: &str| LaunchError(format!("argument `{text}`: {why}"));
        if let Some(index) = text.strip_prefix("ref(").and_then(|t| t.strip_suffix(')')) {
            return index
                .trim()
                .parse()
                .map(Argument::Ref)
                .map_err(|_| bad("expected ref(N), N an argument index"));
        }
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
pub fn parse_dims(text: &str) -> Result<[u32; 3], LaunchError> {
    let mut dims = [1u32; 3];
    let parts: Vec<&str> = text.split(',').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(LaunchError(format!(
            "dimensions `{text}`: expected X[,Y[,Z]]"
        )));
    }
    for (dim, part) in dims.iter_mut().zip(parts) {
        *dim = part.trim().parse().ok().filter(|&d| d > 0).ok_or_else(|| {
            LaunchError(format!("dimensions `{text}`: expected positive integers"))
        })?;
    }
    Ok(dims)
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

/// The launch named `case` in a cases file's text (lines `NAME STEM
/// KERNEL GRID BLOCK SHARED ARG...`, `#` comments), with the PTX file's
/// stem (`nvcc/STEM.ptx` beside the cases file holds its PTX).
pub fn case_launch(text: &str, case: &str, file: &str) -> Result<(String, Launch), LaunchError> {
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.first() != Some(&case) {
            continue;
        }
        let at = |what: &str| LaunchError(format!("{file}:{}: {what}", number + 1));
        if fields.len() < 6 {
            return Err(at("expected NAME STEM KERNEL GRID BLOCK SHARED ARG..."));
        }
        let launch = Launch {
            kernel: fields[2].to_string(),
            grid: parse_dims(fields[3]).map_err(|e| at(&e.0))?,
            block: parse_dims(fields[4]).map_err(|e| at(&e.0))?,
            shared: fields[5]
                .parse()
                .map_err(|_| at("malformed shared bytes"))?,
            arguments: fields[6..]
                .iter()
                .map(|a| Argument::parse(a).map_err(|e| at(&e.0)))
                .collect::<Result<_, _>>()?,
        };
        check_references(&launch.arguments).map_err(|e| at(&e.0))?;
        return Ok((fields[1].to_string(), launch));
    }
    Err(LaunchError(format!("{file} has no case `{case}`")))
}

/// The PTX file of a case whose stem is `stem`: `DIR/STEM.ptx` when the stem
/// names a directory (`backend/vector_add`), else `DIR/nvcc/STEM.ptx`, with
/// `.VARIANT` before `.ptx` if given; DIR is the cases file's directory.
pub fn case_ptx_path(
    cases: &std::path::Path,
    stem: &str,
    variant: Option<&str>,
) -> std::path::PathBuf {
    let directory = cases.parent().unwrap_or(std::path::Path::new("."));
    let file = match variant {
        Some(variant) => format!("{stem}.{variant}.ptx"),
        None => format!("{stem}.ptx"),
    };
    if stem.contains('/') {
        directory.join(file)
    } else {
        directory.join("nvcc").join(file)
    }
}

/// A launch from command-line flags: the kernel, the grid and block as
/// `X[,Y[,Z]]`, the dynamic shared bytes and the arguments.
pub fn flag_launch(
    kernel: &str,
    grid: &str,
    block: &str,
    shared: u64,
    arguments: &[String],
) -> Result<Launch, LaunchError> {
    let launch = Launch {
        kernel: kernel.to_string(),
        grid: parse_dims(grid)?,
        block: parse_dims(block)?,
        shared,
        arguments: arguments
            .iter()
            .map(|a| Argument::parse(a))
            .collect::<Result<_, _>>()?,
    };
    check_references(&launch.arguments)?;
    Ok(launch)
}

/// The launch named `case` in the cases file `cases`, with its PTX file
/// ([`case_ptx_path`]).
pub fn case_file_launch(
    cases: &std::path::Path,
    case: &str,
    variant: Option<&str>,
) -> Result<(std::path::PathBuf, Launch), LaunchError> {
    let text = std::fs::read_to_string(cases)
        .map_err(|e| LaunchError(format!("cannot read {}: {e}", cases.display())))?;
    let (stem, launch) = case_launch(&text, case, &cases.display().to_string())?;
    Ok((case_ptx_path(cases, &stem, variant), launch))
}
