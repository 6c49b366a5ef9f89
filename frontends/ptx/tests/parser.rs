//! The PTX frontend end to end: literals as the lexer reads them, every
//! PTX file of the test suite through parse, check, print and parse again,
//! the diagnostics (kind, code, line, text at the span) of malformed and
//! unsupported input, and the regressions found by fuzzing
//! (`frontends/ptx/fuzz`).

use pgpu_ptx::ir::{
    Component, Flag, FunctionKind, Immediate, Item, Modifier, Module, Opcode, Operand, ScalarType,
    StateSpace, Statement,
};
use pgpu_ptx::lexer::{TokenKind, lex};
use pgpu_ptx::{ErrorKind, PtxError};
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------- helpers

fn kinds(source: &str) -> Vec<TokenKind> {
    match lex(source) {
        Ok(tokens) => tokens.into_iter().map(|t| t.kind).collect(),
        Err(error) => panic!("`{source}` does not lex: {error}"),
    }
}

/// The one token of `source`.
fn token(source: &str) -> TokenKind {
    let tokens = kinds(source);
    assert_eq!(tokens.len(), 1, "`{source}` is one token: {tokens:?}");
    tokens.into_iter().next().unwrap_or(TokenKind::Punct('?'))
}

fn int(value: u64, unsigned: bool) -> TokenKind {
    TokenKind::Integer { value, unsigned }
}

fn parse(source: &str) -> Module {
    match pgpu_ptx::parse(source) {
        Ok(module) => module,
        Err(error) => panic!(
            "does not parse: {error} at line {}\n{source}",
            error.span.line(source)
        ),
    }
}

/// A kernel `k` whose body is `body`.
fn kernel(body: &str) -> String {
    format!(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n{body}}}\n")
}

