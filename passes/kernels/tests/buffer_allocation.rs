//! Property tests for `buffer_flow`: on random superstep sequences the
//! allocation is valid and uses exactly as many buffers as an exhaustive
//! search finds, and on random DAGs the minimum flow matches the min-flow
//! max-cut theorem. Instances come from a seeded SplitMix64, so failures
//! reproduce.

use pgpu_kernel_passes::buffer_flow::{
    Allocation, EdgeKind, FlowError, FlowGraph, SavedValue, SuperstepGraph, allocate, decompose,
    min_flow,
};

/// SplitMix64 (Steele, Lea and Flood 2014).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

struct Instance {
    num_supersteps: usize,
    rank_reassigned: Vec<bool>,
    values: Vec<SavedValue<u32>>,
}

fn spans_reassignment(flags: &[bool], def: usize, last_use: usize) -> bool {
    (def + 1..last_use).any(|s| flags[s])
}

fn random_instance(rng: &mut Rng) -> Instance {
    let num_supersteps = rng.range(1, 7);
    let rank_reassigned: Vec<bool> = (0..num_supersteps)
        .map(|s| s != 0 && rng.chance(35))
        .collect();
    let num_classes = rng.range(1, 2) as u32;
    let num_values = if num_supersteps < 2 {
        0
    } else {
        rng.range(0, 8)
    };
    let mut values = Vec::new();
    while values.len() < num_values {
        let def = rng.range(0, num_supersteps - 2);
        let last_use = rng.range(def + 1, num_supersteps - 1);
        if spans_reassignment(&rank_reassigned, def, last_use) {
            continue;
        }
        let class = rng.range(0, num_classes as usize - 1) as u32;
        values.push(SavedValue {
            def_superstep: def,
            last_use_superstep: last_use,
            class,
            written_remotely: rng.chance(25),
            read_remotely: rng.chance(25),
        });
    }
    Instance {
        num_supersteps,
        rank_reassigned,
        values,
    }
}

/// The reuse rule, stated directly. A value is read at the beginning of its
/// last use `read` by each thread from its own slot, or, when it is read
/// remotely (`thread.get`) or `read` reassigns ranks (loads by old rank),
/// from any slot at any time during `read`. It is written at the end of its
/// definition `write` by each thread into its own slot, or, when written
/// remotely (`thread.put`), into any slot at any time during `write`. The
/// next value may take the buffer when `read < write`, or `read == write`
/// with both accesses to the own slot only.
fn may_follow(flags: &[bool], earlier: &SavedValue<u32>, later: &SavedValue<u32>) -> bool {
    let (read, write) = (earlier.last_use_superstep, later.def_superstep);
    let own_slot_read = !earlier.read_remotely && !flags[read];
    read < write || (read == write && own_slot_read && !later.written_remotely)
}

/// Whether the values can share one buffer: ordered by definition, each
/// may follow the one before.
fn compatible(flags: &[bool], values: &[SavedValue<u32>], members: &[usize]) -> bool {
    let mut sorted = members.to_vec();
    sorted.sort_by_key(|&v| (values[v].def_superstep, values[v].last_use_superstep));
    sorted
        .windows(2)
        .all(|pair| may_follow(flags, &values[pair[0]], &values[pair[1]]))
}

/// The same check through the graph: each next value's tail is reachable
/// from the previous value's head by non-value edges.
fn compatible_in_graph(
    graph: &SuperstepGraph,
    values: &[SavedValue<u32>],
    members: &[usize],
) -> bool {
    members.windows(2).all(|pair| {
        let (a, b) = (&values[pair[0]], &values[pair[1]]);
        graph
            .graph()
            .reaches(graph.free_from(a), graph.busy_from(b), |edge| {
                edge.kind == EdgeKind::NonValue
            })
    })
}

/// Fewest buffers for `members` by exhaustive search: try k = 1, 2, ... and
/// place the values one by one into k buffers with backtracking.
fn brute_force_buffers(flags: &[bool], values: &[SavedValue<u32>], members: &[usize]) -> usize {
    fn place(
        flags: &[bool],
        values: &[SavedValue<u32>],
        members: &[usize],
        next: usize,
        buffers: &mut Vec<Vec<usize>>,
        k: usize,
    ) -> bool {
        let Some(&value) = members.get(next) else {
            return true;
        };
        for b in 0..buffers.len() {
            buffers[b].push(value);
            if compatible(flags, values, &buffers[b])
                && place(flags, values, members, next + 1, buffers, k)
            {
                return true;
            }
            buffers[b].pop();
        }
        if buffers.len() < k {
            buffers.push(vec![value]);
            if place(flags, values, members, next + 1, buffers, k) {
                return true;
            }
            buffers.pop();
        }
        false
    }
    (0..=members.len())
        .find(|&k| place(flags, values, members, 0, &mut Vec::new(), k))
        .unwrap_or(members.len())
}

