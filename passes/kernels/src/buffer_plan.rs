//! Temporary buffers of a spawn (seeds/bsgp.txt, Sections 4.2 step 7 and
//! 4.3): where each saved value lives between its supersteps.
//!
//! Every per-thread saved value (see [`crate::value_saving`]) is cut into
//! *segments* at the supersteps that load it with the old rank (Listing 4:
//! `v` is loaded from `t1[oldrank]` and moved to `t2` under the new rank).
//! A segment is written once, at the end of its first superstep, and read
//! up to its last superstep. The first segment of a value defined by a
//! collective (`scan`'s prefix, `sort_idx`, `thread.fork`'s child index) is
//! the collective's own output list; every other segment gets a temporary
//! buffer from the minimum-flow allocation ([`crate::buffer_flow`]), per
//! size class: the element type and the thread count it is indexed by
//! (which changes at `thread.fork`/`thread.kill`).
//!
//! Uniform saved values need no buffer: the host knows them (`pgpu.require`
//! results, collective totals, sizes, and pure computations of those).
//!
//! `pgpu-print-buffer-allocation` prints the plan of every spawn: buffers,
//! their values, and peak bytes per thread against the naive one buffer
//! per saved value; `pgpu-dump-buffer-graph{file=...}` writes the flow
//! graphs as Graphviz dot.

use crate::{
    buffer_flow::{self, Allocation, SavedValue, SuperstepGraph},
    ir::{Op, Val, element_bytes},
    value_saving::{
        CrossingValue, Decision, Supersteps, host_defined, is_pure, superstep_spawns,
        value_is_inside, value_name,
    },
};
use melior::ir::OperationRef;
use pgpu_pass_infra::{Pass, PassFailure, PassOptions, emit_error};
use std::fmt::Write;

/// Buffers are shared within a class: element type and thread-count epoch.
pub(crate) type Class = (String, usize);

/// Where a crossing value is available to later supersteps.
#[derive(Debug, Clone)]
pub(crate) enum Placement {
    /// Known to the host: passed to kernels as is.
    Host,
    /// Per thread, in these segments (indices into [`Plan::segments`]).
    PerThread(Vec<usize>),
}

/// One stretch of a per-thread value's life in one buffer.
#[derive(Debug, Clone)]
pub(crate) struct Segment {
    /// Index into [`Plan::crossing`].
    pub value: usize,
    /// Written at the end of this superstep (0-based).
    pub start: usize,
    /// Last superstep that reads it.
    pub end: usize,
    /// Read with the old rank in `end` (ranks change at its start).
    pub by_old_rank_at_end: bool,
    /// Its flow-allocated buffer, or `None` for a collective's output list.
    pub buffer: Option<usize>,
    /// Written into other threads' slots during `start` (`thread.put`).
    pub written_remotely: bool,
    /// Read from other threads' slots during `end` (`thread.get`).
    pub read_remotely: bool,
    /// Its value id in the flow allocation.
    flow_id: Option<usize>,
}

/// The buffer plan of one spawn.
pub(crate) struct Plan {
    pub crossing: Vec<CrossingValue>,
    pub placement: Vec<Placement>,
    pub segments: Vec<Segment>,
    pub allocation: Allocation<Class>,
    /// Per flow buffer: first superstep writing it, last superstep reading.
    pub buffer_lives: Vec<(usize, usize)>,
    /// The flow graph of each class, for printing.
    pub graphs: Vec<(Class, SuperstepGraph, Vec<String>)>,
}

/// Whether superstep `step` reads `value` with `thread.get`, that is, from
/// other threads' slots.
fn read_by_get(supersteps: &Supersteps, value: &CrossingValue, step: usize) -> bool {
    supersteps.steps[value.step]
        .result(value.result)
        .uses()
        .iter()
        .any(|found| {
            found.owner.is("pgpu.thread.get")
                && found.index == 1
                && found.owner.ancestor_under(supersteps.spawn) == Some(supersteps.steps[step])
        })
}

/// Whether the first segment of `value` is a collective's output list.
pub(crate) fn collective_output(value: Val) -> bool {
    value
        .defining_op()
        .is_some_and(|op| match op.name().as_str() {
            "pgpu.scan" => value == op.result(0),
            "pgpu.sort_idx" | "pgpu.thread.fork" => true,
            _ => false,
        })
}

