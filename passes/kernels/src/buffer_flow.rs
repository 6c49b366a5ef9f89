//! Optimal temporary-buffer allocation for saved values by minimum flow with
//! lower bounds (seeds/bsgp.txt, Section 4.3, Listing 5, Table 2, Fig. 4).
//!
//! A value defined in one superstep and used in a later one is saved to a
//! temporary buffer at the end of its defining superstep and loaded at the
//! beginning of each using superstep; its buffer is busy from the end of the
//! definition to the beginning of the last use. Buffers of one size class may
//! be shared by values whose busy intervals follow each other. The paper turns
//! "fewest buffers" into a flow problem on a DAG: every superstep `s` gets a
//! node `begin_s` and a node `end_s`; non-value edges `begin_s -> end_s` and
//! `end_s -> begin_{s+1}` (lower bound 0, capacity infinite) let a buffer
//! idle along the execution order, and each saved value adds a value edge
//! `end_def -> begin_last_use` with lower bound 1 and capacity 1. The source
//! is `begin_0`, the sink `end_last`. A source-to-sink path is one buffer
//! (the values on its value edges, in order), so covering every value edge
//! with the fewest paths is a minimum flow. Values of different size classes
//! never share a buffer: each class gets its own graph.
//!
//! The paper assumes each thread reads and writes only its own slot: thread
//! `i` loads slot `i` when superstep `s` begins and saves slot `i` when `s`
//! ends, so a buffer last read in `s` may take a value saved at the end of
//! `s`. Three kinds of access break that assumption, because threads then
//! touch *other* threads' slots at any time during a superstep, while other
//! threads are still at its beginning or already at its end:
//! `thread.get(r, v)` reads `v`'s slot of thread `r`; after
//! `barrier(RANK_REASSIGNED)` a superstep loads its values with the old
//! ranks (Listing 4, `pass2`); and `thread.put(r, p, v)` writes `p`'s slot of
//! thread `r` during the superstep. We therefore add a node `between_s`
//! (every thread has finished `s`, none has started `s + 1`) to the chain:
//! `begin_s -> end_s -> between_s -> begin_{s+1}`. A value read remotely in
//! its last use `u` frees its buffer at `between_u` instead of `begin_u` (so
//! the next value may be saved at the end of `u + 1` at the earliest, or put
//! during `u + 1`); a value written remotely in its defining superstep `d`
//! takes its buffer from `between_{d-1}` instead of `end_d` (so the buffer
//! must have been free since before `d` began). With these nodes, a value
//! edge's head reaches the next value's tail through non-value edges exactly
//! when the two may share a buffer: the first's last read comes before the
//! second's write, or both happen in one superstep, the read at its
//! beginning by the thread's own slot and the write at its end likewise.
//! A value whose use range spans a rank-reassigned superstep is rejected:
//! callers split it into segments, as the paper moves `v` to a new stream.
//!
//! The general layer, [`FlowGraph`] and [`min_flow`], solves minimum flow
//! with lower bounds on any DAG in two classical steps (Ford and Fulkerson):
//! first a feasible flow, by the circulation reduction (every edge keeps
//! `upper - lower` capacity, lower bounds become node demands served from a
//! super source to a super sink, and an infinite `sink -> source` edge closes
//! the circulation; the flow is feasible iff that max flow saturates the
//! demands); then the largest reduction, a max flow from the sink back to the
//! source in the residual graph of the feasible flow, where an edge may lose
//! flow down to its lower bound. Both max flows use Dinic's algorithm.
//! [`decompose`] then splits the flow into source-to-sink paths; on a DAG
//! every unit of flow lies on such a path. [`allocate`] reads one buffer per
//! path.
//!
//! We write this ourselves because upstream MLIR has no facility for it: its
//! bufferization and buffer-deallocation passes manage `memref` lifetimes
//! within a function, nothing upstream packs values saved across the kernel
//! launches of a superstep sequence into shared buffers, and it has no flow
//! solver. The module is plain Rust, free of MLIR types, so the
//! buffer-allocation pass only wires it to the IR.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::{self, Write as _};

// ---------------------------------------------------------------------------
// General layer: flow graphs, minimum flow with lower bounds, decomposition.
// ---------------------------------------------------------------------------

/// What an edge stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// The edge carries the saved value with this id.
    Value(usize),
    /// An edge that lets flow pass without carrying a value.
    NonValue,
}

/// One edge of a [`FlowGraph`]; built by [`FlowGraph::add_edge`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Tail node.
    pub from: usize,
    /// Head node.
    pub to: usize,
    /// Least flow the edge must carry.
    pub lower: u32,
    /// Most flow the edge may carry; `None` is infinite.
    pub upper: Option<u32>,
    /// What the edge stands for.
    pub kind: EdgeKind,
}

/// A directed graph with lower and upper bounds on its edges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowGraph {
    node_labels: Vec<String>,
    edges: Vec<Edge>,
}

/// Why a flow problem has no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowError {
    /// A node index is not below the node count.
    NodeOutOfRange { node: usize, num_nodes: usize },
    /// An edge's lower bound exceeds its capacity.
    LowerAboveUpper {
        from: usize,
        to: usize,
        lower: u32,
        upper: u32,
    },
    /// Source and sink are the same node.
    SourceIsSink { node: usize },
    /// The graph has a cycle through this node.
    Cyclic { node: usize },
    /// The sink reaches the source, so flow could run backwards.
    SinkReachesSource,
    /// No flow meets every lower bound within the capacities.
    Infeasible,
    /// A flow handed to [`decompose`] does not belong to the graph or does
    /// not conserve flow.
    InvalidFlow { reason: String },
}

impl fmt::Display for FlowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NodeOutOfRange { node, num_nodes } => {
                write!(
                    f,
                    "node {node} is out of range: the graph has {num_nodes} nodes"
                )
            }
            Self::LowerAboveUpper {
                from,
                to,
                lower,
                upper,
            } => write!(
                f,
                "edge {from} -> {to} has lower bound {lower} above its capacity {upper}"
            ),
            Self::SourceIsSink { node } => write!(f, "node {node} is both source and sink"),
            Self::Cyclic { node } => write!(f, "the flow graph has a cycle through node {node}"),
            Self::SinkReachesSource => write!(f, "the sink reaches the source"),
            Self::Infeasible => write!(f, "no flow meets the lower bounds within the capacities"),
            Self::InvalidFlow { reason } => write!(f, "invalid flow: {reason}"),
        }
    }
}

impl std::error::Error for FlowError {}

/// A flow on every edge of a graph, as [`min_flow`] computes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    edge_flow: Vec<u64>,
    value: u64,
}

impl Flow {
    /// Net flow out of the source.
    pub fn value(&self) -> u64 {
        self.value
    }

    /// Flow on every edge, indexed like [`FlowGraph::edges`].
    pub fn edge_flows(&self) -> &[u64] {
        &self.edge_flow
    }

    /// Flow on one edge, `None` when there is no such edge.
    pub fn edge_flow(&self, edge: usize) -> Option<u64> {
        self.edge_flow.get(edge).copied()
    }
}