fn check_allocation(case: usize, instance: &Instance, allocation: &Allocation<u32>) {
    let Instance {
        num_supersteps,
        rank_reassigned: flags,
        values,
    } = instance;
    let graph = SuperstepGraph::new(*num_supersteps, flags).expect("skeleton");
    assert_eq!(
        allocation.buffer_of_value.len(),
        values.len(),
        "case {case}"
    );
    let mut seen = vec![0usize; values.len()];
    for (b, buffer) in allocation.buffers.iter().enumerate() {
        assert!(
            !buffer.values.is_empty(),
            "case {case}: buffer {b} is empty"
        );
        for &v in &buffer.values {
            seen[v] += 1;
            assert_eq!(allocation.buffer_of_value[v], b, "case {case}: value {v}");
            assert_eq!(
                values[v].class, buffer.class,
                "case {case}: value {v} in buffer {b}"
            );
        }
        assert!(
            compatible(flags, values, &buffer.values),
            "case {case}: buffer {b} {:?}",
            buffer.values
        );
        // The allocation lists values in the order they use the buffer.
        assert!(
            compatible_in_graph(&graph, values, &buffer.values),
            "case {case}: buffer {b} {:?}",
            buffer.values
        );
    }
    assert!(seen.iter().all(|&n| n == 1), "case {case}: {seen:?}");
}

#[test]
fn random_allocations_are_valid_and_optimal() {
    let mut rng = Rng(0x5eed_b59f_0001);
    let mut cases_with_reuse = 0;
    let mut cases_with_reassignment = 0;
    let mut cases_with_remote_access = 0;
    for case in 0..1500 {
        let instance = random_instance(&mut rng);
        let flags = &instance.rank_reassigned;
        let values = &instance.values;
        let allocation = allocate(instance.num_supersteps, flags, values)
            .unwrap_or_else(|e| panic!("case {case}: {e}"));
        check_allocation(case, &instance, &allocation);

        let mut classes: Vec<u32> = values.iter().map(|v| v.class).collect();
        classes.sort_unstable();
        classes.dedup();
        let mut optimum = 0;
        for class in classes {
            let members: Vec<usize> = (0..values.len())
                .filter(|&v| values[v].class == class)
                .collect();
            let best = brute_force_buffers(flags, values, &members);
            let mut graph = SuperstepGraph::new(instance.num_supersteps, flags).expect("skeleton");
            for &v in &members {
                graph.add_value(v, &values[v]).expect("value edge");
            }
            let flow = graph.min_flow().expect("min flow");
            let used = allocation
                .buffers
                .iter()
                .filter(|b| b.class == class)
                .count();
            assert_eq!(
                flow.value(),
                used as u64,
                "case {case}, class {class}: flow vs buffers"
            );
            assert_eq!(
                used, best,
                "case {case}, class {class}: buffers vs brute force"
            );
            optimum += best;
        }
        assert_eq!(allocation.buffers.len(), optimum, "case {case}");
        if allocation.buffers.len() < values.len() {
            cases_with_reuse += 1;
        }
        if flags.iter().any(|&f| f) && !values.is_empty() {
            cases_with_reassignment += 1;
        }
        if values.iter().any(|v| v.read_remotely || v.written_remotely) {
            cases_with_remote_access += 1;
        }
    }
    // The generator exercises the interesting cases.
    assert!(cases_with_reuse > 300, "{cases_with_reuse}");
    assert!(cases_with_reassignment > 300, "{cases_with_reassignment}");
    assert!(cases_with_remote_access > 300, "{cases_with_remote_access}");
}

#[test]
fn superstep_graph_reachability_is_the_reuse_rule() {
    let mut rng = Rng(0x5eed_b59f_0002);
    for case in 0..300 {
        let n = rng.range(1, 7);
        let flags: Vec<bool> = (0..n).map(|_| rng.chance(50)).collect();
        let graph = SuperstepGraph::new(n, &flags).expect("skeleton");
        let non_value =
            |edge: &pgpu_kernel_passes::buffer_flow::Edge| edge.kind == EdgeKind::NonValue;
        for a in 0..n {
            for b in 0..n {
                for (read_remotely, written_remotely) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let earlier = SavedValue {
                        def_superstep: 0,
                        last_use_superstep: a,
                        class: 0u32,
                        written_remotely: false,
                        read_remotely,
                    };
                    let later = SavedValue {
                        def_superstep: b,
                        last_use_superstep: n - 1,
                        class: 0u32,
                        written_remotely,
                        read_remotely: false,
                    };
                    // The end of the last superstep saves nothing that is
                    // read, and nothing is read in the first.
                    if b + 1 == n || a == 0 {
                        continue;
                    }
                    assert_eq!(
                        graph.graph().reaches(
                            graph.free_from(&earlier),
                            graph.busy_from(&later),
                            non_value
                        ),
                        may_follow(&flags, &earlier, &later),
                        "case {case}: flags {flags:?}, last read {a} (remote {read_remotely}) \
                         -> write {b} (remote {written_remotely})"
                    );
                }
            }
        }
        // Every node lies between source and sink.
        for node in 0..graph.graph().num_nodes() {
            assert!(
                graph.graph().reaches(graph.source(), node, non_value),
                "case {case}"
            );
            assert!(
                graph.graph().reaches(node, graph.sink(), non_value),
                "case {case}"
            );
        }
    }
}