/// Whether the host can compute `value` of superstep `step` before that
/// superstep's kernel: it is host-defined, or pure arithmetic on host values.
pub(crate) fn host_computable(
    supersteps: &Supersteps,
    placement: &[Placement],
    crossing: &[CrossingValue],
    value: Val,
) -> bool {
    let Some(op) = value.defining_op() else {
        return !value_is_inside(value, supersteps.spawn);
    };
    if !op.is_within(supersteps.spawn) {
        return true;
    }
    if op.is("pgpu.superstep") {
        let step = supersteps.steps.iter().position(|step| *step == op);
        let result = op.results().iter().position(|result| *result == value);
        return crossing.iter().zip(placement).any(|(crossing, placement)| {
            Some(crossing.step) == step
                && Some(crossing.result) == result
                && matches!(placement, Placement::Host)
        });
    }
    if host_defined(op, value) {
        return true;
    }
    is_pure(op)
        && op
            .operands()
            .into_iter()
            .all(|operand| host_computable(supersteps, placement, crossing, operand))
}

/// `thread.size` epochs: `epoch[s]` counts the size changes up to `s`.
fn epochs(supersteps: &Supersteps) -> Vec<usize> {
    let mut epoch = 0;
    supersteps
        .size_changes
        .iter()
        .map(|changed| {
            epoch += usize::from(*changed);
            epoch
        })
        .collect()
}

impl Plan {
    /// Plans the buffers of `supersteps`, whose values must all be saved
    /// (run `pgpu-save-values` first).
    pub fn of(supersteps: &Supersteps) -> Result<Self, PassFailure> {
        let crossing = supersteps.crossing_values();
        if let Some(value) = crossing
            .iter()
            .find(|value| !matches!(value.decision, Decision::Saved { .. }))
        {
            let location = value
                .value
                .defining_op()
                .unwrap_or(supersteps.spawn)
                .melior_location();
            return Err(emit_error(
                location,
                "this value crosses supersteps but need not be saved: run pgpu-save-values first",
            ));
        }
        // Host placement first (it feeds itself: a value computed from
        // earlier host values is a host value).
        let mut placement = vec![Placement::PerThread(vec![]); crossing.len()];
        for index in 0..crossing.len() {
            if matches!(crossing[index].decision, Decision::Saved { uniform: true })
                && host_computable(supersteps, &placement, &crossing, crossing[index].value)
            {
                placement[index] = Placement::Host;
            }
        }
        let epoch = epochs(supersteps);
        let mut segments = vec![];
        let mut flow_values = vec![];
        // The segment each flow value stands for.
        let mut segment_of_flow = vec![];
        for (index, value) in crossing.iter().enumerate() {
            if matches!(placement[index], Placement::Host) {
                continue;
            }
            let last = value.uses.last().copied().unwrap_or(value.step);
            let collective = collective_output(value.value);
            let mut ids = vec![];
            let mut start = value.step;
            let mut ends: Vec<(usize, bool)> = value
                .reloaded_by_old_rank
                .iter()
                .map(|step| (*step, true))
                .collect();
            if ends.last().is_none_or(|(step, _)| *step < last) {
                ends.push((last, false));
            }
            for (end, by_old_rank) in ends {
                let written_remotely = start == value.step
                    && value
                        .value
                        .defining_op()
                        .is_some_and(|op| op.is("pgpu.thread.put"));
                let read_remotely = read_by_get(supersteps, value, end);
                let buffer = if collective && start == value.step {
                    None
                } else {
                    flow_values.push(SavedValue {
                        def_superstep: start,
                        last_use_superstep: end,
                        class: (value.value.melior_type().to_string(), epoch[start]),
                        written_remotely,
                        read_remotely,
                    });
                    segment_of_flow.push(segments.len());
                    Some(flow_values.len() - 1)
                };
                ids.push(segments.len());
                segments.push(Segment {
                    value: index,
                    start,
                    end,
                    by_old_rank_at_end: by_old_rank,
                    buffer: None,
                    written_remotely,
                    read_remotely,
                    flow_id: buffer,
                });
                start = end;
            }
            placement[index] = Placement::PerThread(ids);
        }
        let location = supersteps.spawn.melior_location();
        let allocation = buffer_flow::allocate(
            supersteps.steps.len(),
            &supersteps.ranks_change,
            &flow_values,
        )
        .map_err(|error| {
            emit_error(
                location,
                &format!("temporary buffer allocation failed: {error}"),
            )
        })?;
        for segment in &mut segments {
            segment.buffer = segment.flow_id.map(|id| allocation.buffer_of_value[id]);
        }
        let buffer_lives = allocation
            .buffers
            .iter()
            .map(|buffer| {
                let first = buffer
                    .values
                    .iter()
                    .map(|id| flow_values[*id].def_superstep)
                    .min()
                    .unwrap_or(0);
                let last = buffer
                    .values
                    .iter()
                    .map(|id| flow_values[*id].last_use_superstep)
                    .max()
                    .unwrap_or(0);
                (first, last)
            })
            .collect();
        let mut graphs = vec![];
        let mut classes: Vec<&Class> = flow_values.iter().map(|value| &value.class).collect();
        classes.sort();
        classes.dedup();
        for class in classes {
            let mut graph =
                SuperstepGraph::new(supersteps.steps.len(), &supersteps.ranks_change)
                    .map_err(|error| emit_error(location, &format!("buffer graph: {error}")))?;
            let mut names = vec![];
            for (id, value) in flow_values
                .iter()
                .enumerate()
                .filter(|(_, value)| &value.class == class)
            {
                graph
                    .add_value(names.len(), value)
                    .map_err(|error| emit_error(location, &format!("buffer graph: {error}")))?;
                let segment = &segments[segment_of_flow[id]];
                names.push(format!(
                    "{} [{}->{}]",
                    value_name(&crossing[segment.value]),
                    segment.start + 1,
                    segment.end + 1
                ));
            }
            graphs.push((class.clone(), graph, names));
        }
        Ok(Self {
            crossing,
            placement,
            segments,
            allocation,
            buffer_lives,
            graphs,
        })
    }