/// The instructions of the first function's body, nested blocks included.
fn instructions(module: &Module) -> Vec<pgpu_ptx::ir::Instruction> {
    fn walk(body: &[Statement], out: &mut Vec<pgpu_ptx::ir::Instruction>) {
        for statement in body {
            match statement {
                Statement::Instruction(instruction) => out.push(instruction.clone()),
                Statement::Block(inner) => walk(inner, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    if let Some(body) = module.functions().next().and_then(|f| f.body.as_ref()) {
        walk(body, &mut out);
    }
    out
}

/// The one instruction of kernel body `body`.
fn instruction(body: &str) -> pgpu_ptx::ir::Instruction {
    let all = instructions(&parse(&kernel(body)));
    assert_eq!(all.len(), 1, "one instruction in `{body}`");
    all.into_iter().next().expect("one instruction")
}

/// Parses, checks, prints and parses again; the second parse must equal
/// the first, and printing is a fixed point.
fn round_trip(name: &str, source: &str) -> Module {
    let module = parse(source);
    if let Err(error) = pgpu_ptx::check::check(&module) {
        panic!(
            "{name}: check fails: {error} at line {}",
            error.span.line(source)
        );
    }
    let printed = pgpu_ptx::print(&module);
    let reparsed = match pgpu_ptx::parse(&printed) {
        Ok(reparsed) => reparsed,
        Err(error) => panic!(
            "{name}: the printed text does not parse: {error} at line {}\n{printed}",
            error.span.line(&printed)
        ),
    };
    assert_eq!(
        reparsed, module,
        "{name}: the round trip changes the module"
    );
    assert_eq!(
        pgpu_ptx::print(&reparsed),
        printed,
        "{name}: printing is not a fixed point"
    );
    module
}

/// The error of `source` (parse, then check).
fn error(source: &str) -> PtxError {
    match pgpu_ptx::parse_and_check(source) {
        Ok(_) => panic!("no error for\n{source}"),
        Err(error) => error,
    }
}

/// The text an error's span covers.
fn spanned<'a>(source: &'a str, error: &PtxError) -> &'a str {
    &source[error.span.start..error.span.end]
}

fn test_suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-suite")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------- lexer

#[test]
fn hexadecimal_float_literals_keep_their_bits() {
    assert_eq!(token("0f3F800000"), TokenKind::F32(0x3F80_0000));
    assert_eq!(token("0F40490FDB"), TokenKind::F32(0x4049_0FDB));
    assert_eq!(token("0f7FC00000"), TokenKind::F32(0x7FC0_0000));
    assert_eq!(
        token("0d3FF0000000000000"),
        TokenKind::F64(0x3FF0_0000_0000_0000)
    );
    assert_eq!(
        token("0D400921FB54442D18"),
        TokenKind::F64(0x4009_21FB_5444_2D18)
    );
    // Lower-case digits too.
    assert_eq!(token("0fbf800000"), TokenKind::F32(0xBF80_0000));
}

#[test]
fn integer_literals_in_every_radix() {
    assert_eq!(token("0"), int(0, false));
    assert_eq!(token("42"), int(42, false));
    assert_eq!(token("0x1F"), int(31, false));
    assert_eq!(token("0XfF"), int(255, false));
    assert_eq!(token("017"), int(0o17, false));
    assert_eq!(token("0b101"), int(5, false));
    assert_eq!(token("0B11"), int(3, false));
    assert_eq!(token("18446744073709551615"), int(u64::MAX, false));
    // The U suffix, on every radix.
    assert_eq!(token("42U"), int(42, true));
    assert_eq!(token("7u"), int(7, true));
    assert_eq!(token("0xFFFFFFFFU"), int(0xFFFF_FFFF, true));
    assert_eq!(token("017U"), int(0o17, true));
    assert_eq!(token("0b101U"), int(5, true));
    assert_eq!(token("0U"), int(0, true));
    // A minus sign is its own token.
    assert_eq!(kinds("-1"), vec![TokenKind::Punct('-'), int(1, false)]);
}

#[test]
fn decimal_float_literals_are_f64() {
    let f64_token = |x: f64| TokenKind::F64(x.to_bits());
    assert_eq!(token("1.5"), f64_token(1.5));
    assert_eq!(token("0.1"), f64_token(0.1));
    assert_eq!(token("2.5e-3"), f64_token(2.5e-3));
    assert_eq!(token("1e10"), f64_token(1e10));
    assert_eq!(token("1E+2"), f64_token(100.0));
    assert_eq!(token("3.0"), f64_token(3.0));
    // Digits without a point or an exponent are an integer.
    assert_eq!(token("30"), int(30, false));
}

#[test]
fn special_register_is_a_register_and_a_component() {
    let tokens = lex("%tid.x").expect("lexes");
    assert_eq!(tokens.len(), 2);
    assert_eq!(tokens[0].kind, TokenKind::Ident("%tid".into()));
    assert_eq!(tokens[1].kind, TokenKind::Directive("x".into()));
    assert!(!tokens[1].spaced, "the component follows without a space");
    assert_eq!((tokens[1].span.start, tokens[1].span.end), (4, 6));

    let mov = instruction(".reg .b32 %r<2>;\nmov.u32 %r1, %ntid.y;\n");
    assert_eq!(
        mov.operands,
        vec![
            Operand::Name("%r1".into()),
            Operand::Component("%ntid".into(), Component::Y)
        ]
    );
    // `.r .g .b .a` are the same components as `.x .y .z .w`.
    let rgba = instruction(".reg .b32 %r<2>;\nmov.u32 %r1, %ctaid.b;\n");
    assert_eq!(
        rgba.operands[1],
        Operand::Component("%ctaid".into(), Component::Z)
    );
}

#[test]
fn qualified_directives_are_one_token() {
    assert_eq!(
        kinds(".shared::cta"),
        vec![TokenKind::Directive("shared::cta".into())]
    );
    assert_eq!(
        kinds(".L1::no_allocate"),
        vec![TokenKind::Directive("L1::no_allocate".into())]
    );
    // A `::` that nothing follows is not part of the name.
    assert_eq!(
        kinds(".shared::"),
        vec![
            TokenKind::Directive("shared".into()),
            TokenKind::Punct(':'),
            TokenKind::Punct(':')
        ]
    );

    let load = instruction(
        ".reg .b64 %rd<2>;\n.reg .f32 %f<2>;\nld.global.nc.L1::no_allocate.f32 %f1, [%rd1];\n",
    );
    assert_eq!(
        load.modifiers,
        vec![
            Modifier::Space(StateSpace::Global),
            Modifier::Flag(Flag::Nc),
            Modifier::Flag(Flag::L1NoAllocate),
            Modifier::Type(ScalarType::F32),
        ]
    );
    let store = instruction(".reg .b32 %r<3>;\nst.shared::cta.u32 [%r1], %r2;\n");
    assert_eq!(store.space(), Some(StateSpace::SharedCta));
}

#[test]
fn strings_comments_and_punctuation() {
    assert_eq!(
        kinds("/* a */ .file 1 \"a\\\"b.cu\" // c\n;"),
        vec![
            TokenKind::Directive("file".into()),
            int(1, false),
            TokenKind::String("a\\\"b.cu".into()),
            TokenKind::Punct(';'),
        ]
    );
}

#[test]
fn malformed_literals_are_errors_at_their_span() {
    for (text, message) in [
        ("0f3F80", "malformed f32 literal `0f3F80`"),
        ("0f3F80000000", "malformed f32 literal `0f3F80000000`"),
        ("0d3FF0", "malformed f64 literal `0d3FF0`"),
        ("0x", "malformed integer `0x`"),
        ("09", "malformed integer `09`"),
        ("0b102", "malformed integer `0b102`"),
        (
            "18446744073709551616",
            "malformed integer `18446744073709551616`",
        ),
    ] {
        let source = format!("  {text} ");
        let error = lex(&source).expect_err(text);
        assert_eq!(error.kind, ErrorKind::Syntax, "{text}");
        assert_eq!(error.message, message, "{text}");
        assert_eq!(
            (error.span.start, error.span.end),
            (2, 2 + text.len()),
            "{text}"
        );
    }
}

// ---------------------------------------------------------------- parser

#[test]
fn immediates_keep_sign_and_kind() {
    let add = instruction(".reg .b32 %r<3>;\nadd.s32 %r1, %r2, -1;\n");
    assert_eq!(add.operands[2], Operand::Immediate(Immediate::Int(-1)));
    let unsigned = instruction(".reg .b32 %r<3>;\nadd.u32 %r1, %r2, 0xFFFFFFFFU;\n");
    assert_eq!(
        unsigned.operands[2],
        Operand::Immediate(Immediate::Uint(0xFFFF_FFFF))
    );
    let negative_float = instruction(".reg .f32 %f<3>;\nadd.f32 %f1, %f2, -0f3F800000;\n");
    assert_eq!(
        negative_float.operands[2],
        Operand::Immediate(Immediate::F32(0xBF80_0000))
    );
    let decimal = instruction(".reg .f64 %fd<3>;\nadd.f64 %fd1, %fd2, 0.5;\n");
    assert_eq!(
        decimal.operands[2],
        Operand::Immediate(Immediate::F64(0.5f64.to_bits()))
    );
    assert_eq!(decimal.opcode, Opcode::Add);
}

#[test]
fn every_nvcc_file_round_trips() {
    let directory = test_suite().join("ptx/nvcc");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&directory)
        .unwrap_or_else(|e| panic!("{}: {e}", directory.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "ptx"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 16,
        "expected the 16 nvcc files, found {}",
        files.len()
    );
    for path in &files {
        let name = path.display().to_string();
        let module = round_trip(&name, &read(path));
        assert!(
            module.functions().any(|f| f.kind == FunctionKind::Entry),
            "{name}: no kernel"
        );
        assert!(
            module.version >= (6, 0),
            "{name}: version {:?}",
            module.version
        );
        assert!(!module.target.is_empty(), "{name}: no target");
    }
}

#[test]
fn families_round_trip() {
    let path = test_suite().join("frontends/ptx/families.ptx");
    let module = round_trip("families.ptx", &read(&path));
    assert_eq!(module.version, (8, 5));
    assert_eq!(module.target, vec!["sm_90".to_string()]);
    assert!(module.kernel("integer_arithmetic").is_some());
    let globals = module
        .items
        .iter()
        .filter(|item| matches!(item, Item::Variable(_)))
        .count();
    assert_eq!(globals, 3, "weights, table_address, dynamic_shared");
}

#[test]
fn round_trip_comparison_sees_changes() {
    // The round trip compares modules; spans do not count, content does.
    let source = kernel(".reg .b32 %r<3>;\nadd.s32 %r1, %r2, 1;\nret;\n");
    let module = parse(&source);
    let respaced = parse(&source.replace("add.s32 %r1", "add.s32\t\t%r1"));
    assert_eq!(module, respaced);
    let changed = parse(&source.replace(", 1;", ", 2;"));
    assert_ne!(module, changed);
    let mut renamed = module.clone();
    renamed.version = (8, 1);
    assert_ne!(module, renamed);
}

// ---------------------------------------------------------------- errors

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n";

#[test]
fn unknown_instruction() {
    let source = format!("{HEADER}\tfrobnicate.b32 %r1;\n}}\n");
    let error = error(&source);
    assert_eq!(error.kind, ErrorKind::Syntax);
    assert_eq!(error.kind.code(), "ptx::E001");
    assert_eq!(error.message, "unknown instruction `frobnicate`");
    assert_eq!(error.span.line(&source), 6);
    assert_eq!(spanned(&source, &error), "frobnicate");
}

#[test]
fn unsupported_instruction() {
    let source = format!("{HEADER}\ttex.1d.v4.f32.s32 {{%f1, %f2, %f1, %f2}}, [t, {{%f1}}];\n}}\n");
    let error = error(&source);
    assert_eq!(error.kind, ErrorKind::UnsupportedInstruction);
    assert_eq!(error.kind.code(), "ptx::E002");
    assert_eq!(error.message, "the PTX instruction `tex` is not supported");
    assert!(error.help.is_some());
    assert_eq!(error.span.line(&source), 6);
    assert_eq!(spanned(&source, &error), "tex");
}

#[test]
fn unknown_modifier() {
    let source = format!("{HEADER}\t.reg .b32 %r<3>;\n\tadd.foo.s32 %r1, %r2, %r2;\n\tret;\n}}\n");
    let error = error(&source);
    assert_eq!(error.kind, ErrorKind::Modifier);
    assert_eq!(error.kind.code(), "ptx::E004");
    assert_eq!(error.message, "unknown modifier `.foo` on `add`");
    assert_eq!(error.span.line(&source), 7);
    assert_eq!(spanned(&source, &error), ".foo");
}

#[test]
fn undeclared_register() {
    let source = format!("{HEADER}\t.reg .b32 %r<3>;\n\tadd.s32 %r1, %r2, %r9;\n\tret;\n}}\n");
    // Syntax is fine; the checker finds it.
    assert!(pgpu_ptx::parse(&source).is_ok());
    let error = error(&source);
    assert_eq!(error.kind, ErrorKind::Undeclared);
    assert_eq!(error.kind.code(), "ptx::E006");
    assert_eq!(error.message, "register or variable `%r9` is not declared");
    assert_eq!(error.span.line(&source), 7);
    assert_eq!(spanned(&source, &error), "add.s32 %r1, %r2, %r9;");
    // `%r<3>` declares %r0 to %r2: %r3 is one too many, %r02 is no name of it.
    for name in ["%r3", "%r02"] {
        let source = format!("{HEADER}\t.reg .b32 %r<3>;\n\tmov.b32 %r1, {name};\n}}\n");
        assert_eq!(error_kind(&source), ErrorKind::Undeclared, "{name}");
    }
    let source = format!("{HEADER}\t.reg .b32 %r<3>;\n\tmov.b32 %r1, %r2;\n}}\n");
    assert!(pgpu_ptx::parse_and_check(&source).is_ok());
}

fn error_kind(source: &str) -> ErrorKind {
    error(source).kind
}

#[test]
fn undeclared_label() {
    let source = format!("{HEADER}\tbra.uni $L__BB0_9;\n$L__BB0_1:\n\tret;\n}}\n");
    let error = error(&source);
    assert_eq!(error.kind, ErrorKind::Undeclared);
    assert_eq!(error.message, "label `$L__BB0_9` is not declared");
    assert_eq!(error.span.line(&source), 6);
    // The declared label is fine.
    let fixed = source.replace("$L__BB0_9;", "$L__BB0_1;");
    assert!(pgpu_ptx::parse_and_check(&fixed).is_ok());
}

#[test]
fn wrong_operand_count() {
    let source = format!("{HEADER}\t.reg .b32 %r<3>;\n\tadd.s32 %r1, %r2;\n\tret;\n}}\n");
    let error = error(&source);
    assert_eq!(error.kind, ErrorKind::Operands);
    assert_eq!(error.kind.code(), "ptx::E005");
    assert_eq!(error.message, "`add` takes 3 operands, not 2");
    assert_eq!(error.span.line(&source), 7);
    let ret = format!("{HEADER}\tret 1;\n}}\n");
    assert_eq!(error_kind(&ret), ErrorKind::Operands);
}

#[test]
fn duplicate_declaration() {
    let source = format!("{HEADER}\t.reg .b32 %r<3>;\n\t.reg .b32 %r1;\n\tret;\n}}\n");
    let error = error(&source);
    assert_eq!(error.kind, ErrorKind::Redeclared);
    assert_eq!(error.kind.code(), "ptx::E007");
    assert_eq!(error.message, "`%r1` is declared twice");
    assert_eq!(error.span.line(&source), 7);
    assert_eq!(spanned(&source, &error), ".reg .b32 %r1;");
    // A nested block is a new scope.
    let nested = format!("{HEADER}\t.reg .b32 %r<3>;\n\t{{\n\t.reg .b32 %r1;\n\t}}\n\tret;\n}}\n");
    assert!(pgpu_ptx::parse_and_check(&nested).is_ok());
    // Labels and module variables.
    let labels = format!("{HEADER}L:\nL:\n\tret;\n}}\n");
    assert_eq!(error_kind(&labels), ErrorKind::Redeclared);
    let globals = ".version 8.0\n.target sm_90\n.global .u32 g;\n.global .f32 g;\n";
    let error = self::error(globals);
    assert_eq!(error.kind, ErrorKind::Redeclared);
    assert_eq!(error.span.line(globals), 4);
}

#[test]
fn register_ranges_clash_like_their_registers() {
    // The checker keeps `%r<N>` as a range; a clash is reported at the
    // first register of the new declaration that exists already, as if
    // each register had been declared one by one.
    for (declarations, clash) in [
        ("%r<3>; .reg .b32 %r<5>", Some("%r0")),
        ("%r<20>; .reg .b32 %r1<5>", Some("%r10")),
        ("%r1<5>; .reg .b32 %r<20>", Some("%r10")),
        ("%r1<5>; .reg .b32 %r<10>", None),
        ("%r<2>; .reg .b32 %r1<5>", None),
        ("%r0<5>; .reg .b32 %r<100>", None),
        ("%r<0>; .reg .b32 %r<4>", None),
        ("%r12; .reg .b32 %r<13>", Some("%r12")),
        ("%r12, %r5; .reg .b32 %r<13>", Some("%r5")),
        ("%r<13>; .reg .b32 %r012", None),
        ("%rd<4>, %r<4>; .reg .b32 %r<2>", Some("%r0")),
        (
            "%r<4294967295>; .reg .b32 %r4294967294",
            Some("%r4294967294"),
        ),
        ("%r<4294967295>; .reg .b32 %r4294967295", None),
    ] {
        let source = format!("{HEADER}\t.reg .b32 {declarations};\n\tret;\n}}\n");
        let result = pgpu_ptx::parse_and_check(&source);
        match clash {
            None => assert!(result.is_ok(), "{declarations}: {result:?}"),
            Some(name) => {
                let error = result.expect_err(declarations);
                assert_eq!(error.kind, ErrorKind::Redeclared, "{declarations}");
                assert_eq!(
                    error.message,
                    format!("`{name}` is declared twice"),
                    "{declarations}"
                );
            }
        }
    }
}

/// The scopes of the checker against the registers written out one by one,
/// on random declarations with prefixes that extend each other.
#[test]
fn register_ranges_match_their_expansion() {
    const PREFIXES: &[&str] = &["%r", "%r1", "%r12", "%r0", "%q"];
    const SINGLES: &[&str] = &["%r1", "%r10", "%r01", "%r123", "%r0", "%q3", "%r12"];
    let mut state = 0x1234_5678_u64;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let mut clashes = 0;
    for _ in 0..2000 {
        let mut lines = Vec::new();
        let mut names: Vec<Vec<(String, Option<u32>)>> = Vec::new();
        for _ in 0..1 + next(3) {
            let mut declaration = Vec::new();
            for _ in 0..1 + next(2) {
                if next(3) == 0 {
                    declaration.push((
                        SINGLES[next(SINGLES.len() as u64) as usize].to_string(),
                        None,
                    ));
                } else {
                    declaration.push((
                        PREFIXES[next(PREFIXES.len() as u64) as usize].to_string(),
                        Some(next(130) as u32),
                    ));
                }
            }
            let text: Vec<String> = declaration
                .iter()
                .map(|(name, count)| match count {
                    Some(n) => format!("{name}<{n}>"),
                    None => name.clone(),
                })
                .collect();
            lines.push(format!("\t.reg .b32 {};\n", text.join(", ")));
            names.push(declaration);
        }
        // The reference: every register written out.
        let mut seen = std::collections::HashSet::new();
        let mut expected = None;
        'declarations: for (line, declaration) in names.iter().enumerate() {
            for (name, count) in declaration {
                let registers = match count {
                    None => vec![name.clone()],
                    Some(n) => (0..*n).map(|i| format!("{name}{i}")).collect(),
                };
                for register in registers {
                    if !seen.insert(register.clone()) {
                        expected = Some((format!("`{register}` is declared twice"), line + 6));
                        break 'declarations;
                    }
                }
            }
        }
        let source = format!("{HEADER}{}\tret;\n}}\n", lines.concat());
        let found = pgpu_ptx::parse_and_check(&source)
            .err()
            .map(|e| (e.message.clone(), e.span.line(&source)));
        assert_eq!(found, expected, "{source}");
        clashes += usize::from(expected.is_some());
    }
    // Both outcomes were exercised.
    assert!((200..1800).contains(&clashes), "{clashes} clashes");
}

#[test]
fn missing_version() {
    let source = ".target sm_90\n.visible .entry k()\n{\n\tret;\n}\n";
    let error = error(source);
    assert_eq!(error.kind, ErrorKind::Syntax);
    assert_eq!(error.message, "a PTX module starts with `.version`");
    assert_eq!(error.span.line(source), 1);
    assert_eq!(spanned(source, &error), ".target");
    // Empty text too.
    let empty = error_kind_of_parse("// nothing\n");
    assert_eq!(empty, ErrorKind::Syntax);
}

fn error_kind_of_parse(source: &str) -> ErrorKind {
    match pgpu_ptx::parse(source) {
        Ok(module) => panic!("parses: {module:?}"),
        Err(error) => error.kind,
    }
}

#[test]
fn unterminated_comment() {
    let source = format!("{HEADER}\t/* ret;\n}}\n");
    let error = error(&source);
    assert_eq!(error.kind, ErrorKind::Syntax);
    assert_eq!(error.message, "unterminated comment");
    assert_eq!(error.span.line(&source), 6);
    assert_eq!(spanned(&source, &error), "/*");
    // `/*/` does not close itself.
    assert_eq!(error_kind_of_parse(".version 8.0 /*/"), ErrorKind::Syntax);
}

#[test]
fn bad_f32_literal() {
    let source = format!("{HEADER}\t.reg .f32 %f<3>;\n\tmov.f32 %f1, 0f3F80;\n}}\n");
    let error = error(&source);
    assert_eq!(error.kind, ErrorKind::Syntax);
    assert_eq!(error.message, "malformed f32 literal `0f3F80`");
    assert_eq!(error.span.line(&source), 7);
    assert_eq!(spanned(&source, &error), "0f3F80");
    let column = error.span.start - source[..error.span.start].rfind('\n').map_or(0, |n| n + 1);
    assert_eq!(column + 1, 15);
}

#[test]
fn unsupported_directive_and_eof() {
    let source = ".version 8.0\n.target sm_90\n.address_size 64\n.section .debug_info { .b8 1 }\n";
    let error = error(source);
    assert_eq!(error.kind, ErrorKind::UnsupportedDirective);
    assert_eq!(error.kind.code(), "ptx::E003");
    assert_eq!(error.span.line(source), 4);
    let eof = format!("{HEADER}\tret;\n");
    let error = self::error(&eof);
    assert_eq!(error.message, "expected `}`, found the end of input");
    assert_eq!(error.span.line(&eof), 7);
}

// ---------------------------------------------------------------- fuzzing regressions

/// Found by `cargo fuzz run parse`: a module without `.target` printed
/// `.target ` with no name, which does not parse. The fuzzer's input was
/// nvcc's header comments (with a NUL byte) and `.version 9.014`.
#[test]
fn fuzz_module_without_target_round_trips() {
    let fuzzed = "//\n// Cuda compilation t\0ools, release 12.0, V13.0.88\n//\n\n.version 9.014\n// Cuda56 compilation to\n";
    let module = round_trip("fuzzed", fuzzed);
    assert_eq!(module.version, (9, 14));
    assert!(module.target.is_empty());
    assert!(!pgpu_ptx::print(&module).contains(".target"));
    round_trip("version only", ".version 8.0\n");
    round_trip(
        "no target",
        ".version 8.0\n.address_size 32\n.visible .entry k()\n{\n\tret;\n}\n",
    );
}

/// Deep nesting overflowed the stack (parser, checker, printer and drop
/// all recurse); the parser now stops at `MAX_NESTING` levels.
#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    use pgpu_ptx::parser::MAX_NESTING;
    let blocks = |depth: usize| kernel(&format!("{}{}\n", "{".repeat(depth), "}".repeat(depth)));
    // MAX_NESTING blocks fit inside the body, one more does not.
    round_trip("deepest blocks", &blocks(MAX_NESTING));
    let too_deep = blocks(MAX_NESTING + 1);
    let error = pgpu_ptx::parse(&too_deep).expect_err("too deep");
    assert_eq!(error.kind, ErrorKind::Syntax);
    assert!(error.message.contains("nesting"), "{}", error.message);
    let huge = blocks(100_000);
    assert_eq!(error_kind_of_parse(&huge), ErrorKind::Syntax);

    let initializer = |depth: usize| {
        format!(
            ".version 8.0\n.target sm_90\n.global .u32 g[1] = {}1{};\n",
            "{".repeat(depth),
            "}".repeat(depth)
        )
    };
    round_trip("deepest initializer", &initializer(MAX_NESTING));
    assert_eq!(
        error_kind_of_parse(&initializer(MAX_NESTING + 1)),
        ErrorKind::Syntax
    );
    assert_eq!(
        error_kind_of_parse(&initializer(100_000)),
        ErrorKind::Syntax
    );

    let operand = |depth: usize| {
        kernel(&format!(
            ".reg .b32 %r<2>;\nmov.b32 %r1, {}%r0{};\n",
            "{(".repeat(depth / 2),
            ")}".repeat(depth / 2)
        ))
    };
    assert!(pgpu_ptx::parse(&operand(MAX_NESTING)).is_ok());
    assert_eq!(
        error_kind_of_parse(&operand(MAX_NESTING + 2)),
        ErrorKind::Syntax
    );
    assert_eq!(error_kind_of_parse(&operand(100_000)), ErrorKind::Syntax);
}

/// A register count is a range, not a list: checking
/// `.reg .b32 %r<4294967295>;` once built four billion names.
#[test]
fn huge_register_counts_are_checked_without_expanding() {
    let source = kernel(
        ".reg .b32 %r<4294967295>;\n.reg .b64 %rd<4294967295>;\nadd.s32 %r4294967294, %r0, %r123456789;\nret;\n",
    );
    let started = std::time::Instant::now();
    round_trip("huge counts", &source);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let undeclared = source.replace("%r123456789", "%r4294967295");
    assert_eq!(error_kind(&undeclared), ErrorKind::Undeclared);
}
