//! The paper's model of one streaming multiprocessor (Section 4, Fig. 2,
//! Table 1) and the kernel-level estimate built on it.
//!
//! **The SM net.** The constant part is the place `p0` (the SM), holding
//! one token per warp scheduler, and the waiting transition `t0`, a loop on
//! `p0` with an inhibitor arc from every warp's `p2`: it fires in a step
//! where a scheduler is free and no warp is ready. Each warp adds a *warp
//! part* (WPNM) of 18 places `w<i>.p1` .. `w<i>.p18` and the transitions of
//! Fig. 2 (named as there, `w<i>.t1` ..):
//!
//! | frame | transition | entries | exits |
//! |---|---|---|---|
//! | I (select) | t2 / t3 / t4 | p3, p5 / p7 / p9 | p4, p6 / p8 / p10 |
//! | issue | t1 | p0, p1, p2, p4 | p1, p11 |
//! | II (arithmetic) | t7 | p11, p6 | p17 |
//! | | t15 | p17 | p0, p2, p3 |
//! | III (shared) | t6 | p11, p8 | p15 × (l2 + 1) |
//! | | t17 | p15 × 2 | p15, p18 |
//! | | t12 | p15, p18 × l2 | p16 |
//! | | t14 | p16 | p0, p2, p3 |
//! | IV (global) | t5 | p11, p10 | p0, p12 × (l1 + 1) |
//! | | t8 | p12 × 2 | p12, p13 |
//! | | t9 | p12, p13 × l1 | p14 |
//! | | t11 | p14 | p2, p3 |
//! | end | t16 | p1, p2, p3, `running` (inhibitors p5, p7, p9) | |
//!
//! `p5`, `p7` and `p9` start with the warp's numbers of arithmetic
//! operations, shared and global accesses (x_a, x_s, x_g); `p1`, `p2` and
//! `p3` with one token. Selection among t2, t3 and t4 is the random
//! conflict resolution on `p3`. The latency counters fire once per step:
//! t8 (t17) moves one token from `p12` (`p15`) to `p13` (`p18`) while
//! `p12` holds two, so t9 (t12) fires `l1` (`l2`) steps after t5 (t6).
//! The global access returns the scheduler at t5, so other warps run while
//! it waits; the arithmetic and shared paths hold it to the end.
//!
//! Fig. 2 and Table 1 number the transitions t1 .. t17 but draw 15 of
//! them: t10 and t13 appear nowhere, and neither does an arc for them, so
//! the warp part here has the 15 drawn transitions. Two departures from
//! the figure, both needed to reach the dead marking the paper runs to:
//!
//! * t16 also takes `p3`. In the figure it needs `p1` and `p2` and the
//!   three empty counters, which also holds right after the *last*
//!   instruction is selected (p4 marked, not yet issued): t16 would then
//!   race t1 for `p2` and could end the warp before its last instruction.
//!   `p3` is marked exactly when no selected instruction is pending.
//! * t0 also reads a place `running` holding the number of unfinished
//!   warps (t16 takes one). With inhibitors on the `p2` places only, t0
//!   stays enabled forever once every warp has ended (t16 empties `p2`),
//!   so the net would have no dead marking.
//!
//! A latency of 0 drops the counter arc (t9 or t12 then fires right after
//! t5 or t6).
//!
//! **Memory slots** (a deviation from the paper, off by default). In the
//! paper's net every warp's global access proceeds at once, so an SM with
//! many memory-bound warps overlaps all their latencies: the net has no
//! bandwidth. With `memory_slots = Some(k)` the SM also has a place
//! `memory` of k tokens; t5 takes one and t9 returns it, so at most k
//! global accesses are in flight and a memory-bound SM completes at most
//! k per l1 steps. k is the device's bandwidth per SM times the latency,
//! in warp accesses: on the H200, 4.18 TB/s over 132 SMs at 1.98 GHz is
//! 16 B a cycle, and l1 = 400 steps at 0.62 cycles a step is about 250
//! cycles, so 4000 B, about 31 accesses of 128 B (PERF.md measures 16, 32
//! and 64).
//!
//! **Warm launches** (a deviation from the paper, off by default). The
//! paper's l1 is one latency for every global access. On a device with a
//! large L2 (50 MiB on the H200) a kernel launched again finds the data and
//! code its previous launch touched in the cache, and its accesses wait
//! about a quarter as long (PERF.md, "Warm launches"). With
//! `Device::warm = Some(WarmLaunches { global_latency, cache_bytes })`, a
//! kernel launched n times per run ([`LaunchCount`]) is predicted per
//! launch as `(cold + (n - 1) * warm) / n`: one launch simulated at l1 and
//! the others at the warm latency. Its data stay in the cache only when
//! everything launched between its launches fits: the caller gives that
//! working set (the footprints, [`footprint`], of the kernels in the loop
//! that repeats it), and one larger than `cache_bytes`, or unknown, keeps
//! every launch cold. A kernel launched an unknown number of times (a
//! loop whose count only a run knows) is taken to run many times, so
//! warm.
//!
//! **Kernels.** The model simulates one SM. A launch of `threads` threads
//! in blocks of `block` spreads its blocks over the device's
//! multiprocessors; the busiest one runs `ceil(blocks / SMs)` blocks in
//! rounds of as many as fit at once (by warps and blocks per SM), and the
//! estimate is the sum of the rounds' simulated steps, every warp with the
//! kernel's per-thread mix.

