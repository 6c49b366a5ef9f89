//! `pgpu-check-division`: run-time checks of integer divisions, which
//! upstream's `generate-runtime-verification` does not check.
//!
//! Before each scalar `arith.divsi`, `divui`, `remsi`, `remui`,
//! `ceildivsi`, `ceildivui` and `floordivsi` it inserts
//! `cf.assert %divisor != 0, "division by zero in '<op>'"`, and for the
//! signed ones also `cf.assert !(%dividend == MIN && %divisor == -1),
//! "signed division overflow in '<op>'"`, the two failures the reference
//! interpreter reports (and that trap on x86-64, where a compiled program
//! would otherwise die of SIGFPE without a location). A divisor that is a
//! constant other than 0 (and other than -1 for signed ops) needs no
//! check. `pgpu-report-run-time-errors` then turns the asserts into reports
//! naming the kernel and the source position.

use crate::{
    build::{Builder, Built},
    ir::{Op, Val, integer_width},
};
use melior::ir::{OperationRef, TypeLike};
use pgpu_pass_infra::{Pass, PassFailure};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct CheckDivision;

impl Pass for CheckDivision {
    const ARGUMENT: &'static str = "pgpu-check-division";
    const SUMMARY: &'static str =
        "Assert that integer divisors are not zero and signed divisions do not overflow";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn dependent_dialects() -> Vec<melior::dialect::DialectHandle> {
        use melior::dialect::DialectHandle;
        vec![DialectHandle::arith(), DialectHandle::cf()]
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        for op in Op::of(module).nested() {
            let name = op.name();
            let signed = match name.as_str() {
                "arith.divsi" | "arith.remsi" | "arith.ceildivsi" | "arith.floordivsi" => true,
                "arith.divui" | "arith.remui" | "arith.ceildivui" => false,
                _ => continue,
            };
            let ty = op.result(0).melior_type();
            if !(ty.is_integer() || ty.is_index()) {
                continue;
            }
            check(op, &name, signed)?;
        }
        Ok(())
    }
}

/// The bit width of an integer type (`index` as 64).
fn width(value: Val) -> u32 {
    integer_width(value.melior_type()).unwrap_or(64)
}

fn assert(at: &Builder, condition: Val, message: &str) -> Built<()> {
    let message = at.parse_attribute(&format!("\"{message}\""))?;
    at.op("cf.assert", &[condition], &[], &[("msg", message)])
        .map(|_| ())
}

fn check(op: Op, name: &str, signed: bool) -> Built<()> {
    let (dividend, divisor) = (op.operand(0), op.operand(1));
    let known = divisor.constant_integer();
    let at = Builder::before(op);
    let ty = divisor.melior_type();
    if known.is_none_or(|value| value == 0) {
        let zero = at.constant(ty, 0)?;
        let nonzero = at.cmpi(1, divisor, zero)?;
        assert(&at, nonzero, &format!("division by zero in '{name}'"))?;
    }
    if signed && known.is_none_or(|value| value == -1) {
        let bits = width(divisor);
        let min = if bits >= 64 {
            i64::MIN
        } else {
            -(1i64 << (bits - 1))
        };
        let minimum = at.constant(ty, min)?;
        let minus_one = at.constant(ty, -1)?;
        let is_min = at.cmpi(0, dividend, minimum)?;
        let is_minus_one = at.cmpi(0, divisor, minus_one)?;
        let i1 = at.parse_type("i1")?;
        let overflows = at.value("arith.andi", &[is_min, is_minus_one], i1, &[])?;
        let all_ones = at.constant(i1, -1)?;
        let fine = at.value("arith.xori", &[overflows, all_ones], i1, &[])?;
        assert(&at, fine, &format!("signed division overflow in '{name}'"))?;
    }
    Ok(())
}
