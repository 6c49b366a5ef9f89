//! Checks of a parsed module that need more than syntax: every name an
//! instruction uses is declared where it is used (registers and variables
//! in the enclosing blocks, labels anywhere in the function, functions and
//! module variables anywhere in the module, parameters, special
//! registers), no name is declared twice in one scope, and each
//! instruction has operands of the number and shape its opcode takes.
//! Errors point at the instruction or declaration.

use crate::error::{ErrorKind, PtxError, Span};
use crate::ir::*;
use std::collections::HashSet;

/// The special registers (`%tid`, ...), without vector components.
pub const SPECIAL_REGISTERS: &[&str] = &[
    "%tid",
    "%ntid",
    "%laneid",
    "%warpid",
    "%nwarpid",
    "%ctaid",
    "%nctaid",
    "%smid",
    "%nsmid",
    "%gridid",
    "%lanemask_eq",
    "%lanemask_le",
    "%lanemask_lt",
    "%lanemask_ge",
    "%lanemask_gt",
    "%clock",
    "%clock_hi",
    "%clock64",
    "%globaltimer",
    "%globaltimer_lo",
    "%globaltimer_hi",
    "%dynamic_smem_size",
    "%total_smem_size",
    "%aggr_smem_size",
    "%is_explicit_cluster",
    "%clusterid",
    "%nclusterid",
    "%cluster_ctaid",
    "%cluster_nctaid",
    "%cluster_ctarank",
    "%cluster_nctarank",
];

/// Whether `name` is a special register (including `%envregN`, `%pmN`).
pub fn is_special_register(name: &str) -> bool {
    SPECIAL_REGISTERS.contains(&name)
        || ["%envreg", "%pm"].iter().any(|prefix| {
            name.strip_prefix(prefix)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// Checks `module`; the first error found, in text order.
pub fn check(module: &Module) -> Result<(), PtxError> {
    let mut globals = HashSet::new();
    let mut functions = HashSet::new();
    for item in &module.items {
        match item {
            Item::Variable(variable) => {
                if !globals.insert(variable.name.as_str()) {
                    return Err(redeclared(&variable.name, variable.span));
                }
            }
            Item::Function(function) => {
                // A declaration may precede the definition.
                functions.insert(function.name.as_str());
            }
            Item::File { .. } => {}
        }
    }
    for function in module.functions() {
        check_function(function, &globals, &functions)?;
    }
    Ok(())
}

fn redeclared(name: &str, span: Span) -> PtxError {
    PtxError::new(
        ErrorKind::Redeclared,
        format!("`{name}` is declared twice"),
        span,
    )
}

struct Scopes<'a> {
    globals: &'a HashSet<&'a str>,
    functions: &'a HashSet<&'a str>,
    labels: HashSet<String>,
    /// Innermost last.
    stack: Vec<Scope>,
}

/// The names one scope declares: single names, and the ranges that
/// `.reg .b32 %r<N>;` declares (`%r0` to `%r{N-1}`), kept as ranges so that
/// a large count costs neither time nor memory.
#[derive(Default)]
struct Scope {
    names: HashSet<String>,
    /// Prefix and count.
    ranges: Vec<(String, u32)>,
}

/// `i` when `name` is `prefix` followed by `i < count` in decimal, written
/// as [`RegisterDecl::registers`] writes it (no leading zeros).
fn range_index(prefix: &str, count: u32, name: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?;
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    digits.parse::<u32>().ok().filter(|&i| i < count)
}

impl Scope {
    fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
            || self
                .ranges
                .iter()
                .any(|(prefix, count)| range_index(prefix, *count, name).is_some())
    }

    /// The first index of the range `prefix<count>` whose register the
    /// scope declares already.
    fn first_clash(&self, prefix: &str, count: u32) -> Option<u32> {
        let names = self
            .names
            .iter()
            .filter_map(|name| range_index(prefix, count, name));
        // Two ranges share registers only when one prefix extends the other
        // (`%r` and `%r1`, or equal prefixes); the first shared register is
        // the longer prefix followed by `0`.
        let ranges = self
            .ranges
            .iter()
            .filter(|(_, other_count)| *other_count > 0)
            .filter_map(|(other, other_count)| {
                range_index(prefix, count, &format!("{other}0")).or_else(|| {
                    (count > 0 && range_index(other, *other_count, &format!("{prefix}0")).is_some())
                        .then_some(0)
                })
            });
        names.chain(ranges).min()
    }
}

impl Scopes<'_> {
    fn declare(&mut self, name: String, span: Span) -> Result<(), PtxError> {
        let scope = self.stack.last_mut().expect("a scope is open");
        if scope.contains(&name) {
            return Err(redeclared(&name, span));
        }
        scope.names.insert(name);
        Ok(())
    }

    /// Declares `prefix0` to `prefix{count-1}`.
    fn declare_range(&mut self, prefix: &str, count: u32, span: Span) -> Result<(), PtxError> {
        let scope = self.stack.last_mut().expect("a scope is open");
        if let Some(index) = scope.first_clash(prefix, count) {
            return Err(redeclared(&format!("{prefix}{index}"), span));
        }
        scope.ranges.push((prefix.to_string(), count));
        Ok(())
    }

    fn local(&self, name: &str) -> bool {
        self.stack.iter().any(|scope| scope.contains(name))
    }

    /// Whether `name` can stand where a value or address is read.
    fn value(&self, name: &str) -> bool {
        self.local(name)
            || self.globals.contains(name)
            || self.functions.contains(name)
            || is_special_register(name)
    }
}

