//! PTX to AMDGPU: every kernel to an `amdgpu_kernel` function of LLVM IR
//! (through [`crate::codegen`], which this translation shares with the CPU
//! emulation), then LLVM's AMDGPU backend to AMDGCN assembly or an object,
//! and `ld.lld` to an HSA code object. [`translate`] builds the IR (the
//! translation proper); [`AmdgpuModule::optimize`] runs LLVM's `default<O3>`
//! on it, which emitting assembly or objects does first.
//!
//! Warps of 32 lanes run on waves of the chip's width ([`crate::warp`]):
//! gfx9 chips (gfx90a, gfx942) have 64-lane waves, each running two PTX
//! warps in its halves; gfx10 and later (gfx1100) have 32-lane waves. PTX
//! state spaces become address spaces: `.global` 1, `.shared` LDS (3),
//! `.const` 4, `.local` and `.param` private allocas (5); generic
//! addresses are flat pointers. A kernel with dynamic shared memory
//! addresses all its shared memory through one external LDS array, so a
//! launch asks for the static and the dynamic bytes together.

use crate::codegen::{Target, address_space, generate_kernels};
use crate::layout::{Images, images};
use crate::{TranslateError, cpu::KernelInfo};
use inkwell::AddressSpace;
use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target as LlvmTarget, TargetMachine,
    TargetTriple,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

type Result<T> = std::result::Result<T, TranslateError>;

/// The target triple of AMD GPUs under the HSA runtime.
pub const TRIPLE: &str = "amdgcn-amd-amdhsa";

/// The processors LLVM 22's AMDGPU backend knows (`llc -march=amdgcn
/// -mcpu=help`); the names before `gfx600` are the GCN generations' code
/// names, all with 64-lane waves.
pub const CHIPS: &[&str] = &[
    "bonaire",
    "carrizo",
    "fiji",
    "hainan",
    "hawaii",
    "iceland",
    "kabini",
    "kaveri",
    "mullins",
    "oland",
    "pitcairn",
    "polaris10",
    "polaris11",
    "stoney",
    "tahiti",
    "tonga",
    "tongapro",
    "verde",
    "gfx600",
    "gfx601",
    "gfx602",
    "gfx700",
    "gfx701",
    "gfx702",
    "gfx703",
    "gfx704",
    "gfx705",
    "gfx801",
    "gfx802",
    "gfx803",
    "gfx805",
    "gfx810",
    "gfx9-generic",
    "gfx9-4-generic",
    "gfx900",
    "gfx902",
    "gfx904",
    "gfx906",
    "gfx908",
    "gfx909",
    "gfx90a",
    "gfx90c",
    "gfx942",
    "gfx950",
    "gfx10-1-generic",
    "gfx10-3-generic",
    "gfx1010",
    "gfx1011",
    "gfx1012",
    "gfx1013",
    "gfx1030",
    "gfx1031",
    "gfx1032",
    "gfx1033",
    "gfx1034",
    "gfx1035",
    "gfx1036",
    "gfx11-generic",
    "gfx1100",
    "gfx1101",
    "gfx1102",
    "gfx1103",
    "gfx1150",
    "gfx1151",
    "gfx1152",
    "gfx1153",
    "gfx12-generic",
    "gfx1200",
    "gfx1201",
    "gfx1250",
    "gfx1251",
];

/// The GFX major version of `chip` (9 for gfx942 and gfx90a, 11 for
/// gfx1100); 8 for the code names and anything unreadable.
fn generation(chip: &str) -> u32 {
    let Some(rest) = chip.strip_prefix("gfx") else {
        return 8;
    };
    if let Some((major, _)) = rest.split_once('-') {
        return major.parse().unwrap_or(8);
    }
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = if digits.len() >= 3 {
        &digits[..digits.len() - 2]
    } else {
        digits.get(..1).unwrap_or("8")
    };
    major.parse().unwrap_or(8)
}

/// The wave width of `chip`: 64 for GCN and CDNA (gfx6 to gfx9, gfx90a,
/// gfx942), 32 for RDNA (gfx10 and later).
pub fn default_wave(chip: &str) -> u32 {
    if generation(chip) >= 10 { 32 } else { 64 }
}

/// Whether LLVM's AMDGPU backend knows `chip`.
pub fn known_chip(chip: &str) -> bool {
    CHIPS.contains(&chip)
}