#[test]
fn spanning_values_are_rejected() {
    let mut rng = Rng(0x5eed_b59f_0003);
    let mut rejected = 0;
    for _ in 0..300 {
        let n = rng.range(3, 7);
        let flags: Vec<bool> = (0..n).map(|s| s != 0 && rng.chance(40)).collect();
        let def = rng.range(0, n - 2);
        let last_use = rng.range(def + 1, n - 1);
        let values = [SavedValue {
            def_superstep: def,
            last_use_superstep: last_use,
            class: 0u32,
            written_remotely: false,
            read_remotely: false,
        }];
        let result = allocate(n, &flags, &values);
        assert_eq!(
            result.is_err(),
            spans_reassignment(&flags, def, last_use),
            "{flags:?} {def} {last_use}"
        );
        if result.is_err() {
            rejected += 1;
        }
    }
    assert!(rejected > 20, "{rejected}");
}

/// A random DAG on nodes `0..n` with edges from lower to higher index.
struct RandomNetwork {
    graph: FlowGraph,
    source: usize,
    sink: usize,
}

fn random_network(rng: &mut Rng) -> RandomNetwork {
    let n = rng.range(2, 9);
    let source = rng.range(0, n / 3);
    let sink = rng.range((2 * n / 3).max(source + 1), n - 1);
    let mut pairs = Vec::new();
    // A chain in node order, often with gaps.
    for from in 0..n - 1 {
        if rng.chance(70) {
            pairs.push((from, from + 1));
        }
    }
    // Shortcuts, many leaving the source or entering the sink.
    for _ in 0..rng.range(0, n + 2) {
        pairs.push(match rng.range(0, 2) {
            0 if source + 1 < n => (source, rng.range(source + 1, n - 1)),
            1 if sink > 0 => (rng.range(0, sink - 1), sink),
            _ => {
                let from = rng.range(0, n - 2);
                (from, rng.range(from + 1, n - 1))
            }
        });
    }
    // Insertion order decides which of equally short paths the solver
    // tries first: shuffle it (Fisher-Yates).
    for i in (1..pairs.len()).rev() {
        pairs.swap(i, rng.range(0, i));
    }
    let mut graph = FlowGraph::new(n);
    for (id, (from, to)) in pairs.into_iter().enumerate() {
        let lower = if rng.chance(40) {
            rng.range(1, 3) as u32
        } else {
            0
        };
        let upper = if rng.chance(50) {
            None
        } else {
            Some(lower + rng.range(0, 3) as u32)
        };
        let kind = if lower > 0 {
            EdgeKind::Value(id)
        } else {
            EdgeKind::NonValue
        };
        graph.add_edge(from, to, lower, upper, kind).expect("edge");
    }
    RandomNetwork {
        graph,
        source,
        sink,
    }
}

/// A path-cover network: a chain from source to sink with infinite
/// non-value edges, unit value edges forward along it, and infinite
/// shortcuts from the source and into the sink, which tempt a solver to
/// route demands around through the sink and back to the source.
fn random_cover_network(rng: &mut Rng) -> RandomNetwork {
    let n = rng.range(3, 12);
    let (source, sink) = (0, n - 1);
    let mut pairs: Vec<(usize, usize, u32, Option<u32>)> = Vec::new();
    for node in 0..n - 1 {
        pairs.push((node, node + 1, 0, None));
    }
    for node in 1..n - 1 {
        if rng.chance(40) {
            pairs.push((source, node, 0, None));
        }
        if rng.chance(40) {
            pairs.push((node, sink, 0, None));
        }
    }
    for _ in 0..rng.range(1, 2 * n) {
        let from = rng.range(0, n - 2);
        let to = rng.range(from + 1, n - 1);
        pairs.push((from, to, 1, Some(1)));
    }
    for i in (1..pairs.len()).rev() {
        pairs.swap(i, rng.range(0, i));
    }
    let mut graph = FlowGraph::new(n);
    for (id, (from, to, lower, upper)) in pairs.into_iter().enumerate() {
        let kind = if lower > 0 {
            EdgeKind::Value(id)
        } else {
            EdgeKind::NonValue
        };
        graph.add_edge(from, to, lower, upper, kind).expect("edge");
    }
    RandomNetwork {
        graph,
        source,
        sink,
    }
}

