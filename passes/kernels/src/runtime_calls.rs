//! Declaring and calling `pgpu-runtime` C functions from a pass: one
//! `func.func private` declaration per symbol in the module, calls built
//! with [`Builder`], and whole ops parsed from text (function bodies and
//! globals whose generic form would be long to build by hand).

use crate::{
    build::{Builder, Built},
    inline_spmd::symbol_attribute,
    ir::{Op, Val, string_ref},
};
use melior::ir::Type;
use mlir_sys::{mlirOperationCreateParse, mlirOperationGetContext};
use pgpu_pass_infra::emit_error;

/// The name `pgpu-lower-to-runtime` gives the program's `@main` (a C entry
/// `main` calls it).
pub(crate) const PROGRAM_MAIN: &str = "pgpu_main";

/// The source name of `function` for reports: its symbol, with the
/// program's renamed `@main` called `main` again.
pub(crate) fn source_name(function: Op) -> String {
    let name = symbol_attribute(function, "sym_name").unwrap_or_default();
    if name == PROGRAM_MAIN {
        "main".to_string()
    } else {
        name
    }
}

/// The runtime functions a pass declared in one module.
pub(crate) struct RuntimeCalls {
    pub module: Op,
    declared: Vec<String>,
    /// NUL-terminated string constants made so far: text and global name.
    strings: Vec<(String, String)>,
    /// The module's top-level symbol names, once a string constant needs
    /// a fresh one (collected once: a pass that names every outlined
    /// kernel in a string walked the module for each, quadratic in them).
    taken: Option<std::collections::HashSet<String>>,
}

impl RuntimeCalls {
    pub fn new(module: Op) -> Self {
        Self {
            module,
            declared: vec![],
            strings: vec![],
            taken: None,
        }
    }

    /// Parses `text` as one detached op (the caller inserts it).
    pub fn parse_detached(&self, text: &str) -> Built<Op> {
        // MLIR's lexer finds the end of its buffer at a NUL byte.
        let terminated = format!("{text}\0");
        // SAFETY: live module; the text is read during the call only, and
        // the view (without the NUL) is followed by the NUL.
        let raw = unsafe {
            mlirOperationCreateParse(
                mlirOperationGetContext(self.module.0),
                string_ref(&terminated[..text.len()]),
                string_ref("pgpu-runtime-calls"),
            )
        };
        if raw.ptr.is_null() {
            return Err(emit_error(
                self.module.melior_location(),
                &format!("internal error: cannot build `{text}`"),
            ));
        }
        Ok(Op(raw))
    }

    /// Parses `text` as one op and inserts it at the start of the module.
    pub fn parse_into_module(&self, text: &str) -> Built<Op> {
        let Some(body) = self.module.entry_block(0) else {
            return Err(emit_error(
                self.module.melior_location(),
                "module without a body",
            ));
        };
        let op = self.parse_detached(text)?;
        match body.first() {
            Some(first) => body.insert_raw_before(first, op),
            // SAFETY: the block takes the detached op.
            None => unsafe { mlir_sys::mlirBlockAppendOwnedOperation(body.0, op.0) },
        }
        Ok(op)
    }

    /// Records `name` as defined, so that it is never declared.
    pub fn mark_declared(&mut self, name: &str) {
        self.declared.push(name.to_string());
    }

    /// Declares runtime function `name` with `signature` (`(inputs) ->
    /// output`, or `(inputs)`) once, unless the module defines it.
    pub fn declare(&mut self, name: &str, signature: &str) -> Built<()> {
        if self.declared.iter().any(|declared| declared == name) {
            return Ok(());
        }
        let defined = self.module.entry_block(0).is_some_and(|body| {
            body.ops().into_iter().any(|op| {
                op.is("func.func") && symbol_attribute(op, "sym_name").as_deref() == Some(name)
            })
        });
        if !defined {
            let (inputs, output) = split_signature(signature);
            let result = if output == "()" {
                String::new()
            } else {
                format!(" -> {output}")
            };
            self.parse_into_module(&format!("func.func private @{name}{inputs}{result}"))?;
        }
        self.declared.push(name.to_string());
        Ok(())
    }

    /// The address (`!llvm.ptr`) of a NUL-terminated constant holding
    /// `text`, one global per distinct text.
    pub fn string_constant(&mut self, at: &Builder, text: &str) -> Built<Val> {
        let name = match self.strings.iter().find(|(known, _)| known == text) {
            Some((_, name)) => name.clone(),
            None => {
                let module = self.module;
                let taken = self.taken.get_or_insert_with(|| {
                    module
                        .entry_block(0)
                        .map(|body| body.ops())
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|op| symbol_attribute(op, "sym_name"))
                        .collect()
                });
                let name = (self.strings.len()..)
                    .map(|number| format!("pgpu_string_{number}"))
                    .find(|name| !taken.contains(name))
                    .unwrap_or_default();
                taken.insert(name.clone());
                let mut bytes = text.as_bytes().to_vec();
                bytes.push(0);
                self.parse_into_module(&format!(
                    "llvm.mlir.global internal constant @{name}(\"{}\") {{addr_space = 0 : i32}}",
                    escape_bytes(&bytes)
                ))?;
                self.strings.push((text.to_string(), name.clone()));
                name
            }
        };
        at.value(
            "llvm.mlir.addressof",
            &[],
            at.parse_type("!llvm.ptr")?,
            &[("global_name", at.parse_attribute(&format!("@{name}"))?)],
        )
    }

    /// Calls `name` before `at`; returns its results.
    pub fn call(
        &mut self,
        at: &Builder,
        name: &str,
        arguments: &[Val],
        signature: &str,
    ) -> Built<Vec<Val>> {
        self.declare(name, signature)?;
        let (_, output) = split_signature(signature);
        let types: Vec<Type> = match output {
            "()" => vec![],
            ty => vec![at.parse_type(ty)?],
        };
        let callee = at.parse_attribute(&format!("@{name}"))?;
        let call = at.op("func.call", arguments, &types, &[("callee", callee)])?;
        Ok(call.results())
    }
}

/// `(inputs) -> output` as its inputs and output (`()` when absent); the
/// inputs may hold function types.
fn split_signature(signature: &str) -> (&str, &str) {
    let mut depth = 0usize;
    let mut previous = ' ';
    for (position, character) in signature.char_indices() {
        let arrow = previous == '-';
        previous = character;
        match character {
            '(' | '<' => depth += 1,
            '>' if arrow => {}
            ')' | '>' if depth > 0 => {
                depth -= 1;
                if depth == 0 && character == ')' {
                    let (inputs, rest) = signature.split_at(position + 1);
                    let output = rest.trim_start().strip_prefix("->").map(str::trim);
                    return (inputs, output.unwrap_or("()"));
                }
            }
            _ => {}
        }
    }
    (signature, "()")
}

/// `bytes` as the body of an MLIR string literal.
pub(crate) fn escape_bytes(bytes: &[u8]) -> String {
    let mut escaped = String::new();
    for byte in bytes {
        if byte.is_ascii_graphic() && *byte != b'"' && *byte != b'\\' || *byte == b' ' {
            escaped.push(*byte as char);
        } else {
            escaped.push_str(&format!("\\{byte:02X}"));
        }
    }
    escaped
}
