//===- PgpuIoOps.td - host I/O of the C-subset languages -----*- tablegen -*-===//
//
// The host I/O builtins that every pgpu source language shares: `printf`,
// `argi(k)`, `wtime()`, `rand_seed(s)` and `rand_u32()`. Backends lower them
// to runtime calls; the reference interpreter executes them directly.
//
//===----------------------------------------------------------------------===//

#ifndef PGPU_IO_OPS_TD
#define PGPU_IO_OPS_TD

include "pgpu/PgpuDialect.td"

/// The process's output stream, command line and clock.
def Pgpu_HostIoResource : Resource<"::mlir::pgpu::HostIoResource">;
/// The state of the deterministic generator behind `pgpu.rand_u32`.
def Pgpu_RandomStateResource : Resource<"::mlir::pgpu::RandomStateResource">;

def Pgpu_PrintableType : AnyTypeOf<[AnySignlessInteger, Index, F32, F64]>;

def Pgpu_PrintfOp : Pgpu_Op<"printf",
    [MemoryEffects<[MemWrite<Pgpu_HostIoResource>]>]> {
  let summary = "C `printf` with a format fixed at compile time";
  let description = [{
    Prints `format` with each conversion replaced by the next operand, as C's
    `printf` does. The format is checked against the operands: every
    conversion `%[flags][width][.precision][length]conv` needs one operand
    of a matching type (`d i` signed integers, `u x X o c` integers, `f F e E
    g G` floats, `p` not supported), `%%` prints `%`, and `*` widths are not
    supported. `length` modifiers (`h hh l ll z`) are accepted and ignored:
    the operand's type decides the width. Integers are printed as their
    type's width (`i1` as 0 or 1, signed unless the conversion is unsigned).

    Host code prints in program order. Inside an SPMD region each thread
    prints its line; the order of lines from different threads of one
    superstep is unspecified (the interpreter prints in rank order).

    ```mlir
    pgpu.printf "sum = %d, mean = %.3f\n"(%sum, %mean) : i32, f64
    pgpu.printf "done\n"
    ```
  }];
  let arguments = (ins StrAttr:$format, Variadic<Pgpu_PrintableType>:$args);
  let assemblyFormat = [{
    $format (`(` $args^ `)` `:` type($args))? attr-dict
  }];
  let hasVerifier = 1;
}

def Pgpu_ArgIOp : Pgpu_Op<"argi",
    [MemoryEffects<[MemRead<Pgpu_HostIoResource>]>,
     AllTypesMatch<["fallback", "value"]>]> {
  let summary = "The `k`-th integer command-line argument, with a default";
  let description = [{
    The source languages' `argi(k, default)` (and `argi(k)`, whose default
    is 0): the program's `k`-th command-line argument after the program
    name (counting from 0), parsed as a decimal integer, or `fallback` when
    there are fewer arguments. An argument that is not an integer of the
    result type is a run-time error that names it. Host code only.

    ```mlir
    %n = pgpu.argi %c0 default %c1024 : i32
    ```
  }];
  let arguments = (ins AnySignlessInteger:$position,
                       AnySignlessInteger:$fallback);
  let results = (outs AnySignlessInteger:$value);
  let assemblyFormat = [{
    $position `default` $fallback attr-dict `:` type($position) `,` type($value)
  }];
  let hasVerifier = 1;
}

def Pgpu_WTimeOp : Pgpu_Op<"wtime",
    [MemoryEffects<[MemRead<Pgpu_HostIoResource>]>]> {
  let summary = "Wall-clock time in seconds";
  let description = [{
    `wtime()`: seconds since an arbitrary fixed point, as an `f64` with at
    least microsecond resolution. Two reads bracket a region to time it; a
    read waits for all device work launched before it. Host code only.

    ```mlir
    %t = pgpu.wtime : f64
    ```
  }];
  let results = (outs F64:$seconds);
  let assemblyFormat = "attr-dict `:` type($seconds)";
  let hasVerifier = 1;
}

def Pgpu_RandSeedOp : Pgpu_Op<"rand_seed",
    [MemoryEffects<[MemWrite<Pgpu_RandomStateResource>]>]> {
  let summary = "Seeds the deterministic random generator";
  let description = [{
    `rand_seed(s)`: sets the 64-bit state of the generator behind
    `pgpu.rand_u32` to `s` (sign-extended to 64 bits). A program that never
    seeds starts from state 0. Host code only.

    ```mlir
    pgpu.rand_seed %s : i32
    ```
  }];
  let arguments = (ins AnySignlessInteger:$seed);
  let assemblyFormat = "$seed attr-dict `:` type($seed)";
  let hasVerifier = 1;
}

def Pgpu_RandU32Op : Pgpu_Op<"rand_u32",
    [MemoryEffects<[MemRead<Pgpu_RandomStateResource>,
                    MemWrite<Pgpu_RandomStateResource>]>]> {
  let summary = "The next number of the deterministic random generator";
  let description = [{
    `rand_u32()`: the next 32-bit number of a SplitMix64 generator, so that
    every backend and the interpreter print the same outputs for a seed:

    ```
    state = state + 0x9E3779B97F4A7C15            (mod 2^64)
    z = state
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9       (mod 2^64)
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB       (mod 2^64)
    z = z ^ (z >> 31)
    result = z >> 32                               (the high 32 bits)
    ```

    The result is an `i32` holding the unsigned value's bits. Host code
    only.

    ```mlir
    %r = pgpu.rand_u32 : i32
    ```
  }];
  let results = (outs I32:$value);
  let assemblyFormat = "attr-dict `:` type($value)";
  let hasVerifier = 1;
}

#endif // PGPU_IO_OPS_TD
