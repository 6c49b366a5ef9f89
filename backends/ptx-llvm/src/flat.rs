//! A kernel body as the translators see it: nested `{ }` scopes flattened
//! (every register renamed to a unique slot, so shadowing cannot
//! confuse), and the instructions cut into basic blocks with their
//! successors and immediate post-dominators (the reconvergence points of
//! the SIMT stack, [`crate::cpu`]).
//!
//! Post-dominators are computed with the iterative algorithm of Cooper,
//! Harvey and Kennedy ("A Simple, Fast Dominance Algorithm") on the
//! reversed CFG, whose root is a virtual exit that every `ret`/`exit`
//! block (and every block without successors) reaches.

use crate::TranslateError;
use pgpu_ptx::ir::*;
use pgpu_ptx::{ErrorKind, PtxError, Span};
use std::collections::HashMap;

/// A register slot: one per declared register.
#[derive(Clone, Debug)]
pub struct Slot {
    /// The name as written.
    pub name: String,
    /// Its type.
    pub ty: ValueType,
}

/// How a basic block ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Terminator {
    /// Falls through (or jumps unconditionally) to a block.
    Goto(usize),
    /// `@p bra` / `@!p bra`: to `taken` when the guard holds, else to
    /// `fallthrough`.
    Branch {
        /// The guard predicate's slot.
        predicate: usize,
        /// Whether the guard is `@!`.
        negated: bool,
        /// Target when it holds.
        taken: usize,
        /// Target otherwise.
        fallthrough: usize,
    },
    /// `ret` or `exit` (unguarded): the lanes leave.
    Exit,
}

/// A basic block.
#[derive(Clone, Debug)]
pub struct Block {
    /// Its instructions, without the terminating branch or exit.
    pub instructions: Vec<Instruction>,
    /// How it ends.
    pub terminator: Terminator,
    /// Where the terminator is (for messages).
    pub span: Span,
}

/// A flattened kernel body.
#[derive(Debug)]
pub struct Body {
    /// Register slots; instructions name registers `#N` (slot N).
    pub slots: Vec<Slot>,
    /// Variables declared in the body (`.local`, `.shared`), by unique name.
    pub variables: Vec<Variable>,
    /// The blocks; block 0 is the entry.
    pub blocks: Vec<Block>,
    /// Immediate post-dominator of each block; `blocks.len()` is the
    /// virtual exit.
    pub ipdom: Vec<usize>,
}

impl Body {
    /// Every name the instructions use (registers, variables, labels).
    pub fn referenced_names(&self) -> std::collections::HashSet<String> {
        fn visit(operand: &Operand, names: &mut std::collections::HashSet<String>) {
            match operand {
                Operand::Name(name) | Operand::Component(name, _) => {
                    names.insert(name.clone());
                }
                Operand::Address(Address {
                    base: Some(name), ..
                }) => {
                    names.insert(name.clone());
                }
                Operand::Vector(items) | Operand::List(items) => {
                    items.iter().for_each(|item| visit(item, names))
                }
                Operand::Pair(a, b) => {
                    visit(a, names);
                    visit(b, names);
                }
                Operand::Not(inner) => visit(inner, names),
                Operand::Immediate(_) | Operand::Address(_) | Operand::Sink => {}
            }
        }
        let mut names = std::collections::HashSet::new();
        for block in &self.blocks {
            for instruction in &block.instructions {
                instruction
                    .operands
                    .iter()
                    .for_each(|o| visit(o, &mut names));
            }
        }
        names
    }
}

/// The most registers a kernel (with its inlined functions) may declare:
/// each is a per-lane array on the CPU.
pub const MAX_REGISTERS: u64 = 1 << 16;

/// The name an instruction uses for slot `n`.
pub fn slot_name(n: usize) -> String {
    format!("#{n}")
}

/// The slot of a renamed register operand.
pub fn slot_of(name: &str) -> Option<usize> {
    name.strip_prefix('#')?.parse().ok()
}

struct Flattener<'m> {
    module: &'m Module,
    slots: Vec<Slot>,
    variables: Vec<Variable>,
    scopes: Vec<HashMap<String, String>>,
    items: Vec<FlatItem>,
    /// Prepended to the labels of the body being flattened (an inlined
    /// function's own prefix).
    label_prefix: String,
    /// The functions being inlined, innermost last (recursion is an error).
    inlining: Vec<String>,
    /// Inlined calls so far (for unique labels).
    calls: usize,
}

