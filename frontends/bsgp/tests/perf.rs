//! Parsing and checking a 10,000-line program is fast (linear).

#![allow(clippy::unwrap_used)]

use pgpu_bsgp::check::check_source;
use std::time::Instant;

const TEMPLATE: &str = "
int helper@(int x, int y) {
  int acc = 0;
  for (int i = 0; i < y; i++) {
    if ((x + i) % 3 == 0)
      acc += x * i;
    else if ((x + i) % 3 == 1)
      acc -= i;
    else
      acc ^= x << (i % 5);
  }
  while (acc > 1000)
    acc = acc / 2;
  return acc;
}

inline int keyOf@(int v) {
  return (v * 2654435 + @) % 1021;
}

void kernel@(int* a, int* b, float* f, int n) {
  spawn(n) {
    rk = thread.rank;
    v = a[rk];
    w = keyOf@(v);
    s = v + w * 3 - (v >> 2);
    fl = (float)s * 0.5f + f[rk];
    require
      tmp = dtempnew[n]int;
    tmp[rk] = s;
    thread.sortby(w);
    barrier;
    prev = thread.rank > 0 ? thread.get(thread.rank - 1, s) : 0;
    total = reduce(+, s);
    b[thread.rank] = prev + total % 7;
    f[thread.rank] = fl;
  }
}

int driver@(int n) {
  int* a = dnew[n]int;
  int* b = dnew[n]int;
  float* f = dnew[n]float;
  for (int i = 0; i < n; i++) {
    a[i] = helper@(i, 4);
    f[i] = (float)i;
  }
  kernel@(a, b, f, n);
  long sum = 0;
  for (int i = 0; i < n; i++)
    sum += (long)b[i];
  printf(\"copy @: %ld\\n\", sum);
  return (int)(sum % 100);
}
";

fn program(lines: usize) -> String {
    let per = TEMPLATE.lines().count();
    let copies = lines / per + 1;
    let mut s = String::new();
    for k in 0..copies {
        s.push_str(&TEMPLATE.replace('@', &k.to_string()));
    }
    s.push_str("int main() {\n  int r = 0;\n");
    for k in 0..copies {
        s.push_str(&format!("  r += driver{k}(8);\n"));
    }
    s.push_str("  printf(\"%d\\n\", r);\n  return 0;\n}\n");
    s
}

#[test]
fn ten_thousand_lines() {
    let text = program(10_000);
    assert!(text.lines().count() >= 10_000);
    let start = Instant::now();
    let r = check_source("big.bsgp", &text);
    let t = start.elapsed();
    assert!(
        r.diagnostics.is_empty(),
        "{:?}",
        &r.diagnostics[..r.diagnostics.len().min(3)]
    );
    eprintln!("10k lines: {t:?}");
    let errs = pgpu_csubset::hir_verify::verify(r.hir.as_ref().unwrap());
    assert!(errs.is_empty(), "{errs:?}");
    if !cfg!(debug_assertions) {
        assert!(t.as_secs_f64() < 0.5, "took {t:?}");
    }
    // Linear: 4x the input takes well under 16x the time.
    let big = program(40_000);
    let start = Instant::now();
    let r = check_source("big.bsgp", &big);
    let t4 = start.elapsed();
    assert!(!r.has_errors());
    eprintln!("40k lines: {t4:?}");
    assert!(
        t4.as_secs_f64() < t.as_secs_f64() * 10.0 + 0.05,
        "{t:?} vs {t4:?}"
    );
}
