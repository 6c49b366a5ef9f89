//! MLIR text emission for the collective kernels and their host functions.
//!
//! The collectives are written as MLIR text in the generic upstream
//! dialects (`gpu`, `nvvm`, `llvm`, `arith`, `scf`, `func`, `memref`), so
//! that `mlir-opt` and our pipelines read them like any other input. This
//! file holds the small builder they are written with:
//!
//! - [`Body`] appends operations to one region in SSA form: every value is
//!   a fresh `%vN` name, `scf.if` / `scf.for` / `scf.while` take Rust
//!   closures for their regions and return their results, so kernels read as
//!   straight-line Rust that mirrors the generated IR;
//! - typed helpers for the few op families the kernels use: `arith`
//!   integer and float arithmetic, `llvm` loads and stores through raw
//!   pointers (global memory is `!llvm.ptr<1>`, workgroup memory
//!   `!llvm.ptr<3>` arrays declared as `llvm.mlir.global` in the
//!   `gpu.module`), atomics with explicit orderings and `syncscope`, and
//!   warp primitives (`gpu.shuffle`, `nvvm.vote.sync`, `nvvm.match.sync`,
//!   `nvvm.bar.warp.sync`);
//! - [`GpuModule`], which collects workgroup arrays and kernels into one
//!   `gpu.module`.

use crate::wait_grid_dependencies::LAUNCH_DEPENDENTS;
use std::fmt::Write as _;

/// A value type inside the kernels. `i1` list elements are stored as one
/// byte and carried as `I8` holding 0 or 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ty {
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
}

impl Ty {
    pub fn mlir(self) -> &'static str {
        match self {
            Ty::I8 => "i8",
            Ty::I16 => "i16",
            Ty::I32 => "i32",
            Ty::I64 => "i64",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
        }
    }

    pub fn bytes(self) -> usize {
        match self {
            Ty::I8 => 1,
            Ty::I16 => 2,
            Ty::I32 | Ty::F32 => 4,
            Ty::I64 | Ty::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }

    /// The integer type of the same width.
    pub fn int(self) -> Ty {
        match self {
            Ty::F32 => Ty::I32,
            Ty::F64 => Ty::I64,
            other => other,
        }
    }

    pub fn bits(self) -> usize {
        8 * self.bytes()
    }
}

/// An SSA value name (`%vN`, `%vN#k` or a block argument).
pub type V = String;

/// Appends operations to one region.
#[derive(Debug, Default)]
pub struct Body {
    text: String,
    next: usize,
    depth: usize,
}

impl Body {
    pub fn new(depth: usize) -> Self {
        Body {
            text: String::new(),
            next: 0,
            depth,
        }
    }

    pub fn finish(self) -> String {
        self.text
    }

    pub fn fresh(&mut self) -> V {
        self.next += 1;
        format!("%v{}", self.next)
    }

    /// A line without results.
    pub fn line(&mut self, text: impl AsRef<str>) {
        for _ in 0..self.depth {
            self.text.push_str("  ");
        }
        self.text.push_str(text.as_ref());
        self.text.push('\n');
    }

    /// `%v = <rhs>`.
    pub fn op(&mut self, rhs: impl AsRef<str>) -> V {
        let value = self.fresh();
        self.line(format!("{value} = {}", rhs.as_ref()));
        value
    }

    /// `%v:count = <rhs>`, returned as `%v#0 ..`.
    pub fn ops(&mut self, count: usize, rhs: impl AsRef<str>) -> Vec<V> {
        match count {
            0 => {
                self.line(rhs);
                Vec::new()
            }
            1 => vec![self.op(rhs)],
            _ => {
                let value = self.fresh();
                self.line(format!("{value}:{count} = {}", rhs.as_ref()));
                (0..count).map(|k| format!("{value}#{k}")).collect()
            }
        }
    }

    // ----- constants and arithmetic -------------------------------------------