enum FlatItem {
    Label(String),
    Instruction(Instruction),
}

impl Flattener<'_> {
    fn resolve(&self, name: &str) -> String {
        self.scopes
            .iter()
            .rev()
            .find_map(|scope| scope.get(name).cloned())
            .unwrap_or_else(|| name.to_string())
    }

    fn rename(&self, operand: &mut Operand) {
        match operand {
            Operand::Name(name) | Operand::Component(name, _) => *name = self.resolve(name),
            Operand::Address(Address {
                base: Some(name), ..
            }) => *name = self.resolve(name),
            Operand::Vector(items) | Operand::List(items) => {
                items.iter_mut().for_each(|item| self.rename(item))
            }
            Operand::Pair(a, b) => {
                self.rename(a);
                self.rename(b);
            }
            Operand::Not(inner) => self.rename(inner),
            Operand::Immediate(_) | Operand::Address(_) | Operand::Sink => {}
        }
    }

    fn statements(&mut self, body: &[Statement]) -> Result<(), TranslateError> {
        self.scopes.push(HashMap::new());
        for statement in body {
            match statement {
                Statement::Registers(decl) => {
                    let count: u64 = decl
                        .names
                        .iter()
                        .map(|(_, n)| u64::from(n.unwrap_or(1)))
                        .sum();
                    if self.slots.len() as u64 + count > MAX_REGISTERS {
                        return Err(TranslateError::Ptx(PtxError::new(
                            ErrorKind::UnsupportedDirective,
                            format!(
                                "more than {MAX_REGISTERS} registers in one kernel are not translated"
                            ),
                            decl.span,
                        )));
                    }
                    for name in decl.registers() {
                        let slot = self.slots.len();
                        self.slots.push(Slot {
                            name: name.clone(),
                            ty: decl.ty,
                        });
                        self.scopes
                            .last_mut()
                            .expect("a scope is open")
                            .insert(name, slot_name(slot));
                    }
                }
                Statement::Variable(variable) => {
                    let mut variable = variable.clone();
                    let unique = format!("{}${}", variable.name, self.variables.len());
                    self.scopes
                        .last_mut()
                        .expect("a scope is open")
                        .insert(variable.name.clone(), unique.clone());
                    variable.name = unique;
                    self.variables.push(variable);
                }
                Statement::Label(name, _) => self
                    .items
                    .push(FlatItem::Label(format!("{}{name}", self.label_prefix))),
                Statement::Instruction(instruction) if instruction.opcode == Opcode::Call => {
                    self.call(instruction)?;
                }
                Statement::Instruction(instruction) => {
                    let mut instruction = instruction.clone();
                    for operand in &mut instruction.operands {
                        if instruction.opcode == Opcode::Bra {
                            if let Operand::Name(label) = operand {
                                *label = format!("{}{label}", self.label_prefix);
                            }
                            continue;
                        }
                        self.rename(operand);
                    }
                    if let Some(guard) = &mut instruction.guard {
                        guard.predicate = self.resolve(&guard.predicate);
                    }
                    self.items.push(FlatItem::Instruction(instruction));
                }
                Statement::Block(inner) => self.statements(inner)?,
                Statement::Pragma(_) | Statement::Location { .. } => {}
            }
        }
        self.scopes.pop();
        Ok(())
    }
}

