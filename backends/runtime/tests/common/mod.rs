//! Helpers shared by the ABI tests: the exported symbols as C declares
//! them, aligned buffers, a data generator, and a child-process runner for
//! calls that exit.

#![allow(dead_code)]

use std::ffi::c_char;
use std::process::{Command, Output};

// Link the crate (its unmangled symbols) into the test binary.
use pgpu_runtime as _;

pub type KernelBody = extern "C" fn(*mut u8, i64, i64);
pub type TaskBody = extern "C" fn(*mut u8);

unsafe extern "C" {
    pub fn pgpu_rt_init(argc: i32, argv: *const *const c_char);
    pub fn pgpu_rt_argi(k: i32, default: i32) -> i32;
    pub fn pgpu_rt_argi_width(k: i64, default: i64, width: i32) -> i64;
    pub fn pgpu_rt_wtime() -> f64;
    pub fn pgpu_rt_rand_seed(seed: i64);
    pub fn pgpu_rt_rand_u32() -> i32;
    pub fn pgpu_rt_printf_begin(format: *const u8, len: i64);
    pub fn pgpu_rt_printf_i64(value: i64, bits: i32);
    pub fn pgpu_rt_printf_f64(value: f64);
    pub fn pgpu_rt_printf_end();
    pub fn pgpu_rt_alloc(bytes: i64) -> *mut u8;
    pub fn pgpu_rt_free(ptr: *mut u8);
    pub fn pgpu_rt_dtemp_mark() -> i64;
    pub fn pgpu_rt_dtempnew(bytes: i64) -> *mut u8;
    pub fn pgpu_rt_dtempfree(mark: i64);
    pub fn pgpu_rt_device_is_cuda() -> i32;
    pub fn pgpu_rt_tasks_begin();
    pub fn pgpu_rt_task_spawn(body: Option<TaskBody>, context: *mut u8, bytes: i64);
    pub fn pgpu_rt_tasks_end();
    pub fn pgpu_rt_list_reduce(kind: i32, elem: i32, values: *const u8, n: i64) -> u64;
    pub fn pgpu_rt_list_scan(
        kind: i32,
        elem: i32,
        inclusive: i32,
        values: *const u8,
        scanned: *mut u8,
        n: i64,
    ) -> u64;
    pub fn pgpu_rt_list_sort_idx(elem: i32, keys: *const u8, indices: *mut i64, n: i64);
    pub fn pgpu_rt_list_compact(
        elem_bytes: i64,
        values: *const u8,
        flags: *const u8,
        list: *mut u8,
        n: i64,
        base: i64,
    ) -> i64;
    pub fn pgpu_rt_list_split(
        elem_bytes: i64,
        values: *const u8,
        flags: *const u8,
        list: *mut u8,
        n: i64,
        base: i64,
    ) -> i64;
    pub fn pgpu_rt_list_expand(
        count_elem: i32,
        counts: *const u8,
        parents: *mut i64,
        children: *mut u8,
        n: i64,
    ) -> i64;
    pub fn pgpu_rt_parallel_for(n: i64, body: Option<KernelBody>, context: *mut u8);
    pub fn pgpu_rt_cpu_threads() -> i32;
    pub fn pgpu_rt_kernel_error(
        kernel: *const c_char,
        file: *const c_char,
        line: i32,
        col: i32,
        message: *const c_char,
    ) -> !;
}

/// Element codes.
pub const I1: i32 = 0;
pub const I8: i32 = 1;
pub const I16: i32 = 2;
pub const I32: i32 = 3;
pub const I64: i32 = 4;
pub const F32: i32 = 5;
pub const F64: i32 = 6;

pub fn elem_size(elem: i32) -> usize {
    [1, 1, 2, 4, 8, 4, 8][elem as usize]
}

pub fn int_width(elem: i32) -> u32 {
    [1, 8, 16, 32, 64, 0, 0][elem as usize]
}

/// A byte buffer aligned to 16.
#[derive(Clone)]
pub struct Buf {
    words: Vec<u128>,
    pub len: usize,
}