use crate::{
    calibration::Calibration,
    net::{Net, NetError, PlaceId},
    simulate::{Outcome, SimulateError, Simulation, StepLimit},
};
use std::collections::{HashMap, hash_map::Entry};

/// The instruction mix of one thread (and so of its warp): the initial
/// markings of `p5`, `p7` and `p9`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Mix {
    /// x_a: arithmetic operations.
    pub arithmetic: u64,
    /// x_s: shared-memory accesses.
    pub shared: u64,
    /// x_g: global-memory accesses.
    pub global: u64,
}

impl Mix {
    pub fn instructions(&self) -> u64 {
        self.arithmetic + self.shared + self.global
    }
}

/// The parameters of the SM net.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SmModel {
    /// Initial tokens of `p0`: warp schedulers per SM.
    pub schedulers: u64,
    /// l1: steps a global access waits.
    pub global_latency: u64,
    /// l2: steps a shared access waits.
    pub shared_latency: u64,
    /// Global accesses in flight at once on the SM (the place `memory`),
    /// or None for the paper's net, where every warp's access proceeds at
    /// once (see "Memory slots" above).
    pub memory_slots: Option<u64>,
}

impl Default for SmModel {
    /// The paper's defaults (l1 = 20, l2 = 2) with the 4 schedulers of
    /// current NVIDIA multiprocessors.
    fn default() -> Self {
        Self {
            schedulers: 4,
            global_latency: 20,
            shared_latency: 2,
            memory_slots: None,
        }
    }
}

/// Names of a warp part's places, `p1` to `p18`.
const WARP_PLACES: usize = 18;
/// Index of the `running` place among a warp part's places (after `p18`).
const RUNNING: usize = WARP_PLACES + 1;
/// Index of the `memory` place, where the SM has one.
const MEMORY: usize = RUNNING + 1;

impl SmModel {
    /// The SM net with one warp part per entry of `warps`.
    pub fn net(&self, warps: &[Mix]) -> Result<Net, NetError> {
        let mut net = Net::new();
        let sm = net.add_place("p0", self.schedulers)?;
        let running = net.add_place("running", warps.len() as u64)?;
        let memory = match self.memory_slots {
            Some(slots) => Some(net.add_place("memory", slots)?),
            None => None,
        };
        let mut ready_places = Vec::with_capacity(warps.len());
        for (index, mix) in warps.iter().enumerate() {
            ready_places.push(self.add_warp(&mut net, index, *mix, sm, running, memory)?);
        }
        let waiting = net.add_transition(
            "t0",
            &[(sm, 1), (running, 1)],
            &[(sm, 1), (running, 1)],
            &ready_places,
        )?;
        net.set_idle(Some(waiting));
        Ok(net)
    }

