//! Never panic, never hang: truncated prefixes of every example, random
//! bytes, random token soup and deep nesting, in every language.

#![allow(clippy::unwrap_used, clippy::panic)]

use pgpu_csubset::{Language, analyze_source, parse_source, sema};

/// Parse and check on this thread (small inputs: no big stack needed).
/// When the input happens to be error free, the HIR must be well formed.
fn quick(text: &str, lang: Language) {
    let (ast, mut diags) = parse_source(text, lang);
    let (hir, sdiags) = sema::analyze(&ast, lang);
    diags.extend(sdiags);
    if !diags.iter().any(|d| d.is_error()) {
        let errs = pgpu_csubset::hir_verify::verify(&hir);
        assert!(errs.is_empty(), "{text}: {errs:?}");
    }
}
use std::path::Path;

const LANGS: [Language; 3] = [Language::C, Language::Bsgp, Language::Fork];

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
}

fn examples() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bsgp");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        out.push(std::fs::read_to_string(p).unwrap());
    }
    let malformed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-suite/frontends/malformed/Inputs");
    if let Ok(rd) = std::fs::read_dir(malformed) {
        for e in rd {
            let bytes = std::fs::read(e.unwrap().path()).unwrap();
            out.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    out
}

#[test]
fn truncated_prefixes() {
    for text in examples() {
        let mut cut = 0;
        while cut <= text.len() {
            if text.is_char_boundary(cut) {
                for lang in LANGS {
                    quick(&text[..cut], lang);
                }
            }
            cut += 1;
        }
    }
}

#[test]
fn random_bytes() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..3000 {
        let len = rng.below(200);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let text = String::from_utf8_lossy(&bytes);
        for lang in LANGS {
            quick(&text, lang);
        }
    }
}

#[test]
fn random_token_soup() {
    let vocab = [
        "int",
        "void",
        "float",
        "struct",
        "S",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        ";",
        ",",
        "=",
        "+=",
        "+",
        "-",
        "*",
        "/",
        "&",
        "&&",
        "||",
        "!",
        "?",
        ":",
        "<",
        "<<=",
        "x",
        "y",
        "f",
        "1",
        "2.5f",
        "'c'",
        "\"s%d\"",
        "if",
        "else",
        "for",
        "while",
        "do",
        "return",
        "break",
        "spawn",
        "barrier",
        "require",
        "par",
        "thread",
        ".",
        "->",
        "rank",
        "get",
        "fork",
        "dnew",
        "[3]",
        "reduce",
        "scan",
        "printf",
        "argi",
        "NULL",
        "sizeof",
        "++",
        "--",
        "$",
        "@",
        "sh",
        "start",
        "seq",
        "#pragma pgpu speculate\n",
        "inline",
        "unsigned",
        "long",
        "x = 1;",
        "RANK_REASSIGNED",
    ];
    let mut rng = Rng(12345);
    for _ in 0..4000 {
        let n = rng.below(60);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(vocab[rng.below(vocab.len())]);
            s.push(' ');
        }
        for lang in LANGS {
            quick(&s, lang);
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let n = 5000;
    let inputs = [
        format!("int f() {{ return {}1{}; }}", "(".repeat(n), ")".repeat(n)),
        format!("int f() {{ return {}1; }}", "-".repeat(n)),
        format!("void f() {}{}", "{".repeat(n), "}".repeat(n)),
        format!("void f() {{ {} ; }}", "if (1) ".repeat(n)),
        format!("void f(int a) {{ {} 1; }}", "a = ".repeat(n)),
        format!("int f(int a) {{ return {} 1; }}", "a ? 1 : ".repeat(n)),
        format!("int a[1] = {}1{};", "{".repeat(n), "}".repeat(n)),
        "(".repeat(n),
        "{".repeat(n),
    ];
    for text in &inputs {
        for lang in LANGS {
            let (_, diags) = analyze_source(text, lang);
            assert!(diags.iter().any(|d| d.is_error()));
        }
    }
    // Moderate nesting is fine.
    let ok = format!(
        "int f() {{ return {}1{}; }}",
        "(".repeat(50),
        ")".repeat(50)
    );
    let (_, diags) = analyze_source(&ok, Language::C);
    assert!(diags.is_empty(), "{diags:?}");
}

#[test]
fn long_flat_inputs_are_fast() {
    // Left-associative chains and long statement lists are iterative.
    let chain = format!("int f(int a) {{ return a{}; }}", " + a".repeat(250));
    let (_, d) = analyze_source(&chain, Language::C);
    assert!(d.is_empty());
    let too_long = format!("int f(int a) {{ return a{}; }}", " + a".repeat(20000));
    let (_, d) = analyze_source(&too_long, Language::C);
    assert_eq!(d[0].code, "csubset::E016");
    let many = format!("void f() {{ int x = 0; {} }}", "x = x + 1; ".repeat(20000));
    let (_, d) = analyze_source(&many, Language::C);
    assert!(d.is_empty());
}

#[test]
fn mutated_examples() {
    let mut rng = Rng(0xDEAD_BEEF_1234_5678);
    let snippets = [
        "barrier;",
        "}",
        "{",
        ";",
        "x = 1;",
        "thread.rank",
        "(",
        ")",
        "int ",
        "*",
        "spawn(4) {",
        "require ",
        "par {",
        "return;",
        "break;",
        "0",
        "1.5f",
        "NULL",
        "&",
        "[",
        "]",
        ",",
        "thread.get(0, x)",
        "reduce(+, 1)",
        "if (1)",
        "else",
        "while (0)",
        "dnew[2]int",
    ];
    for text in examples() {
        let lines: Vec<&str> = text.lines().collect();
        for _ in 0..150 {
            let mut s = String::new();
            let mut ls = lines.clone();
            match rng.below(4) {
                0 if !ls.is_empty() => {
                    let i = rng.below(ls.len());
                    ls.remove(i);
                }
                1 if !ls.is_empty() => {
                    let (i, j) = (rng.below(ls.len()), rng.below(ls.len()));
                    ls.swap(i, j);
                }
                2 if !ls.is_empty() => {
                    let i = rng.below(ls.len());
                    let l = ls[i];
                    ls.insert(i, l);
                }
                _ => {}
            }
            for l in &ls {
                s.push_str(l);
                s.push('\n');
            }
            // Insert a snippet at a random char boundary.
            let mut at = rng.below(s.len() + 1);
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            s.insert_str(at, snippets[rng.below(snippets.len())]);
            for lang in LANGS {
                quick(&s, lang);
            }
        }
    }
}