fn collect_labels(body: &[Statement], labels: &mut HashSet<String>) -> Result<(), PtxError> {
    for statement in body {
        match statement {
            Statement::Label(name, span) if !labels.insert(name.clone()) => {
                return Err(redeclared(name, *span));
            }
            Statement::Block(inner) => collect_labels(inner, labels)?,
            _ => {}
        }
    }
    Ok(())
}

fn check_function(
    function: &Function,
    globals: &HashSet<&str>,
    functions: &HashSet<&str>,
) -> Result<(), PtxError> {
    let Some(body) = &function.body else {
        return Ok(());
    };
    let mut scopes = Scopes {
        globals,
        functions,
        labels: HashSet::new(),
        stack: vec![Scope::default()],
    };
    for param in function.returns.iter().chain(&function.params) {
        scopes.declare(param.name.clone(), param.span)?;
    }
    collect_labels(body, &mut scopes.labels)?;
    check_block(body, &mut scopes)
}

fn check_block(body: &[Statement], scopes: &mut Scopes) -> Result<(), PtxError> {
    scopes.stack.push(Scope::default());
    for statement in body {
        match statement {
            Statement::Registers(decl) => {
                for (name, count) in &decl.names {
                    match count {
                        None => scopes.declare(name.clone(), decl.span)?,
                        Some(count) => scopes.declare_range(name, *count, decl.span)?,
                    }
                }
            }
            Statement::Variable(variable) => {
                scopes.declare(variable.name.clone(), variable.span)?
            }
            Statement::Block(inner) => check_block(inner, scopes)?,
            Statement::Instruction(instruction) => check_instruction(instruction, scopes)?,
            Statement::Label(..) | Statement::Pragma(_) | Statement::Location { .. } => {}
        }
    }
    scopes.stack.pop();
    Ok(())
}

fn undeclared(what: &str, name: &str, span: Span) -> PtxError {
    PtxError::new(
        ErrorKind::Undeclared,
        format!("{what} `{name}` is not declared"),
        span,
    )
}

fn operands_error(instruction: &Instruction, expected: &str) -> PtxError {
    PtxError::new(
        ErrorKind::Operands,
        format!(
            "`{}` takes {expected}, not {}",
            instruction.opcode,
            instruction.operands.len()
        ),
        instruction.span,
    )
}

/// The number of operands `instruction`'s opcode takes, as an inclusive
/// range, with its wording for messages.
fn operand_count(instruction: &Instruction) -> (usize, usize) {
    use Opcode::*;
    let boolean = instruction
        .one_of(&[Flag::And, Flag::Or, Flag::Xor])
        .is_some();
    match instruction.opcode {
        Ret | Exit | Trap | Membar | Fence | Griddepcontrol => (0, 0),
        Activemask | Bra | Nanosleep | Prefetch => (1, 1),
        Mov | Abs | Neg | Not | Cnot | Popc | Clz | Brev | Bfind | Rcp | Sqrt | Rsqrt | Sin
        | Cos | Lg2 | Ex2 | Tanh | Cvt | Cvta | Testp | Isspacep => (2, 2),
        // An optional cache policy follows the address or the value.
        Ld | Ldu | St => (2, 3),
        Add | Sub | Mul | Div | Rem | Min | Max | And | Or | Xor | Shl | Shr | Addc | Subc
        | Copysign | Mul24 => (3, 3),
        Setp | Set if boolean => (4, 4),
        Setp | Set => (3, 3),
        Mad | Fma | Madc | Mad24 | Sad | Selp | Slct | Bfe | Prmt | Shf => (4, 4),
        Bfi | Lop3 => (5, 5),
        Atom if instruction.has(Flag::Cas) => (4, 5),
        Atom => (3, 4),
        Red => (2, 3),
        Bar | Barrier if instruction.has(Flag::Warp) => (1, 1),
        Bar | Barrier if instruction.has(Flag::Red) => (3, 4),
        Bar | Barrier => (1, 2),
        Shfl => (5, 5),
        Vote => (3, 3),
        Call => (1, 4),
    }
}

