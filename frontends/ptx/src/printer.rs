//! PTX text from the IR, in the layout nvcc uses (tab-indented bodies, one
//! statement per line). Parsing the printed text gives back an equal IR.

use crate::ir::*;
use std::fmt::Write;

/// The PTX text of `module`.
pub fn print(module: &Module) -> String {
    let mut out = String::new();
    let _ = writeln!(out, ".version {}.{}", module.version.0, module.version.1);
    // `.target` takes at least one name: a module without one has no line.
    if !module.target.is_empty() {
        let _ = writeln!(out, ".target {}", module.target.join(", "));
    }
    let _ = writeln!(out, ".address_size {}", module.address_size);
    for item in &module.items {
        out.push('\n');
        match item {
            Item::File { index, name, extra } => {
                let _ = write!(out, ".file {index} \"{name}\"");
                for value in extra {
                    let _ = write!(out, ", {value}");
                }
                out.push('\n');
            }
            Item::Variable(variable) => {
                variable_text(&mut out, variable);
                out.push_str(";\n");
            }
            Item::Function(function) => function_text(&mut out, function),
        }
    }
    out
}

fn value_type(out: &mut String, ty: ValueType) {
    if let Some(n) = ty.vector {
        let _ = write!(out, " .v{n}");
    }
    let _ = write!(out, " .{}", ty.scalar);
}

fn dims(out: &mut String, dims: &[Option<u64>]) {
    for dim in dims {
        match dim {
            Some(n) => {
                let _ = write!(out, "[{n}]");
            }
            None => out.push_str("[]"),
        }
    }
}

fn variable_text(out: &mut String, variable: &Variable) {
    if let Some(linkage) = variable.linkage {
        let _ = write!(out, ".{linkage} ");
    }
    let _ = write!(out, ".{}", variable.space);
    if let Some(align) = variable.align {
        let _ = write!(out, " .align {align}");
    }
    value_type(out, variable.ty);
    let _ = write!(out, " {}", variable.name);
    dims(out, &variable.dims);
    if let Some(init) = &variable.init {
        out.push_str(" = ");
        initializer(out, init);
    }
}

fn initializer(out: &mut String, init: &Initializer) {
    match init {
        Initializer::Immediate(value) => immediate(out, *value),
        Initializer::Symbol {
            name,
            offset,
            generic,
        } => {
            if *generic {
                let _ = write!(out, "generic({name})");
            } else {
                out.push_str(name);
            }
            if *offset != 0 {
                let _ = write!(out, "+{offset}");
            }
        }
        Initializer::List(items) => {
            out.push('{');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                initializer(out, item);
            }
            out.push('}');
        }
    }
}

fn immediate(out: &mut String, value: Immediate) {
    let _ = match value {
        Immediate::Int(v) => write!(out, "{v}"),
        Immediate::Uint(v) => write!(out, "{v}U"),
        Immediate::F32(bits) => write!(out, "0f{bits:08X}"),
        Immediate::F64(bits) => write!(out, "0d{bits:016X}"),
    };
}

fn parameter(out: &mut String, param: &Parameter) {
    let _ = write!(out, ".{}", param.space);
    if let Some(align) = param.align {
        let _ = write!(out, " .align {align}");
    }
    value_type(out, param.ty);
    if let Some(pointer) = &param.pointer {
        out.push_str(" .ptr");
        if let Some(space) = pointer.space {
            let _ = write!(out, " .{space}");
        }
        if let Some(align) = pointer.align {
            let _ = write!(out, " .align {align}");
        }
    }
    let _ = write!(out, " {}", param.name);
    dims(out, &param.dims);
}

fn parameters(out: &mut String, params: &[Parameter]) {
    out.push_str("(\n");
    for (i, param) in params.iter().enumerate() {
        out.push('\t');
        parameter(out, param);
        out.push_str(if i + 1 < params.len() { ",\n" } else { "\n" });
    }
    out.push(')');
}

