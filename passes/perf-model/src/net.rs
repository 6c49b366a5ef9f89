//! Inhibitor place/transition nets (the paper's Definition 1): places with
//! an initial marking, transitions with weighted input arcs (entries,
//! `•a`), weighted output arcs (exits, `a•`) and inhibitor arcs (`◦a`).
//!
//! A transition is enabled at a marking when every entry holds at least its
//! arc's weight and every inhibitor place is empty. Places are unbounded in
//! the engine; the paper's nets are bounded by construction.

use std::collections::HashMap;

/// Index of a place in its net.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlaceId(pub u32);

/// Index of a transition in its net.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransitionId(pub u32);

/// A place: its name and initial number of tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub name: String,
    pub initial: u64,
}

/// A weighted arc between a place and a transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arc {
    pub place: PlaceId,
    pub weight: u64,
}

/// A transition with its arcs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub name: String,
    /// Entries and the tokens firing takes from each.
    pub inputs: Vec<Arc>,
    /// Exits and the tokens firing puts into each.
    pub outputs: Vec<Arc>,
    /// Places that must be empty for the transition to be enabled.
    pub inhibitors: Vec<PlaceId>,
}

/// A net under construction or complete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Net {
    places: Vec<Place>,
    transitions: Vec<Transition>,
    place_names: HashMap<String, PlaceId>,
    transition_names: HashMap<String, TransitionId>,
    /// The transition whose firing marks a step as idle (the paper's t0).
    idle: Option<TransitionId>,
}

/// A construction error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    #[error("a place or transition named '{0}' already exists")]
    Duplicate(String),
    #[error("an arc of weight 0 from or to place '{0}' (weights are at least 1)")]
    ZeroWeight(String),
    #[error("place '{0}' appears twice among the {1} arcs of one transition")]
    RepeatedArc(String, &'static str),
}

impl Net {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a place holding `initial` tokens.
    pub fn add_place(&mut self, name: &str, initial: u64) -> Result<PlaceId, NetError> {
        self.check_fresh(name)?;
        let id = PlaceId(self.places.len() as u32);
        self.places.push(Place {
            name: name.to_string(),
            initial,
        });
        self.place_names.insert(name.to_string(), id);
        Ok(id)
    }

    /// Adds a transition; `inputs` and `outputs` are (place, weight) pairs.
    pub fn add_transition(
        &mut self,
        name: &str,
        inputs: &[(PlaceId, u64)],
        outputs: &[(PlaceId, u64)],
        inhibitors: &[PlaceId],
    ) -> Result<TransitionId, NetError> {
        self.check_fresh(name)?;
        let inputs = self.arcs(inputs, "input")?;
        let outputs = self.arcs(outputs, "output")?;
        let mut seen = Vec::new();
        for place in inhibitors {
            if seen.contains(place) {
                return Err(NetError::RepeatedArc(
                    self.place(*place).name.clone(),
                    "inhibitor",
                ));
            }
            seen.push(*place);
        }
        let id = TransitionId(self.transitions.len() as u32);
        self.transitions.push(Transition {
            name: name.to_string(),
            inputs,
            outputs,
            inhibitors: inhibitors.to_vec(),
        });
        self.transition_names.insert(name.to_string(), id);
        Ok(id)
    }

    fn check_fresh(&self, name: &str) -> Result<(), NetError> {
        if self.place_names.contains_key(name) || self.transition_names.contains_key(name) {
            return Err(NetError::Duplicate(name.to_string()));
        }
        Ok(())
    }

    fn arcs(&self, pairs: &[(PlaceId, u64)], kind: &'static str) -> Result<Vec<Arc>, NetError> {
        let mut arcs: Vec<Arc> = Vec::with_capacity(pairs.len());
        for &(place, weight) in pairs {
            if weight == 0 {
                return Err(NetError::ZeroWeight(self.place(place).name.clone()));
            }
            if arcs.iter().any(|arc| arc.place == place) {
                return Err(NetError::RepeatedArc(self.place(place).name.clone(), kind));
            }
            arcs.push(Arc { place, weight });
        }
        Ok(arcs)
    }

    /// Marks `transition` as the idle transition: the steps it fires in are
    /// counted as idle steps.
    pub fn set_idle(&mut self, transition: Option<TransitionId>) {
        self.idle = transition;
    }

    pub fn idle(&self) -> Option<TransitionId> {
        self.idle
    }

    pub fn places(&self) -> &[Place] {
        &self.places
    }

    pub fn transitions(&self) -> &[Transition] {
        &self.transitions
    }

    pub fn place(&self, id: PlaceId) -> &Place {
        &self.places[id.0 as usize]
    }

    pub fn transition(&self, id: TransitionId) -> &Transition {
        &self.transitions[id.0 as usize]
    }

    pub fn place_named(&self, name: &str) -> Option<PlaceId> {
        self.place_names.get(name).copied()
    }

    pub fn transition_named(&self, name: &str) -> Option<TransitionId> {
        self.transition_names.get(name).copied()
    }

    /// Changes the initial marking of `place`.
    pub fn set_initial(&mut self, place: PlaceId, tokens: u64) {
        self.places[place.0 as usize].initial = tokens;
    }

    /// The initial marking, one count per place in place order.
    pub fn initial_marking(&self) -> Vec<u64> {
        self.places.iter().map(|place| place.initial).collect()
    }

    /// Whether `transition` is enabled at `marking`.
    pub fn is_enabled(&self, transition: TransitionId, marking: &[u64]) -> bool {
        let transition = self.transition(transition);
        transition
            .inputs
            .iter()
            .all(|arc| marking[arc.place.0 as usize] >= arc.weight)
            && transition
                .inhibitors
                .iter()
                .all(|place| marking[place.0 as usize] == 0)
    }

    /// The transitions enabled at `marking`, in net order.
    pub fn enabled(&self, marking: &[u64]) -> Vec<TransitionId> {
        (0..self.transitions.len() as u32)
            .map(TransitionId)
            .filter(|&transition| self.is_enabled(transition, marking))
            .collect()
    }

    /// Whether the step `step` (a set of transitions) is enabled at
    /// `marking`: the entries' weights summed over the step are available
    /// and every inhibitor place of every transition is empty.
    pub fn is_step_enabled(&self, step: &[TransitionId], marking: &[u64]) -> bool {
        let mut needed = vec![0u64; self.places.len()];
        for &transition in step {
            let transition = self.transition(transition);
            if transition
                .inhibitors
                .iter()
                .any(|place| marking[place.0 as usize] != 0)
            {
                return false;
            }
            for arc in &transition.inputs {
                needed[arc.place.0 as usize] += arc.weight;
            }
        }
        needed.iter().zip(marking).all(|(need, have)| need <= have)
    }

    /// The marking after executing the enabled step `step` at `marking`:
    /// `M - Σ •a + Σ a•`.
    pub fn execute_step(&self, step: &[TransitionId], marking: &[u64]) -> Vec<u64> {
        let mut next = marking.to_vec();
        for &transition in step {
            for arc in &self.transition(transition).inputs {
                next[arc.place.0 as usize] -= arc.weight;
            }
        }
        for &transition in step {
            for arc in &self.transition(transition).outputs {
                next[arc.place.0 as usize] += arc.weight;
            }
        }
        next
    }
}