    pub fn c(&mut self, value: i64, ty: Ty) -> V {
        debug_assert!(!ty.is_float());
        self.op(format!("arith.constant {value} : {}", ty.mlir()))
    }

    pub fn c32(&mut self, value: i64) -> V {
        self.c(value, Ty::I32)
    }

    pub fn c64(&mut self, value: i64) -> V {
        self.c(value, Ty::I64)
    }

    pub fn cidx(&mut self, value: i64) -> V {
        self.op(format!("arith.constant {value} : index"))
    }

    pub fn cbool(&mut self, value: bool) -> V {
        self.op(format!("arith.constant {value}"))
    }

    /// A constant of `ty` from its bit pattern (floats as IEEE bits).
    pub fn bits_const(&mut self, bits: u64, ty: Ty) -> V {
        if ty.is_float() {
            let digits = ty.bytes() * 2;
            self.op(format!(
                "arith.constant 0x{:0digits$X} : {}",
                bits,
                ty.mlir(),
                digits = digits
            ))
        } else {
            let shift = 64 - ty.bits();
            let value = ((bits << shift) as i64) >> shift;
            self.c(value, ty)
        }
    }

    pub fn bin(&mut self, name: &str, a: &str, b: &str, ty: Ty) -> V {
        self.op(format!("arith.{name} {a}, {b} : {}", ty.mlir()))
    }

    pub fn add(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("addi", a, b, ty)
    }

    pub fn sub(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("subi", a, b, ty)
    }

    pub fn mul(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("muli", a, b, ty)
    }

    pub fn and(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("andi", a, b, ty)
    }

    pub fn or(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("ori", a, b, ty)
    }

    pub fn xor(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("xori", a, b, ty)
    }

    pub fn shl(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("shli", a, b, ty)
    }

    pub fn shru(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("shrui", a, b, ty)
    }

    pub fn minu(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("minui", a, b, ty)
    }

    pub fn maxs(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("maxsi", a, b, ty)
    }

    pub fn mins(&mut self, a: &str, b: &str, ty: Ty) -> V {
        self.bin("minsi", a, b, ty)
    }

    /// `arith.cmpi <pred>` on integers, `i1` result.
    pub fn cmp(&mut self, pred: &str, a: &str, b: &str, ty: Ty) -> V {
        self.op(format!("arith.cmpi {pred}, {a}, {b} : {}", ty.mlir()))
    }

    pub fn cmpf(&mut self, pred: &str, a: &str, b: &str, ty: Ty) -> V {
        self.op(format!("arith.cmpf {pred}, {a}, {b} : {}", ty.mlir()))
    }

    pub fn cmp_idx(&mut self, pred: &str, a: &str, b: &str) -> V {
        self.op(format!("arith.cmpi {pred}, {a}, {b} : index"))
    }

    pub fn band(&mut self, a: &str, b: &str) -> V {
        self.op(format!("arith.andi {a}, {b} : i1"))
    }

    pub fn bor(&mut self, a: &str, b: &str) -> V {
        self.op(format!("arith.ori {a}, {b} : i1"))
    }

    pub fn bnot(&mut self, a: &str) -> V {
        let t = self.cbool(true);
        self.op(format!("arith.xori {a}, {t} : i1"))
    }

    pub fn select(&mut self, cond: &str, a: &str, b: &str, ty: &str) -> V {
        self.op(format!("arith.select {cond}, {a}, {b} : {ty}"))
    }

    pub fn sel(&mut self, cond: &str, a: &str, b: &str, ty: Ty) -> V {
        self.select(cond, a, b, ty.mlir())
    }

