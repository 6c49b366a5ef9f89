//! Fuzzes `pgpu-opt` on mutated MLIR: text that parses and verifies is
//! run through the kernel pipeline (`pgpu_kernel_passes::kernel_pipeline`,
//! what `pgpu emit --stage kernels` runs), whose passes must succeed or
//! fail with a diagnostic. Seed it with the suite's `.mlir` files
//! (`fuzz/seed.sh`).

// `main` is libFuzzer's driver: see libfuzzer_main.rs.
include!("libfuzzer_main.rs");

use libfuzzer_sys::fuzz_target;
use melior::{ir::operation::OperationLike, pass::PassManager, utility::parse_pass_pipeline};
use pgpu_pass_infra::tool;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    static PIPELINE: OnceLock<String> = OnceLock::new();
    let pipeline =
        PIPELINE.get_or_init(|| pgpu_kernel_passes::kernel_pipeline(false, None, None));
    let context = tool::create_context(&[pgpu_kernel_passes::register_passes]);
    // Diagnostics go to a handler that drops them (the fuzzer's output
    // would drown in them).
    context.attach_diagnostic_handler(|_| true);
    let Some(mut module) = tool::parse_module(&context, source, "fuzz.mlir") else {
        return;
    };
    if !module.as_operation().verify() {
        return;
    }
    let manager = PassManager::new(&context);
    if parse_pass_pipeline(manager.as_operation_pass_manager(), pipeline).is_err() {
        return;
    }
    let _ = manager.run(&mut module);
});
