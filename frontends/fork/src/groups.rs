//! Group splitting of synchronous control flow whose condition is private
//! (seeds/fork-to-cuda.txt, Section 3, Figures 4 and 5).
//!
//! The common lowering gives `scf.if`, `scf.while` and `scf.for`; in
//! synchronous code (a `pgpu.spawn synchronous` body or a `pgpu.synchronous`
//! function, outside `pgpu.seq`/`pgpu.farm`) this pass rewrites them:
//!
//! - `scf.if` on a private condition becomes `pgpu.group.split` (its
//!   `scf.yield`s become `pgpu.group.merge`).
//! - `scf.while` becomes group shrinking (Fig. 5): a private `active` cell;
//!   each iteration `active &= cond`; the loop goes on while any member is
//!   active (a group-wide OR through `pgpu.multiprefix or` on a scratch
//!   cell); the body runs in `pgpu.group.split %active` so that the members
//!   that left the loop wait at the merge.
//! - `scf.for` with private bounds runs `max` over the group of the trip
//!   counts iterations (`pgpu.multiprefix max`), the body split on `j <
//!   own trip count`.
//!
//! A value is private unless it is defined outside synchronous code, or by
//! a constant, `pgpu.group.size`/`pgpu.group.id`, or an `arith`/`math` op on
//! non-private values. The rewrite works on the generic textual form of
//! the module and re-parses it; the scratch cells are module globals
//! (`@__fork_any`, `@__fork_max_*`), which is exact for the interpreter, where
//! sibling subgroups run one after the other.

use melior::{
    Context,
    ir::{Module, operation::OperationLike},
};
use pgpu_csubset::{
    Diagnostic,
    hir::{FnMode, Hir},
    span::Span,
};
use std::collections::HashSet;

/// Code of an internal error of the group-splitting rewrite.
pub const E_INTERNAL: &str = "fork::E299";

#[derive(Debug)]
enum Node {
    Line(String),
    Op {
        header: String,
        regions: Vec<Vec<Node>>,
        trailer: String,
    },
}

fn parse(lines: &mut std::iter::Peekable<std::slice::Iter<'_, &str>>) -> Vec<Node> {
    let mut out = Vec::new();
    while let Some(line) = lines.peek() {
        let t = line.trim();
        if t.starts_with("})") || t == "}, {" {
            return out;
        }
        let line = lines.next().copied().unwrap_or_default();
        if t.ends_with("({") {
            let mut regions = vec![parse(lines)];
            let mut trailer = String::new();
            while let Some(next) = lines.next() {
                if next.trim() == "}, {" {
                    regions.push(parse(lines));
                } else {
                    trailer = (*next).to_string();
                    break;
                }
            }
            out.push(Node::Op {
                header: line.to_string(),
                regions,
                trailer,
            });
        } else {
            out.push(Node::Line(line.to_string()));
        }
    }
    out
}

/// The op name of a line (`"name"(`).
fn op_name(line: &str) -> &str {
    let Some(start) = line.find('"') else {
        return "";
    };
    let rest = &line[start + 1..];
    rest.find('"').map_or("", |end| &rest[..end])
}

/// The result base names defined by `line` (`%a`, `%a:2`).
fn result_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    if !t.starts_with('%') {
        return None;
    }
    let end = t.find(" = ")?;
    Some(t[..end].split(':').next().unwrap_or("").to_string())
}

/// The operand list of the op on `line` (inside the parentheses after the
/// op name), as written.
fn operand_text(line: &str) -> String {
    let name = op_name(line);
    let Some(at) = line.find(&format!("\"{name}\"(")) else {
        return String::new();
    };
    let rest = &line[at + name.len() + 3..];
    rest.find(')')
        .map_or(String::new(), |end| rest[..end].to_string())
}

fn operands(line: &str) -> Vec<String> {
    operand_text(line)
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| s.starts_with('%'))
        .collect()
}

fn base(name: &str) -> &str {
    name.split('#').next().unwrap_or(name)
}