    /// Integer width change: sign or zero extension, or truncation.
    pub fn resize(&mut self, v: &str, from: Ty, to: Ty, signed: bool) -> V {
        use std::cmp::Ordering::*;
        match from.bits().cmp(&to.bits()) {
            Equal => v.to_string(),
            Less => {
                let name = if signed { "extsi" } else { "extui" };
                self.op(format!(
                    "arith.{name} {v} : {} to {}",
                    from.mlir(),
                    to.mlir()
                ))
            }
            Greater => self.op(format!(
                "arith.trunci {v} : {} to {}",
                from.mlir(),
                to.mlir()
            )),
        }
    }

    pub fn bitcast(&mut self, v: &str, from: Ty, to: Ty) -> V {
        if from == to {
            return v.to_string();
        }
        self.op(format!(
            "arith.bitcast {v} : {} to {}",
            from.mlir(),
            to.mlir()
        ))
    }

    /// `i1` to an integer 0/1.
    pub fn zext_bool(&mut self, v: &str, to: Ty) -> V {
        self.op(format!("arith.extui {v} : i1 to {}", to.mlir()))
    }

    pub fn idx_to(&mut self, v: &str, to: Ty) -> V {
        self.op(format!("arith.index_cast {v} : index to {}", to.mlir()))
    }

    pub fn to_idx(&mut self, v: &str, from: Ty) -> V {
        self.op(format!("arith.index_cast {v} : {} to index", from.mlir()))
    }

    pub fn popc(&mut self, v: &str) -> V {
        self.op(format!("llvm.intr.ctpop({v}) : (i32) -> i32"))
    }

    /// Count of trailing zeros (32 for 0).
    pub fn cttz(&mut self, v: &str) -> V {
        self.op(format!(
            "\"llvm.intr.cttz\"({v}) <{{is_zero_poison = false}}> : (i32) -> i32"
        ))
    }

    /// Count of trailing zeros of a value known to be nonzero.
    pub fn cttz_nonzero(&mut self, v: &str) -> V {
        self.op(format!(
            "\"llvm.intr.cttz\"({v}) <{{is_zero_poison = true}}> : (i32) -> i32"
        ))
    }

    // ----- structured control flow ----------------------------------------------

    fn yield_line(&mut self, values: &[V], types: &[String]) {
        if values.is_empty() {
            self.line("scf.yield");
        } else {
            self.line(format!(
                "scf.yield {} : {}",
                values.join(", "),
                types.join(", ")
            ));
        }
    }

    /// `scf.if` with results of `types` (the else region is omitted when
    /// there are no results and `otherwise` emits nothing).
    pub fn if_then_else(
        &mut self,
        cond: &str,
        types: &[String],
        then: impl FnOnce(&mut Body) -> Vec<V>,
        otherwise: impl FnOnce(&mut Body) -> Vec<V>,
    ) -> Vec<V> {
        let header = if types.is_empty() {
            format!("scf.if {cond} {{")
        } else {
            format!("scf.if {cond} -> ({}) {{", types.join(", "))
        };
        let results = if types.is_empty() {
            self.line(&header);
            Vec::new()
        } else {
            let results = (0..types.len()).map(|_| String::new()).collect::<Vec<_>>();
            let name = self.fresh();
            let line = if types.len() == 1 {
                format!("{name} = {header}")
            } else {
                format!("{name}:{} = {header}", types.len())
            };
            self.line(line);
            if types.len() == 1 {
                vec![name]
            } else {
                results
                    .iter()
                    .enumerate()
                    .map(|(k, _)| format!("{name}#{k}"))
                    .collect()
            }
        };
        self.depth += 1;
        let values = then(self);
        self.yield_line(&values, types);
        self.depth -= 1;
        let mark = self.text.len();
        self.line("} else {");
        self.depth += 1;
        let before = self.text.len();
        let values = otherwise(self);
        let empty_else = types.is_empty() && self.text.len() == before;
        if empty_else {
            self.text.truncate(mark);
            self.depth -= 1;
        } else {
            self.yield_line(&values, types);
            self.depth -= 1;
        }
        self.line("}");
        results
    }