/// A source-to-sink path of a flow decomposition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowPath {
    /// Edge indices from source to sink.
    pub edges: Vec<usize>,
    /// Units of flow the path carries.
    pub amount: u64,
}

impl FlowGraph {
    /// A graph of `num_nodes` nodes labelled `n0`, `n1`, ... and no edges.
    pub fn new(num_nodes: usize) -> Self {
        Self {
            node_labels: (0..num_nodes).map(|n| format!("n{n}")).collect(),
            edges: Vec::new(),
        }
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.node_labels.len()
    }

    /// The edges in insertion order; their indices are edge ids.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// The label `to_dot` prints for `node`.
    pub fn node_label(&self, node: usize) -> Option<&str> {
        self.node_labels.get(node).map(String::as_str)
    }

    /// Renames `node` in the Graphviz output.
    pub fn set_node_label(
        &mut self,
        node: usize,
        label: impl Into<String>,
    ) -> Result<(), FlowError> {
        let num_nodes = self.num_nodes();
        let slot = self
            .node_labels
            .get_mut(node)
            .ok_or(FlowError::NodeOutOfRange { node, num_nodes })?;
        *slot = label.into();
        Ok(())
    }

    /// Adds an edge and returns its id.
    pub fn add_edge(
        &mut self,
        from: usize,
        to: usize,
        lower: u32,
        upper: Option<u32>,
        kind: EdgeKind,
    ) -> Result<usize, FlowError> {
        self.check_node(from)?;
        self.check_node(to)?;
        if let Some(upper) = upper
            && lower > upper
        {
            return Err(FlowError::LowerAboveUpper {
                from,
                to,
                lower,
                upper,
            });
        }
        self.edges.push(Edge {
            from,
            to,
            lower,
            upper,
            kind,
        });
        Ok(self.edges.len() - 1)
    }

    fn check_node(&self, node: usize) -> Result<(), FlowError> {
        if node < self.num_nodes() {
            Ok(())
        } else {
            Err(FlowError::NodeOutOfRange {
                node,
                num_nodes: self.num_nodes(),
            })
        }
    }

    /// Outgoing edge ids of every node, in edge order.
    fn out_edges(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.num_nodes()];
        for (id, edge) in self.edges.iter().enumerate() {
            out[edge.from].push(id);
        }
        out
    }

    /// The nodes in a topological order, or the cycle error.
    pub fn topological_order(&self) -> Result<Vec<usize>, FlowError> {
        let mut indegree = vec![0usize; self.num_nodes()];
        for edge in &self.edges {
            indegree[edge.to] += 1;
        }
        let out = self.out_edges();
        let mut ready: VecDeque<usize> = (0..self.num_nodes())
            .filter(|&n| indegree[n] == 0)
            .collect();
        let mut order = Vec::with_capacity(self.num_nodes());
        while let Some(node) = ready.pop_front() {
            order.push(node);
            for &id in &out[node] {
                let to = self.edges[id].to;
                indegree[to] -= 1;
                if indegree[to] == 0 {
                    ready.push_back(to);
                }
            }
        }
        match (0..self.num_nodes()).find(|&n| indegree[n] > 0) {
            Some(node) => Err(FlowError::Cyclic { node }),
            None => Ok(order),
        }
    }

    /// Whether `to` is reachable from `from` through edges that `follow`
    /// accepts (every node reaches itself).
    pub fn reaches(&self, from: usize, to: usize, follow: impl Fn(&Edge) -> bool) -> bool {
        if from >= self.num_nodes() || to >= self.num_nodes() {
            return false;
        }
        let out = self.out_edges();
        let mut seen = vec![false; self.num_nodes()];
        let mut stack = vec![from];
        seen[from] = true;
        while let Some(node) = stack.pop() {
            if node == to {
                return true;
            }
            for &id in &out[node] {
                let edge = &self.edges[id];
                if follow(edge) && !seen[edge.to] {
                    seen[edge.to] = true;
                    stack.push(edge.to);
                }
            }
        }
        false
    }

    /// Graphviz text for the graph. Value edges are labelled with
    /// `value_names[id]` (or `v{id}` where the slice has no entry) and, when
    /// `flow` is given, every edge with its flow.
    pub fn to_dot(&self, flow: Option<&Flow>, value_names: &[&str]) -> String {
        write_dot(self, flow, value_names, &[])
    }
}

fn dot_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Graphviz text; `clusters` groups nodes into labelled grey boxes.
fn write_dot(
    graph: &FlowGraph,
    flow: Option<&Flow>,
    value_names: &[&str],
    clusters: &[(String, Vec<usize>)],
) -> String {
    let mut dot = String::from("digraph flow {\n  node [shape=ellipse];\n");
    let mut clustered = vec![false; graph.num_nodes()];
    for (index, (label, nodes)) in clusters.iter().enumerate() {
        let _ = writeln!(dot, "  subgraph cluster_{index} {{");
        let _ = writeln!(
            dot,
            "    label=\"{}\"; style=filled; color=lightgrey;",
            dot_escape(label)
        );
        for &node in nodes {
            if let Some(name) = graph.node_label(node) {
                let _ = writeln!(dot, "    n{node} [label=\"{}\"];", dot_escape(name));
                clustered[node] = true;
            }
        }
        dot.push_str("  }\n");
    }
    for (node, name) in graph.node_labels.iter().enumerate() {
        if !clustered[node] {
            let _ = writeln!(dot, "  n{node} [label=\"{}\"];", dot_escape(name));
        }
    }
    for (id, edge) in graph.edges.iter().enumerate() {
        let amount = flow.and_then(|flow| flow.edge_flow(id));
        let label = match (edge.kind, amount) {
            (EdgeKind::Value(value), amount) => {
                let name = value_names
                    .get(value)
                    .map_or_else(|| format!("v{value}"), |name| (*name).to_string());
                match amount {
                    Some(amount) => format!("{name}: {amount}"),
                    None => name,
                }
            }
            (EdgeKind::NonValue, Some(amount)) => amount.to_string(),
            (EdgeKind::NonValue, None) => String::new(),
        };
        let style = match edge.kind {
            EdgeKind::Value(_) => ", color=red, penwidth=2",
            EdgeKind::NonValue => "",
        };
        let _ = writeln!(
            dot,
            "  n{} -> n{} [label=\"{}\"{style}];",
            edge.from,
            edge.to,
            dot_escape(&label)
        );
    }
    dot.push_str("}\n");
    dot
}

/// Capacity standing for "infinite" inside the max-flow networks. Every max
/// flow computed here is bounded by finite capacities (see [`min_flow`]), far
/// below this.
const INF: u64 = u64::MAX / 4;

/// A residual network for Dinic's algorithm. Arcs come in pairs: arc `2k` and
/// its reverse `2k + 1`.
struct Network {
    head: Vec<usize>,
    cap: Vec<u64>,
    adj: Vec<Vec<usize>>,
}

impl Network {
    fn new(num_nodes: usize) -> Self {
        Self {
            head: Vec::new(),
            cap: Vec::new(),
            adj: vec![Vec::new(); num_nodes],
        }
    }