fn check_instruction(instruction: &Instruction, scopes: &Scopes) -> Result<(), PtxError> {
    let (min, max) = operand_count(instruction);
    let count = instruction.operands.len();
    if count < min || count > max {
        let expected = if min == max {
            format!("{min} operand{}", if min == 1 { "" } else { "s" })
        } else {
            format!("{min} to {max} operands")
        };
        return Err(operands_error(instruction, &expected));
    }
    if let Some(guard) = &instruction.guard
        && !scopes.local(&guard.predicate)
    {
        return Err(undeclared("predicate", &guard.predicate, instruction.span));
    }
    match instruction.opcode {
        Opcode::Bra => {
            return match &instruction.operands[0] {
                Operand::Name(label) if scopes.labels.contains(label) => Ok(()),
                Operand::Name(label) => Err(undeclared("label", label, instruction.span)),
                _ => Err(operands_error(instruction, "a label")),
            };
        }
        Opcode::Call => return check_call(instruction, scopes),
        Opcode::Ld | Opcode::Ldu | Opcode::Atom
            if !matches!(instruction.operands[1], Operand::Address(_)) =>
        {
            return Err(operands_error(instruction, "a destination and an address"));
        }
        Opcode::St | Opcode::Red | Opcode::Prefetch
            if !matches!(instruction.operands[0], Operand::Address(_)) =>
        {
            return Err(operands_error(instruction, "an address first"));
        }
        _ => {}
    }
    if matches!(instruction.operands.first(), Some(Operand::Immediate(_)))
        && !matches!(
            instruction.opcode,
            Opcode::Bar | Opcode::Barrier | Opcode::Nanosleep | Opcode::Prefetch
        )
    {
        return Err(operands_error(instruction, "a register destination"));
    }
    for operand in &instruction.operands {
        check_operand(operand, instruction, scopes)?;
    }
    Ok(())
}

fn check_operand(
    operand: &Operand,
    instruction: &Instruction,
    scopes: &Scopes,
) -> Result<(), PtxError> {
    match operand {
        Operand::Name(name) | Operand::Component(name, _) => {
            if scopes.value(name) {
                Ok(())
            } else {
                Err(undeclared("register or variable", name, instruction.span))
            }
        }
        Operand::Address(Address {
            base: Some(name), ..
        }) => {
            if scopes.value(name) {
                Ok(())
            } else {
                Err(undeclared("register or variable", name, instruction.span))
            }
        }
        Operand::Vector(items) | Operand::List(items) => items
            .iter()
            .try_for_each(|item| check_operand(item, instruction, scopes)),
        Operand::Pair(first, second) => {
            check_operand(first, instruction, scopes)?;
            check_operand(second, instruction, scopes)
        }
        Operand::Not(inner) => check_operand(inner, instruction, scopes),
        Operand::Immediate(_) | Operand::Address(_) | Operand::Sink => Ok(()),
    }
}

/// `call [(ret)], func, [(args)] [, prototype]`.
fn check_call(instruction: &Instruction, scopes: &Scopes) -> Result<(), PtxError> {
    let operands = &instruction.operands;
    let (returns, rest) = match operands.first() {
        Some(Operand::List(_)) => (operands.first(), &operands[1..]),
        _ => (None, &operands[..]),
    };
    let callee = match rest.first() {
        Some(Operand::Name(name)) if scopes.functions.contains(name.as_str()) => name,
        Some(Operand::Name(name)) if scopes.local(name) => {
            return Err(PtxError::new(
                ErrorKind::UnsupportedInstruction,
                format!("indirect calls (through `{name}`) are not supported"),
                instruction.span,
            ));
        }
        Some(Operand::Name(name)) => return Err(undeclared("function", name, instruction.span)),
        _ => return Err(operands_error(instruction, "a function to call")),
    };
    let _ = callee;
    if rest.len() > 2
        || rest
            .get(1)
            .is_some_and(|args| !matches!(args, Operand::List(_)))
    {
        return Err(operands_error(
            instruction,
            "optional `(returns)`, the function and optional `(arguments)`",
        ));
    }
    for list in returns.into_iter().chain(rest.get(1)) {
        check_operand(list, instruction, scopes)?;
    }
    Ok(())
}
