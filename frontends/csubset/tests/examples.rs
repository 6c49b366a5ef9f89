//! The example programs and the paper's listings parse and check cleanly.

#![allow(clippy::unwrap_used, clippy::panic)]

use pgpu_csubset::{Language, LineIndex, check_source};
use std::path::Path;

fn examples_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bsgp")
}

fn render(path: &str, text: &str, r: &pgpu_csubset::CheckResult) -> String {
    let idx = LineIndex::new(text);
    r.diagnostics
        .iter()
        .map(|d| d.render_short(path, &idx))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn bsgp_examples_check() {
    let mut n = 0;
    for entry in std::fs::read_dir(examples_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("bsgp") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let p = path.display().to_string();
        let r = check_source(&p, &text, Language::Bsgp);
        assert!(r.diagnostics.is_empty(), "{}", render(&p, &text, &r));
        let errs = pgpu_csubset::hir_verify::verify(r.hir.as_ref().unwrap());
        assert!(errs.is_empty(), "{p}: {errs:?}");
        n += 1;
    }
    assert!(n >= 6, "expected the paper's listings in examples/bsgp");
}