    /// Adds `from -> to` with residual `forward` and reverse residual
    /// `backward`; returns the forward arc id.
    fn add_arc(&mut self, from: usize, to: usize, forward: u64, backward: u64) -> usize {
        let id = self.head.len();
        self.head.push(to);
        self.cap.push(forward);
        self.adj[from].push(id);
        self.head.push(from);
        self.cap.push(backward);
        self.adj[to].push(id + 1);
        id
    }

    fn levels(&self, source: usize) -> Vec<Option<usize>> {
        let mut level = vec![None; self.adj.len()];
        level[source] = Some(0);
        let mut queue = VecDeque::from([source]);
        while let Some(node) = queue.pop_front() {
            let next = level[node].map(|l| l + 1);
            for &arc in &self.adj[node] {
                let to = self.head[arc];
                if self.cap[arc] > 0 && level[to].is_none() {
                    level[to] = next;
                    queue.push_back(to);
                }
            }
        }
        level
    }

    /// Maximum flow from `source` to `sink`, at most `limit`.
    fn max_flow(&mut self, source: usize, sink: usize, limit: u64) -> u64 {
        let mut total = 0u64;
        while total < limit {
            let mut level = self.levels(source);
            if level[sink].is_none() {
                break;
            }
            let mut next_arc = vec![0usize; self.adj.len()];
            // Iterative blocking flow: advance along level-increasing arcs,
            // augment at the sink, retreat from dead ends.
            let mut path: Vec<usize> = Vec::new();
            let mut node = source;
            loop {
                if node == sink {
                    let bottleneck = path
                        .iter()
                        .map(|&arc| self.cap[arc])
                        .min()
                        .unwrap_or(0)
                        .min(limit - total);
                    for &arc in &path {
                        self.cap[arc] -= bottleneck;
                        self.cap[arc ^ 1] += bottleneck;
                    }
                    total += bottleneck;
                    if total >= limit {
                        break;
                    }
                    path.clear();
                    node = source;
                    continue;
                }
                let mut advanced = false;
                while let Some(&arc) = self.adj[node].get(next_arc[node]) {
                    let to = self.head[arc];
                    let deeper =
                        matches!((level[node], level[to]), (Some(a), Some(b)) if b == a + 1);
                    if self.cap[arc] > 0 && deeper {
                        path.push(arc);
                        node = to;
                        advanced = true;
                        break;
                    }
                    next_arc[node] += 1;
                }
                if advanced {
                    continue;
                }
                if node == source {
                    break;
                }
                level[node] = None;
                match path.pop() {
                    Some(arc) => {
                        node = self.head[arc ^ 1];
                        next_arc[node] += 1;
                    }
                    None => break,
                }
            }
        }
        total
    }
}

fn capacity(upper: Option<u32>) -> u64 {
    upper.map_or(INF, u64::from)
}

fn check_endpoints(graph: &FlowGraph, source: usize, sink: usize) -> Result<(), FlowError> {
    graph.check_node(source)?;
    graph.check_node(sink)?;
    if source == sink {
        return Err(FlowError::SourceIsSink { node: source });
    }
    graph.topological_order()?;
    if graph.reaches(sink, source, |_| true) {
        return Err(FlowError::SinkReachesSource);
    }
    Ok(())
}

/// A minimum flow from `source` to `sink` that meets every lower bound
/// within the capacities.
///
/// The graph must be acyclic and the sink must not reach the source; then
/// every max flow below is bounded by finite capacities (each sink-to-source
/// residual path needs a reverse arc, whose capacity is a finite flow).
pub fn min_flow(graph: &FlowGraph, source: usize, sink: usize) -> Result<Flow, FlowError> {
    check_endpoints(graph, source, sink)?;
    let feasible = feasible_flow(graph, source, sink)?;
    let edge_flow = reduce_flow(graph, &feasible, source, sink);
    let value = net_outflow(graph, &edge_flow, source)?;
    Ok(Flow { edge_flow, value })
}

/// Step 1: some feasible flow, by the circulation reduction.
fn feasible_flow(graph: &FlowGraph, source: usize, sink: usize) -> Result<Vec<u64>, FlowError> {
    let n = graph.num_nodes();
    let (super_source, super_sink) = (n, n + 1);
    let mut net = Network::new(n + 2);
    let mut balance = vec![0i128; n];
    let arcs: Vec<usize> = graph
        .edges
        .iter()
        .map(|edge| {
            balance[edge.to] += i128::from(edge.lower);
            balance[edge.from] -= i128::from(edge.lower);
            net.add_arc(
                edge.from,
                edge.to,
                capacity(edge.upper) - u64::from(edge.lower),
                0,
            )
        })
        .collect();
    net.add_arc(sink, source, INF, 0);
    let mut demand = 0u64;
    for (node, &b) in balance.iter().enumerate() {
        let amount = u64::try_from(b.unsigned_abs()).map_err(|_| FlowError::Infeasible)?;
        if b > 0 {
            net.add_arc(super_source, node, amount, 0);
            demand = demand.saturating_add(amount);
        } else if b < 0 {
            net.add_arc(node, super_sink, amount, 0);
        }
    }
    if net.max_flow(super_source, super_sink, demand) < demand {
        return Err(FlowError::Infeasible);
    }
    Ok(graph
        .edges
        .iter()
        .zip(&arcs)
        .map(|(edge, &arc)| u64::from(edge.lower) + net.cap[arc ^ 1])
        .collect())
}

/// Step 2: the largest reduction of a feasible flow, a max flow from sink to
/// source in its residual graph, where each edge may gain flow up to its
/// capacity and lose flow down to its lower bound.
fn reduce_flow(graph: &FlowGraph, feasible: &[u64], source: usize, sink: usize) -> Vec<u64> {
    let mut net = Network::new(graph.num_nodes());
    let arcs: Vec<usize> = graph
        .edges
        .iter()
        .zip(feasible)
        .map(|(edge, &flow)| {
            let gain = capacity(edge.upper).saturating_sub(flow);
            let loss = flow.saturating_sub(u64::from(edge.lower));
            net.add_arc(edge.from, edge.to, gain, loss)
        })
        .collect();
    net.max_flow(sink, source, INF);
    graph
        .edges
        .iter()
        .zip(&arcs)
        .map(|(edge, &arc)| u64::from(edge.lower) + net.cap[arc ^ 1])
        .collect()
}

fn net_outflow(graph: &FlowGraph, edge_flow: &[u64], node: usize) -> Result<u64, FlowError> {
    let mut net = 0i128;
    for (edge, &flow) in graph.edges.iter().zip(edge_flow) {
        if edge.from == node {
            net += i128::from(flow);
        }
        if edge.to == node {
            net -= i128::from(flow);
        }
    }
    u64::try_from(net).map_err(|_| FlowError::InvalidFlow {
        reason: format!("net outflow {net} of the source"),
    })
}

