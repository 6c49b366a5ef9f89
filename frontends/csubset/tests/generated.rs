//! Randomly generated programs (mostly valid): the ones without errors
//! must give a well-formed HIR (`hir_verify`), in C and in BSGP. With
//! `GEN_OUT=dir` the valid programs are written to `dir`.

#![allow(clippy::unwrap_used)]

use pgpu_csubset::{Language, analyze_source, hir_verify};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const VARS: &[&str] = &["c", "b", "i", "u", "l", "ul", "f", "d"];
const INT_VARS: &[&str] = &["c", "i", "u", "l", "ul", "s.x", "a[1]"];
const DECLS: &str = "char c = 'a'; bool b = true; int i = 1; unsigned u = 2u; long l = 3l; unsigned long ul = 4ul; float f = 1.5f; double d = 2.5; int a[8] = {1, 2, 3, 4, 5, 6, 7, 8}; int* p = a; struct S s = {1, 2.0f}; struct S* ps = sg;";

fn expr(r: &mut Rng, depth: u32) -> String {
    if depth == 0 {
        return match r.below(6) {
            0 => r
                .pick(&["0", "1", "7u", "3l", "2.0", "0.5f", "'x'", "true", "false"])
                .to_string(),
            1 => "a[i & 7]".into(),
            2 => "s.x".into(),
            3 => "ps->y".into(),
            4 => "*p".into(),
            _ => r.pick(VARS).to_string(),
        };
    }
    let d = depth - 1;
    match r.below(12) {
        0..=2 => {
            let op = r.pick(&[
                "+", "-", "*", "/", "==", "!=", "<", "<=", ">", ">=", "&&", "||",
            ]);
            format!("({} {op} {})", expr(r, d), expr(r, d))
        }
        3 | 4 => {
            // Integer-only operators on integer operands.
            let op = r.pick(&["%", "<<", ">>", "&", "|", "^"]);
            let t = r.pick(&["int", "unsigned", "long", "char", "unsigned long"]);
            format!("(({t})({}) {op} (int)({}))", expr(r, d), expr(r, d))
        }
        5 => match r.below(2) {
            0 => format!("{}({})", r.pick(&["-", "!", "+"]), expr(r, d)),
            _ => format!("~(long)({})", expr(r, d)),
        },
        6 => format!("({} ? {} : {})", expr(r, d), expr(r, d), expr(r, d)),
        7 => format!(
            "({}){}",
            r.pick(&[
                "int",
                "char",
                "bool",
                "long",
                "unsigned",
                "float",
                "double",
                "unsigned long"
            ]),
            expr(r, d)
        ),
        8 => format!("sq({})", expr(r, d)),
        9 => match r.below(2) {
            0 => format!(
                "({} {} {})",
                r.pick(VARS),
                r.pick(&["=", "+=", "-=", "*=", "/="]),
                expr(r, d)
            ),
            _ => format!(
                "({} {} (int)({}))",
                r.pick(INT_VARS),
                r.pick(&["%=", "<<=", ">>=", "&=", "|=", "^="]),
                expr(r, d)
            ),
        },
        10 => format!("{}{}", r.pick(&["++", "--"]), r.pick(INT_VARS)),
        _ => format!("p[(int)({}) & 7]", expr(r, d)),
    }
}

fn stmt(r: &mut Rng, depth: u32, out: &mut String) {
    let d = depth.saturating_sub(1);
    match if depth == 0 { 0 } else { r.below(6) } {
        0 | 1 => out.push_str(&format!("{};\n", expr(r, 3))),
        2 => {
            out.push_str(&format!("if ({}) {{\n", expr(r, 2)));
            stmt(r, d, out);
            out.push_str("} else {\n");
            stmt(r, d, out);
            out.push_str("}\n");
        }
        3 => {
            out.push_str(&format!("for (int k = 0; k < {}; k++) {{\n", expr(r, 1)));
            stmt(r, d, out);
            out.push_str("}\n");
        }
        4 => {
            out.push_str(&format!("while ({}) {{\n", expr(r, 2)));
            stmt(r, d, out);
            out.push_str("break;\n}\n");
        }
        _ => out.push_str(&format!(
            "printf(\"%d %f\\n\", (int)({}), (double)({}));\n",
            expr(r, 2),
            expr(r, 2)
        )),
    }
}

fn spawn_block(r: &mut Rng, out: &mut String) {
    out.push_str("spawn(4) {\n  t = thread.rank;\n  v = a[t & 7] + (int)f;\n");
    for _ in 0..r.below(4) {
        match r.below(6) {
            0 => out.push_str("  barrier;\n  g = thread.get(t, v);\n  a[t & 7] = g;\n"),
            1 => out.push_str("  v = reduce(+, v);\n"),
            2 => out.push_str("  w = scan(max, v);\n"),
            3 => out.push_str("  require q = dtempnew[4]float;\n  q[t & 3] = (float)v;\n"),
            4 => out.push_str("  thread.sortby(v);\n  t = thread.rank;\n"),
            _ => out.push_str(&format!("  v = v * {} + t;\n", r.below(9))),
        }
    }
    out.push_str("}\n");
}

#[test]
fn generated_programs_verify() {
    let mut r = Rng(0x1234_5678_9ABC_DEF1);
    let mut clean = 0;
    for n in 0..600 {
        let bsgp = n % 2 == 1;
        let mut src = String::from(
            "struct S { int x; float y; };\nstruct S sg[2];\nint sq(int v) { return v * v; }\nint main() {\n",
        );
        src.push_str(DECLS);
        src.push('\n');
        for _ in 0..4 {
            stmt(&mut r, 2, &mut src);
        }
        if bsgp {
            spawn_block(&mut r, &mut src);
        }
        src.push_str("return 0;\n}\n");
        let lang = if bsgp { Language::Bsgp } else { Language::C };
        let (hir, diags) = analyze_source(&src, lang);
        if let Some(d) = diags.iter().find(|d| d.is_error()) {
            if std::env::var("GEN_DEBUG").is_ok() {
                eprintln!("{} {}", d.code, d.message);
            }
            continue;
        }
        clean += 1;
        // `GEN_OUT=dir` keeps the valid programs (inputs for testing the
        // lowering and the interpreter).
        if let Ok(dir) = std::env::var("GEN_OUT") {
            let _ = std::fs::write(format!("{dir}/gen{n}.bsgp"), &src);
        }
        let errs = hir_verify::verify(&hir);
        assert!(errs.is_empty(), "{src}\n{errs:?}");
    }
    assert!(clean > 500, "only {clean} generated programs were valid");
}
