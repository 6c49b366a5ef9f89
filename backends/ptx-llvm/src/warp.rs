//! How 32-lane PTX warps map onto waves of 32 or 64 lanes: wave32 runs
//! each warp as a wave; wave64 runs two warps per wave, lanes 0-31 and
//! 32-63 (the AMD CDNA case no other translator handles). Everything a
//! PTX program can observe keeps its 32-lane meaning: `%laneid` is the
//! lane within the half, lane masks (`activemask`, `vote.ballot`,
//! `%lanemask_*`) are the half's 32 bits, and `shfl` reads only within
//! the half, with PTX's width and clamp rules. Both the CPU emulation and
//! the AMDGPU translation build these computations from here.

use crate::{TranslateError, llvm};
use inkwell::IntPredicate;
use inkwell::builder::Builder;
use inkwell::values::IntValue;
use pgpu_ptx::ir::Flag;

/// The lanes of a wave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpModel {
    /// Lanes per wave: 32 or 64.
    pub wave: u32,
}

type Result<T> = std::result::Result<T, TranslateError>;

impl WarpModel {
    /// Waves of `wave` lanes.
    pub fn new(wave: u32) -> WarpModel {
        WarpModel { wave }
    }

    /// PTX `%laneid` of wave lane `lane` (i32).
    pub fn lane_id<'ctx>(&self, b: &Builder<'ctx>, lane: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        b.build_and(lane, lane.get_type().const_int(31, false), "laneid")
            .map_err(llvm)
    }

    /// The bits of a wave-wide mask (i64) that belong to `lane`'s PTX
    /// warp, as that warp's 32-bit mask (i32).
    pub fn lanes_of_warp<'ctx>(
        &self,
        b: &Builder<'ctx>,
        mask: IntValue<'ctx>,
        lane: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let i32t = lane.get_type();
        if self.wave == 32 {
            return b.build_int_truncate(mask, i32t, "").map_err(llvm);
        }
        let first = b
            .build_and(lane, i32t.const_int(!31u64 & 0xffff_ffff, false), "")
            .map_err(llvm)?;
        let first = b
            .build_int_z_extend(first, mask.get_type(), "")
            .map_err(llvm)?;
        let shifted = b.build_right_shift(mask, first, false, "").map_err(llvm)?;
        b.build_int_truncate(shifted, i32t, "").map_err(llvm)
    }

    /// The wave lane `shfl.sync.mode` reads for `lane`, and whether the
    /// source lane is in range (PTX's `p` output). `b` is the lane
    /// operand and `c` packs the clamp (bits 0-4) and the segment mask
    /// (bits 8-12). All i32.
    pub fn shuffle_source<'ctx>(
        &self,
        builder: &Builder<'ctx>,
        mode: Flag,
        lane: IntValue<'ctx>,
        b: IntValue<'ctx>,
        c: IntValue<'ctx>,
    ) -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
        let ty = lane.get_type();
        let k = |v: u64| ty.const_int(v, false);
        let id = self.lane_id(builder, lane)?;
        let warp_base = builder
            .build_and(lane, k(!31u64 & 0xffff_ffff), "")
            .map_err(llvm)?;
        let bv = builder.build_and(b, k(31), "").map_err(llvm)?;
        let clamp = builder.build_and(c, k(31), "").map_err(llvm)?;
        let segment = builder
            .build_and(
                builder
                    .build_right_shift(c, k(8), false, "")
                    .map_err(llvm)?,
                k(31),
                "",
            )
            .map_err(llvm)?;
        let not_segment = builder.build_xor(segment, k(31), "").map_err(llvm)?;
        let min_lane = builder.build_and(id, segment, "").map_err(llvm)?;
        let max_lane = builder
            .build_or(
                min_lane,
                builder.build_and(clamp, not_segment, "").map_err(llvm)?,
                "",
            )
            .map_err(llvm)?;
        // The source lane and how it is compared with the segment's bound.
        let (j, in_segment) = match mode {
            Flag::Up => (
                builder.build_int_sub(id, bv, "").map_err(llvm)?,
                IntPredicate::SGE,
            ),
            Flag::Down => (
                builder.build_int_add(id, bv, "").map_err(llvm)?,
                IntPredicate::SLE,
            ),
            Flag::Bfly => (
                builder.build_xor(id, bv, "").map_err(llvm)?,
                IntPredicate::SLE,
            ),
            _ => (
                builder
                    .build_or(
                        min_lane,
                        builder.build_and(bv, not_segment, "").map_err(llvm)?,
                        "",
                    )
                    .map_err(llvm)?,
                IntPredicate::SLE,
            ),
        };
        let valid = builder
            .build_int_compare(in_segment, j, max_lane, "")
            .map_err(llvm)?;
        let source = builder
            .build_select(valid, j, id, "")
            .map_err(llvm)?
            .into_int_value();
        let wave_lane = builder.build_or(warp_base, source, "").map_err(llvm)?;
        Ok((wave_lane, valid))
    }
}