/// Splits `flow` into source-to-sink paths, each carrying `amount` units;
/// every edge's flow is the sum of the amounts of the paths through it.
/// Paths are found in a deterministic order (lowest edge ids first).
pub fn decompose(
    graph: &FlowGraph,
    flow: &Flow,
    source: usize,
    sink: usize,
) -> Result<Vec<FlowPath>, FlowError> {
    check_endpoints(graph, source, sink)?;
    let invalid = |reason: String| FlowError::InvalidFlow { reason };
    if flow.edge_flow.len() != graph.edges.len() {
        return Err(invalid(format!(
            "{} edge flows for {} edges",
            flow.edge_flow.len(),
            graph.edges.len()
        )));
    }
    let mut balance = vec![0i128; graph.num_nodes()];
    for (id, (edge, &amount)) in graph.edges.iter().zip(&flow.edge_flow).enumerate() {
        if amount < u64::from(edge.lower)
            || edge.upper.is_some_and(|upper| amount > u64::from(upper))
        {
            return Err(invalid(format!(
                "flow {amount} on edge {id} breaks its bounds"
            )));
        }
        balance[edge.from] -= i128::from(amount);
        balance[edge.to] += i128::from(amount);
    }
    if let Some(node) =
        (0..graph.num_nodes()).find(|&n| n != source && n != sink && balance[n] != 0)
    {
        return Err(invalid(format!("flow is not conserved at node {node}")));
    }

    let out = graph.out_edges();
    let mut remaining = flow.edge_flow.clone();
    let mut paths = Vec::new();
    while let Some(mut path) = next_path(graph, &out, &remaining, source, sink)? {
        let amount = path.iter().map(|&id| remaining[id]).min().unwrap_or(0);
        for &id in &path {
            remaining[id] -= amount;
        }
        path.shrink_to_fit();
        paths.push(FlowPath {
            edges: path,
            amount,
        });
    }
    if let Some(id) = remaining.iter().position(|&r| r > 0) {
        return Err(invalid(format!(
            "flow on edge {id} lies on no source-to-sink path"
        )));
    }
    Ok(paths)
}

/// Follows edges with remaining flow from `source`; `None` once none leaves it.
fn next_path(
    graph: &FlowGraph,
    out: &[Vec<usize>],
    remaining: &[u64],
    source: usize,
    sink: usize,
) -> Result<Option<Vec<usize>>, FlowError> {
    let mut path = Vec::new();
    let mut node = source;
    while node != sink {
        match out[node].iter().copied().find(|&id| remaining[id] > 0) {
            Some(id) => {
                path.push(id);
                node = graph.edges[id].to;
            }
            None if node == source => return Ok(None),
            None => {
                return Err(FlowError::InvalidFlow {
                    reason: format!("flow stops at node {node}"),
                });
            }
        }
        // An acyclic graph visits each node at most once.
        if path.len() > graph.num_nodes() {
            return Err(FlowError::Cyclic { node });
        }
    }
    Ok(Some(path))
}

// ---------------------------------------------------------------------------
// Buffer layer: superstep graphs and the allocation of saved values.
// ---------------------------------------------------------------------------

/// A value saved across supersteps (0-based superstep indices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedValue<C> {
    /// The superstep at whose end the value is saved.
    pub def_superstep: usize,
    /// The last superstep at whose beginning the value is loaded.
    pub last_use_superstep: usize,
    /// Buffers are shared only within one class (element type and count).
    pub class: C,
    /// Other threads write the value's slots during its defining superstep
    /// (`thread.put`), so the buffer is busy for the whole superstep.
    pub written_remotely: bool,
    /// Threads read other threads' slots during the last use (`thread.get`),
    /// so the buffer stays busy until that superstep has ended everywhere.
    /// Loads in a rank-reassigned superstep (by the old ranks) count as such
    /// reads whatever this flag says.
    pub read_remotely: bool,
}

/// One temporary buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferInfo<C> {
    /// The size class of every value in the buffer.
    pub class: C,
    /// Value ids in the order they occupy the buffer.
    pub values: Vec<usize>,
}

/// The buffer of every saved value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation<C> {
    /// `buffer_of_value[v]` indexes `buffers`.
    pub buffer_of_value: Vec<usize>,
    /// Buffers grouped by class (classes in order of first appearance), and
    /// within a class ordered by their first value id.
    pub buffers: Vec<BufferInfo<C>>,
}

/// Why saved values cannot be allocated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocError {
    /// A superstep graph needs at least one superstep.
    NoSupersteps,
    /// `rank_reassigned` must have one flag per superstep.
    RankFlagsLength { num_supersteps: usize, flags: usize },
    /// A superstep index of a value is out of range.
    SuperstepOutOfRange {
        value: usize,
        superstep: usize,
        num_supersteps: usize,
    },
    /// A saved value must be last used after the superstep defining it.
    NotLiveAcrossBarrier {
        value: usize,
        def_superstep: usize,
        last_use_superstep: usize,
    },
    /// A value is live across a rank-reassigned superstep; callers split it.
    SpansRankReassignment {
        value: usize,
        def_superstep: usize,
        last_use_superstep: usize,
        superstep: usize,
    },
    /// The flow solver failed; with a well-formed graph this does not happen.
    Flow(FlowError),
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSupersteps => write!(f, "a superstep graph needs at least one superstep"),
            Self::RankFlagsLength {
                num_supersteps,
                flags,
            } => write!(
                f,
                "{flags} rank-reassignment flags for {num_supersteps} supersteps"
            ),
            Self::SuperstepOutOfRange {
                value,
                superstep,
                num_supersteps,
            } => write!(
                f,
                "value {value} refers to superstep {superstep} of {num_supersteps}"
            ),
            Self::NotLiveAcrossBarrier {
                value,
                def_superstep,
                last_use_superstep,
            } => write!(
                f,
                "value {value} is defined in superstep {def_superstep} but last used in superstep \
                 {last_use_superstep}; a saved value must be used in a later superstep"
            ),
            Self::SpansRankReassignment {
                value,
                def_superstep,
                last_use_superstep,
                superstep,
            } => write!(
                f,
                "value {value} (supersteps {def_superstep} to {last_use_superstep}) is live across \
                 rank-reassigned superstep {superstep}; split it there"
            ),
            Self::Flow(error) => write!(f, "buffer flow: {error}"),
        }
    }
}

impl std::error::Error for AllocError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Flow(error) => Some(error),
            _ => None,
        }
    }
}

impl From<FlowError> for AllocError {
    fn from(error: FlowError) -> Self {
        Self::Flow(error)
    }
}

/// The paper's graph for a superstep sequence: `begin_s` is node `2s`,
/// `end_s` node `2s + 1`, and `between_s` (after every thread has finished
/// superstep `s`, before any starts `s + 1`) node `2n + s`; the skeleton is
/// the chain `begin_0 -> end_0 -> between_0 -> begin_1 -> ...`. Value edges
/// are added per saved value.
#[derive(Debug, Clone)]
pub struct SuperstepGraph {
    graph: FlowGraph,
    rank_reassigned: Vec<bool>,
}