impl Flattener<'_> {
    /// Inlines `call [(returns)], f, [(arguments)]`: f's body with fresh
    /// registers, its parameters and return values renamed to the caller's
    /// argument and return variables (or registers), its labels made
    /// unique, and each `ret` a branch to the point after the call. A
    /// call of `__assertfail` (an external function) is a `trap`.
    fn call(&mut self, instruction: &Instruction) -> Result<(), TranslateError> {
        let span = instruction.span;
        if instruction.guard.is_some() {
            return Err(unsupported("guarded calls are not translated", span));
        }
        let operands = &instruction.operands;
        let (returns, rest) = match operands.first() {
            Some(Operand::List(items)) => (items.clone(), &operands[1..]),
            _ => (Vec::new(), &operands[..]),
        };
        let Some(Operand::Name(callee_name)) = rest.first() else {
            return Err(unsupported("a call needs a function", span));
        };
        let arguments = match rest.get(1) {
            Some(Operand::List(items)) => items.clone(),
            _ => Vec::new(),
        };
        let callee = self
            .module
            .functions()
            .filter(|f| &f.name == callee_name)
            .find(|f| f.body.is_some())
            .or_else(|| self.module.functions().find(|f| &f.name == callee_name))
            .ok_or_else(|| unsupported(format!("unknown function `{callee_name}`"), span))?;
        let Some(body) = &callee.body else {
            if matches!(callee_name.as_str(), "__assertfail" | "__assert_fail") {
                self.items.push(FlatItem::Instruction(Instruction {
                    guard: None,
                    opcode: Opcode::Trap,
                    modifiers: Vec::new(),
                    operands: Vec::new(),
                    span,
                }));
                return Ok(());
            }
            return Err(unsupported(
                format!("calls of the external function `{callee_name}` are not translated"),
                span,
            ));
        };
        if self.inlining.contains(callee_name) {
            return Err(unsupported(
                format!("recursive calls (of `{callee_name}`) are not translated"),
                span,
            ));
        }
        if returns.len() != callee.returns.len() || arguments.len() != callee.params.len() {
            return Err(unsupported(
                format!("the call does not match `{callee_name}`'s parameters"),
                span,
            ));
        }
        // The callee sees the module and its parameters, named as the
        // caller's variables or registers.
        let mut parameters = HashMap::new();
        for (param, operand) in callee
            .returns
            .iter()
            .chain(&callee.params)
            .zip(returns.iter().chain(&arguments))
        {
            match operand {
                Operand::Name(name) => {
                    parameters.insert(param.name.clone(), self.resolve(name));
                }
                _ => return Err(unsupported("call arguments must be named", span)),
            }
        }
        self.calls += 1;
        let done = format!("$pgpu_return_{}", self.calls);
        let saved_scopes = std::mem::replace(&mut self.scopes, vec![parameters]);
        let saved_prefix = std::mem::replace(
            &mut self.label_prefix,
            format!("$pgpu_call_{}_", self.calls),
        );
        self.inlining.push(callee_name.clone());
        let start = self.items.len();
        let result = self.statements(body);
        self.inlining.pop();
        self.label_prefix = saved_prefix;
        self.scopes = saved_scopes;
        result?;
        // `ret` in the callee leaves it: a branch to after the call.
        for item in &mut self.items[start..] {
            if let FlatItem::Instruction(inner) = item
                && inner.opcode == Opcode::Ret
            {
                inner.opcode = Opcode::Bra;
                inner.modifiers = Vec::new();
                inner.operands = vec![Operand::Name(done.clone())];
            }
        }
        self.items.push(FlatItem::Label(done));
        Ok(())
    }
}

fn unsupported(message: impl Into<String>, span: Span) -> TranslateError {
    TranslateError::Ptx(PtxError::new(
        ErrorKind::UnsupportedInstruction,
        message,
        span,
    ))
}

