//! Fuzzes the PTX translations: every module that parses and passes the
//! checks must translate for the CPU (32- and 64-lane waves) and for
//! AMDGPU (gfx942 and gfx1100) to verified LLVM IR, or fail with a
//! diagnostic, never panic. (Code generation is left out: it belongs to
//! LLVM.)

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgpu_ptx_llvm::inkwell::context::Context;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(module) = pgpu_ptx::parse_and_check(source) else {
        return;
    };
    for wave in [32, 64] {
        let context = Context::create();
        let _ = pgpu_ptx_llvm::cpu::translate(&context, &module, wave);
    }
    for chip in ["gfx942", "gfx1100"] {
        let context = Context::create();
        let _ = pgpu_ptx_llvm::amdgpu::translate(&context, &module, chip, None);
    }
});