impl SuperstepGraph {
    /// The non-value skeleton for `num_supersteps` supersteps (at least one).
    pub fn new(num_supersteps: usize, rank_reassigned: &[bool]) -> Result<Self, AllocError> {
        if rank_reassigned.len() != num_supersteps {
            return Err(AllocError::RankFlagsLength {
                num_supersteps,
                flags: rank_reassigned.len(),
            });
        }
        if num_supersteps == 0 {
            return Err(AllocError::NoSupersteps);
        }
        let n = num_supersteps;
        let mut graph = FlowGraph::new(3 * n - 1);
        let (begin, end, between) = (|s: usize| 2 * s, |s: usize| 2 * s + 1, |s: usize| 2 * n + s);
        for s in 0..n {
            graph.set_node_label(begin(s), format!("S{} begin", s + 1))?;
            graph.set_node_label(end(s), format!("S{} end", s + 1))?;
            graph.add_edge(begin(s), end(s), 0, None, EdgeKind::NonValue)?;
            if s + 1 < n {
                graph.set_node_label(between(s), format!("S{}|S{}", s + 1, s + 2))?;
                graph.add_edge(end(s), between(s), 0, None, EdgeKind::NonValue)?;
                graph.add_edge(between(s), begin(s + 1), 0, None, EdgeKind::NonValue)?;
            }
        }
        Ok(Self {
            graph,
            rank_reassigned: rank_reassigned.to_vec(),
        })
    }

    /// Number of supersteps.
    pub fn num_supersteps(&self) -> usize {
        self.rank_reassigned.len()
    }

    /// Node of the beginning of superstep `s`.
    pub fn begin(&self, s: usize) -> usize {
        2 * s
    }

    /// Node of the end of superstep `s`.
    pub fn end(&self, s: usize) -> usize {
        2 * s + 1
    }

    /// Node between supersteps `s` and `s + 1`: every thread has finished
    /// `s` and none has started `s + 1`.
    pub fn between(&self, s: usize) -> usize {
        2 * self.num_supersteps() + s
    }

    /// Where a value's buffer becomes busy: the end of its defining
    /// superstep, or the moment before it when other threads write it then.
    pub fn busy_from<C>(&self, value: &SavedValue<C>) -> usize {
        match (value.written_remotely, value.def_superstep) {
            (false, def) => self.end(def),
            (true, 0) => self.source(),
            (true, def) => self.between(def - 1),
        }
    }

    /// Where a value's buffer becomes free: the beginning of its last use,
    /// or the moment after it when threads read other threads' slots then
    /// (`thread.get`, or loads with the old ranks in a rank-reassigned
    /// superstep).
    pub fn free_from<C>(&self, value: &SavedValue<C>) -> usize {
        let last_use = value.last_use_superstep;
        let reassigned = self.rank_reassigned.get(last_use) == Some(&true);
        if !(value.read_remotely || reassigned) {
            self.begin(last_use)
        } else if last_use + 1 >= self.num_supersteps() {
            self.sink()
        } else {
            self.between(last_use)
        }
    }

    /// The flow source, the beginning of the first superstep.
    pub fn source(&self) -> usize {
        self.begin(0)
    }

    /// The flow sink, the end of the last superstep.
    pub fn sink(&self) -> usize {
        self.end(self.num_supersteps() - 1)
    }

    /// The flow graph.
    pub fn graph(&self) -> &FlowGraph {
        &self.graph
    }

    /// Checks a saved value against the superstep sequence.
    pub fn check_value<C>(&self, id: usize, value: &SavedValue<C>) -> Result<(), AllocError> {
        let num_supersteps = self.num_supersteps();
        let (def, last_use) = (value.def_superstep, value.last_use_superstep);
        for superstep in [def, last_use] {
            if superstep >= num_supersteps {
                return Err(AllocError::SuperstepOutOfRange {
                    value: id,
                    superstep,
                    num_supersteps,
                });
            }
        }
        if def >= last_use {
            return Err(AllocError::NotLiveAcrossBarrier {
                value: id,
                def_superstep: def,
                last_use_superstep: last_use,
            });
        }
        if let Some(superstep) = (def + 1..last_use).find(|&s| self.rank_reassigned[s]) {
            return Err(AllocError::SpansRankReassignment {
                value: id,
                def_superstep: def,
                last_use_superstep: last_use,
                superstep,
            });
        }
        Ok(())
    }

    /// Adds the value edge `busy_from -> free_from` (bounds 1 and 1) for
    /// value `id`, in the plain case `end_def -> begin_last_use`; returns
    /// the edge id.
    pub fn add_value<C>(&mut self, id: usize, value: &SavedValue<C>) -> Result<usize, AllocError> {
        self.check_value(id, value)?;
        let (from, to) = (self.busy_from(value), self.free_from(value));
        Ok(self
            .graph
            .add_edge(from, to, 1, Some(1), EdgeKind::Value(id))?)
    }

    /// The minimum flow from the source to the sink.
    pub fn min_flow(&self) -> Result<Flow, FlowError> {
        min_flow(&self.graph, self.source(), self.sink())
    }

    /// Graphviz text with supersteps as grey boxes, as in the paper's Fig. 4.
    pub fn to_dot(&self, flow: Option<&Flow>, value_names: &[&str]) -> String {
        let clusters: Vec<(String, Vec<usize>)> = (0..self.num_supersteps())
            .map(|s| {
                let label = if self.rank_reassigned[s] {
                    format!("superstep {} (rank reassigned)", s + 1)
                } else {
                    format!("superstep {}", s + 1)
                };
                (label, vec![self.begin(s), self.end(s)])
            })
            .collect();
        write_dot(&self.graph, flow, value_names, &clusters)
    }
}