    /// Adds warp `index`'s part (its global accesses holding a token of
    /// `memory` from t5 to t9, if there is such a place); returns its `p2`.
    fn add_warp(
        &self,
        net: &mut Net,
        index: usize,
        mix: Mix,
        sm: PlaceId,
        running: PlaceId,
        memory: Option<PlaceId>,
    ) -> Result<PlaceId, NetError> {
        let mut p = Vec::with_capacity(RUNNING + 1);
        p.push(sm); // p[0] is the SM, so p[k] is the figure's pk.
        for number in 1..=WARP_PLACES {
            let initial = match number {
                1..=3 => 1,
                5 => mix.arithmetic,
                7 => mix.shared,
                9 => mix.global,
                _ => 0,
            };
            p.push(net.add_place(&format!("w{index}.p{number}"), initial)?);
        }
        p.push(running); // p[RUNNING]: shared by every warp's t16 (and t0).
        // p[MEMORY]: the memory slots, when the SM has them.
        let slot: &[(usize, u64)] = match memory {
            Some(memory) => {
                p.push(memory);
                &[(MEMORY, 1)]
            }
            None => &[],
        };
        let mut transition = |number: u32,
                              inputs: &[(usize, u64)],
                              outputs: &[(usize, u64)],
                              inhibitors: &[usize]|
         -> Result<(), NetError> {
            let places = |arcs: &[(usize, u64)]| -> Vec<(PlaceId, u64)> {
                arcs.iter().map(|&(k, w)| (p[k], w)).collect()
            };
            let inhibitors: Vec<PlaceId> = inhibitors.iter().map(|&k| p[k]).collect();
            net.add_transition(
                &format!("w{index}.t{number}"),
                &places(inputs),
                &places(outputs),
                &inhibitors,
            )
            .map(|_| ())
        };
        let (l1, l2) = (self.global_latency, self.shared_latency);
        // Issue and selection (frame I).
        transition(
            1,
            &[(0, 1), (1, 1), (2, 1), (4, 1)],
            &[(1, 1), (11, 1)],
            &[],
        )?;
        transition(2, &[(3, 1), (5, 1)], &[(4, 1), (6, 1)], &[])?;
        transition(3, &[(3, 1), (7, 1)], &[(4, 1), (8, 1)], &[])?;
        transition(4, &[(3, 1), (9, 1)], &[(4, 1), (10, 1)], &[])?;
        // Global access (frame IV): the scheduler returns at t5.
        transition(
            5,
            &[&[(11, 1), (10, 1)], slot].concat(),
            &[(0, 1), (12, l1 + 1)],
            &[],
        )?;
        // Shared access (frame III).
        transition(6, &[(11, 1), (8, 1)], &[(15, l2 + 1)], &[])?;
        // Arithmetic (frame II).
        transition(7, &[(11, 1), (6, 1)], &[(17, 1)], &[])?;
        transition(8, &[(12, 2)], &[(12, 1), (13, 1)], &[])?;
        let mut access = vec![(12, 1)];
        if l1 > 0 {
            access.push((13, l1));
        }
        transition(9, &access, &[&[(14, 1)], slot].concat(), &[])?;
        transition(11, &[(14, 1)], &[(2, 1), (3, 1)], &[])?;
        let mut access = vec![(15, 1)];
        if l2 > 0 {
            access.push((18, l2));
        }
        transition(12, &access, &[(16, 1)], &[])?;
        transition(14, &[(16, 1)], &[(0, 1), (2, 1), (3, 1)], &[])?;
        transition(15, &[(17, 1)], &[(0, 1), (2, 1), (3, 1)], &[])?;
        transition(16, &[(1, 1), (2, 1), (3, 1), (RUNNING, 1)], &[], &[5, 7, 9])?;
        transition(17, &[(15, 2)], &[(15, 1), (18, 1)], &[])?;
        Ok(p[2])
    }

    /// The SM of `schedulers` schedulers with the latencies given, else
    /// the ones `calibration` was fitted with, else the paper's.
    pub fn with_latencies(
        schedulers: u64,
        global: Option<u64>,
        shared: Option<u64>,
        calibration: Option<&Calibration>,
    ) -> Self {
        let paper = Self::default();
        Self {
            schedulers,
            global_latency: global
                .or(calibration.and_then(|c| c.global_latency))
                .unwrap_or(paper.global_latency),
            shared_latency: shared
                .or(calibration.and_then(|c| c.shared_latency))
                .unwrap_or(paper.shared_latency),
            memory_slots: None,
        }
    }