impl Buf {
    pub fn zeroed(len: usize) -> Self {
        Buf {
            words: vec![0; len.div_ceil(16).max(1)],
            len,
        }
    }
    pub fn filled(len: usize, byte: u8) -> Self {
        let mut buf = Self::zeroed(len);
        buf.bytes_mut().fill(byte);
        buf
    }
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut buf = Self::zeroed(bytes.len());
        buf.bytes_mut().copy_from_slice(bytes);
        buf
    }
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the words hold at least `len` bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast(), self.len) }
    }
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as `bytes`.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast(), self.len) }
    }
    pub fn ptr(&self) -> *const u8 {
        self.words.as_ptr().cast()
    }
    pub fn mut_ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr().cast()
    }
}

/// Integers (canonical: sign-extended from the width) as elements.
pub fn ints_to_buf(elem: i32, values: &[i64]) -> Buf {
    let size = elem_size(elem);
    let mut buf = Buf::zeroed(values.len() * size);
    for (i, &v) in values.iter().enumerate() {
        let bytes = if elem == I1 {
            vec![(v != 0) as u8]
        } else {
            v.to_le_bytes()[..size].to_vec()
        };
        buf.bytes_mut()[i * size..(i + 1) * size].copy_from_slice(&bytes);
    }
    buf
}

/// Elements as canonical integers.
pub fn buf_to_ints(elem: i32, buf: &Buf, n: usize) -> Vec<i64> {
    let size = elem_size(elem);
    (0..n)
        .map(|i| {
            let b = &buf.bytes()[i * size..(i + 1) * size];
            match elem {
                I1 => -((b[0] != 0) as i64),
                I8 => b[0] as i8 as i64,
                I16 => i16::from_le_bytes([b[0], b[1]]) as i64,
                I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
                _ => i64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
            }
        })
        .collect()
}

pub fn f64s_to_buf(values: &[f64]) -> Buf {
    let mut buf = Buf::zeroed(values.len() * 8);
    for (i, v) in values.iter().enumerate() {
        buf.bytes_mut()[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    buf
}

pub fn f32s_to_buf(values: &[f32]) -> Buf {
    let mut buf = Buf::zeroed(values.len() * 4);
    for (i, v) in values.iter().enumerate() {
        buf.bytes_mut()[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    buf
}

pub fn buf_to_f64s(buf: &Buf, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| f64::from_le_bytes(buf.bytes()[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8])))
        .collect()
}

pub fn buf_to_f32s(buf: &Buf, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| f32::from_le_bytes(buf.bytes()[i * 4..i * 4 + 4].try_into().unwrap_or([0; 4])))
        .collect()
}

pub fn buf_to_i64s(buf: &Buf, n: usize) -> Vec<i64> {
    buf_to_ints(I64, buf, n)
}

/// A deterministic generator for test data (not the runtime's).
pub struct Gen(pub u64);

impl Gen {
    pub fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub fn sext(v: i64, w: u32) -> i64 {
    if w >= 64 {
        v
    } else {
        (v << (64 - w)) >> (64 - w)
    }
}

pub fn zext(v: i64, w: u32) -> u64 {
    if w >= 64 {
        v as u64
    } else {
        v as u64 & ((1u64 << w) - 1)
    }
}

/// Runs this test binary's `child_entry` test with `PGPU_RT_CHILD=case`.
pub fn run_child(case: &str, envs: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().unwrap_or_default();
    let mut command = Command::new(exe);
    command
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env("PGPU_RT_CHILD", case);
    for (key, value) in envs {
        command.env(key, value);
    }
    match command.output() {
        Ok(output) => output,
        Err(error) => panic!("cannot run the child test process: {error}"),
    }
}

/// The text a child printed between `<<` and `>>` markers.
pub fn marked(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let start = text.find("<<").map(|i| i + 2).unwrap_or(0);
    let end = text.rfind(">>").unwrap_or(text.len());
    text.get(start..end).unwrap_or_default().to_string()
}

/// Prints `text` through the runtime's printf (no conversions).
pub fn print(text: &str) {
    let escaped = text.replace('%', "%%");
    // SAFETY: a valid buffer.
    unsafe {
        pgpu_rt_printf_begin(escaped.as_ptr(), escaped.len() as i64);
        pgpu_rt_printf_end();
    }
}