/// Assigns every saved value a temporary buffer, using the fewest buffers in
/// every size class.
pub fn allocate<C: Clone + Ord>(
    num_supersteps: usize,
    rank_reassigned: &[bool],
    values: &[SavedValue<C>],
) -> Result<Allocation<C>, AllocError> {
    if num_supersteps == 0 && rank_reassigned.is_empty() {
        // No superstep: every value refers to a missing one.
        return match values.first() {
            Some(value) => Err(AllocError::SuperstepOutOfRange {
                value: 0,
                superstep: value.def_superstep,
                num_supersteps,
            }),
            None => Ok(Allocation {
                buffer_of_value: Vec::new(),
                buffers: Vec::new(),
            }),
        };
    }
    let skeleton = SuperstepGraph::new(num_supersteps, rank_reassigned)?;
    for (id, value) in values.iter().enumerate() {
        skeleton.check_value(id, value)?;
    }

    // Group values by class, classes in order of first appearance.
    let mut class_index: BTreeMap<&C, usize> = BTreeMap::new();
    let mut groups: Vec<(&C, Vec<usize>)> = Vec::new();
    for (id, value) in values.iter().enumerate() {
        let index = *class_index.entry(&value.class).or_insert_with(|| {
            groups.push((&value.class, Vec::new()));
            groups.len() - 1
        });
        groups[index].1.push(id);
    }

    let mut buffer_of_value = vec![usize::MAX; values.len()];
    let mut buffers = Vec::new();
    for (class, ids) in groups {
        let mut graph = skeleton.clone();
        for &id in &ids {
            graph.add_value(id, &values[id])?;
        }
        let flow = graph.min_flow()?;
        let paths = decompose(graph.graph(), &flow, graph.source(), graph.sink())?;
        let mut class_buffers: Vec<Vec<usize>> = Vec::new();
        for path in paths {
            let path_values: Vec<usize> = path
                .edges
                .iter()
                .filter_map(|&edge| match graph.graph().edges()[edge].kind {
                    EdgeKind::Value(id) => Some(id),
                    EdgeKind::NonValue => None,
                })
                .collect();
            // Each value edge carries one unit, so a path with values carries
            // one unit; a minimum flow has no path without values.
            if !path_values.is_empty() {
                class_buffers.push(path_values);
            }
        }
        class_buffers.sort_by_key(|values| values.iter().copied().min());
        for values_in_buffer in class_buffers {
            for &id in &values_in_buffer {
                buffer_of_value[id] = buffers.len();
            }
            buffers.push(BufferInfo {
                class: class.clone(),
                values: values_in_buffer,
            });
        }
    }
    if let Some(value) = buffer_of_value.iter().position(|&b| b == usize::MAX) {
        return Err(AllocError::Flow(FlowError::InvalidFlow {
            reason: format!("value {value} lies on no flow path"),
        }));
    }
    Ok(Allocation {
        buffer_of_value,
        buffers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(def: usize, last_use: usize, class: u32) -> SavedValue<u32> {
        SavedValue {
            def_superstep: def,
            last_use_superstep: last_use,
            class,
            written_remotely: false,
            read_remotely: false,
        }
    }

    fn buffer_sets(allocation: &Allocation<u32>) -> Vec<Vec<usize>> {
        allocation
            .buffers
            .iter()
            .map(|b| b.values.clone())
            .collect()
    }

    /// Listing 5 / Table 2, supersteps renumbered from 0.
    fn listing5() -> Vec<SavedValue<u32>> {
        vec![
            value(0, 1, 0),
            value(0, 3, 0),
            value(1, 2, 0),
            value(2, 3, 0),
        ]
    }

    #[test]
    fn listing5_uses_two_buffers() {
        let allocation = allocate(4, &[false; 4], &listing5()).expect("allocates");
        assert_eq!(buffer_sets(&allocation), vec![vec![0, 2, 3], vec![1]]);
        assert_eq!(allocation.buffer_of_value, vec![0, 1, 0, 0]);
    }

    #[test]
    fn listing5_graph_and_flow_match_figure_4() {
        let mut graph = SuperstepGraph::new(4, &[false; 4]).expect("graph");
        for (id, v) in listing5().iter().enumerate() {
            graph.add_value(id, v).expect("value edge");
        }
        // 4 begin->end, 3 end->between, 3 between->begin, 4 value edges.
        assert_eq!(graph.graph().edges().len(), 14);
        let flow = graph.min_flow().expect("flow");
        assert_eq!(flow.value(), 2);
        let dot = graph.to_dot(Some(&flow), &["v0", "v1", "v2", "v3"]);
        assert!(dot.contains("label=\"S1 begin\""), "{dot}");
        assert!(dot.contains("label=\"S4 end\""), "{dot}");
        assert!(dot.contains("n1 -> n2 [label=\"v0: 1\""), "{dot}");
        assert!(dot.contains("n1 -> n6 [label=\"v1: 1\""), "{dot}");
        // Both buffers start at S1 begin.
        assert!(dot.contains("n0 -> n1 [label=\"2\"]"), "{dot}");
        let plain = graph.graph().to_dot(None, &[]);
        assert!(plain.contains("n5 -> n6 [label=\"v3\""), "{plain}");
    }

    /// Listing 3 / Table 1: f and v saved in superstep 1; v is used again in
    /// superstep 3, after the rank reassignment at superstep 2, so it is split
    /// into v (1 -> 2) and v' (2 -> 3), as Listing 4 moves it to `t2`.
    #[test]
    fn listing3_rank_reassignment_needs_a_third_buffer() {
        let values = [value(0, 1, 0), value(0, 1, 0), value(1, 2, 0)];
        let reassigned = allocate(3, &[false, true, false], &values).expect("allocates");
        assert_eq!(buffer_sets(&reassigned), vec![vec![0], vec![1], vec![2]]);
        // Without the reassignment v' could reuse a buffer read in superstep 2.
        let plain = allocate(3, &[false; 3], &values).expect("allocates");
        assert_eq!(plain.buffers.len(), 2);
    }

    #[test]
    fn rank_reassigned_superstep_may_reuse_a_buffer_read_earlier() {
        // a: 1 -> 2, b: 3 -> 4 with superstep 3 reassigned: a's buffer is free
        // during superstep 3, so b can take it.
        let values = [value(0, 1, 0), value(2, 3, 0)];
        let allocation = allocate(4, &[false, false, true, false], &values).expect("allocates");
        assert_eq!(buffer_sets(&allocation), vec![vec![0, 1]]);
    }

    #[test]
    fn consecutive_rank_reassignments() {
        // a is read in superstep 2 (old rank) and b written at the end of
        // superstep 3 (new rank): different kernels, one buffer.
        let values = [value(0, 1, 0), value(2, 3, 0)];
        let allocation = allocate(4, &[false, true, true, false], &values).expect("allocates");
        assert_eq!(allocation.buffers.len(), 1);
        // But c read in superstep 3 and d saved there must not share.
        let values = [value(1, 2, 0), value(2, 3, 0)];
        let allocation = allocate(4, &[false, true, true, false], &values).expect("allocates");
        assert_eq!(allocation.buffers.len(), 2);
    }

    #[test]
    fn size_classes_never_share() {
        let values = [
            value(0, 1, 4),
            value(1, 2, 8),
            value(2, 3, 4),
            value(1, 3, 8),
        ];
        let allocation = allocate(4, &[false; 4], &values).expect("allocates");
        assert_eq!(
            allocation.buffers,
            vec![
                BufferInfo {
                    class: 4,
                    values: vec![0, 2]
                },
                BufferInfo {
                    class: 8,
                    values: vec![1]
                },
                BufferInfo {
                    class: 8,
                    values: vec![3]
                },
            ]
        );
        assert_eq!(allocation.buffer_of_value, vec![0, 1, 0, 2]);
    }

    #[test]
    fn generic_class_keys() {
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
        struct Class {
            elem_bytes: u32,
            count: &'static str,
        }
        let class = |elem_bytes, count| Class { elem_bytes, count };
        let values = [
            SavedValue {
                def_superstep: 0,
                last_use_superstep: 1,
                class: class(4, "n"),
                written_remotely: false,
                read_remotely: false,
            },
            SavedValue {
                def_superstep: 1,
                last_use_superstep: 2,
                class: class(4, "m"),
                written_remotely: false,
                read_remotely: false,
            },
            SavedValue {
                def_superstep: 1,
                last_use_superstep: 2,
                class: class(4, "n"),
                written_remotely: false,
                read_remotely: false,
            },
        ];
        let allocation = allocate(3, &[false; 3], &values).expect("allocates");
        assert_eq!(allocation.buffers.len(), 2);
        assert_eq!(allocation.buffer_of_value, vec![0, 1, 0]);
    }

    #[test]
    fn no_values_no_buffers() {
        let allocation = allocate::<u32>(3, &[false, true, false], &[]).expect("allocates");
        assert!(allocation.buffers.is_empty());
        let allocation = allocate::<u32>(0, &[], &[]).expect("allocates");
        assert!(allocation.buffers.is_empty());
        assert_eq!(
            allocate(0, &[], &[value(0, 1, 0)]),
            Err(AllocError::SuperstepOutOfRange {
                value: 0,
                superstep: 0,
                num_supersteps: 0
            })
        );
        assert_eq!(
            SuperstepGraph::new(0, &[]).map(|_| ()),
            Err(AllocError::NoSupersteps)
        );
    }

    #[test]
    fn allocation_errors() {
        assert_eq!(
            allocate(3, &[false; 2], &[value(0, 1, 0)]),
            Err(AllocError::RankFlagsLength {
                num_supersteps: 3,
                flags: 2
            })
        );
        assert_eq!(
            allocate(2, &[false; 2], &[value(0, 2, 0)]),
            Err(AllocError::SuperstepOutOfRange {
                value: 0,
                superstep: 2,
                num_supersteps: 2
            })
        );
        assert_eq!(
            allocate(3, &[false; 3], &[value(0, 1, 0), value(1, 1, 0)]),
            Err(AllocError::NotLiveAcrossBarrier {
                value: 1,
                def_superstep: 1,
                last_use_superstep: 1
            })
        );
        assert_eq!(
            allocate(3, &[false; 3], &[value(2, 1, 0)]),
            Err(AllocError::NotLiveAcrossBarrier {
                value: 0,
                def_superstep: 2,
                last_use_superstep: 1
            })
        );
        assert_eq!(
            allocate(4, &[false, false, true, false], &[value(0, 3, 0)]),
            Err(AllocError::SpansRankReassignment {
                value: 0,
                def_superstep: 0,
                last_use_superstep: 3,
                superstep: 2
            })
        );
        // Ending at or starting from the reassigned superstep is fine.
        assert!(
            allocate(
                4,
                &[false, false, true, false],
                &[value(0, 2, 0), value(2, 3, 0)]
            )
            .is_ok()
        );
        let message = AllocError::SpansRankReassignment {
            value: 0,
            def_superstep: 0,
            last_use_superstep: 3,
            superstep: 2,
        }
        .to_string();
        assert!(message.contains("split it"), "{message}");
    }

    #[test]
    fn flow_graph_errors() {
        let mut graph = FlowGraph::new(3);
        assert_eq!(
            graph.add_edge(0, 3, 0, None, EdgeKind::NonValue),
            Err(FlowError::NodeOutOfRange {
                node: 3,
                num_nodes: 3
            })
        );
        assert_eq!(
            graph.add_edge(0, 1, 2, Some(1), EdgeKind::NonValue),
            Err(FlowError::LowerAboveUpper {
                from: 0,
                to: 1,
                lower: 2,
                upper: 1
            })
        );
        assert_eq!(
            min_flow(&graph, 0, 0),
            Err(FlowError::SourceIsSink { node: 0 })
        );
        assert_eq!(
            min_flow(&graph, 0, 5),
            Err(FlowError::NodeOutOfRange {
                node: 5,
                num_nodes: 3
            })
        );

        // Cycle 0 -> 1 -> 2 -> 1.
        let mut cyclic = FlowGraph::new(3);
        for (from, to) in [(0, 1), (1, 2), (2, 1)] {
            cyclic
                .add_edge(from, to, 0, None, EdgeKind::NonValue)
                .expect("edge");
        }
        assert!(matches!(
            min_flow(&cyclic, 0, 2),
            Err(FlowError::Cyclic { .. })
        ));

        // The sink reaches the source.
        let mut backwards = FlowGraph::new(2);
        backwards
            .add_edge(1, 0, 0, None, EdgeKind::NonValue)
            .expect("edge");
        assert_eq!(
            min_flow(&backwards, 0, 1),
            Err(FlowError::SinkReachesSource)
        );

        // A lower bound off every source-to-sink path.
        let mut stranded = FlowGraph::new(4);
        stranded
            .add_edge(0, 1, 0, None, EdgeKind::NonValue)
            .expect("edge");
        stranded
            .add_edge(2, 3, 1, Some(1), EdgeKind::Value(0))
            .expect("edge");
        assert_eq!(min_flow(&stranded, 0, 1), Err(FlowError::Infeasible));

        // Two unit demands through a unit bottleneck.
        let mut narrow = FlowGraph::new(4);
        narrow
            .add_edge(0, 1, 0, Some(1), EdgeKind::NonValue)
            .expect("edge");
        narrow
            .add_edge(1, 2, 1, Some(1), EdgeKind::Value(0))
            .expect("edge");
        narrow
            .add_edge(1, 2, 1, Some(1), EdgeKind::Value(1))
            .expect("edge");
        narrow
            .add_edge(2, 3, 0, None, EdgeKind::NonValue)
            .expect("edge");
        assert_eq!(min_flow(&narrow, 0, 3), Err(FlowError::Infeasible));
    }

    #[test]
    fn decompose_rejects_foreign_flows() {
        let mut graph = FlowGraph::new(3);
        graph
            .add_edge(0, 1, 1, None, EdgeKind::NonValue)
            .expect("edge");
        graph
            .add_edge(1, 2, 0, None, EdgeKind::NonValue)
            .expect("edge");
        let flow = min_flow(&graph, 0, 2).expect("flow");
        assert_eq!(flow.edge_flows(), &[1, 1]);
        let wrong_length = Flow {
            edge_flow: vec![1],
            value: 1,
        };
        assert!(matches!(
            decompose(&graph, &wrong_length, 0, 2),
            Err(FlowError::InvalidFlow { .. })
        ));
        let unbalanced = Flow {
            edge_flow: vec![2, 1],
            value: 2,
        };
        assert!(matches!(
            decompose(&graph, &unbalanced, 0, 2),
            Err(FlowError::InvalidFlow { .. })
        ));
        let below_lower = Flow {
            edge_flow: vec![0, 0],
            value: 0,
        };
        assert!(matches!(
            decompose(&graph, &below_lower, 0, 2),
            Err(FlowError::InvalidFlow { .. })
        ));
    }

    /// A branching DAG: two lower-bound edges on parallel branches need two
    /// units; a third behind a join reuses one of them.
    #[test]
    fn min_flow_on_a_branching_dag() {
        // 0 -> 1 -> 3 -> 4 -> 5, 0 -> 2 -> 3; demands on 0->1, 0->2, 4->5.
        let mut graph = FlowGraph::new(6);
        let mut add = |from, to, lower, upper, kind| {
            graph.add_edge(from, to, lower, upper, kind).expect("edge")
        };
        let a = add(0, 1, 1, Some(1), EdgeKind::Value(0));
        let b = add(0, 2, 1, Some(1), EdgeKind::Value(1));
        add(1, 3, 0, None, EdgeKind::NonValue);
        add(2, 3, 0, None, EdgeKind::NonValue);
        add(3, 4, 0, None, EdgeKind::NonValue);
        let c = add(4, 5, 1, Some(3), EdgeKind::Value(2));
        add(0, 5, 0, None, EdgeKind::NonValue);
        let flow = min_flow(&graph, 0, 5).expect("flow");
        assert_eq!(flow.value(), 2);
        assert_eq!(flow.edge_flow(a), Some(1));
        assert_eq!(flow.edge_flow(b), Some(1));
        assert_eq!(flow.edge_flow(c), Some(2));
        let paths = decompose(&graph, &flow, 0, 5).expect("paths");
        assert_eq!(paths.iter().map(|p| p.amount).sum::<u64>(), 2);
        for path in &paths {
            assert_eq!(graph.edges()[path.edges[0]].from, 0);
            assert_eq!(path.edges.last().map(|&e| graph.edges()[e].to), Some(5));
        }
    }

    /// A graph where the feasible flow of step 1 routes both demands through
    /// the closing `sink -> source` edge, so step 2 must reduce it.
    #[test]
    fn reduction_step_matters() {
        // s=0, x=1, m1=2, m2=3, y=4, t=5.
        let mut graph = FlowGraph::new(6);
        let mut add = |from, to, lower, upper, kind| {
            graph.add_edge(from, to, lower, upper, kind).expect("edge")
        };
        add(0, 1, 1, None, EdgeKind::Value(0));
        add(1, 5, 0, None, EdgeKind::NonValue);
        add(1, 2, 0, None, EdgeKind::NonValue);
        add(2, 3, 0, None, EdgeKind::NonValue);
        add(3, 4, 0, None, EdgeKind::NonValue);
        add(0, 4, 0, None, EdgeKind::NonValue);
        add(4, 5, 1, None, EdgeKind::Value(1));
        let feasible = feasible_flow(&graph, 0, 5).expect("feasible");
        assert_eq!(net_outflow(&graph, &feasible, 0), Ok(2));
        let flow = min_flow(&graph, 0, 5).expect("flow");
        assert_eq!(flow.value(), 1);
        assert_eq!(flow.edge_flows(), &[1, 0, 1, 1, 1, 0, 1]);
    }

    #[test]
    fn large_lower_bounds_and_infinite_edges() {
        // A demand of 1000 on one edge, 7 on a parallel one.
        let mut graph = FlowGraph::new(4);
        graph
            .add_edge(0, 1, 0, None, EdgeKind::NonValue)
            .expect("edge");
        graph
            .add_edge(1, 2, 1000, None, EdgeKind::NonValue)
            .expect("edge");
        graph
            .add_edge(1, 2, 7, Some(7), EdgeKind::NonValue)
            .expect("edge");
        graph
            .add_edge(2, 3, 0, None, EdgeKind::NonValue)
            .expect("edge");
        let flow = min_flow(&graph, 0, 3).expect("flow");
        assert_eq!(flow.value(), 1007);
        assert_eq!(flow.edge_flows(), &[1007, 1000, 7, 1007]);
        let paths = decompose(&graph, &flow, 0, 3).expect("paths");
        assert_eq!(
            paths.iter().map(|p| p.amount).collect::<Vec<_>>(),
            vec![1000, 7]
        );
    }

    #[test]
    fn dot_escapes_names() {
        let mut graph = FlowGraph::new(2);
        graph.set_node_label(0, "a \"quoted\" node").expect("label");
        graph
            .add_edge(0, 1, 1, Some(1), EdgeKind::Value(0))
            .expect("edge");
        let dot = graph.to_dot(None, &["x\\y"]);
        assert!(dot.contains("label=\"a \\\"quoted\\\" node\""), "{dot}");
        assert!(dot.contains("label=\"x\\\\y\""), "{dot}");
        assert_eq!(
            graph.set_node_label(2, "x"),
            Err(FlowError::NodeOutOfRange {
                node: 2,
                num_nodes: 2
            })
        );
    }

    #[test]
    fn superstep_graph_reachability_matches_reuse_rule() {
        let flags = [false, true, true, false, true, false, true];
        let graph = SuperstepGraph::new(flags.len(), &flags).expect("graph");
        for a in 1..flags.len() {
            // The last superstep saves nothing that is loaded.
            for b in 0..flags.len() - 1 {
                let read = value(0, a, 0);
                let write = value(b, flags.len() - 1, 0);
                let allowed = a < b || (a == b && !flags[b]);
                let reaches =
                    graph
                        .graph()
                        .reaches(graph.free_from(&read), graph.busy_from(&write), |e| {
                            e.kind == EdgeKind::NonValue
                        });
                assert_eq!(reaches, allowed, "read {a} -> write {b}");
            }
        }
    }

    /// `get_two_supersteps.bsgp`: a0 (0 -> 1) is read with `thread.get` in
    /// superstep 1, which saves a1 (1 -> 2): a1 must not take a0's buffer,
    /// as every thread writes its a1 slot while its right neighbour may
    /// still read it as a0.
    #[test]
    fn remote_reads_keep_the_buffer_through_the_superstep() {
        let a0 = SavedValue {
            read_remotely: true,
            ..value(0, 1, 0)
        };
        let a1 = value(1, 2, 0);
        let allocation = allocate(3, &[false; 3], &[a0.clone(), a1.clone()]).expect("allocates");
        assert_eq!(allocation.buffers.len(), 2);
        // Read locally, the two share one buffer (Listing 5's rule).
        let local = allocate(3, &[false; 3], &[value(0, 1, 0), a1.clone()]).expect("allocates");
        assert_eq!(local.buffers.len(), 1);
        // A value saved one superstep later may take a0's buffer.
        let a2 = value(2, 3, 0);
        let later = allocate(4, &[false; 4], &[a0, a2]).expect("allocates");
        assert_eq!(later.buffers.len(), 1);
    }

    /// `thread.put` writes other threads' slots during its superstep: its
    /// target may not take a buffer read in that superstep, even locally.
    #[test]
    fn remote_writes_need_the_buffer_for_the_whole_superstep() {
        let put = SavedValue {
            written_remotely: true,
            ..value(1, 2, 0)
        };
        let allocation =
            allocate(3, &[false; 3], &[value(0, 1, 0), put.clone()]).expect("allocates");
        assert_eq!(allocation.buffers.len(), 2);
        // Free before the superstep began: one buffer.
        let put_later = SavedValue {
            written_remotely: true,
            ..value(2, 3, 0)
        };
        let shared = allocate(4, &[false; 4], &[value(0, 1, 0), put_later]).expect("allocates");
        assert_eq!(shared.buffers.len(), 1);
        // A put in the first superstep starts at the source.
        let first = SavedValue {
            written_remotely: true,
            ..value(0, 1, 0)
        };
        let graph = SuperstepGraph::new(2, &[false; 2]).expect("graph");
        assert_eq!(graph.busy_from(&first), graph.source());
    }
}
