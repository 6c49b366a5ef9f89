//! The text format of nets (`.pn`), read by [`parse`] and written by
//! [`print()`]; `pgpu perf-model --net FILE` simulates one, and
//! `pgpu perf-model --emit-net` writes the GPU model in it.
//!
//! ```text
//! # Comments run from '#' to the end of the line.
//! place p0 = 4                     # a place and its initial tokens
//! place p1                         # no '= N': empty
//! transition t8: p12*2 -> p12, p13 # entries -> exits; '*W' weighs an arc
//! transition t16: p1, p2, p3 -> | p5, p7, p9   # '|' then inhibitor places
//! transition t0: p0 -> p0 | w0.p2
//! idle t0                          # steps firing t0 count as idle
//! ```
//!
//! One declaration per line: `place NAME [= TOKENS]`,
//! `transition NAME: [ARCS] -> [ARCS] [| PLACES]` and `idle NAME`, where
//! `ARCS` is a comma-separated list of `PLACE` or `PLACE*WEIGHT` (weight at
//! least 1; an empty list is allowed on either side). Names are letters,
//! digits, `_` and `.`, not starting with a digit; places and transitions
//! share one namespace. A place must be declared before a transition
//! names it; `idle` names a transition declared before it.

use crate::net::{Net, PlaceId};
use std::fmt::Write;

/// A syntax or naming error, with the byte range it concerns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    pub message: String,
    /// Byte offsets `start..end` in the text.
    pub span: (usize, usize),
}

/// Reads a net.
pub fn parse(text: &str) -> Result<Net, ParseError> {
    let mut net = Net::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let content = line.split('#').next().unwrap_or_default();
        let mut cursor = Cursor {
            text: content,
            base: offset,
            at: 0,
        };
        cursor.skip_space();
        if !cursor.at_end() {
            declaration(&mut net, &mut cursor)?;
        }
        offset += line.len();
    }
    Ok(net)
}

fn declaration(net: &mut Net, cursor: &mut Cursor) -> Result<(), ParseError> {
    let (keyword, span) = cursor.name("'place', 'transition' or 'idle'")?;
    match keyword {
        "place" => {
            let (name, name_span) = cursor.name("a place name")?;
            let tokens = if cursor.eat('=') {
                cursor.number("the initial number of tokens")?.0
            } else {
                0
            };
            cursor.end_of_line()?;
            net.add_place(name, tokens)
                .map_err(|error| cursor.error_at(name_span, error.to_string()))?;
        }
        "transition" => {
            let (name, name_span) = cursor.name("a transition name")?;
            cursor.expect(':')?;
            let inputs = arcs(net, cursor)?;
            cursor.expect_arrow()?;
            let outputs = arcs(net, cursor)?;
            let mut inhibitors = Vec::new();
            if cursor.eat('|') {
                loop {
                    inhibitors.push(place(net, cursor)?.0);
                    if !cursor.eat(',') {
                        break;
                    }
                }
            }
            cursor.end_of_line()?;
            net.add_transition(name, &inputs, &outputs, &inhibitors)
                .map_err(|error| cursor.error_at(name_span, error.to_string()))?;
        }
        "idle" => {
            let (name, name_span) = cursor.name("a transition name")?;
            cursor.end_of_line()?;
            let transition = net.transition_named(name).ok_or_else(|| {
                cursor.error_at(
                    name_span,
                    format!("no transition named '{name}' is declared"),
                )
            })?;
            net.set_idle(Some(transition));
        }
        other => {
            return Err(cursor.error_at(
                span,
                format!("expected 'place', 'transition' or 'idle', found '{other}'"),
            ));
        }
    }
    Ok(())
}

/// A possibly empty comma-separated arc list.
fn arcs(net: &Net, cursor: &mut Cursor) -> Result<Vec<(PlaceId, u64)>, ParseError> {
    let mut arcs = Vec::new();
    if !cursor.peek_name_start() {
        return Ok(arcs);
    }
    loop {
        let (place, _) = place(net, cursor)?;
        let weight = if cursor.eat('*') {
            let (weight, span) = cursor.number("an arc weight")?;
            if weight == 0 {
                return Err(cursor.error_at(span, "arc weights are at least 1".to_string()));
            }
            weight
        } else {
            1
        };
        arcs.push((place, weight));
        if !cursor.eat(',') {
            return Ok(arcs);
        }
    }
}

