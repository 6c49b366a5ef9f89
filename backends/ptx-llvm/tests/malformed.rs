//! PTX that parses and passes the checks but misuses types (found by the
//! `translate` fuzz target) is a diagnostic of both translations, never a
//! panic.

use pgpu_ptx_llvm::inkwell::context::Context;

fn translate_everywhere(body: &str) -> Vec<String> {
    let source = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 out)\n{{\n\t.reg .pred %p<3>;\n\t.reg .f32 %f<3>;\n\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [out];\n{body}\n\tret;\n}}\n"
    );
    let module = pgpu_ptx::parse_and_check(&source).expect("the snippet parses and checks");
    let mut messages = Vec::new();
    for wave in [32, 64] {
        let context = Context::create();
        if let Err(error) = pgpu_ptx_llvm::cpu::translate(&context, &module, wave) {
            messages.push(error.to_string());
        }
    }
    for chip in ["gfx942", "gfx1100"] {
        let context = Context::create();
        if let Err(error) = pgpu_ptx_llvm::amdgpu::translate(&context, &module, chip, None) {
            messages.push(error.to_string());
        }
    }
    messages
}

#[test]
fn negated_float_operand_is_a_diagnostic() {
    let messages = translate_everywhere("\tst.global.f32 [%rd1], !%f1;");
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert!(
        messages
            .iter()
            .all(|m| m.contains("`!` on a value that is not a predicate")),
        "{messages:?}"
    );
}

#[test]
fn class_test_of_an_integer_is_a_diagnostic() {
    let messages = translate_everywhere("\ttestp.finite.u32 %p1, %r1;");
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert!(
        messages.iter().all(|m| m.contains("on an integer type")),
        "{messages:?}"
    );
}

#[test]
fn float_cvta_is_a_diagnostic() {
    let messages = translate_everywhere("\tcvta.to.global.f32 %f1, %f2;");
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert!(
        messages
            .iter()
            .all(|m| m.contains("without an integer type")),
        "{messages:?}"
    );
}

#[test]
fn well_typed_snippet_translates() {
    let messages =
        translate_everywhere("\tsetp.ne.and.s32 %p1, %r1, 0, !%p2;\n\tst.global.f32 [%rd1], %f1;");
    assert!(messages.is_empty(), "{messages:?}");
}