    /// Bytes per thread of the element types, by buffer.
    fn buffer_bytes(&self, buffer: usize) -> usize {
        self.allocation
            .buffers
            .get(buffer)
            .map(|info| element_bytes(&info.class.0).unwrap_or(8))
            .unwrap_or(0)
    }

    /// The most bytes per thread live at once (at a superstep boundary),
    /// with every buffer live from its first write to its last read.
    pub fn peak_bytes(&self) -> usize {
        // Barrier `k` follows superstep `k`. A buffer is live at the barriers
        // from its first write to its last read, and also at the one before
        // a write when other threads put into it during that superstep, and
        // the one after a last read when they get from it then.
        let mut lives: Vec<Option<(usize, usize)>> = vec![None; self.allocation.buffers.len()];
        for segment in &self.segments {
            let Some(live) = segment.buffer.and_then(|buffer| lives.get_mut(buffer)) else {
                continue;
            };
            let first = segment.start - usize::from(segment.written_remotely && segment.start > 0);
            let end = segment.end + usize::from(segment.read_remotely);
            *live = Some(live.map_or((first, end), |(a, b)| (a.min(first), b.max(end))));
        }
        let last = lives
            .iter()
            .flatten()
            .map(|(_, end)| *end)
            .max()
            .unwrap_or(0);
        (0..=last)
            .map(|barrier| {
                lives
                    .iter()
                    .enumerate()
                    .filter(|(_, live)| {
                        live.is_some_and(|(first, end)| first <= barrier && barrier < end)
                    })
                    .map(|(buffer, _)| self.buffer_bytes(buffer))
                    .sum()
            })
            .max()
            .unwrap_or(0)
    }

    /// The same with one buffer per saved segment, live for the whole spawn.
    pub fn naive_bytes(&self) -> usize {
        self.segments
            .iter()
            .filter(|segment| segment.buffer.is_some())
            .map(|segment| {
                element_bytes(&self.crossing[segment.value].value.melior_type().to_string())
                    .unwrap_or(8)
            })
            .sum()
    }
}