    /// `scf.if` without results.
    pub fn if_(&mut self, cond: &str, then: impl FnOnce(&mut Body)) {
        self.if_then_else(
            cond,
            &[],
            |b| {
                then(b);
                Vec::new()
            },
            |_| Vec::new(),
        );
    }

    /// `scf.if` with results of one type.
    pub fn if_ty(
        &mut self,
        cond: &str,
        ty: &str,
        count: usize,
        then: impl FnOnce(&mut Body) -> Vec<V>,
        otherwise: impl FnOnce(&mut Body) -> Vec<V>,
    ) -> Vec<V> {
        let types = vec![ty.to_string(); count];
        self.if_then_else(cond, &types, then, otherwise)
    }

    /// `scf.for` over `[lb, ub)` of integer type `iv_ty` ("index" or an
    /// integer type) with loop-carried `inits` (value, type).
    pub fn for_(
        &mut self,
        lb: &str,
        ub: &str,
        step: &str,
        iv_ty: &str,
        inits: &[(V, String)],
        body: impl FnOnce(&mut Body, &V, &[V]) -> Vec<V>,
    ) -> Vec<V> {
        let iv = self.fresh();
        let args: Vec<V> = inits.iter().map(|_| self.fresh()).collect();
        let types: Vec<String> = inits.iter().map(|(_, t)| t.clone()).collect();
        let iter = if inits.is_empty() {
            String::new()
        } else {
            let pairs: Vec<String> = args
                .iter()
                .zip(inits)
                .map(|(a, (v, _))| format!("{a} = {v}"))
                .collect();
            format!(" iter_args({}) -> ({})", pairs.join(", "), types.join(", "))
        };
        let ty = if iv_ty == "index" {
            String::new()
        } else {
            format!(" : {iv_ty}")
        };
        let header = format!("scf.for {iv} = {lb} to {ub} step {step}{iter}{ty} {{");
        let results = match inits.len() {
            0 => {
                self.line(header);
                Vec::new()
            }
            1 => {
                let r = self.fresh();
                self.line(format!("{r} = {header}"));
                vec![r]
            }
            n => {
                let r = self.fresh();
                self.line(format!("{r}:{n} = {header}"));
                (0..n).map(|k| format!("{r}#{k}")).collect()
            }
        };
        self.depth += 1;
        let values = body(self, &iv, &args);
        self.yield_line(&values, &types);
        self.depth -= 1;
        self.line("}");
        results
    }

    /// `scf.while`: `before` computes the condition from the carried values
    /// and may replace them; `after` computes the next carried values.
    pub fn while_(
        &mut self,
        inits: &[(V, String)],
        before: impl FnOnce(&mut Body, &[V]) -> (V, Vec<V>),
        after: impl FnOnce(&mut Body, &[V]) -> Vec<V>,
    ) -> Vec<V> {
        let args: Vec<V> = inits.iter().map(|_| self.fresh()).collect();
        let types: Vec<String> = inits.iter().map(|(_, t)| t.clone()).collect();
        let pairs: Vec<String> = args
            .iter()
            .zip(inits)
            .map(|(a, (v, _))| format!("{a} = {v}"))
            .collect();
        let r = self.fresh();
        let tys = types.join(", ");
        let lhs = if inits.len() == 1 {
            r.clone()
        } else {
            format!("{r}:{}", inits.len())
        };
        self.line(format!(
            "{lhs} = scf.while ({}) : ({tys}) -> ({tys}) {{",
            pairs.join(", ")
        ));
        self.depth += 1;
        let (cond, forwarded) = before(self, &args);
        self.line(format!(
            "scf.condition({cond}) {} : {tys}",
            forwarded.join(", ")
        ));
        self.depth -= 1;
        self.line("} do {");
        let after_args: Vec<V> = inits.iter().map(|_| self.fresh()).collect();
        let decl: Vec<String> = after_args
            .iter()
            .zip(&types)
            .map(|(a, t)| format!("{a}: {t}"))
            .collect();
        self.line(format!("^bb0({}):", decl.join(", ")));
        self.depth += 1;
        let next = after(self, &after_args);
        self.yield_line(&next, &types);
        self.depth -= 1;
        self.line("}");
        if inits.len() == 1 {
            vec![r]
        } else {
            (0..inits.len()).map(|k| format!("{r}#{k}")).collect()
        }
    }

