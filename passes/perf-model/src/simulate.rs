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
//! A step that fires every enabled transition had no conflict, and the
//! order did not matter. Such a step often repeats unchanged (warps
//! counting down their latencies while the others wait):
//! [`Simulation::run`] then computes how many more steps would fire
//! exactly the same set without a conflict, before one of its transitions
//! runs out of tokens or another one becomes enabled (the marking moves by
//! the same amount each step, so each condition is a threshold), and
//! executes them at once, moving the generator on past the numbers their
//! permutations would have drawn (SplitMix64 adds a constant per number).
//! The outcome is the step-by-step run's, to the marking and the idle
//! steps, at the cost of one step.
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

/// SplitMix64's increment per number.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Moves on as `count` calls of [`Self::next`] would.
    fn skip(&mut self, count: u64) {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA.wrapping_mul(count));
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

    fn inhibitors_of(&self, transition: usize) -> &[usize] {
        &self.inhibitors[self.inhibitor_start[transition]..self.inhibitor_start[transition + 1]]
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
    /// Whether the last step had no conflict (it fired every enabled
    /// transition).
    conflict_free: bool,
    // Scratch space reused by every step.
    order: Vec<usize>,
    fired: Vec<usize>,
    touched: Vec<usize>,
    stamp: Vec<u64>,
    /// Per place: tokens demanded in a step, and the change of a repeated
    /// step (zero between uses); the places set.
    demand: Vec<u64>,
    change: Vec<i64>,
    places_used: Vec<usize>,
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
            conflict_free: false,
            order: Vec::new(),
            fired: Vec::new(),
            touched: Vec::new(),
            stamp: vec![0; count],
            demand: vec![0; net.places().len()],
            change: vec![0; net.places().len()],
            places_used: Vec::new(),
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
        self.permute_enabled();
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
        // No transition left out: the entries summed were available.
        self.conflict_free = self.fired.len() == self.order.len();
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
        self.update_readers_of_fired();
        &self.fired
    }

    /// Draws the step's permutation of the enabled transitions into
    /// `order`. The enabled list's order depends only on the run so far,
    /// so the permutation is a function of the seed.
    fn permute_enabled(&mut self) {
        self.order.clear();
        self.order.extend_from_slice(&self.enabled);
        for last in (1..self.order.len()).rev() {
            let pick = self.random.below(last + 1);
            self.order.swap(last, pick);
        }
    }

    /// Tests again every reader of a place the fired transitions changed,
    /// in the order they fired.
    fn update_readers_of_fired(&mut self) {
        let Self {
            compiled,
            fired,
            touched,
            stamp,
            steps,
            ..
        } = self;
        touched.clear();
        for &transition in fired.iter() {
            for &(place, _) in compiled
                .inputs(transition)
                .iter()
                .chain(compiled.outputs(transition))
            {
                for &reader in compiled.readers(place) {
                    if stamp[reader] != *steps {
                        stamp[reader] = *steps;
                        touched.push(reader);
                    }
                }
            }
        }
        for index in 0..self.touched.len() {
            let transition = self.touched[index];
            self.update(transition);
        }
    }

    /// After a conflict-free step: how many further steps would fire
    /// exactly the same transitions without a conflict (`u64::MAX` when
    /// the marking no longer changes: the net is live). A step `j` (1 the
    /// next) starts from `M + (j - 1) d`, `d` the step's change.
    fn repeats(&mut self) -> u64 {
        if !self.conflict_free
            || self.enabled.len() != self.fired.len()
            || self.fired.iter().any(|&t| self.position[t].is_none())
        {
            return 0;
        }
        for index in 0..self.fired.len() {
            let transition = self.fired[index];
            for &(place, weight) in self.compiled.inputs(transition) {
                if self.change[place] == 0 && self.demand[place] == 0 {
                    self.places_used.push(place);
                }
                self.change[place] -= weight as i64;
                self.demand[place] += weight;
            }
            for &(place, weight) in self.compiled.outputs(transition) {
                if self.change[place] == 0 && self.demand[place] == 0 {
                    self.places_used.push(place);
                }
                self.change[place] += weight as i64;
            }
        }
        let mut bound = u64::MAX;
        // The same transitions keep their tokens without a conflict.
        for &place in &self.places_used {
            let (tokens, demand, change) =
                (self.marking[place], self.demand[place], self.change[place]);
            if demand > tokens {
                bound = 0;
            } else if change < 0 {
                bound = bound.min((tokens - demand) / change.unsigned_abs() + 1);
            }
        }
        // No other transition becomes enabled (the fired ones' inhibitor
        // places are empty and stay so unless they change).
        for index in 0..self.places_used.len() {
            let place = self.places_used[index];
            if self.change[place] == 0 || bound == 0 {
                continue;
            }
            for &reader in self.compiled.readers(place) {
                if self.position[reader].is_some() {
                    if self.compiled.inhibitors_of(reader).contains(&place) {
                        bound = bound.min(1);
                    }
                    continue;
                }
                if let Some(first) = self.first_enabled(reader) {
                    bound = bound.min(first - 1);
                }
            }
        }
        for &place in &self.places_used {
            self.change[place] = 0;
            self.demand[place] = 0;
        }
        self.places_used.clear();
        bound
    }

    /// The first step `j >= 1` at which the disabled `transition` would be
    /// enabled if the last step repeated (its conditions are thresholds in
    /// `j`); `None` if never.
    fn first_enabled(&self, transition: usize) -> Option<u64> {
        let (mut low, mut high) = (1u64, u64::MAX);
        for &(place, weight) in self.compiled.inputs(transition) {
            let (tokens, change) = (self.marking[place], self.change[place]);
            match change.cmp(&0) {
                std::cmp::Ordering::Equal if tokens < weight => return None,
                std::cmp::Ordering::Greater if tokens < weight => {
                    low = low.max(1 + (weight - tokens).div_ceil(change as u64));
                }
                std::cmp::Ordering::Less if tokens < weight => return None,
                std::cmp::Ordering::Less => {
                    high = high.min(1 + (tokens - weight) / change.unsigned_abs());
                }
                _ => {}
            }
        }
        for &place in self.compiled.inhibitors_of(transition) {
            let (tokens, change) = (self.marking[place], self.change[place]);
            match change.cmp(&0) {
                std::cmp::Ordering::Equal if tokens > 0 => return None,
                std::cmp::Ordering::Greater if tokens > 0 => return None,
                std::cmp::Ordering::Greater => high = high.min(1),
                std::cmp::Ordering::Less => {
                    let step = change.unsigned_abs();
                    if tokens % step != 0 {
                        return None;
                    }
                    low = low.max(1 + tokens / step);
                    high = high.min(1 + tokens / step);
                }
                _ => {}
            }
        }
        (low <= high).then_some(low)
    }

    /// Executes `count` more steps that fire what the last one fired.
    fn repeat(&mut self, count: u64) {
        // Exits first: a place a transition both takes from and puts into
        // stays non-negative throughout.
        for &transition in &self.fired {
            for &(place, weight) in self.compiled.outputs(transition) {
                self.marking[place] += weight * count;
            }
        }
        for &transition in &self.fired {
            for &(place, weight) in self.compiled.inputs(transition) {
                self.marking[place] -= weight * count;
            }
        }
        // The permutations all but the last of those steps would have
        // drawn (the generator only adds a constant per number); the last
        // one's is drawn, as it orders the firings and so the updates of
        // the enabled list that follow.
        let draws = (self.fired.len() as u64).saturating_sub(1);
        self.random.skip(draws.wrapping_mul(count - 1));
        self.permute_enabled();
        self.fired.clear();
        self.fired.extend_from_slice(&self.order);
        self.steps += count;
        self.firings += self.fired.len() as u64 * count;
        if let Some(idle) = self.net.idle()
            && self.fired.contains(&(idle.0 as usize))
        {
            self.idle_steps += count;
        }
        self.update_readers_of_fired();
    }

    /// Runs to the dead marking, calling `observe` with each step's number
    /// (from 1) and fired transitions.
    pub fn run_observed(
        self,
        limit: StepLimit,
        mut observe: impl FnMut(u64, &[TransitionId]),
    ) -> Result<Outcome, SimulateError> {
        let mut fired = Vec::new();
        self.run_with(limit, false, |step, indices| {
            fired.clear();
            fired.extend(indices.iter().map(|&t| TransitionId(t as u32)));
            observe(step, &fired);
        })
    }

    /// Runs to the dead marking, repeated conflict-free steps at once.
    pub fn run(self, limit: StepLimit) -> Result<Outcome, SimulateError> {
        self.run_with(limit, true, |_, _| {})
    }

    /// Runs to the dead marking one step at a time (for comparison with
    /// [`Self::run`], which must give the same outcome).
    pub fn run_step_by_step(self, limit: StepLimit) -> Result<Outcome, SimulateError> {
        self.run_with(limit, false, |_, _| {})
    }

    /// Runs to the dead marking, repeated steps `at_once` or each observed.
    fn run_with(
        mut self,
        limit: StepLimit,
        at_once: bool,
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
            if at_once {
                let repeats = self.repeats().min(limit.0.saturating_sub(self.steps));
                if repeats > 0 {
                    self.repeat(repeats);
                }
            }
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
