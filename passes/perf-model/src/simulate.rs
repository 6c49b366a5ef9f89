//! Maximal concurrent step semantics (the paper's Section 3 and Section 4's
//! implementation note), run from the initial marking to the dead marking.
//!
//! A step is a set of transitions executed together: it is enabled at `M`
//! when the entries' weights summed over the step are available in `M` and
//! every inhibitor place of the step is empty in `M`; executing it yields
//! `M - Σ •a + Σ a•` (tokens a step produces are usable from the next
//! step on). Each step here is maximal: in every marking the engine lists
//! the enabled transitions, draws a uniformly random permutation of them
//! (Fisher-Yates over a seeded SplitMix64 generator, so a seed reproduces a
//! run), and takes them in that order, each one that is still enabled
//! against the tokens the ones before it took; a transition that lost a
//! conflict stays out. No transition left out could be added (the tokens
//! only decrease along the permutation), so the step is maximally
//! concurrent. Inhibitors are tested against `M`, where every listed
//! transition was enabled.
//!
//! The run ends at the dead marking (no transition enabled). Its result is
//! the number of steps and the number of idle steps: steps in which the
//! net's idle transition (the GPU model's t0) fired.
//!
//! The enabled set is maintained incrementally: after a step only the
//! transitions that read a place the step changed (as an entry or an
//! inhibitor) are tested again, so a step costs time in the number of
//! transitions fired and affected, not in the size of the net.

use crate::net::{Net, TransitionId};

/// The number of steps after which a run is abandoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepLimit(pub u64);

impl Default for StepLimit {
    fn default() -> Self {
        Self(1 << 32)
    }
}

/// The result of a run to the dead marking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Steps executed.
    pub steps: u64,
    /// Steps in which the idle transition fired.
    pub idle_steps: u64,
    /// Transition firings over all steps.
    pub firings: u64,
    /// The dead marking.
    pub marking: Vec<u64>,
}

impl Outcome {
    /// Idle steps as a share of all steps.
    pub fn idle_share(&self) -> f64 {
        idle_share(self.idle_steps, self.steps)
    }
}

/// `idle` steps as a share of `steps` (0 for a run of no steps).
pub fn idle_share(idle: u64, steps: u64) -> f64 {
    if steps == 0 {
        0.0
    } else {
        idle as f64 / steps as f64
    }
}

/// A run that did not reach a dead marking.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimulateError {
    #[error(
        "no dead marking within {steps} steps ({firings} firings): the net may be live or unbounded"
    )]
    StepLimit { steps: u64, firings: u64 },
}

/// The seeded generator of the permutations (SplitMix64).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number below `bound` (> 0), by multiply-shift.
    fn below(&mut self, bound: usize) -> usize {
        ((self.next() as u128 * bound as u128) >> 64) as usize
    }
}

/// The net flattened for the run: arcs in contiguous arrays.
#[derive(Debug)]
struct Compiled {
    /// `inputs[input_start[t]..input_start[t + 1]]`: (place, weight).
    input_start: Vec<usize>,
    inputs: Vec<(usize, u64)>,
    output_start: Vec<usize>,
    outputs: Vec<(usize, u64)>,
    inhibitor_start: Vec<usize>,
    inhibitors: Vec<usize>,
    /// For each place, the transitions that read it (entry or inhibitor).
    reader_start: Vec<usize>,
    readers: Vec<usize>,
}

impl Compiled {
    fn new(net: &Net) -> Self {
        let mut compiled = Compiled {
            input_start: vec![0],
            inputs: Vec::new(),
            output_start: vec![0],
            outputs: Vec::new(),
            inhibitor_start: vec![0],
            inhibitors: Vec::new(),
            reader_start: Vec::new(),
            readers: Vec::new(),
        };
        let mut readers_of: Vec<Vec<usize>> = vec![Vec::new(); net.places().len()];
        for (index, transition) in net.transitions().iter().enumerate() {
            for arc in &transition.inputs {
                compiled.inputs.push((arc.place.0 as usize, arc.weight));
                readers_of[arc.place.0 as usize].push(index);
            }
            for arc in &transition.outputs {
                compiled.outputs.push((arc.place.0 as usize, arc.weight));
            }
            for place in &transition.inhibitors {
                compiled.inhibitors.push(place.0 as usize);
                readers_of[place.0 as usize].push(index);
            }
            compiled.input_start.push(compiled.inputs.len());
            compiled.output_start.push(compiled.outputs.len());
            compiled.inhibitor_start.push(compiled.inhibitors.len());
        }
        for readers in readers_of {
            compiled.reader_start.push(compiled.readers.len());
            compiled.readers.extend(readers);
        }
        compiled.reader_start.push(compiled.readers.len());
        compiled
    }

    fn inputs(&self, transition: usize) -> &[(usize, u64)] {
        &self.inputs[self.input_start[transition]..self.input_start[transition + 1]]
    }

    fn outputs(&self, transition: usize) -> &[(usize, u64)] {
        &self.outputs[self.output_start[transition]..self.output_start[transition + 1]]
    }

    fn readers(&self, place: usize) -> &[usize] {
        &self.readers[self.reader_start[place]..self.reader_start[place + 1]]
    }

    fn is_enabled(&self, transition: usize, marking: &[u64]) -> bool {
        self.inputs(transition)
            .iter()
            .all(|&(place, weight)| marking[place] >= weight)
            && self.inhibitors
                [self.inhibitor_start[transition]..self.inhibitor_start[transition + 1]]
                .iter()
                .all(|&place| marking[place] == 0)
    }
}

