//! Fuzzes the C-subset frontend as `pgpu` runs it on a `.c` file: parse,
//! check, and (without errors) lower to a verified module. Diagnostics are
//! fine; a panic, a stack overflow or a hang is a finding.

// `main` is libFuzzer's driver: see libfuzzer_main.rs.
include!("libfuzzer_main.rs");

use libfuzzer_sys::fuzz_target;
use pgpu_csubset::{Language, frontend::create_context, lower};

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let checked = pgpu_csubset::check_source("fuzz.c", source, Language::C);
    let Some(hir) = checked.hir.filter(|_| !checked.diagnostics.iter().any(|d| d.is_error())) else {
        return;
    };
    let context = create_context();
    let _ = lower::lower_hir(&context, &hir, &lower::NoExtension, "fuzz.c", source);
});