/// The types of a trailer `: (A, B) -> (C)`: (operand types, result types).
fn signature(trailer: &str) -> (Vec<String>, Vec<String>) {
    let Some(colon) = trailer.rfind(" : (") else {
        return (Vec::new(), Vec::new());
    };
    let sig = &trailer[colon + 3..];
    let sig = sig.split(" loc(").next().unwrap_or(sig);
    let Some((ins, outs)) = sig.split_once(" -> ") else {
        return (Vec::new(), Vec::new());
    };
    let list = |s: &str| -> Vec<String> {
        let s = s.trim();
        let s = s
            .strip_prefix('(')
            .and_then(|s| s.strip_suffix(')'))
            .unwrap_or(s);
        split_top(s)
    };
    (list(ins), list(outs))
}

/// Splits at commas outside brackets.
fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for ch in s.chars() {
        match ch {
            '<' | '(' | '[' | '{' => depth += 1,
            '>' | ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// The block arguments of a block header line `^bb0(%a: T loc(..), ...):`.
fn block_args(line: &str) -> Vec<(String, String)> {
    let t = line.trim();
    let Some(open) = t.find('(') else {
        return Vec::new();
    };
    let inner = t[open + 1..].trim_end_matches(':').trim_end_matches(')');
    split_top(inner)
        .into_iter()
        .filter_map(|a| {
            let (name, ty) = a.split_once(':')?;
            let ty = ty.split(" loc(").next().unwrap_or(ty).trim().to_string();
            Some((name.trim().to_string(), ty))
        })
        .collect()
}

struct Rewriter {
    sync_funcs: HashSet<String>,
    private: HashSet<String>,
    counter: usize,
    max_types: Vec<String>,
    error: Option<String>,
}

const UNIFORM_OPS: &[&str] = &["arith.constant", "pgpu.group.size", "pgpu.group.id"];

impl Rewriter {
    fn fresh(&mut self) -> String {
        self.counter += 1;
        format!("%fk{}", self.counter)
    }

    fn is_private(&self, name: &str) -> bool {
        self.private.contains(base(name))
    }

    /// Marks the values `line` defines.
    fn classify(&mut self, line: &str, sync: bool) {
        if !sync {
            return;
        }
        let t = line.trim_start();
        if t.starts_with('^') {
            for (name, _) in block_args(t) {
                self.private.insert(name);
            }
            return;
        }
        let Some(name) = result_name(line) else {
            return;
        };
        let op = op_name(line);
        let pure = op.starts_with("arith.") || op.starts_with("math.") || UNIFORM_OPS.contains(&op);
        let uniform = pure && operands(line).iter().all(|o| !self.is_private(o));
        if !uniform {
            self.private.insert(name);
        }
    }

    fn mode_of(&self, header: &str, sync: bool) -> bool {
        match op_name(header) {
            "func.func" => self
                .sync_funcs
                .iter()
                .any(|f| header.contains(&format!("sym_name = \"{f}\""))),
            "pgpu.spawn" => header.contains("synchronous") || sync,
            "pgpu.seq" | "pgpu.farm" | "pgpu.require" => false,
            _ => sync,
        }
    }

    fn nodes(&mut self, nodes: Vec<Node>, sync: bool, out: &mut Vec<String>) {
        for node in nodes {
            match node {
                Node::Line(line) => {
                    self.classify(&line, sync);
                    out.push(line);
                }
                Node::Op {
                    header,
                    regions,
                    trailer,
                } => self.op(header, regions, trailer, sync, out),
            }
        }
    }

    fn plain(
        &mut self,
        header: String,
        regions: Vec<Vec<Node>>,
        trailer: String,
        inner: bool,
        out: &mut Vec<String>,
    ) {
        out.push(header);
        let count = regions.len();
        for (i, region) in regions.into_iter().enumerate() {
            self.nodes(region, inner, out);
            if i + 1 < count {
                out.push("}, {".into());
            }
        }
        out.push(trailer);
    }

    fn op(
        &mut self,
        header: String,
        regions: Vec<Vec<Node>>,
        trailer: String,
        sync: bool,
        out: &mut Vec<String>,
    ) {
        let name = op_name(&header).to_string();
        let inner = self.mode_of(&header, sync);
        if let Some(r) = result_name(&header)
            && sync
        {
            self.private.insert(r);
        }
        if !sync {
            return self.plain(header, regions, trailer, inner, out);
        }
        match name.as_str() {
            "scf.if" => {
                let cond = operands(&header).first().cloned().unwrap_or_default();
                if !self.is_private(&cond) {
                    return self.plain(header, regions, trailer, inner, out);
                }
                let header = header.replacen("\"scf.if\"", "\"pgpu.group.split\"", 1);
                let regions = regions
                    .into_iter()
                    .map(|mut r| {
                        if let Some(Node::Line(last)) = r.last_mut()
                            && op_name(last) == "scf.yield"
                        {
                            *last = last.replacen("\"scf.yield\"", "\"pgpu.group.merge\"", 1);
                        }
                        r
                    })
                    .collect();
                self.plain(header, regions, trailer, inner, out);
            }
            "scf.while" => self.shrink_while(header, regions, trailer, out),
            "scf.for" => {
                let ops = operands(&header);
                if ops.iter().take(3).all(|o| !self.is_private(o)) {
                    // The induction variable is uniform.
                    let mut regions = regions;
                    if let Some(Node::Line(h)) = regions.first_mut().and_then(|r| r.first_mut()) {
                        let args = block_args(h);
                        self.classify(&h.clone(), true);
                        if let Some((iv, _)) = args.first() {
                            self.private.remove(iv);
                        }
                    }
                    return self.plain_classified(header, regions, trailer, out);
                }
                self.shrink_for(header, regions, trailer, ops, out);
            }
            _ => self.plain(header, regions, trailer, inner, out),
        }
    }

    /// Like `plain` in sync code, but the first line of the first region
    /// (a block header) is already classified.
    fn plain_classified(
        &mut self,
        header: String,
        regions: Vec<Vec<Node>>,
        trailer: String,
        out: &mut Vec<String>,
    ) {
        out.push(header);
        let count = regions.len();
        for (i, mut region) in regions.into_iter().enumerate() {
            if i == 0
                && matches!(region.first(), Some(Node::Line(l)) if l.trim_start().starts_with('^'))
                && let Node::Line(l) = region.remove(0)
            {
                out.push(l);
            }
            self.nodes(region, true, out);
            if i + 1 < count {
                out.push("}, {".into());
            }
        }
        out.push(trailer);
    }

    /// Emits the group-wide OR of the private `i1` value `b`; returns its name.
    fn any(&mut self, b: &str, out: &mut Vec<String>) -> String {
        let p = self.fresh();
        out.push(format!(
            "{p}g = memref.get_global @__fork_any : memref<i32>"
        ));
        out.push(format!("{p}z = arith.constant 0 : i32"));
        out.push(format!("memref.store {p}z, {p}g[] : memref<i32>"));
        out.push(format!("{p}i = arith.extui {b} : i1 to i32"));
        out.push(format!(
            "{p}p = pgpu.multiprefix or {p}i to {p}g[] : memref<i32>"
        ));
        out.push(format!("{p}t = memref.load {p}g[] : memref<i32>"));
        out.push(format!("{p}any = arith.cmpi ne, {p}t, {p}z : i32"));
        self.private.insert(format!("{p}any"));
        format!("{p}any")
    }

    /// The after-body of a shrinking loop: `split %active { body; merge ys }
    /// else { merge olds }` then `scf.yield`.
    fn split_body(
        &mut self,
        active: &str,
        mut body: Vec<Node>,
        olds: &[String],
        out: &mut Vec<String>,
    ) {
        let Some(Node::Line(last)) = body.pop() else {
            self.error = Some("loop body without a terminator".into());
            return;
        };
        let (types, _) = signature(&last);
        let ys = operand_text(&last);
        let r = self.fresh();
        let results = match types.len() {
            0 => String::new(),
            1 => format!("{r} = "),
            n => format!("{r}:{n} = "),
        };
        let tys = types.join(", ");
        out.push(format!("{results}\"pgpu.group.split\"({active}) ({{"));
        self.nodes(body, true, out);
        out.push(format!("\"pgpu.group.merge\"({ys}) : ({tys}) -> ()"));
        out.push("}, {".into());
        out.push(format!(
            "\"pgpu.group.merge\"({}) : ({tys}) -> ()",
            olds.join(", ")
        ));
        out.push(format!("}}) : (i1) -> ({tys})"));
        let names: Vec<String> = match types.len() {
            0 => Vec::new(),
            1 => vec![r.clone()],
            n => (0..n).map(|i| format!("{r}#{i}")).collect(),
        };
        self.private.insert(r);
        out.push(format!(
            "\"scf.yield\"({}) : ({tys}) -> ()",
            names.join(", ")
        ));
    }

    fn shrink_while(
        &mut self,
        header: String,
        regions: Vec<Vec<Node>>,
        trailer: String,
        out: &mut Vec<String>,
    ) {
        let mut regions = regions.into_iter();
        let (Some(mut before), Some(mut after)) = (regions.next(), regions.next()) else {
            self.error = Some("scf.while without two regions".into());
            return;
        };
        let p = self.fresh();
        let cell = format!("{p}act");
        out.push(format!("{cell} = memref.alloca() : memref<i1>"));
        out.push(format!("{p}true = arith.constant true"));
        out.push(format!("memref.store {p}true, {cell}[] : memref<i1>"));
        out.push(header);
        // Before region: active &= cond; continue while any is active.
        let Some(Node::Line(cond_line)) = before.pop() else {
            self.error = Some("scf.while without scf.condition".into());
            return;
        };
        self.nodes(before, true, out);
        let ops = operands(&cond_line);
        let Some(c) = ops.first() else {
            self.error = Some("scf.condition without operands".into());
            return;
        };
        out.push(format!("{p}a = memref.load {cell}[] : memref<i1>"));
        out.push(format!("{p}cc = arith.andi {c}, {p}a : i1"));
        out.push(format!("memref.store {p}cc, {cell}[] : memref<i1>"));
        let any = self.any(&format!("{p}cc"), out);
        let rest = operand_text(&cond_line);
        let rest = rest.trim_start_matches(c.as_str());
        out.push(cond_line.replacen(&operand_text(&cond_line), &format!("{any}{rest}"), 1));
        out.push("}, {".into());
        // After region.
        let olds: Vec<String> = match after.first() {
            Some(Node::Line(h)) if h.trim_start().starts_with('^') => {
                let h = h.clone();
                self.classify(&h, true);
                out.push(h.clone());
                after.remove(0);
                block_args(&h).into_iter().map(|(n, _)| n).collect()
            }
            _ => Vec::new(),
        };
        out.push(format!("{p}a2 = memref.load {cell}[] : memref<i1>"));
        self.split_body(&format!("{p}a2"), after, &olds, out);
        out.push(trailer);
    }

    fn shrink_for(
        &mut self,
        header: String,
        regions: Vec<Vec<Node>>,
        trailer: String,
        ops: Vec<String>,
        out: &mut Vec<String>,
    ) {
        let Some(mut body) = regions.into_iter().next() else {
            self.error = Some("scf.for without a body".into());
            return;
        };
        let (lb, ub, st) = (ops[0].clone(), ops[1].clone(), ops[2].clone());
        let (types, _) = signature(&trailer);
        let ty = types.first().cloned().unwrap_or_else(|| "index".into());
        let p = self.fresh();
        out.push(format!("{p}d = arith.subi {ub}, {lb} : {ty}"));
        out.push(format!("{p}d1 = arith.addi {p}d, {st} : {ty}"));
        out.push(format!("{p}one = arith.constant 1 : {ty}"));
        out.push(format!("{p}d2 = arith.subi {p}d1, {p}one : {ty}"));
        out.push(format!("{p}q = arith.divsi {p}d2, {st} : {ty}"));
        out.push(format!("{p}zero = arith.constant 0 : {ty}"));
        out.push(format!("{p}pos = arith.cmpi sgt, {ub}, {lb} : {ty}"));
        out.push(format!("{p}tc = arith.select {p}pos, {p}q, {p}zero : {ty}"));
        let global = format!("__fork_max_{}", ty.replace(['<', '>', ' '], "_"));
        if !self.max_types.contains(&ty) {
            self.max_types.push(ty.clone());
        }
        out.push(format!("{p}g = memref.get_global @{global} : memref<{ty}>"));
        out.push(format!("memref.store {p}zero, {p}g[] : memref<{ty}>"));
        out.push(format!(
            "{p}mp = pgpu.multiprefix max {p}tc to {p}g[] : memref<{ty}>"
        ));
        out.push(format!("{p}mx = memref.load {p}g[] : memref<{ty}>"));
        let old_ops = operand_text(&header);
        let mut new_ops = vec![format!("{p}zero"), format!("{p}mx"), format!("{p}one")];
        new_ops.extend(ops[3..].iter().cloned());
        out.push(header.replacen(&old_ops, &new_ops.join(", "), 1));
        let Some(Node::Line(h)) = body.first().map(|n| match n {
            Node::Line(l) => Node::Line(l.clone()),
            Node::Op { .. } => Node::Line(String::new()),
        }) else {
            return;
        };
        body.remove(0);
        let args = block_args(&h);
        let Some((iv, _)) = args.first().cloned() else {
            self.error = Some("scf.for without an induction variable".into());
            return;
        };
        self.classify(&h, true);
        out.push(h.replacen(&format!("{iv}:"), &format!("{p}j:"), 1));
        out.push(format!("{p}act = arith.cmpi slt, {p}j, {p}tc : {ty}"));
        out.push(format!("{p}m = arith.muli {p}j, {st} : {ty}"));
        out.push(format!("{iv} = arith.addi {lb}, {p}m : {ty}"));
        let olds: Vec<String> = args.iter().skip(1).map(|(n, _)| n.clone()).collect();
        self.split_body(&format!("{p}act"), body, &olds, out);
        out.push(trailer);
    }
}

/// Rewrites the private control flow of the synchronous code of `module`
/// into group splitting; returns the verified result.
pub fn split_private_control<'c>(
    context: &'c Context,
    hir: &Hir,
    module: Module<'c>,
    path: &str,
    text: &str,
) -> Result<Module<'c>, Vec<Diagnostic>> {
    let _ = text;
    let internal = |message: String| {
        vec![Diagnostic::error(
            E_INTERNAL,
            format!("internal error in Fork group splitting ({path}): {message}"),
            Span::new(0, 0),
        )]
    };
    let flags = melior::ir::operation::OperationPrintingFlags::new()
        .enable_debug_info(true, false)
        .print_generic_operation_form();
    let printed = module
        .as_operation()
        .to_string_with_flags(flags)
        .map_err(|e| internal(format!("cannot print the module: {e}")))?;
    let lines: Vec<&str> = printed.lines().collect();
    let tree = parse(&mut lines.iter().peekable());
    let mut rw = Rewriter {
        sync_funcs: hir
            .functions
            .iter()
            .filter(|f| f.mode == Some(FnMode::Sync))
            .map(|f| f.name.clone())
            .collect(),
        private: HashSet::new(),
        counter: 0,
        max_types: Vec::new(),
        error: None,
    };
    let mut out = Vec::new();
    rw.nodes(tree, false, &mut out);
    if let Some(e) = rw.error {
        return Err(internal(e));
    }
    if rw.counter == 0 && !out.iter().any(|l| l.contains("pgpu.group.split")) {
        return Ok(module);
    }
    // Scratch cells at the top of the module.
    let mut globals =
        vec!["memref.global \"private\" @__fork_any : memref<i32> = dense<0>".to_string()];
    for ty in &rw.max_types {
        let name = format!("__fork_max_{}", ty.replace(['<', '>', ' '], "_"));
        globals.push(format!(
            "memref.global \"private\" @{name} : memref<{ty}> = dense<0>"
        ));
    }
    if let Some(pos) = out.iter().position(|l| op_name(l) == "builtin.module") {
        for (i, g) in globals.into_iter().enumerate() {
            out.insert(pos + 1 + i, g);
        }
    }
    let text_out = out.join("\n");
    let parsed = Module::parse(context, &text_out)
        .ok_or_else(|| internal(format!("the rewritten module does not parse:\n{text_out}")))?;
    if !parsed.as_operation().verify() {
        return Err(internal("the rewritten module does not verify".into()));
    }
    Ok(parsed)
}