fn function_text(out: &mut String, function: &Function) {
    if let Some(linkage) = function.linkage {
        let _ = write!(out, ".{linkage} ");
    }
    out.push_str(match function.kind {
        FunctionKind::Entry => ".entry ",
        FunctionKind::Func => ".func ",
    });
    if function.kind == FunctionKind::Func && !function.returns.is_empty() {
        parameters(out, &function.returns);
        out.push(' ');
    }
    out.push_str(&function.name);
    if function.kind == FunctionKind::Entry || !function.params.is_empty() {
        parameters(out, &function.params);
    }
    out.push('\n');
    for directive in &function.directives {
        let _ = write!(out, ".{}", directive.name);
        let values: Vec<String> = directive.values.iter().map(u64::to_string).collect();
        if !values.is_empty() {
            let _ = write!(out, " {}", values.join(", "));
        }
        let strings: Vec<String> = directive
            .strings
            .iter()
            .map(|s| format!("\"{s}\""))
            .collect();
        if !strings.is_empty() {
            let _ = write!(out, " {};", strings.join(", "));
        }
        out.push('\n');
    }
    match &function.body {
        None => out.push_str(";\n"),
        Some(body) => {
            out.push_str("{\n");
            statements(out, body, 1);
            out.push_str("}\n");
        }
    }
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push('\t');
    }
}

fn statements(out: &mut String, body: &[Statement], depth: usize) {
    for statement in body {
        match statement {
            Statement::Registers(decl) => {
                indent(out, depth);
                out.push_str(".reg");
                value_type(out, decl.ty);
                out.push('\t');
                for (i, (name, count)) in decl.names.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(name);
                    if let Some(count) = count {
                        let _ = write!(out, "<{count}>");
                    }
                }
                out.push_str(";\n");
            }
            Statement::Variable(variable) => {
                indent(out, depth);
                variable_text(out, variable);
                out.push_str(";\n");
            }
            Statement::Label(name, _) => {
                let _ = writeln!(out, "{name}:");
            }
            Statement::Instruction(instruction) => {
                indent(out, depth);
                instruction_text(out, instruction);
                out.push('\n');
            }
            Statement::Block(inner) => {
                indent(out, depth);
                out.push_str("{\n");
                statements(out, inner, depth + 1);
                indent(out, depth);
                out.push_str("}\n");
            }
            Statement::Pragma(strings) => {
                indent(out, depth);
                let strings: Vec<String> = strings.iter().map(|s| format!("\"{s}\"")).collect();
                let _ = writeln!(out, ".pragma {};", strings.join(", "));
            }
            Statement::Location {
                file,
                line,
                column,
                inlined,
            } => {
                indent(out, depth);
                let _ = write!(out, ".loc\t{file} {line} {column}");
                if let Some((function, [f, l, c])) = inlined {
                    let _ = write!(out, ", function_name {function}, inlined_at {f} {l} {c}");
                }
                out.push('\n');
            }
        }
    }
}

/// The text of one instruction, without indentation or newline.
pub fn instruction_text(out: &mut String, instruction: &Instruction) {
    if let Some(guard) = &instruction.guard {
        let _ = write!(
            out,
            "@{}{} ",
            if guard.negated { "!" } else { "" },
            guard.predicate
        );
    }
    out.push_str(instruction.opcode.as_str());
    for modifier in &instruction.modifiers {
        let _ = write!(out, "{modifier}");
    }
    for (i, operand) in instruction.operands.iter().enumerate() {
        out.push_str(if i == 0 { " \t" } else { ", " });
        operand_text(out, operand);
    }
    out.push(';');
}

/// The text of one operand.
pub fn operand_text(out: &mut String, operand: &Operand) {
    match operand {
        Operand::Name(name) => out.push_str(name),
        Operand::Component(name, component) => {
            let _ = write!(out, "{name}.{}", component.as_str());
        }
        Operand::Immediate(value) => immediate(out, *value),
        Operand::Address(address) => {
            out.push('[');
            match &address.base {
                Some(base) => {
                    out.push_str(base);
                    if address.offset != 0 {
                        let _ = write!(out, "+{}", address.offset);
                    }
                }
                None => {
                    let _ = write!(out, "{}", address.offset);
                }
            }
            out.push(']');
        }
        Operand::Vector(items) | Operand::List(items) => {
            let (open, close) = if matches!(operand, Operand::Vector(_)) {
                ('{', '}')
            } else {
                ('(', ')')
            };
            out.push(open);
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                operand_text(out, item);
            }
            out.push(close);
        }
        Operand::Pair(first, second) => {
            operand_text(out, first);
            out.push('|');
            operand_text(out, second);
        }
        Operand::Not(inner) => {
            out.push('!');
            operand_text(out, inner);
        }
        Operand::Sink => out.push('_'),
    }
}