/// The translation of a module for an AMD GPU.
pub struct AmdgpuModule<'ctx> {
    /// The LLVM module (target triple and data layout set).
    pub module: Module<'ctx>,
    /// Its kernels.
    pub kernels: Vec<KernelInfo>,
    /// The machine it is for (shared by the translations of a thread).
    pub machine: Rc<TargetMachine>,
    /// Lanes per wave.
    pub wave: u32,
    optimized: bool,
}

thread_local! {
    /// Target machines by chip and wave width: making one costs more than
    /// translating a small kernel, so a thread makes each once.
    static MACHINES: RefCell<HashMap<(String, u32), Rc<TargetMachine>>> = RefCell::new(HashMap::new());
}

fn machine(chip: &str, wave: u32) -> Result<Rc<TargetMachine>> {
    if let Some(machine) = MACHINES.with(|m| m.borrow().get(&(chip.to_string(), wave)).cloned()) {
        return Ok(machine);
    }
    let machine = Rc::new(new_machine(chip, wave)?);
    MACHINES.with(|m| {
        m.borrow_mut()
            .insert((chip.to_string(), wave), machine.clone())
    });
    Ok(machine)
}

fn new_machine(chip: &str, wave: u32) -> Result<TargetMachine> {
    LlvmTarget::initialize_amd_gpu(&InitializationConfig::default());
    let triple = TargetTriple::create(TRIPLE);
    let target =
        LlvmTarget::from_triple(&triple).map_err(|e| TranslateError::Llvm(e.to_string()))?;
    let features = if wave == 64 {
        "+wavefrontsize64"
    } else {
        "+wavefrontsize32"
    };
    target
        .create_target_machine(
            &triple,
            chip,
            features,
            OptimizationLevel::Aggressive,
            RelocMode::PIC,
            CodeModel::Default,
        )
        .ok_or_else(|| {
            TranslateError::Target(format!(
                "LLVM's AMDGPU backend does not know the chip `{chip}`"
            ))
        })
}

/// The module's `.global` image (address space 1) and `.const` image (4).
fn image_globals<'ctx>(
    context: &'ctx Context,
    module: &Module<'ctx>,
    images: &Images,
) -> (
    Option<inkwell::values::PointerValue<'ctx>>,
    Option<inkwell::values::PointerValue<'ctx>>,
) {
    let make = |bytes: &[u8], space: u16, name: &str, constant: bool| {
        if bytes.is_empty() {
            return None;
        }
        let ty = context.i8_type().array_type(bytes.len() as u32);
        let variable = module.add_global(ty, Some(AddressSpace::from(space)), name);
        variable.set_initializer(&context.const_string(bytes, false));
        variable.set_constant(constant);
        variable.set_alignment(16);
        variable.set_linkage(Linkage::Internal);
        Some(variable.as_pointer_value())
    };
    (
        make(
            &images.global,
            address_space::GLOBAL,
            "__pgpu_ptx_global",
            false,
        ),
        make(
            &images.constant,
            address_space::CONSTANT,
            "__pgpu_ptx_const",
            true,
        ),
    )
}

/// Translates every kernel of `ptx` for `chip`, with waves of `wave`
/// lanes (by default the chip's, [`default_wave`]), and optimizes the IR.
pub fn translate<'ctx>(
    context: &'ctx Context,
    ptx: &pgpu_ptx::ir::Module,
    chip: &str,
    wave: Option<u32>,
) -> Result<AmdgpuModule<'ctx>> {
    translate_kernels(context, ptx, chip, wave, |_| true)
}

/// As [`translate`], for the kernels whose names `select` accepts.
pub fn translate_kernels<'ctx>(
    context: &'ctx Context,
    ptx: &pgpu_ptx::ir::Module,
    chip: &str,
    wave: Option<u32>,
    select: impl Fn(&str) -> bool,
) -> Result<AmdgpuModule<'ctx>> {
    let wave = wave.unwrap_or_else(|| default_wave(chip));
    if !known_chip(chip) {
        return Err(TranslateError::Target(format!(
            "LLVM's AMDGPU backend does not know the chip `{chip}` (it knows {})",
            CHIPS.join(", ")
        )));
    }
    if wave == 32 && generation(chip) < 10 {
        return Err(TranslateError::Target(format!(
            "`{chip}` has only 64-lane waves"
        )));
    }
    let machine = machine(chip, wave)?;
    let module = context.create_module("ptx");
    module.set_triple(&machine.get_triple());
    module.set_data_layout(&machine.get_target_data().get_data_layout());
    let images = images(ptx)?;
    let (global, constant) = image_globals(context, &module, &images);
    let kernels = generate_kernels(
        context,
        &module,
        ptx,
        &images,
        wave,
        Target::Amdgpu { global, constant },
        select,
    )?;
    Ok(AmdgpuModule {
        module,
        kernels,
        machine,
        wave,
        optimized: false,
    })
}