    // ----- memory ------------------------------------------------------------------

    /// `&base[index]` for elements of `ty` in address space `space`.
    pub fn gep(&mut self, base: &str, index: &str, index_ty: Ty, elem: &str, space: u32) -> V {
        self.op(format!(
            "llvm.getelementptr {base}[{index}] : (!llvm.ptr<{space}>, {}) -> !llvm.ptr<{space}>, {elem}",
            index_ty.mlir()
        ))
    }

    pub fn load(&mut self, ptr: &str, ty: &str, align: usize, space: u32) -> V {
        self.op(format!(
            "llvm.load {ptr} {{alignment = {align} : i64}} : !llvm.ptr<{space}> -> {ty}"
        ))
    }

    pub fn store(&mut self, value: &str, ptr: &str, ty: &str, align: usize, space: u32) {
        self.line(format!(
            "llvm.store {value}, {ptr} {{alignment = {align} : i64}} : {ty}, !llvm.ptr<{space}>"
        ));
    }

    /// An atomic load of global memory at device scope.
    pub fn load_atomic(&mut self, ptr: &str, ty: Ty, ordering: &str) -> V {
        self.op(format!(
            "llvm.load {ptr} atomic syncscope(\"device\") {ordering} {{alignment = {} : i64}} : !llvm.ptr<1> -> {}",
            ty.bytes(),
            ty.mlir()
        ))
    }

    /// An atomic store to global memory at device scope.
    pub fn store_atomic(&mut self, value: &str, ptr: &str, ty: Ty, ordering: &str) {
        self.line(format!(
            "llvm.store {value}, {ptr} atomic syncscope(\"device\") {ordering} {{alignment = {} : i64}} : {}, !llvm.ptr<1>",
            ty.bytes(),
            ty.mlir()
        ));
    }

    /// `atomicrmw <op>` returning the old value (`scope` empty: system).
    pub fn atomic_rmw(&mut self, op: &str, ptr: &str, value: &str, ty: Ty, space: u32) -> V {
        let scope = if space == 1 {
            " syncscope(\"device\")"
        } else {
            ""
        };
        self.op(format!(
            "llvm.atomicrmw {op} {ptr}, {value}{scope} monotonic : !llvm.ptr<{space}>, {}",
            ty.mlir()
        ))
    }

    pub fn addressof(&mut self, global: &str) -> V {
        self.op(format!("llvm.mlir.addressof @{global} : !llvm.ptr<3>"))
    }

    pub fn extract(&mut self, vector: &str, lane: usize, vty: &str) -> V {
        let k = self.c32(lane as i64);
        self.op(format!("llvm.extractelement {vector}[{k} : i32] : {vty}"))
    }

    pub fn insert(&mut self, vector: &str, value: &str, lane: usize, vty: &str) -> V {
        let k = self.c32(lane as i64);
        self.op(format!(
            "llvm.insertelement {value}, {vector}[{k} : i32] : {vty}"
        ))
    }

    pub fn poison(&mut self, ty: &str) -> V {
        self.op(format!("llvm.mlir.poison : {ty}"))
    }

    // ----- GPU ---------------------------------------------------------------------

    pub fn barrier(&mut self) {
        self.line("gpu.barrier");
    }

    /// A device-scope acquire-release fence.
    pub fn fence(&mut self) {
        self.line("llvm.fence syncscope(\"device\") acq_rel");
    }

    pub fn syncwarp(&mut self) {
        let mask = self.c32(-1);
        self.line(format!("nvvm.bar.warp.sync {mask} : i32"));
    }

