//! Translation time per kernel (PERF.md, issue 8; Caracal's Figure 3
//! measured under 1 ms on average): for every kernel of the given PTX
//! files and every chip, the median over `REPEAT` runs of
//!
//! * translate: PTX text -> parsed and checked -> LLVM IR, the
//!   translation itself (Caracal's: PTX to CAL IL);
//! * with ISA: also LLVM's `default<O3>` and AMDGPU backend to an
//!   object (Caracal's driver compilation of the IL);
//! * with the code object: also `ld.lld` to the HSA code object.
//!
//! Run: `cargo run --release -p pgpu-ptx-llvm --example translate_time --
//! test-suite/ptx/nvcc/*.ptx` (chips: PTX_CHIPS, default gfx942,gfx1100).

use pgpu_ptx_llvm::amdgpu::translate_kernels;
use pgpu_ptx_llvm::inkwell::context::Context;
use std::time::Instant;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let repeat: usize = std::env::var("REPEAT")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(21);
    let chips = std::env::var("PTX_CHIPS").unwrap_or_else(|_| "gfx942,gfx1100".into());
    let output = tempfile::tempdir().expect("a temporary directory");
    println!("| kernel | chip | PTX lines | translate ms | + ISA ms | + code object ms |");
    println!("|---|---|---|---|---|---|");
    let mut all = Vec::new();
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path).expect("a readable PTX file");
        let module = pgpu_ptx::parse_and_check(&text).expect("valid PTX");
        for kernel in module
            .functions()
            .filter(|f| f.kind == pgpu_ptx::ir::FunctionKind::Entry)
        {
            let lines = kernel
                .body
                .as_ref()
                .map_or(0, |body| count_statements(body));
            for chip in chips.split(',') {
                let (mut translate, mut isa, mut object) = (Vec::new(), Vec::new(), Vec::new());
                for _ in 0..repeat {
                    let start = Instant::now();
                    let parsed = pgpu_ptx::parse_and_check(&text).expect("valid PTX");
                    let context = Context::create();
                    let mut translated = translate_kernels(&context, &parsed, chip, None, |name| {
                        name == kernel.name
                    })
                    .expect("a translation");
                    translate.push(start.elapsed().as_secs_f64() * 1e3);
                    let bytes = translated.object().expect("an object");
                    isa.push(start.elapsed().as_secs_f64() * 1e3);
                    assert!(!bytes.is_empty());
                    translated
                        .write_code_object(&output.path().join("kernel.hsaco"))
                        .expect("a code object");
                    object.push(start.elapsed().as_secs_f64() * 1e3);
                }
                let row = (median(translate), median(isa), median(object));
                all.push(row);
                let file = std::path::Path::new(&path)
                    .file_name()
                    .map_or(String::new(), |f| f.to_string_lossy().into_owned());
                println!(
                    "| {} ({file}) | {chip} | {lines} | {:.3} | {:.3} | {:.3} |",
                    kernel.name, row.0, row.1, row.2
                );
            }
        }
    }
    if !all.is_empty() {
        println!(
            "| median of {} translations | | | {:.3} | {:.3} | {:.3} |",
            all.len(),
            median(all.iter().map(|r| r.0).collect()),
            median(all.iter().map(|r| r.1).collect()),
            median(all.iter().map(|r| r.2).collect())
        );
    }
}

fn count_statements(body: &[pgpu_ptx::ir::Statement]) -> usize {
    body.iter()
        .map(|statement| match statement {
            pgpu_ptx::ir::Statement::Block(inner) => count_statements(inner),
            pgpu_ptx::ir::Statement::Instruction(_) => 1,
            _ => 0,
        })
        .sum()
}