/// A run of a net under maximal concurrent step semantics.
#[derive(Debug)]
pub struct Simulation<'n> {
    net: &'n Net,
    compiled: Compiled,
    marking: Vec<u64>,
    random: SplitMix64,
    /// The enabled transitions (unordered) and each one's index there.
    enabled: Vec<usize>,
    position: Vec<Option<usize>>,
    steps: u64,
    idle_steps: u64,
    firings: u64,
    // Scratch space reused by every step.
    order: Vec<usize>,
    fired: Vec<usize>,
    touched: Vec<usize>,
    stamp: Vec<u64>,
}

impl<'n> Simulation<'n> {
    /// A run of `net` from its initial marking with the permutations of
    /// generator seed `seed`.
    pub fn new(net: &'n Net, seed: u64) -> Self {
        let compiled = Compiled::new(net);
        let marking = net.initial_marking();
        let count = net.transitions().len();
        let mut simulation = Self {
            net,
            compiled,
            marking,
            random: SplitMix64(seed),
            enabled: Vec::new(),
            position: vec![None; count],
            steps: 0,
            idle_steps: 0,
            firings: 0,
            order: Vec::new(),
            fired: Vec::new(),
            touched: Vec::new(),
            stamp: vec![0; count],
        };
        for transition in 0..count {
            simulation.update(transition);
        }
        simulation
    }

    /// The current marking.
    pub fn marking(&self) -> &[u64] {
        &self.marking
    }

    /// Whether no transition is enabled.
    pub fn is_dead(&self) -> bool {
        self.enabled.is_empty()
    }

    fn update(&mut self, transition: usize) {
        let enabled = self.compiled.is_enabled(transition, &self.marking);
        match (enabled, self.position[transition]) {
            (true, None) => {
                self.position[transition] = Some(self.enabled.len());
                self.enabled.push(transition);
            }
            (false, Some(index)) => {
                self.enabled.swap_remove(index);
                if let Some(&moved) = self.enabled.get(index) {
                    self.position[moved] = Some(index);
                }
                self.position[transition] = None;
            }
            _ => {}
        }
    }

    /// Executes one maximal step; returns the transitions it fired, in the
    /// permutation's order (empty at a dead marking).
    pub fn step(&mut self) -> &[usize] {
        self.fired.clear();
        if self.enabled.is_empty() {
            return &self.fired;
        }
        self.order.clear();
        self.order.extend_from_slice(&self.enabled);
        // The enabled list's order depends only on the run so far, so the
        // permutation is a function of the seed.
        for last in (1..self.order.len()).rev() {
            let pick = self.random.below(last + 1);
            self.order.swap(last, pick);
        }
        for index in 0..self.order.len() {
            let transition = self.order[index];
            let inputs = self.compiled.inputs(transition);
            if inputs
                .iter()
                .all(|&(place, weight)| self.marking[place] >= weight)
            {
                for &(place, weight) in inputs {
                    self.marking[place] -= weight;
                }
                self.fired.push(transition);
            }
        }
        for &transition in &self.fired {
            for &(place, weight) in self.compiled.outputs(transition) {
                self.marking[place] += weight;
            }
        }
        self.steps += 1;
        self.firings += self.fired.len() as u64;
        if let Some(idle) = self.net.idle()
            && self.fired.contains(&(idle.0 as usize))
        {
            self.idle_steps += 1;
        }
        // Test again every reader of a place the step changed.
        self.touched.clear();
        for &transition in &self.fired {
            for &(place, _) in self
                .compiled
                .inputs(transition)
                .iter()
                .chain(self.compiled.outputs(transition))
            {
                for &reader in self.compiled.readers(place) {
                    if self.stamp[reader] != self.steps {
                        self.stamp[reader] = self.steps;
                        self.touched.push(reader);
                    }
                }
            }
        }
        for index in 0..self.touched.len() {
            let transition = self.touched[index];
            self.update(transition);
        }
        &self.fired
    }

    /// Runs to the dead marking, calling `observe` with each step's number
    /// (from 1) and fired transitions.
    pub fn run_observed(
        self,
        limit: StepLimit,
        mut observe: impl FnMut(u64, &[TransitionId]),
    ) -> Result<Outcome, SimulateError> {
        let mut fired = Vec::new();
        self.run_with(limit, |step, indices| {
            fired.clear();
            fired.extend(indices.iter().map(|&t| TransitionId(t as u32)));
            observe(step, &fired);
        })
    }

    /// Runs to the dead marking.
    pub fn run(self, limit: StepLimit) -> Result<Outcome, SimulateError> {
        self.run_with(limit, |_, _| {})
    }

    fn run_with(
        mut self,
        limit: StepLimit,
        mut observe: impl FnMut(u64, &[usize]),
    ) -> Result<Outcome, SimulateError> {
        while !self.is_dead() {
            if self.steps >= limit.0 {
                return Err(SimulateError::StepLimit {
                    steps: self.steps,
                    firings: self.firings,
                });
            }
            self.step();
            observe(self.steps, &self.fired);
        }
        Ok(self.finish())
    }

    fn finish(self) -> Outcome {
        Outcome {
            steps: self.steps,
            idle_steps: self.idle_steps,
            firings: self.firings,
            marking: self.marking,
        }
    }
}
