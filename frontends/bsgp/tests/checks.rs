//! The BSGP checks on the paper's listings (clean) and on the malformed
//! corpus (each file reports its errors).

#![allow(clippy::unwrap_used, clippy::panic)]

use pgpu_bsgp::check::{check_source, codes};
use pgpu_csubset::LineIndex;
use std::path::Path;

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn codes_of(text: &str) -> Vec<&'static str> {
    check_source("t.bsgp", text)
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect()
}

fn render(text: &str) -> String {
    let r = check_source("t.bsgp", text);
    let idx = LineIndex::new(text);
    r.diagnostics
        .iter()
        .map(|d| d.render_short("t.bsgp", &idx))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn listings_are_clean() {
    for entry in std::fs::read_dir(root().join("examples/bsgp")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("bsgp") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let r = check_source(&path.display().to_string(), &text);
        assert!(
            r.diagnostics.is_empty(),
            "{}:\n{}",
            path.display(),
            render(&text)
        );
        assert!(r.hir.is_some());
    }
}

#[test]
fn listing3_marks_spmd_functions() {
    let text = std::fs::read_to_string(root().join("examples/bsgp/listing3_sortby_expanded.bsgp"))
        .unwrap();
    let hir = check_source("l3", &text).hir.unwrap();
    let f = hir.function_by_name("local_sort").unwrap();
    assert!(f.uses_spmd && !f.spmd_inline);
    let g = hir.function_by_name("global_merge").unwrap();
    assert!(!g.uses_spmd && g.has_spawn);
}

fn malformed(name: &str) -> String {
    std::fs::read_to_string(
        root()
            .join("test-suite/frontends/malformed/Inputs")
            .join(name),
    )
    .unwrap()
}

#[test]
fn write_kernel_parameter() {
    let c = codes_of(&malformed("write_kernel_parameter.bsgp"));
    assert_eq!(c, vec![codes::HOST_WRITE, codes::HOST_WRITE], "{c:?}");
}

#[test]
fn barrier_in_control_flow() {
    let c = codes_of(&malformed("barrier_in_if.bsgp"));
    assert_eq!(
        c,
        vec![
            codes::BARRIER_IN_CONTROL_FLOW,
            codes::BARRIER_IN_CONTROL_FLOW
        ],
        "{c:?}"
    );
    let c = codes_of(&malformed("barrier_in_loop.bsgp"));
    assert_eq!(c, vec![codes::BARRIER_IN_CONTROL_FLOW], "{c:?}");
}

#[test]
fn get_not_live() {
    let c = codes_of(&malformed("get_not_live.bsgp"));
    assert_eq!(c, vec![codes::GET_NOT_LIVE], "{c:?}");
    // With a barrier in between it is fine.
    let ok = "void f(int* a, int n) { spawn(n) { v = a[thread.rank]; barrier; w = thread.get(thread.rank + 1, v); a[thread.rank] = w; } }";
    assert!(codes_of(ok).is_empty(), "{}", render(ok));
    // A host variable is never live.
    let bad = "void f(int* a, int n) { spawn(n) { barrier; w = thread.get(0, n); a[0] = w; } }";
    assert_eq!(codes_of(bad), vec![codes::GET_NOT_LIVE]);
}

#[test]
fn misplaced_constructs() {
    let c = codes_of(&malformed("misplaced_constructs.bsgp"));
    assert_eq!(
        c,
        vec![
            codes::SPMD_OUTSIDE_SPAWN,
            codes::SPMD_OUTSIDE_SPAWN,
            codes::REQUIRE_OUTSIDE_SPAWN,
            codes::NESTED_SPAWN
        ],
        "{}",
        render(&malformed("misplaced_constructs.bsgp"))
    );
}

#[test]
fn other_checks() {
    let host_call = "inline int r() { return thread.rank; } int main() { return r(); }";
    assert_eq!(codes_of(host_call), vec![codes::SPMD_CALL_FROM_HOST]);
    let ret = "void f(int n) { spawn(n) { return; } }";
    assert_eq!(codes_of(ret), vec![codes::RETURN_IN_SPAWN]);
    let global = "int g; void f(int n) { spawn(n) { g = 1; } }";
    assert_eq!(codes_of(global), vec![codes::HOST_WRITE]);
    let global_ok =
        "int* g; void f(int n) { spawn(n) { require g = dnew[n]int; g[thread.rank] = 1; } }";
    assert!(codes_of(global_ok).is_empty(), "{}", render(global_ok));
    let device_fn = "int g; void bump() { g = 2; } void f(int n) { spawn(n) { bump(); } }";
    assert_eq!(codes_of(device_fn), vec![codes::HOST_WRITE]);
    let cond_collective = "void f(int* a, int n) { spawn(n) { x = a[0] > 0 ? reduce(+, a[thread.rank]) : 0; a[0] = x; } }";
    assert_eq!(
        codes_of(cond_collective),
        vec![codes::BARRIER_IN_CONTROL_FLOW]
    );
    let sync_call = "inline int s(int x) { barrier; return x; } void f(int* a, int n) { spawn(n) { if (n > 1) { y = s(1); a[0] = y; } } }";
    assert_eq!(codes_of(sync_call), vec![codes::BARRIER_IN_CONTROL_FLOW]);
    let require_collective = "void f(int* a, int n) { spawn(n) { require { barrier; } } }";
    assert_eq!(
        codes_of(require_collective),
        vec![codes::SPMD_OUTSIDE_SPAWN]
    );
    let scan_host = "void f(int n) { int t = 0; spawn(n) { s = scan(+, t); } }";
    assert_eq!(codes_of(scan_host), vec![codes::HOST_WRITE]);
    let put_ok = "void f(int* a, int n) { spawn(n) { p = 0; thread.put(thread.rank + 1, p, 5); barrier; a[thread.rank] = p; } }";
    assert!(codes_of(put_ok).is_empty(), "{}", render(put_ok));
}

/// The checks never panic, also on programs with errors (their HIR has
/// `Error` nodes): every prefix of every example.
#[test]
fn checks_survive_broken_programs() {
    for entry in std::fs::read_dir(root().join("examples/bsgp")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut cut = 0;
        while cut <= text.len() {
            if text.is_char_boundary(cut) {
                let (hir, _) = pgpu_csubset::sema::analyze(
                    &pgpu_csubset::parse_source(&text[..cut], pgpu_csubset::Language::Bsgp).0,
                    pgpu_csubset::Language::Bsgp,
                );
                let _ = pgpu_bsgp::check::check(&hir);
            }
            cut += 7;
        }
    }
}
