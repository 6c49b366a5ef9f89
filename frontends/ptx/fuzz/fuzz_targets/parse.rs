//! Fuzzes the PTX parser: any input must parse or fail with an error, never
//! panic or hang; a module that parses must pass or fail the checks without
//! panicking, and its printed text must parse back to an equal module.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The parser takes text; inputs that are not UTF-8 say nothing new.
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(module) = pgpu_ptx::parse(source) else {
        return;
    };
    let _ = pgpu_ptx::check::check(&module);
    let printed = pgpu_ptx::print(&module);
    let reparsed = pgpu_ptx::parse(&printed);
    assert_eq!(
        reparsed.as_ref(),
        Ok(&module),
        "the printed module does not parse back to the same module:\n{printed}"
    );
});