/// Hoffman's circulation theorem on the graph closed by an infinite
/// `sink -> source` edge: a feasible flow exists iff no node set must take
/// in more (by lower bounds) than it can send out (by capacities).
fn feasible_by_cuts(net: &RandomNetwork) -> bool {
    let n = net.graph.num_nodes();
    (0u32..1 << n).all(|set| {
        let inside = |node: usize| set >> node & 1 == 1;
        if inside(net.sink) && !inside(net.source) {
            return true; // the closing edge leaves the set with infinite capacity
        }
        let mut must_enter = 0u64;
        let mut can_leave = 0u64;
        for edge in net.graph.edges() {
            match (inside(edge.from), inside(edge.to)) {
                (false, true) => must_enter += u64::from(edge.lower),
                (true, false) => match edge.upper {
                    Some(upper) => can_leave += u64::from(upper),
                    None => return true,
                },
                _ => {}
            }
        }
        must_enter <= can_leave
    })
}

/// The min-flow max-cut theorem: the minimum flow value is the largest
/// `lower(S -> T) - upper(T -> S)` over cuts with the source in S and the
/// sink in T.
fn min_flow_by_cuts(net: &RandomNetwork) -> i64 {
    let n = net.graph.num_nodes();
    let mut best = i64::MIN;
    for set in 0u32..1 << n {
        let inside = |node: usize| set >> node & 1 == 1;
        if !inside(net.source) || inside(net.sink) {
            continue;
        }
        let mut bound = Some(0i64);
        for edge in net.graph.edges() {
            bound = match (inside(edge.from), inside(edge.to), bound) {
                (true, false, Some(b)) => Some(b + i64::from(edge.lower)),
                (false, true, Some(b)) => edge.upper.map(|upper| b - i64::from(upper)),
                (_, _, b) => b,
            };
        }
        if let Some(bound) = bound {
            best = best.max(bound);
        }
    }
    best
}

#[test]
fn random_min_flows_match_the_cut_theorem() {
    let mut rng = Rng(0x5eed_b59f_0004);
    let (mut feasible, mut infeasible) = (0, 0);
    for case in 0..4000 {
        let net = if case % 2 == 0 {
            random_network(&mut rng)
        } else {
            random_cover_network(&mut rng)
        };
        let (graph, source, sink) = (&net.graph, net.source, net.sink);
        match min_flow(graph, source, sink) {
            Err(FlowError::Infeasible) => {
                assert!(
                    !feasible_by_cuts(&net),
                    "case {case}: solver says infeasible"
                );
                infeasible += 1;
            }
            Err(error) => panic!("case {case}: {error}"),
            Ok(flow) => {
                assert!(feasible_by_cuts(&net), "case {case}: solver found a flow");
                feasible += 1;
                let flows = flow.edge_flows();
                assert_eq!(flows.len(), graph.edges().len());
                let mut balance = vec![0i64; graph.num_nodes()];
                for (edge, &f) in graph.edges().iter().zip(flows) {
                    assert!(f >= u64::from(edge.lower), "case {case}");
                    assert!(edge.upper.is_none_or(|u| f <= u64::from(u)), "case {case}");
                    balance[edge.from] -= f as i64;
                    balance[edge.to] += f as i64;
                }
                for (node, &b) in balance.iter().enumerate() {
                    if node != source && node != sink {
                        assert_eq!(b, 0, "case {case}: node {node}");
                    }
                }
                assert_eq!(-balance[source], flow.value() as i64, "case {case}");
                assert_eq!(
                    flow.value() as i64,
                    min_flow_by_cuts(&net),
                    "case {case}: not minimum"
                );

                let paths = decompose(graph, &flow, source, sink).expect("decomposition");
                let mut covered = vec![0u64; graph.edges().len()];
                for path in &paths {
                    assert!(path.amount > 0, "case {case}");
                    let mut node = source;
                    for &e in &path.edges {
                        assert_eq!(graph.edges()[e].from, node, "case {case}: path breaks");
                        node = graph.edges()[e].to;
                        covered[e] += path.amount;
                    }
                    assert_eq!(node, sink, "case {case}: path ends early");
                }
                assert_eq!(covered, flows, "case {case}: decomposition");
                assert_eq!(
                    paths.iter().map(|p| p.amount).sum::<u64>(),
                    flow.value(),
                    "case {case}"
                );
            }
        }
    }
    assert!(
        feasible > 300 && infeasible > 300,
        "{feasible} feasible, {infeasible} infeasible"
    );
}