/// `pgpu-print-buffer-allocation`: prints every spawn's buffer plan.
#[derive(Debug, Default)]
pub struct PrintBufferAllocation;

impl Pass for PrintBufferAllocation {
    const ARGUMENT: &'static str = "pgpu-print-buffer-allocation";
    const SUMMARY: &'static str = "Print the temporary buffers of each spawn (min-flow allocation), their values and peak bytes";
    const ANCHOR: Option<&'static str> = Some("builtin.module");

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let mut text = String::new();
        for supersteps in superstep_spawns(Op::of(module)) {
            let plan = Plan::of(&supersteps)?;
            let position = supersteps.spawn.source_position();
            let saved = plan
                .segments
                .iter()
                .filter(|segment| segment.buffer.is_some())
                .count();
            let _ = writeln!(
                text,
                "spawn at {position}: {} supersteps, {} buffers for {saved} saved segments",
                supersteps.steps.len(),
                plan.allocation.buffers.len(),
            );
            for (index, buffer) in plan.allocation.buffers.iter().enumerate() {
                let members: Vec<String> = plan
                    .segments
                    .iter()
                    .filter(|segment| segment.buffer == Some(index))
                    .map(|segment| {
                        format!(
                            "{} [{}->{}{}{}]",
                            value_name(&plan.crossing[segment.value]),
                            segment.start + 1,
                            segment.end + 1,
                            if segment.written_remotely { " put" } else { "" },
                            if segment.read_remotely { " get" } else { "" },
                        )
                    })
                    .collect();
                let _ = writeln!(
                    text,
                    "  buffer {index} ({} x threads of epoch {}): {}",
                    buffer.class.0,
                    buffer.class.1,
                    members.join(", ")
                );
            }
            for (index, value) in plan.crossing.iter().enumerate() {
                match &plan.placement[index] {
                    Placement::Host => {
                        let _ = writeln!(text, "  host: {}", value_name(value));
                    }
                    Placement::PerThread(segments) => {
                        for segment in segments.iter().filter_map(|id| plan.segments.get(*id)) {
                            if segment.buffer.is_none() {
                                let _ = writeln!(
                                    text,
                                    "  collective output: {} [{}->{}]",
                                    value_name(value),
                                    segment.start + 1,
                                    segment.end + 1
                                );
                            }
                        }
                    }
                }
            }
            let _ = writeln!(
                text,
                "  peak bytes per thread: {} (one buffer per value: {})",
                plan.peak_bytes(),
                plan.naive_bytes()
            );
        }
        eprint!("{text}");
        Ok(())
    }
}

/// `pgpu-dump-buffer-graph`: writes the flow graphs as Graphviz dot.
#[derive(Debug, Default)]
pub struct DumpBufferGraph {
    file: String,
}

impl Pass for DumpBufferGraph {
    const ARGUMENT: &'static str = "pgpu-dump-buffer-graph";
    const SUMMARY: &'static str = "Write each spawn's buffer-allocation flow graph (BSGP Fig. 4) with its minimum flow as Graphviz dot";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    const OPTIONS: &'static [pgpu_pass_infra::PassOption] = &[pgpu_pass_infra::PassOption {
        name: "file",
        description: "the dot file to write ('-' for standard error)",
        default: "-",
    }];

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        Ok(Self {
            file: options.string("file")?.to_string(),
        })
    }

    fn run(&self, module: OperationRef) -> Result<(), PassFailure> {
        let module = Op::of(module);
        let mut text = String::new();
        for supersteps in superstep_spawns(module) {
            let plan = Plan::of(&supersteps)?;
            for (class, graph, names) in &plan.graphs {
                let flow = graph.min_flow().ok();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let _ = writeln!(
                    text,
                    "// spawn at {}, class {} epoch {}",
                    supersteps.spawn.source_position(),
                    class.0,
                    class.1
                );
                text.push_str(&graph.to_dot(flow.as_ref(), &names));
            }
        }
        if self.file == "-" {
            eprint!("{text}");
            return Ok(());
        }
        pgpu_pass_infra::tool::write_output(&self.file, &text).map_err(|error| {
            emit_error(
                module.melior_location(),
                &format!("cannot write {}: {error}", self.file),
            )
        })
    }
}
