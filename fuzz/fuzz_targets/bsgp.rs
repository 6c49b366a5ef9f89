//! Fuzzes the BSGP frontend: any text must lower to a verified module or
//! fail with diagnostics, never panic, overflow its stack or hang.

// `main` is libFuzzer's driver: see libfuzzer_main.rs.
include!("libfuzzer_main.rs");

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let _ = pgpu_bsgp::lower_to_mlir("fuzz.bsgp", source, false);
});
