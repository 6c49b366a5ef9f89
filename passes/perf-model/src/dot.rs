//! A net as Graphviz: places as circles labelled with their name and
//! initial tokens, transitions as boxes (the idle transition filled),
//! weighted arcs labelled with weights above 1, inhibitor arcs ending in a
//! small circle (`arrowhead=odot`), as the paper draws them. Nodes whose
//! names share a prefix before the first `.` (the GPU model's `w<i>.`)
//! are grouped in one cluster.

use crate::net::Net;
use std::{collections::BTreeMap, fmt::Write};

/// The dot text of `net`, as graph `name`.
pub fn to_dot(net: &Net, name: &str) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "digraph {} {{", quote(name));
    let _ = writeln!(text, "  rankdir=TB;");
    let mut clusters: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut top = Vec::new();
    for place in net.places() {
        let label = match place.initial {
            0 => place.name.clone(),
            tokens => format!("{}\\n{tokens}", place.name),
        };
        let node = format!(
            "{} [shape=circle, label={}];",
            quote(&place.name),
            quote(&label)
        );
        match cluster_of(&place.name) {
            Some(cluster) => clusters.entry(cluster).or_default().push(node),
            None => top.push(node),
        }
    }
    for (index, transition) in net.transitions().iter().enumerate() {
        let idle = net.idle().is_some_and(|idle| idle.0 as usize == index);
        let style = if idle {
            ", style=filled, fillcolor=gray"
        } else {
            ""
        };
        let node = format!("{} [shape=box{style}];", quote(&transition.name));
        match cluster_of(&transition.name) {
            Some(cluster) => clusters.entry(cluster).or_default().push(node),
            None => top.push(node),
        }
    }
    for node in top {
        let _ = writeln!(text, "  {node}");
    }
    for (cluster, nodes) in clusters {
        let _ = writeln!(
            text,
            "  subgraph {} {{",
            quote(&format!("cluster_{cluster}"))
        );
        let _ = writeln!(text, "    label={};", quote(cluster));
        for node in nodes {
            let _ = writeln!(text, "    {node}");
        }
        let _ = writeln!(text, "  }}");
    }
    let weight = |weight: u64| match weight {
        1 => String::new(),
        weight => format!(" [label=\"{weight}\"]"),
    };
    for transition in net.transitions() {
        let name = quote(&transition.name);
        for arc in &transition.inputs {
            let place = quote(&net.place(arc.place).name);
            let _ = writeln!(text, "  {place} -> {name}{};", weight(arc.weight));
        }
        for arc in &transition.outputs {
            let place = quote(&net.place(arc.place).name);
            let _ = writeln!(text, "  {name} -> {place}{};", weight(arc.weight));
        }
        for &place in &transition.inhibitors {
            let place = quote(&net.place(place).name);
            let _ = writeln!(text, "  {place} -> {name} [arrowhead=odot];");
        }
    }
    text.push_str("}\n");
    text
}

fn cluster_of(name: &str) -> Option<&str> {
    name.split_once('.').map(|(prefix, _)| prefix)
}

fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"")).replace("\\\\n", "\\n")
}