    /// Simulates `warps` warps of mix `mix` on one SM to the dead marking.
    pub fn simulate(&self, warps: u64, mix: Mix, seed: u64) -> Result<Outcome, ModelError> {
        let net = self.net(&vec![mix; warps as usize])?;
        Ok(Simulation::new(&net, seed).run(StepLimit::default())?)
    }
}

/// A failure to build or run the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Net(#[from] NetError),
    #[error(transparent)]
    Simulate(#[from] SimulateError),
    #[error("a launch of {0} threads in blocks of {1}: both must be at least 1")]
    EmptyLaunch(u64, u64),
}

/// The device the kernel estimate spreads blocks over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub name: String,
    pub multiprocessors: u64,
    pub warp_size: u64,
    /// Resident warps per multiprocessor (at most 64 warp parts per SM
    /// net, as the paper notes).
    pub max_warps_per_sm: u64,
    pub max_blocks_per_sm: u64,
    pub sm: SmModel,
    /// Launches after a kernel's first, when they find its data cached
    /// (see "Warm launches" above); None: every launch waits l1.
    pub warm: Option<WarmLaunches>,
}

/// The cache that makes a kernel's later launches faster than its first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmLaunches {
    /// l1 of a launch whose data a previous launch left in the cache.
    pub global_latency: u64,
    /// The cache's size: a kernel whose working set is larger stays cold.
    pub cache_bytes: u64,
}

impl WarmLaunches {
    /// Warm launches as a tool's setting names them: `none` turns them
    /// off, no setting (or an empty one) takes the calibration's latency
    /// when it records one, and a number is the latency. The error is the
    /// setting that is none of these.
    pub fn from_setting(
        setting: Option<&str>,
        cache_bytes: u64,
        calibration: Option<&Calibration>,
    ) -> Result<Option<Self>, String> {
        let global_latency = match setting.map(str::trim) {
            Some("none") => None,
            None | Some("") => calibration.and_then(|c| c.warm_global_latency),
            Some(text) => Some(text.parse().map_err(|_| text.to_string())?),
        };
        Ok(global_latency.map(|global_latency| Self {
            global_latency,
            cache_bytes,
        }))
    }
}

/// The L2 of an NVIDIA H200 (and H100), [`WarmLaunches::cache_bytes`]'s
/// default.
pub const H200_L2_BYTES: u64 = 50 << 20;

/// Bytes one global access of a thread moves in the footprint estimate:
/// the mix counts accesses, not their widths, and most are 32-bit words.
pub const WORD_BYTES: u64 = 4;

/// The bytes a launch of `threads` threads of `mix` moves through global
/// memory, as the cache sees them: every access a distinct word.
pub fn footprint(threads: u64, mix: Mix) -> u128 {
    u128::from(threads) * u128::from(mix.global) * u128::from(WORD_BYTES)
}

/// How many times a kernel is launched in one run of its program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchCount {
    Known(u64),
    /// In a loop whose trip count only a run knows: many times.
    Unknown,
}

impl Default for Device {
    /// An NVIDIA H200 (sm_90): 132 multiprocessors of 4 schedulers, 64
    /// resident warps and 32 resident blocks each.
    fn default() -> Self {
        Self {
            name: "NVIDIA H200".to_string(),
            multiprocessors: 132,
            warp_size: 32,
            max_warps_per_sm: 64,
            max_blocks_per_sm: 32,
            sm: SmModel::default(),
            warm: None,
        }
    }
}

/// A kernel launch: its threads and block size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub threads: u64,
    pub block: u64,
}

/// The model's estimate of one kernel launch.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelEstimate {
    /// Warps of the whole launch.
    pub warps: u64,
    /// Warps on the busiest multiprocessor in its first round.
    pub warps_per_sm: u64,
    /// Rounds of resident blocks on the busiest multiprocessor.
    pub rounds: u64,
    /// Predicted steps (summed over the rounds).
    pub steps: u64,
    pub idle_steps: u64,
    pub firings: u64,
    /// Steps of a warm launch, when the estimate is the mean of a cold
    /// first launch and warm ones (see "Warm launches" above).
    pub warm_steps: Option<u64>,
}

impl KernelEstimate {
    pub fn idle_share(&self) -> f64 {
        crate::simulate::idle_share(self.idle_steps, self.steps)
    }
}

