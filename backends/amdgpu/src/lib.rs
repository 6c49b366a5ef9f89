//! AMDGPU backend: lowers pgpu kernels to AMDGCN through upstream's
//! `rocdl` path (DESIGN.md, "pgpu kernels through rocdl"), beside the PTX
//! route (`pgpu-translate --ptx-to-amdgpu`) that translates the NVPTX
//! backend's PTX.
//!
//! The kernels take the NVPTX backend's steps up to the GPU dialect
//! (`gpu-kernel-outlining` of the same kernels), then [`device_lowering`]:
//!
//! 1. `rocdl-attach-target` for the chip (wave64 unless the chip runs
//!    wave32 by default, or `--wave` says otherwise);
//! 2. `pgpu-amdgpu-assert-to-trap`: the run-time checks' `cf.assert`s
//!    trap (upstream's assert lowering prints through a host runtime that
//!    an AMD kernel has not);
//! 3. upstream's `convert-gpu-to-rocdl`;
//! 4. `pgpu-amdgpu-dispatch-sizes`: block and grid sizes from the HSA
//!    dispatch packet (upstream calls ROCm's device library for them);
//! 5. `pgpu-amdgpu-warp-ops`: the NVVM warp operations of our generated
//!    code (the GPU collectives' ballots and warp barriers) with their
//!    32-lane meaning on 32- and 64-lane waves, and NVPTX's sync scope
//!    names as AMDGPU's;
//! 6. `pgpu-relax-atomics{scope=agent}` and
//!    `pgpu-define-device-math{library=ocml}`, the NVPTX backend's passes
//!    with AMDGPU's scope and vendor library;
//! 7. LLVM's AMDGPU backend through `gpu-module-to-binary{format=isa}`
//!    (assembly) or `format=bin` (an HSA code object).
//!
//! The same kernels therefore compile both ways, which is what the code
//! quality comparison of issue 8 (PERF.md) measures. There is no AMD
//! runtime: the backend emits code, it does not run it.
//!
//! Not supported on AMDGPU, with reasons: Fork's block kernels (their
//! range barriers let lanes of one warp wait for different ranges, which a
//! lockstep wave cannot do without deadlock; the kernel pipeline keeps
//! such groups on the host path, as for the CPU target) and grid barriers
//! (a cooperative launch needs a runtime).

mod assert_to_trap;
mod device;
mod dispatch_sizes;
mod warp_ops;

pub use assert_to_trap::AssertToTrap;
pub use dispatch_sizes::DispatchSizes;
pub use warp_ops::WarpOps;

pgpu_pass_infra::declare_passes![AssertToTrap, DispatchSizes, WarpOps];

/// The chips LLVM 22's AMDGPU backend knows, and their default wave size.
pub use pgpu_ptx_llvm::amdgpu::{CHIPS, default_wave};

/// Target options of the AMDGPU pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The `gfxNNN` chip LLVM generates code for.
    pub chip: String,
    /// Lanes per wave (32 or 64); `None` is the chip's default.
    pub wave: Option<u32>,
    /// Threads per block for lowered SPMD regions.
    pub block_size: u32,
    /// LLVM optimization level (0 to 3).
    pub opt_level: u8,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            chip: "gfx942".to_string(),
            wave: None,
            block_size: 256,
            opt_level: 3,
        }
    }
}

/// Bad target options.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OptionsError {
    #[error("'{0}' is not an AMDGPU processor of LLVM 22 (e.g. gfx90a, gfx942, gfx1100)")]
    UnknownChip(String),
    #[error("a wave has 32 or 64 lanes, not {0}")]
    Wave(u32),
    #[error("{0} runs only 64-lane waves")]
    Wave32Unsupported(String),
    #[error("block size {0} is not between 1 and 1024")]
    BlockSize(u32),
    #[error("optimization level {0} is not between 0 and 3")]
    OptLevel(u8),
}