impl AmdgpuModule<'_> {
    /// Runs LLVM's `default<O3>` on the module (once; emitting does it
    /// first).
    pub fn optimize(&mut self) -> Result<()> {
        if !self.optimized {
            self.module
                .run_passes("default<O3>", &self.machine, PassBuilderOptions::create())
                .map_err(|message| TranslateError::Llvm(message.to_string()))?;
            self.optimized = true;
        }
        Ok(())
    }

    /// AMDGCN assembly of the optimized module.
    pub fn assembly(&mut self) -> Result<String> {
        self.optimize()?;
        // Code generation rewrites the IR it is given (control-flow
        // annotation), so it works on a copy: the module can be emitted
        // again.
        let buffer = self
            .machine
            .write_to_memory_buffer(&self.module.clone(), FileType::Assembly)
            .map_err(|e| TranslateError::Llvm(e.to_string()))?;
        Ok(String::from_utf8_lossy(buffer.as_slice()).into_owned())
    }

    /// A relocatable AMDGPU ELF object.
    pub fn object(&mut self) -> Result<Vec<u8>> {
        self.optimize()?;
        let buffer = self
            .machine
            .write_to_memory_buffer(&self.module.clone(), FileType::Object)
            .map_err(|e| TranslateError::Llvm(e.to_string()))?;
        Ok(buffer.as_slice().to_vec())
    }

    /// An HSA code object (the object linked as a shared ELF by
    /// `ld.lld`), written to `output` through a temporary file.
    pub fn write_code_object(&mut self, output: &Path) -> Result<()> {
        let linker = find_linker().ok_or_else(|| {
            TranslateError::Target(
                "ld.lld was not found (install lld-22; scripts/setup.sh does)".into(),
            )
        })?;
        let directory = tempfile::tempdir().map_err(|e| TranslateError::Target(e.to_string()))?;
        let object = directory.path().join("kernels.o");
        std::fs::write(&object, self.object()?)
            .map_err(|e| TranslateError::Target(e.to_string()))?;
        let linked = directory.path().join("kernels.hsaco");
        let status = std::process::Command::new(&linker)
            .arg("-shared")
            .arg("-o")
            .arg(&linked)
            .arg(&object)
            .output()
            .map_err(|e| TranslateError::Target(format!("cannot run {}: {e}", linker.display())))?;
        if !status.status.success() {
            return Err(TranslateError::Target(format!(
                "ld.lld failed: {}",
                String::from_utf8_lossy(&status.stderr).trim()
            )));
        }
        let target_directory = output
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let staged = tempfile::NamedTempFile::new_in(target_directory)
            .map_err(|e| TranslateError::Target(e.to_string()))?;
        std::fs::copy(&linked, staged.path()).map_err(|e| TranslateError::Target(e.to_string()))?;
        staged
            .persist(output)
            .map_err(|e| TranslateError::Target(e.error.to_string()))?;
        Ok(())
    }
}

/// `ld.lld` on the PATH or in LLVM 22's directory.
fn find_linker() -> Option<std::path::PathBuf> {
    let candidates = ["ld.lld-22", "ld.lld"];
    if let Some(path) = std::env::var_os("PATH") {
        for directory in std::env::split_paths(&path) {
            for name in candidates {
                let candidate = directory.join(name);
                if candidate.is_file() {
                    return Some(candidate);
                }
            }
        }
    }
    let fallback = Path::new("/usr/lib/llvm-22/bin/ld.lld");
    fallback.is_file().then(|| fallback.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wave_widths_follow_the_generation() {
        for (chip, wave) in [
            ("gfx942", 64),
            ("gfx90a", 64),
            ("gfx90c", 64),
            ("gfx908", 64),
            ("gfx600", 64),
            ("tahiti", 64),
            ("gfx9-generic", 64),
            ("gfx9-4-generic", 64),
            ("gfx1010", 32),
            ("gfx10-1-generic", 32),
            ("gfx1100", 32),
            ("gfx11-generic", 32),
            ("gfx1201", 32),
            ("gfx1250", 32),
        ] {
            assert_eq!(default_wave(chip), wave, "{chip}");
            assert!(known_chip(chip), "{chip}");
        }
        assert!(!known_chip("gfx9999"));
        assert!(!known_chip("sm_90"));
    }
}