/// Flattens `function`'s body (inlining the device functions it calls)
/// and builds its CFG.
pub fn flatten(function: &Function, module: &Module) -> Result<Body, TranslateError> {
    let mut flattener = Flattener {
        module,
        slots: Vec::new(),
        variables: Vec::new(),
        scopes: Vec::new(),
        items: Vec::new(),
        label_prefix: String::new(),
        inlining: vec![function.name.clone()],
        calls: 0,
    };
    let body = function.body.as_deref().unwrap_or(&[]);
    flattener.statements(body)?;
    // Cut into blocks: a label starts one, a branch or exit ends one.
    let mut label_block = HashMap::new();
    let mut pieces: Vec<(Vec<Instruction>, Option<Instruction>)> = vec![(Vec::new(), None)];
    for item in flattener.items {
        match item {
            FlatItem::Label(name) => {
                let current = pieces.last().expect("a block is open");
                if !current.0.is_empty() || current.1.is_some() {
                    pieces.push((Vec::new(), None));
                }
                label_block.insert(name, pieces.len() - 1);
            }
            FlatItem::Instruction(instruction) => {
                let ends = matches!(instruction.opcode, Opcode::Bra)
                    || (matches!(instruction.opcode, Opcode::Ret | Opcode::Exit)
                        && instruction.guard.is_none());
                if ends {
                    pieces.last_mut().expect("a block is open").1 = Some(instruction);
                    pieces.push((Vec::new(), None));
                } else {
                    pieces
                        .last_mut()
                        .expect("a block is open")
                        .0
                        .push(instruction);
                }
            }
        }
    }
    let count = pieces.len();
    let mut blocks = Vec::with_capacity(count);
    for (index, (instructions, last)) in pieces.into_iter().enumerate() {
        let next = index + 1;
        let (terminator, span) = match last {
            None if next < count => (Terminator::Goto(next), Span::default()),
            None => (Terminator::Exit, Span::default()),
            Some(instruction) if instruction.opcode == Opcode::Bra => {
                let Some(Operand::Name(label)) = instruction.operands.first() else {
                    return Err(unsupported("a branch needs a label", instruction.span));
                };
                let Some(&target) = label_block.get(label) else {
                    return Err(unsupported(
                        format!("unknown label `{label}`"),
                        instruction.span,
                    ));
                };
                let terminator = match &instruction.guard {
                    None => Terminator::Goto(target),
                    Some(guard) => {
                        let predicate = slot_of(&guard.predicate).ok_or_else(|| {
                            unsupported(
                                "a branch guard must be a predicate register",
                                instruction.span,
                            )
                        })?;
                        Terminator::Branch {
                            predicate,
                            negated: guard.negated,
                            taken: target,
                            fallthrough: if next < count { next } else { count },
                        }
                    }
                };
                (terminator, instruction.span)
            }
            Some(instruction) => (Terminator::Exit, instruction.span),
        };
        blocks.push(Block {
            instructions,
            terminator,
            span,
        });
    }
    let ipdom = post_dominators(&blocks);
    Ok(Body {
        slots: flattener.slots,
        variables: flattener.variables,
        blocks,
        ipdom,
    })
}

/// Successors of a block; `exit` (= the block count) for leaving.
pub fn successors(block: &Block, exit: usize) -> Vec<usize> {
    match block.terminator {
        Terminator::Goto(next) => vec![next.min(exit)],
        Terminator::Branch {
            taken, fallthrough, ..
        } => vec![taken, fallthrough.min(exit)],
        Terminator::Exit => vec![exit],
    }
}

fn post_dominators(blocks: &[Block]) -> Vec<usize> {
    let exit = blocks.len();
    let nodes = exit + 1;
    // Reverse graph: predecessors in the reversed CFG are successors.
    let succ: Vec<Vec<usize>> = blocks.iter().map(|b| successors(b, exit)).collect();
    let mut pred = vec![Vec::new(); nodes];
    for (b, s) in succ.iter().enumerate() {
        for &t in s {
            pred[t].push(b);
        }
    }
    // Postorder of the reversed graph from the exit.
    let mut order = Vec::with_capacity(nodes);
    let mut seen = vec![false; nodes];
    let mut stack = vec![(exit, 0usize)];
    seen[exit] = true;
    while let Some((node, child)) = stack.pop() {
        if child < pred[node].len() {
            stack.push((node, child + 1));
            let next = pred[node][child];
            if !seen[next] {
                seen[next] = true;
                stack.push((next, 0));
            }
        } else {
            order.push(node);
        }
    }
    let mut number = vec![usize::MAX; nodes];
    for (i, &node) in order.iter().enumerate() {
        number[node] = i;
    }
    let mut idom = vec![usize::MAX; nodes];
    idom[exit] = exit;
    let intersect = |idom: &[usize], mut a: usize, mut b: usize| {
        while a != b {
            while number[a] < number[b] {
                a = idom[a];
            }
            while number[b] < number[a] {
                b = idom[b];
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &node in order.iter().rev() {
            if node == exit {
                continue;
            }
            // In the reversed graph, a node's predecessors are its CFG
            // successors.
            let mut new = usize::MAX;
            for &s in &succ[node] {
                if idom[s] == usize::MAX {
                    continue;
                }
                new = if new == usize::MAX {
                    s
                } else {
                    intersect(&idom, s, new)
                };
            }
            if new != usize::MAX && idom[node] != new {
                idom[node] = new;
                changed = true;
            }
        }
    }
    // Blocks that cannot reach the exit (infinite loops) reconverge nowhere.
    (0..exit)
        .map(|b| if idom[b] == usize::MAX { exit } else { idom[b] })
        .collect()
}