impl Options {
    /// Checks the options.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if !pgpu_ptx_llvm::amdgpu::known_chip(&self.chip) {
            return Err(OptionsError::UnknownChip(self.chip.clone()));
        }
        match self.wave {
            None | Some(64) => {}
            Some(32) if default_wave(&self.chip) == 32 => {}
            Some(32) => return Err(OptionsError::Wave32Unsupported(self.chip.clone())),
            Some(other) => return Err(OptionsError::Wave(other)),
        }
        if !(1..=1024).contains(&self.block_size) {
            return Err(OptionsError::BlockSize(self.block_size));
        }
        if self.opt_level > 3 {
            return Err(OptionsError::OptLevel(self.opt_level));
        }
        Ok(())
    }

    /// Lanes per wave of the generated code.
    pub fn wave(&self) -> u32 {
        self.wave.unwrap_or_else(|| default_wave(&self.chip))
    }
}

/// The steps from outlined `gpu.module`s (GPU dialect, `scf` already
/// lowered to `cf`) to the LLVM dialect with ROCDL ops; see the crate
/// documentation.
pub fn device_lowering(options: &Options) -> String {
    let Options {
        chip, opt_level, ..
    } = options;
    let wave64 = options.wave() == 64;
    format!(
        "rocdl-attach-target{{chip={chip} O={opt_level} wave64={wave64}}},\
         pgpu-amdgpu-assert-to-trap,gpu.module(convert-gpu-to-rocdl{{chipset={chip}}}),\
         pgpu-amdgpu-dispatch-sizes,pgpu-amdgpu-warp-ops,pgpu-relax-atomics{{scope=agent}},\
         pgpu-define-device-math{{library=ocml}}"
    )
}

/// The textual pipeline from pgpu IR to `gpu.binary` ops holding AMDGCN
/// assembly (`pgpu-translate --pgpu-to-amdgcn`): the NVPTX backend's
/// pipeline ([`pgpu_backend_nvptx::spawn_pipeline`]) with
/// [`device_lowering`] in place of its NVVM steps.
pub fn pipeline(options: &Options) -> String {
    pgpu_backend_nvptx::spawn_pipeline(
        options.block_size,
        &["convert-scf-to-cf".to_string(), device_lowering(options)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipeline_names_chip_wave_and_block_size() {
        let text = pipeline(&Options {
            chip: "gfx1100".into(),
            wave: None,
            block_size: 128,
            opt_level: 2,
        });
        assert!(text.starts_with("builtin.module(func.func(pgpu-spawn-to-parallel),"));
        assert!(text.contains("parallel-loop-tile-sizes=128"));
        assert!(text.contains("rocdl-attach-target{chip=gfx1100 O=2 wave64=false}"));
        assert!(text.contains("gpu.module(convert-gpu-to-rocdl{chipset=gfx1100})"));
        assert!(text.ends_with("gpu-module-to-binary{format=isa})"));
        assert!(!text.contains("nvvm"));
        let wave64 = device_lowering(&Options {
            chip: "gfx1100".into(),
            wave: Some(64),
            ..Options::default()
        });
        assert!(wave64.contains("wave64=true"));
        assert!(device_lowering(&Options::default()).contains("chip=gfx942 O=3 wave64=true"));
    }

    #[test]
    fn options_are_validated() {
        assert!(Options::default().validate().is_ok());
        let chip = |chip: &str, wave: Option<u32>| Options {
            chip: chip.into(),
            wave,
            ..Options::default()
        };
        assert_eq!(
            chip("sm_90", None).validate(),
            Err(OptionsError::UnknownChip("sm_90".into()))
        );
        assert_eq!(
            chip("gfx942", Some(32)).validate(),
            Err(OptionsError::Wave32Unsupported("gfx942".into()))
        );
        assert_eq!(
            chip("gfx942", Some(16)).validate(),
            Err(OptionsError::Wave(16))
        );
        assert!(chip("gfx1100", Some(64)).validate().is_ok());
        assert!(chip("gfx1030", Some(32)).validate().is_ok());
        assert_eq!(chip("gfx1100", None).wave(), 32);
        assert_eq!(chip("gfx90a", None).wave(), 64);
        let bad_block = Options {
            block_size: 0,
            ..Options::default()
        };
        assert_eq!(bad_block.validate(), Err(OptionsError::BlockSize(0)));
    }
}