/// Kernel estimates with the SM simulations memoized by SM parameters,
/// warp count and mix.
#[derive(Debug)]
pub struct Estimator {
    pub device: Device,
    pub seed: u64,
    simulations: HashMap<(SmModel, u64, Mix), Outcome>,
}

impl Estimator {
    pub fn new(device: Device, seed: u64) -> Self {
        Self {
            device,
            seed,
            simulations: HashMap::new(),
        }
    }

    /// One SM running `warps` warps of `mix` (memoized).
    pub fn sm(&mut self, warps: u64, mix: Mix) -> Result<&Outcome, ModelError> {
        self.sm_of(self.device.sm, warps, mix)
    }

    fn sm_of(&mut self, sm: SmModel, warps: u64, mix: Mix) -> Result<&Outcome, ModelError> {
        Ok(match self.simulations.entry((sm, warps, mix)) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(new) => new.insert(sm.simulate(warps, mix, self.seed)?),
        })
    }

    /// The estimate of one launch of `launch` with every thread running
    /// `mix`, every access waiting l1 (a first launch).
    pub fn kernel(&mut self, launch: Launch, mix: Mix) -> Result<KernelEstimate, ModelError> {
        self.kernel_on(self.device.sm, launch, mix)
    }

    /// The estimate per launch of a kernel launched `count` times per
    /// run, with `working_set` bytes (when known) touched between two of
    /// its launches: the first launch cold, the others warm where the
    /// device has [`WarmLaunches`] and the working set fits its cache (see
    /// "Warm launches" above); else [`Self::kernel`].
    pub fn repeated(
        &mut self,
        launch: Launch,
        mix: Mix,
        count: LaunchCount,
        working_set: Option<u128>,
    ) -> Result<KernelEstimate, ModelError> {
        let cold = self.kernel(launch, mix)?;
        let warm = match (self.device.warm, working_set) {
            (Some(warm), Some(bytes))
                if !matches!(count, LaunchCount::Known(0 | 1))
                    && bytes <= u128::from(warm.cache_bytes) =>
            {
                warm
            }
            _ => return Ok(cold),
        };
        let sm = SmModel {
            global_latency: warm.global_latency,
            ..self.device.sm
        };
        let hot = self.kernel_on(sm, launch, mix)?;
        let mean = |first: u64, rest: u64| match count {
            LaunchCount::Known(n) if n > 1 => {
                let total = u128::from(first) + u128::from(n - 1) * u128::from(rest);
                u64::try_from(total / u128::from(n)).unwrap_or(u64::MAX)
            }
            _ => rest,
        };
        Ok(KernelEstimate {
            steps: mean(cold.steps, hot.steps),
            idle_steps: mean(cold.idle_steps, hot.idle_steps),
            firings: mean(cold.firings, hot.firings),
            warm_steps: Some(hot.steps),
            ..cold
        })
    }

    fn kernel_on(
        &mut self,
        sm: SmModel,
        launch: Launch,
        mix: Mix,
    ) -> Result<KernelEstimate, ModelError> {
        if launch.threads == 0 || launch.block == 0 {
            return Err(ModelError::EmptyLaunch(launch.threads, launch.block));
        }
        let device = &self.device;
        let warp_size = device.warp_size.max(1);
        let warps = launch.threads.div_ceil(warp_size);
        let blocks = launch.threads.div_ceil(launch.block);
        let warps_per_block = launch.block.div_ceil(warp_size).min(warps);
        let resident = (device.max_warps_per_sm / warps_per_block)
            .min(device.max_blocks_per_sm)
            .max(1);
        let assigned = blocks.div_ceil(device.multiprocessors.max(1));
        let rounds = assigned.div_ceil(resident);
        let first = resident.min(assigned) * warps_per_block;
        let last_blocks = assigned - (rounds - 1) * resident;
        let full = self.sm_of(sm, first, mix)?.clone();
        let tail = self.sm_of(sm, last_blocks * warps_per_block, mix)?.clone();
        let (steps, idle_steps, firings) = (
            full.steps * (rounds - 1) + tail.steps,
            full.idle_steps * (rounds - 1) + tail.idle_steps,
            full.firings * (rounds - 1) + tail.firings,
        );
        Ok(KernelEstimate {
            warps,
            warps_per_sm: first,
            rounds,
            steps,
            idle_steps,
            firings,
            warm_steps: None,
        })
    }
}