fn place(net: &Net, cursor: &mut Cursor) -> Result<(PlaceId, (usize, usize)), ParseError> {
    let (name, span) = cursor.name("a place name")?;
    let place = net.place_named(name).ok_or_else(|| {
        cursor.error_at(
            span,
            format!("no place named '{name}' is declared before this line"),
        )
    })?;
    Ok((place, span))
}

struct Cursor<'t> {
    text: &'t str,
    /// Offset of `text` in the whole input.
    base: usize,
    at: usize,
}

impl<'t> Cursor<'t> {
    fn rest(&self) -> &'t str {
        &self.text[self.at..]
    }

    fn at_end(&self) -> bool {
        self.rest().trim().is_empty()
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn error_at(&self, span: (usize, usize), message: String) -> ParseError {
        ParseError { message, span }
    }

    /// An error at the next token (or the line's end).
    fn error_here(&self, message: String) -> ParseError {
        let rest = self.rest();
        let length = rest
            .find(char::is_whitespace)
            .unwrap_or(rest.len())
            .max(usize::from(!rest.is_empty()));
        let start = self.base + self.at;
        ParseError {
            message,
            span: (start, start + length),
        }
    }

    fn peek_name_start(&self) -> bool {
        self.rest()
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
    }

    fn name(&mut self, what: &str) -> Result<(&'t str, (usize, usize)), ParseError> {
        self.skip_space();
        if !self.peek_name_start() {
            return Err(self.error_here(format!("expected {what}")));
        }
        let rest = self.rest();
        let length = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        let start = self.base + self.at;
        self.at += length;
        let name = &rest[..length];
        self.skip_space();
        Ok((name, (start, start + length)))
    }

    fn number(&mut self, what: &str) -> Result<(u64, (usize, usize)), ParseError> {
        self.skip_space();
        let rest = self.rest();
        let length = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if length == 0 {
            return Err(self.error_here(format!("expected {what}")));
        }
        let start = self.base + self.at;
        let span = (start, start + length);
        let value = rest[..length]
            .parse()
            .map_err(|_| self.error_at(span, format!("{what} is too large")))?;
        self.at += length;
        self.skip_space();
        Ok((value, span))
    }

    fn eat(&mut self, symbol: char) -> bool {
        self.skip_space();
        if self.rest().starts_with(symbol) {
            self.at += symbol.len_utf8();
            self.skip_space();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, symbol: char) -> Result<(), ParseError> {
        if self.eat(symbol) {
            Ok(())
        } else {
            Err(self.error_here(format!("expected '{symbol}'")))
        }
    }

    fn expect_arrow(&mut self) -> Result<(), ParseError> {
        self.skip_space();
        if self.rest().starts_with("->") {
            self.at += 2;
            self.skip_space();
            Ok(())
        } else {
            Err(self.error_here("expected '->' between entries and exits".to_string()))
        }
    }

    fn end_of_line(&mut self) -> Result<(), ParseError> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.error_here("unexpected text at the end of the declaration".to_string()))
        }
    }
}

/// Writes `net` in the text format ([`parse`] reads it back unchanged).
pub fn print(net: &Net) -> String {
    let mut text = String::new();
    for place in net.places() {
        let _ = match place.initial {
            0 => writeln!(text, "place {}", place.name),
            tokens => writeln!(text, "place {} = {tokens}", place.name),
        };
    }
    let arc_list = |arcs: &[crate::net::Arc]| {
        arcs.iter()
            .map(|arc| match arc.weight {
                1 => net.place(arc.place).name.clone(),
                weight => format!("{}*{weight}", net.place(arc.place).name),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    for transition in net.transitions() {
        let mut line = format!("transition {}:", transition.name);
        for (index, side) in [&transition.inputs, &transition.outputs]
            .into_iter()
            .enumerate()
        {
            if index == 1 {
                line.push_str(" ->");
            }
            if !side.is_empty() {
                let _ = write!(line, " {}", arc_list(side));
            }
        }
        if !transition.inhibitors.is_empty() {
            let names: Vec<&str> = transition
                .inhibitors
                .iter()
                .map(|&place| net.place(place).name.as_str())
                .collect();
            let _ = write!(line, " | {}", names.join(", "));
        }
        text.push_str(&line);
        text.push('\n');
    }
    if let Some(idle) = net.idle() {
        let _ = writeln!(text, "idle {}", net.transition(idle).name);
    }
    text
}