    /// A thread or block index as i32.
    pub fn sreg(&mut self, which: &str) -> V {
        let v = self.op(format!("gpu.{which} x"));
        self.idx_to(&v, Ty::I32)
    }

    /// `gpu.shuffle <mode>` of a value of `ty` (8- and 16-bit values travel
    /// as i32).
    pub fn shuffle(&mut self, mode: &str, value: &str, offset: &str, ty: Ty) -> V {
        let wide = matches!(ty, Ty::I8 | Ty::I16);
        let v = if wide {
            self.resize(value, ty, Ty::I32, false)
        } else {
            value.to_string()
        };
        let width = self.c32(32);
        let sty = if wide { "i32" } else { ty.mlir() };
        let r = self.ops(
            2,
            format!("gpu.shuffle {mode} {v}, {offset}, {width} : {sty}"),
        );
        if wide {
            self.resize(&r[0], Ty::I32, ty, false)
        } else {
            r[0].clone()
        }
    }

    pub fn ballot(&mut self, pred: &str) -> V {
        let mask = self.c32(-1);
        self.op(format!("nvvm.vote.sync ballot {mask}, {pred} -> i32"))
    }

    pub fn match_any(&mut self, value: &str) -> V {
        let mask = self.c32(-1);
        self.op(format!("nvvm.match.sync any {mask}, {value} : i32 -> i32"))
    }
}

/// The workgroup arrays and kernels of one `gpu.module`.
#[derive(Debug, Default)]
pub struct GpuModule {
    pub name: String,
    globals: Vec<String>,
    kernels: Vec<String>,
}

/// One kernel parameter: its name (without `%`) and type.
pub type Param = (&'static str, &'static str);

impl GpuModule {
    pub fn new(name: impl Into<String>) -> Self {
        GpuModule {
            name: name.into(),
            ..Default::default()
        }
    }

    /// Declares a workgroup array `@<kernel>_<name>` of `count` elements of
    /// `elem` and returns its symbol.
    pub fn shared(&mut self, kernel: &str, name: &str, elem: &str, count: usize) -> String {
        let symbol = format!("{kernel}_{name}");
        self.globals.push(format!(
            "llvm.mlir.global internal @{symbol}() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<{count} x {elem}>"
        ));
        symbol
    }

    /// Adds kernel `name` with `params` and `block` threads; `body` gets the
    /// region builder and the parameter values (`%name`). The kernel is
    /// marked for `pgpu-wait-grid-dependencies` to let the next kernel
    /// launch as each block ends.
    pub fn kernel(
        &mut self,
        name: &str,
        params: &[Param],
        block: usize,
        body: impl FnOnce(&mut Body, &mut GpuModule),
    ) {
        let mut b = Body::new(3);
        body(&mut b, self);
        b.line("gpu.return");
        let params: Vec<String> = params.iter().map(|(n, t)| format!("%{n}: {t}")).collect();
        let mut text = String::new();
        let _ = writeln!(
            text,
            "    gpu.func @{name}({}) kernel attributes {{known_block_size = array<i32: {block}, 1, 1>, {LAUNCH_DEPENDENTS}}} {{",
            params.join(", ")
        );
        text.push_str(&b.finish());
        text.push_str("    }\n");
        self.kernels.push(text);
    }

    pub fn finish(&self) -> String {
        let mut text = format!("  gpu.module @{} {{\n", self.name);
        for global in &self.globals {
            let _ = writeln!(text, "    {global}");
        }
        for kernel in &self.kernels {
            text.push_str(kernel);
        }
        text.push_str("  }\n");
        text
    }
}

/// Casts the generic pointer parameter `%name` to a global pointer.
pub fn global_ptr(b: &mut Body, name: &str) -> V {
    b.op(format!(
        "llvm.addrspacecast %{name} : !llvm.ptr to !llvm.ptr<1>"
    ))
}
