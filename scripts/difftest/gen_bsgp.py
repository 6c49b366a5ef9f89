#!/usr/bin/env python3
"""Random BSGP programs for differential testing (issue 39).

    gen_bsgp.py SEED [--disable a,b] [--only a,b] [--list-constructs] [--constructs]

A seed gives one program, the same on every machine. The program is
well-typed, race-free, free of undefined values that reach its output,
and prints its results: `main` reads `argi` arguments (n threads, a knob
m in 0..3, a flag z that empties the thread set when 0), allocates lists
with `dnew`, and runs a host loop around calls of kernel functions that
each hold one or two spawns. After every iteration it prints every list.

How the generator keeps the program valid (docs/models.md):

- Races. Within a superstep (between barriers; thread-set changes end one
  too) each list is untouched, or read at any index and written by nobody,
  or accessed by every thread only at one element given by a permutation
  of the ranks (`thread.rank`, `thread.size - 1 - thread.rank`,
  `(thread.rank + k) % thread.size`). Host-only lists are written by
  `require` alone, `info[k]` by rank 0 alone, collective lists by the
  collectives alone.
- Undefined values. `thread.get` reads a value assigned before the last
  barrier, at a rank that is in range or behind a short-circuit guard.
  `thread.put` goes to a permutation (every thread receives one value) or
  to `rank + 1` (rank 0 receives none: its value is read only behind
  `thread.rank > 0 &&` / `?:`). Integers stay below 2^31 (every value is
  bounded and reduced `% 10007`), floats are multiples of 1/4 below 10^4
  (exact, so no rounding or contraction differences), no -0.0 and no
  infinities, and no division by anything but a non-zero constant.
- Sizes. Fork counts are at most 3 and at most two forks run per spawn,
  so a thread set has at most 9 (n + 3) threads; lists have
  cap = 9 (n + 4) + 1 elements.

Each construct can be turned off (`--disable`); the header comment lists
the constructs the program uses. Constructs with open known bugs are in
KNOWN_BUGS (scripts/difftest/runner.py classifies mismatches with it).
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Program, Rng, arg_index, cli, header_lines, main_params  # noqa: E402

LIM = 10000  # every int variable stays within +-LIM (or is marked huge)
MOD = 10007
RANK_BOUND = 1000  # thread.rank, thread.size, cap-derived values

CONSTRUCTS = {
    "host_loop": "a host for loop around the kernel calls",
    "two_spawns": "two spawns in one kernel function",
    "private_if": "if/else on private values",
    "private_loop": "for/while loops with private trip counts, break, continue",
    "ternary": "?: on private values",
    "and_or": "&& and || in conditions",
    "unsigned": "unsigned values (printed with %u)",
    "float": "float values (exact multiples of 1/4)",
    "list_any_read": "reads of a list at computed indices",
    "list_perm_write": "writes of a list at a permutation of the ranks",
    "info_write": "if (thread.rank == 0) info[k] = ...",
    "thread_printf": "printf in threads (printed per superstep, in rank order)",
    "helper_fn": "inline functions without barriers",
    "barrier": "barrier;",
    "get": "thread.get at an in-range rank",
    "get_guarded": "thread.get at rank +-1 behind ?: / && / || guards",
    "get_consecutive": "thread.get in consecutive supersteps",
    "put_perm": "thread.put to a permutation of the ranks",
    "put_shift": "thread.put to rank + 1, read behind thread.rank > 0 guards",
    "fork": "thread.fork(k) with k >= 1",
    "fork_zero": "thread.fork(k) with k = 0 for some threads (not all)",
    "kill": "thread.kill(f) that keeps rank 0",
    "empty_set": "thread sets that become empty: kill-all, fork(0), spawn(0)",
    "sortby_int": "thread.sortby on int keys",
    "sortby_unsigned": "thread.sortby on unsigned keys",
    "sortby_float": "thread.sortby on float keys",
    "thread_split": "thread.split(side)",
    "rank_reassign": "barrier(RANK_REASSIGNED); thread.oldrank = permutation;",
    "oldrank": "reads of thread.oldrank after a thread-set change",
    "oldrank_after_inline": "thread.oldrank after an inline function that reassigns ranks",
    "reduce": "reduce(op, x) on int",
    "reduce_unsigned": "reduce(op, x) on unsigned",
    "reduce_float": "reduce(op, x) on float",
    "scan": "scan(op, x)",
    "compact": "compact(list, x, keep, flag)",
    "split_list": "split(list, x, side, flag)",
    "sort_idx_int": "sort_idx on int keys",
    "sort_idx_unsigned": "sort_idx on unsigned keys",
    "sort_idx_float": "sort_idx on float keys",
    "require": "require { host code } (thread.size, host lists)",
    "require_alloc": "require list = dnew/dtempnew[thread.size + 1], written by the threads",
    "inline_barrier": "inline functions with a barrier and thread.get",
    "inline_get_param": "inline functions that thread.get a parameter after a barrier",
    "inline_collective": "inline functions with reduce/scan/sort_idx",
    "inline_reassign": "inline functions with barrier(RANK_REASSIGNED)",
    "par": "par { } of collectives and inline calls",
    "par_barrier": "par { } with barriers in block branches",
    "par_get": "thread.get inside par branches (also through inline functions)",
    "par_after_collective": "par branches that read a collective's result of the same superstep",
    "get_uniform": "thread.get of a value that is the same in every thread (a constant)",
    "oldrank_after_collective": "thread.oldrank after a collective that follows a thread-set change",
    "reassign_identity": "barrier(RANK_REASSIGNED); thread.oldrank = thread.rank; (the identity)",
    "size_across_change": "values derived from thread.size used after thread.fork/kill",
    "get_loop_carried": "thread.get of a variable that a loop around the get reassigns",
    "collective_derived_value": "values computed from a collective's result used after another collective",
    "primitive_then_reassign": "values defined before fork/kill/sortby/split read after a later rank reassignment",
    "printf_before_collective": "printf in threads in a superstep that ends at a collective",
    "printf_after_compact": "printf in threads after a compact/split of the same superstep",
}

DEFAULT_OFF = set()

# Constructs behind the open known bugs (issue 39's list, reproducers in
# /work/shared/bugs/bsgp): the lit tests turn these off until the fixes land.
# None open.
KNOWN_BUGS = {}

# Constructs behind the bugs this generator found (reproducers in
# test-suite/difftest/found/, docs/testing.md): off in the lit tests too.
# None open.
FOUND_BUGS = {}

PERMS = ["thread.rank", "thread.size - 1 - thread.rank", "(thread.rank + {k}) % thread.size"]


class Var:
    __slots__ = ("name", "ty", "bound", "top", "varying", "collective", "size_dep", "cdep", "epoch")

    def __init__(self, name, ty, bound, top, varying=True):
        self.name = name
        self.ty = ty  # "int" | "unsigned" | "float"
        self.bound = bound  # int/float magnitude bound; None = any int
        self.top = top  # declared at the top level of the spawn body
        self.varying = varying  # may differ between threads
        self.collective = False  # defined by a collective since the last barrier
        self.size_dep = False  # derived from thread.size
        self.cdep = False  # computed from a collective's result
        self.epoch = 0  # thread primitives (fork/kill/sortby/split) before its definition


VARYING = re.compile(r"thread\.rank|thread\.oldrank|thread\.get|\[|sort_idx|scan\(|compact\(|split\(|\bf\d+\(")


class InlineFn:
    def __init__(self, name, text, kind, has_barrier, has_get, reassign, ret):
        self.name = name
        self.text = text
        self.kind = kind
        self.has_barrier = has_barrier
        self.has_get = has_get
        self.reassign = reassign
        self.ret = ret


def perm(rng):
    return rng.pick(PERMS).format(k=rng.int(1, 5))


class Body:
    """The state of one spawn body while it is generated."""

    def __init__(self, gen, kernel):
        self.gen = gen
        self.rng = gen.rng
        self.kernel = kernel
        self.lines = []
        self.indent = 2
        self.scopes = [{}]
        self.modes = {}
        self.get_ok = False  # a barrier since the spawn began / the last set change
        self.barrier_vars = set()
        self.set_changed = None  # None | "plain" | "inline"
        self.step_get = False
        self.prev_step_get = False
        self.barriers = 0
        self.forks = 0
        self.pending = {}  # var -> "perm" | "shift": a put waits for the barrier
        self.readonly = set()  # loop counters
        self.hide_collective = False
        self.dead = set()  # values not read any more (see set_change)
        self.epoch = 0
        self.step_printf = False  # a thread printf since the last barrier
        self.after_list = False  # a compact/split since the last barrier
        self.depth = 0
        self.in_loop = 0
        self.sync_count = 0

    # -- helpers ------------------------------------------------------
    def on(self, name):
        return self.gen.on(name)

    def use(self, name):
        self.gen.used.add(name)

    def emit(self, text):
        self.lines.append("  " * self.indent + text)

    def new_name(self, base="v"):
        self.gen.counter += 1
        return f"{base}{self.gen.counter}"

    def all_vars(self):
        out = {}
        for scope in self.scopes:
            out.update(scope)
        return out

    def usable(self, ty=None):
        return [
            v for v in self.all_vars().values()
            if v.name not in self.pending and (ty is None or v.ty == ty)
            and not (self.hide_collective and v.collective) and v.name not in self.dead
        ]

    def declare(self, ty, expr, bound, implicit=None):
        name = self.new_name()
        top = self.depth == 0 and len(self.scopes) == 1
        if implicit is None:
            implicit = top and self.rng.chance(0.6)
        if implicit:
            self.emit(f"{name} = {expr};")
        else:
            self.emit(f"{ty} {name} = {expr};")
        var = Var(name, ty, bound, top, self.varying(expr))
        var.size_dep = self.size_dep(expr)
        var.cdep = self.cdep(expr)
        var.epoch = self.epoch
        self.scopes[-1][name] = var
        return var

    def cdep(self, expr):
        """Whether expr computes with (not just copies) a collective's result."""
        known = self.all_vars()
        names = re.findall(r"\b[vcwjgp]\d+\b", expr)
        if expr.strip() in known:
            return known[expr.strip()].cdep
        return any(known[n].collective or known[n].cdep for n in names if n in known)

    def size_dep(self, expr):
        if "thread.size" in expr:
            return True
        known = self.all_vars()
        return any(known[n].size_dep for n in re.findall(r"\b[vcwjgp]\d+\b", expr) if n in known)

    def varying(self, expr):
        """Whether expr may differ between threads (a thread-dependent
        leaf or a variable that may)."""
        if VARYING.search(expr):
            return True
        known = self.all_vars()
        for name in re.findall(r"\b[vcwjgp]\d+\b", expr):
            v = known.get(name)
            if v is None or v.varying:
                return True
        return False

    def reset_modes(self):
        self.modes = {}

    # -- expressions --------------------------------------------------
    def wrap(self, text, bound):
        if bound is None or bound > LIM:
            return f"(({text}) % {MOD})", MOD - 1
        return text, bound

    def get_allowed(self):
        return self.get_ok and (self.on("get_consecutive") or not self.prev_step_get)

    def note_get(self):
        if self.prev_step_get:
            self.use("get_consecutive")
        self.step_get = True

    def array_index_read(self, arr):
        mode = self.modes.get(arr)
        if mode is None:
            if self.on("list_any_read") and self.rng.chance(0.5):
                self.use("list_any_read")
                self.modes[arr] = "read"
                return self.any_index()
            idx = perm(self.rng) if self.on("list_perm_write") and self.rng.chance(0.3) else "thread.rank"
            self.modes[arr] = ("own", idx)
            return idx
        if mode == "read":
            return self.any_index()
        return mode[1]

    def any_index(self):
        e, _ = self.ival(1, allow_arrays=False)
        return f"(({e}) % cap + cap) % cap"

    def array_index_write(self, arr):
        mode = self.modes.get(arr)
        if mode == "read":
            return None
        if mode is None:
            idx = perm(self.rng) if self.on("list_perm_write") and self.rng.chance(0.4) else "thread.rank"
            if idx != "thread.rank":
                self.use("list_perm_write")
            self.modes[arr] = ("own", idx)
            return idx
        return mode[1]

    def get_rank(self):
        """An in-range rank expression."""
        r = self.rng.int(0, 3)
        if r == 0:
            return "thread.rank"
        if r == 1:
            return "thread.size - 1 - thread.rank"
        if r == 2:
            return f"(thread.rank + {self.rng.int(1, 4)}) % thread.size"
        e, _ = self.ival(1, allow_arrays=False, allow_get=False)
        return f"(({e}) % thread.size + thread.size) % thread.size"

    def get_expr(self, ty):
        """thread.get of a variable of type ty, or None."""
        if not (self.on("get") or self.on("get_guarded")) or not self.get_allowed():
            return None
        cands = [v for v in self.usable(ty) if v.name in self.barrier_vars
                 and (v.varying or self.on("get_uniform"))]
        if any(not v.varying for v in cands):
            pass
        if not cands:
            return None
        v = self.rng.pick(cands)
        if not v.varying:
            self.use("get_uniform")
        self.note_get()
        if self.on("get_guarded") and (not self.on("get") or self.rng.chance(0.35)):
            self.use("get_guarded")
            zero = {"int": "-1", "unsigned": "7u", "float": "0.5f"}[ty]
            if self.rng.chance(0.5):
                return f"(thread.rank > 0 ? thread.get(thread.rank - 1, {v.name}) : {zero})", v.bound
            return f"(thread.rank + 1 < thread.size ? thread.get(thread.rank + 1, {v.name}) : {zero})", v.bound
        self.use("get")
        return f"thread.get({self.get_rank()}, {v.name})", v.bound

    def ival(self, d, allow_arrays=True, allow_get=True):
        rng = self.rng
        if d <= 0 or rng.chance(0.3):
            return self.ileaf(allow_arrays, allow_get)
        k = rng.int(0, 11)
        if k <= 2:
            a, ba = self.ival(d - 1, allow_arrays, allow_get)
            b, bb = self.ival(d - 1, allow_arrays, allow_get)
            op = rng.pick("+-")
            return f"({a} {op} {b})", ba + bb
        if k == 3:
            a, ba = self.ival(d - 1, allow_arrays, allow_get)
            b, bb = self.ival(d - 1, allow_arrays, allow_get)
            if ba * bb > LIM * 100:
                a, ba = f"({a} % 97)", 96
                b, bb = f"({b} % 89)", 88
            return f"({a} * {b})", ba * bb
        if k == 4:
            a, ba = self.ival(d - 1, allow_arrays, allow_get)
            c = rng.int(2, 9)
            op = rng.pick(["/", "%"])
            return f"({a} {op} {c})", ba if op == "/" else c - 1
        if k == 5:
            a, ba = self.ival(d - 1, allow_arrays, allow_get)
            b, bb = self.ival(d - 1, allow_arrays, allow_get)
            op = rng.pick("&|^")
            bound = 1
            while bound <= max(ba, bb):
                bound *= 2
            return f"({a} {op} {b})", bound * 2
        if k == 6 and self.on("ternary"):
            self.use("ternary")
            c = self.bval(d - 1, allow_arrays, allow_get)
            a, ba = self.ival(d - 1, allow_arrays, allow_get)
            b, bb = self.ival(d - 1, allow_arrays, allow_get)
            return f"({c} ? {a} : {b})", max(ba, bb)
        if k == 7 and self.on("unsigned"):
            self.use("unsigned")
            u = self.uval(d - 1, allow_arrays, allow_get)
            if rng.chance(0.5):
                return f"(int)({u} % 1000u)", 999
            return f"(int)({u} >> 22u)", 1023
        if k == 8 and self.on("float"):
            self.use("float")
            f, bf = self.fval(d - 1, allow_arrays, allow_get)
            return f"(int)({f})", int(bf) + 1
        if k == 9 and self.on("helper_fn"):
            a, _ = self.wrap(*self.ival(d - 1, allow_arrays, allow_get))
            b, _ = self.wrap(*self.ival(d - 1, allow_arrays, allow_get))
            return f"{self.gen.helper()}({a}, {b})", 1008
        if k == 10:
            a, ba = self.ival(d - 1, allow_arrays, allow_get)
            return f"(({a} & 255) << {rng.int(1, 4)})", 255 << 4
        a, ba = self.ival(d - 1, allow_arrays, allow_get)
        return f"(-{a})", ba

    def ileaf(self, allow_arrays=True, allow_get=True):
        rng = self.rng
        opts = [(3, "const"), (4, "var"), (2, "rank"), (1, "size"), (1, "host")]
        if self.set_changed and self.on("oldrank") and (self.set_changed != "inline" or self.on("oldrank_after_inline")) \
                and (self.set_changed != "collective" or self.on("oldrank_after_collective")):
            opts.append((1, "oldrank"))
        if allow_arrays:
            opts.append((2, "array"))
        if allow_get:
            opts.append((2, "get"))
        kind = rng.weighted(opts)
        if kind == "var":
            vs = self.usable("int")
            if vs:
                v = rng.pick(vs)
                if v.bound is None or v.bound > LIM:
                    return f"({v.name} % 1009)", 1008
                return v.name, v.bound
            kind = "const"
        if kind == "rank":
            return "thread.rank", RANK_BOUND
        if kind == "size":
            return "thread.size", RANK_BOUND
        if kind == "host":
            return rng.pick(["n", "m", "it", "z", "cap"]), RANK_BOUND
        if kind == "oldrank":
            self.use({"inline": "oldrank_after_inline", "collective": "oldrank_after_collective"}.get(self.set_changed, "oldrank"))
            return "thread.oldrank", RANK_BOUND
        if kind == "array":
            arr = rng.pick(["A0", "A1"])
            return f"{arr}[{self.array_index_read(arr)}]", LIM
        if kind == "get":
            g = self.get_expr("int")
            if g:
                text, bound = g
                if bound is None or bound > LIM:
                    return f"({text} % 1009)", 1008
                return text, bound
        c = rng.int(-40, 120)
        return (f"({c})" if c < 0 else str(c)), abs(c)

    def uval(self, d, allow_arrays=True, allow_get=True):
        rng = self.rng
        if d <= 0 or rng.chance(0.35):
            k = rng.int(0, 5)
            if k == 0:
                vs = self.usable("unsigned")
                if vs:
                    return rng.pick(vs).name
            if k == 1 and allow_arrays:
                return f"U0[{self.array_index_read('U0')}]"
            if k == 2 and allow_get:
                g = self.get_expr("unsigned")
                if g:
                    return g[0]
            if k == 3:
                return rng.pick(["3000000000u", "2147483648u", "7u", "4294967295u", "123456u"])
            a, _ = self.ival(0, allow_arrays, allow_get)
            return f"(unsigned)({a})"
        k = rng.int(0, 5)
        a = self.uval(d - 1, allow_arrays, allow_get)
        if k == 0:
            return f"({a} * 2654435761u)"
        if k == 1:
            return f"({a} ^ ({a} >> {rng.int(1, 31)}u))"
        if k == 2:
            b = self.uval(d - 1, allow_arrays, allow_get)
            return f"({a} {rng.pick('+-^|&')} {b})"
        if k == 3:
            return f"({a} % {rng.int(2, 5000)}u)"
        if k == 4:
            b = self.uval(d - 1, allow_arrays, allow_get)
            if self.on("ternary"):
                self.use("ternary")
                return f"({a} < {b} ? {a} : {b})"
            return f"({a} >> 1u)"
        i, _ = self.ival(d - 1, allow_arrays, allow_get)
        return f"({a} + (unsigned)({i}))"

    def fval(self, d, allow_arrays=True, allow_get=True):
        """(text, bound): an exact multiple of 1/4, |value| <= bound."""
        rng = self.rng
        if d <= 0 or rng.chance(0.35):
            k = rng.int(0, 4)
            if k == 0:
                vs = self.usable("float")
                if vs:
                    v = rng.pick(vs)
                    return v.name, v.bound
            if k == 1 and allow_arrays:
                return f"F0[{self.array_index_read('F0')}]", LIM
            if k == 2 and allow_get:
                g = self.get_expr("float")
                if g:
                    return g
            if k == 3:
                c = rng.int(-20, 40)
                return f"{c / 4:.2f}f", abs(c / 4)
            a, ba = self.ival(0, allow_arrays, allow_get)
            return f"(float)({a} % 400) * 0.25f", 100
        k = rng.int(0, 4)
        a, ba = self.fval(d - 1, allow_arrays, allow_get)
        if k <= 1:
            b, bb = self.fval(d - 1, allow_arrays, allow_get)
            res, bound = f"({a} {rng.pick('+-')} {b})", ba + bb
        elif k == 2:
            res, bound = f"({a} * 2.0f)", ba * 2
        elif k == 3 and self.on("ternary"):
            self.use("ternary")
            b, bb = self.fval(d - 1, allow_arrays, allow_get)
            c = self.bval(d - 1, allow_arrays, allow_get)
            res, bound = f"({c} ? {a} : {b})", max(ba, bb)
        else:
            i, _ = self.ival(d - 1, allow_arrays, allow_get)
            res, bound = f"({a} + (float)({i} % 64))", ba + 63
        if bound > LIM:
            return f"(float)((int)({res}) % 1000)", 999
        return res, bound

    def bval(self, d, allow_arrays=True, allow_get=True):
        rng = self.rng
        k = rng.int(0, 9)
        if d > 0 and k <= 1 and self.on("and_or"):
            self.use("and_or")
            a = self.bval(d - 1, allow_arrays, allow_get)
            b = self.bval(d - 1, allow_arrays, allow_get)
            return f"({a} {rng.pick(['&&', '||'])} {b})"
        if d > 0 and k == 2:
            return f"!{self.bval(d - 1, allow_arrays, allow_get)}"
        if k == 3 and self.on("unsigned"):
            self.use("unsigned")
            a = self.uval(d - 1, allow_arrays, allow_get)
            b = self.uval(d - 1, allow_arrays, allow_get)
            return f"({a} {rng.pick(['<', '>=', '==', '!='])} {b})"
        if k == 4 and self.on("float"):
            self.use("float")
            a, _ = self.fval(d - 1, allow_arrays, allow_get)
            b, _ = self.fval(d - 1, allow_arrays, allow_get)
            return f"({a} {rng.pick(['<', '>', '<=', '!='])} {b})"
        if k == 5:
            a, _ = self.ival(d - 1, allow_arrays, allow_get)
            return f"(({a} & {rng.pick([1, 2, 3, 4])}) == 0)"
        a, _ = self.ival(d - 1, allow_arrays, allow_get)
        b, _ = self.ival(d - 1, allow_arrays, allow_get)
        return f"({a} {rng.pick(['<', '>', '<=', '>=', '==', '!='])} {b})"

    # -- ordinary statements ------------------------------------------
    def simple_statement(self):
        rng = self.rng
        opts = [(5, "decl"), (3, "assign"), (3, "awrite"), (1, "info")]
        if self.depth < 2:
            if self.on("private_if"):
                opts.append((2, "if"))
            if self.on("private_loop"):
                opts.append((1, "for"))
                opts.append((1, "while"))
        if self.on("thread_printf") and self.gen.printfs < 2 and (not self.after_list or self.on("printf_after_compact")):
            opts.append((0.5, "printf"))
        if self.in_loop and self.on("private_loop"):
            opts.append((0.6, "jump"))
        kind = rng.weighted(opts)
        if kind == "decl":
            ty = rng.weighted([(6, "int"), (2 if self.on("unsigned") else 0, "unsigned"), (2 if self.on("float") else 0, "float")])
            if ty == "int":
                e, b = self.wrap(*self.ival(2))
                self.declare("int", e, b)
            elif ty == "unsigned":
                self.use("unsigned")
                self.declare("unsigned", self.uval(2), None)
            else:
                self.use("float")
                e, b = self.fval(2)
                self.declare("float", e, b)
            return
        if kind == "assign":
            vs = [v for v in self.usable() if v.name not in self.readonly]
            if self.in_loop and not self.on("get_loop_carried"):
                # A get source reassigned in a loop around the get is
                # rejected (found by difftest): keep get sources out of loops.
                vs = [v for v in vs if v.name not in self.barrier_vars]
            elif self.in_loop and any(v.name in self.barrier_vars for v in vs):
                self.use("get_loop_carried")
            if vs:
                v = rng.pick(vs)
                if v.ty == "int":
                    e, b = self.ival(2)
                    e, b = self.wrap(e, None if self.in_loop else b)
                    v.bound = max(v.bound or 0, b) if v.bound is not None else None
                    if self.depth == 0:
                        v.bound = b
                elif v.ty == "unsigned":
                    e = self.uval(2)
                else:
                    e, b = self.fval(2)
                    if self.in_loop:
                        e, b = f"(float)((int)({e}) % 1000)", 999
                    v.bound = max(v.bound, b) if self.depth else b
                self.emit(f"{v.name} = {e};")
                v.varying = v.varying or self.varying(e) or self.depth > 0
                v.size_dep = v.size_dep or self.size_dep(e)
                v.cdep = v.cdep or self.cdep(e)
                if self.depth == 0:
                    v.epoch = self.epoch
                # thread.get reads the value of the last barrier: the
                # frontend passes the variable's current version, so a
                # value reassigned since is no longer a get source.
                self.barrier_vars.discard(v.name)
                return
            kind = "awrite"
        if kind == "awrite":
            arr = rng.pick(["A0", "A1"] + (["U0"] if self.on("unsigned") else []) + (["F0"] if self.on("float") else []))
            # The value first: it may read the list (and fix its mode).
            if arr.startswith("A"):
                e, _ = self.wrap(*self.ival(2))
            elif arr == "U0":
                self.use("unsigned")
                e = self.uval(2)
            else:
                self.use("float")
                e, _ = self.fval(2)
            idx = self.array_index_write(arr)
            if idx is None:
                return
            self.emit(f"{arr}[{idx}] = {e};")
            return
        if kind == "info":
            if self.on("info_write"):
                self.use("info_write")
                e, _ = self.wrap(*self.ival(2))
                self.emit(f"if (thread.rank == 0) info[{self.gen.info_slot()}] = {e};")
            return
        if kind == "printf":
            self.use("thread_printf")
            if self.after_list:
                self.use("printf_after_compact")
            self.step_printf = True
            self.gen.printfs += 1
            e, _ = self.wrap(*self.ival(1))
            self.emit(f'printf("t{self.gen.counter} %d %d\\n", thread.rank, {e});')
            self.gen.counter += 1
            return
        if kind == "jump":
            self.use("private_loop")
            c = self.bval(1)
            self.emit(f"if ({c}) {rng.pick(['break', 'continue'])};")
            return
        if kind == "if":
            self.use("private_if")
            c = self.bval(2)
            self.emit(f"if ({c}) {{")
            self.block(rng.int(1, 3))
            if rng.chance(0.6):
                self.emit("} else {")
                self.block(rng.int(1, 3))
            self.emit("}")
            return
        if kind == "for":
            self.use("private_loop")
            j = self.new_name("j")
            e, _ = self.ival(1)
            bound = f"(({e}) % 4 + 4) % 4" if rng.chance(0.7) else str(rng.int(0, 3))
            self.emit(f"for (int {j} = 0; {j} < {bound}; {j}++) {{")
            self.scopes.append({j: Var(j, "int", 3, False)})
            self.readonly.add(j)  # the loop counts with it
            self.in_loop += 1
            self.block(rng.int(1, 3), push=False)
            self.in_loop -= 1
            self.readonly.discard(j)
            self.scopes.pop()
            self.emit("}")
            return
        if kind == "while":
            self.use("private_loop")
            w = self.new_name("w")
            e, _ = self.ival(1)
            self.emit(f"int {w} = (({e}) % 3 + 3) % 3;")
            self.scopes[-1][w] = Var(w, "int", 3, False)
            self.readonly.add(w)  # the loop counter is not assigned elsewhere
            self.emit(f"while ({w} > 0) {{")
            self.indent += 1
            self.emit(f"{w} = {w} - 1;")
            self.indent -= 1
            self.in_loop += 1
            self.block(rng.int(1, 2))
            self.in_loop -= 1
            self.emit("}")
            self.readonly.discard(w)
            return

    def block(self, count, push=True):
        self.indent += 1
        self.depth += 1
        if push:
            self.scopes.append({})
        for _ in range(count):
            self.simple_statement()
        if push:
            self.scopes.pop()
        self.depth -= 1
        self.indent -= 1

    # -- synchronization ---------------------------------------------
    def barrier(self, text="barrier;"):
        self.emit(text)
        self.after_barrier()

    def after_barrier(self):
        self.step_printf = False
        self.after_list = False
        self.barriers += 1
        for v in self.all_vars().values():
            v.collective = False
        self.prev_step_get = self.step_get
        self.step_get = False
        self.reset_modes()
        shifted = [v for v, k in self.pending.items() if k == "shift"]
        delivered = [v for v, k in self.pending.items() if k in ("perm", "shift")]
        for v in delivered:
            del self.pending[v]
        # A put's new value is defined at this barrier: the interpreter
        # treats it as a value of the next superstep (no get source).
        self.barrier_vars = {v.name for v in self.usable() if v.top} - set(delivered)
        self.get_ok = True
        for name in shifted:
            # rank 0 received nothing: read the value behind a guard only.
            var = self.all_vars()[name]
            c = self.rng.int(-5, 50)
            if self.rng.chance(0.5):
                self.emit(f"{name} = thread.rank > 0 ? {name} : {c};")
            else:
                flag = self.new_name("g")
                self.emit(f"{flag} = thread.rank > 0 && {name} > {c} ? 1 : 0;")
                self.scopes[0][flag] = Var(flag, "int", 1, True)
                self.emit(f"{name} = {flag} == 1 ? {name} : {c};")
            self.barrier_vars.discard(name)
            var.bound = max(var.bound or 0, abs(c)) if var.bound is not None else None

    def before_reassign(self):
        """Values defined before a thread primitive (fork, kill, sortby,
        split) and read after a later rank reassignment are read at the
        wrong rank by compiled code (found by difftest): without
        `primitive_then_reassign` they are not read any more."""
        old = {v.name for v in self.all_vars().values() if v.epoch < self.epoch}
        if not old:
            return
        if self.on("primitive_then_reassign"):
            self.use("primitive_then_reassign")
        else:
            self.dead |= old

    def set_change(self, how="plain", resizes=False, primitive=True):
        if primitive:
            self.epoch += 1
        if resizes and not self.on("size_across_change"):
            # A thread.size-derived value live across fork/kill does not
            # compile (found by difftest): not read afterwards.
            self.dead |= {v.name for v in self.all_vars().values() if v.size_dep}
        elif resizes and any(v.size_dep for v in self.all_vars().values()):
            self.use("size_across_change")
        self.set_changed = how
        self.get_ok = False
        self.barrier_vars = set()
        self.reset_modes()
        self.prev_step_get = self.step_get
        self.step_get = False

    def key(self, kinds):
        """(type, text) of a sort key among the enabled kinds."""
        kind = self.rng.pick(kinds)
        if kind == "int":
            e, _ = self.wrap(*self.ival(2))
            return kind, e
        if kind == "unsigned":
            return kind, self.uval(2)
        e, _ = self.fval(2)
        return kind, e

    def sync_statement(self):
        rng = self.rng
        g = self.gen
        opts = []
        if self.on("barrier") and self.barriers < 6:
            opts.append((4, "barrier"))
        if self.on("rank_reassign") and not self.pending_puts():
            opts.append((1, "reassign"))
        if (self.on("fork") or self.on("fork_zero") or self.on("empty_set")) and self.forks < 2:
            opts.append((1.5, "fork"))
        if self.on("kill") or self.on("empty_set"):
            opts.append((1, "kill"))
        sort_kinds = [t for t in ("int", "unsigned", "float") if self.on("sortby_" + t)]
        if sort_kinds:
            opts.append((1, "sortby"))
        if self.on("thread_split"):
            opts.append((0.7, "tsplit"))
        if self.on("reduce") or self.on("reduce_unsigned") or self.on("reduce_float"):
            opts.append((1.5, "reduce"))
        if self.on("scan"):
            opts.append((1, "scan"))
        if (self.on("compact") or self.on("split_list")) and self.kernel.list_uses < 2:
            opts.append((1, "compact"))
        idx_kinds = [t for t in ("int", "unsigned", "float") if self.on("sort_idx_" + t)]
        if idx_kinds:
            opts.append((1, "sort_idx"))
        if self.on("require") or self.on("require_alloc"):
            opts.append((1, "require"))
        if self.inline_kinds():
            opts.append((1.5, "inline"))
        if self.on("par"):
            opts.append((1, "par"))
        if (self.on("put_perm") or self.on("put_shift")) and self.on("barrier") and self.barriers < 6:
            opts.append((1, "put"))
        if not opts:
            return
        kind = rng.weighted(opts)
        if kind in ("reassign", "fork", "kill", "sortby", "tsplit", "inline") and self.pending_puts():
            kind = "barrier" if self.on("barrier") else None
            if kind is None:
                return
        self.sync_count += 1
        if kind in ("reduce", "scan", "compact", "sort_idx", "inline", "par") and self.step_printf:
            # Thread output of a superstep that ends at a collective is lost
            # by compiled code (found by difftest): a barrier first, unless
            # printf_before_collective.
            if self.on("printf_before_collective"):
                self.use("printf_before_collective")
            elif self.on("barrier") and not self.pending_puts():
                self.use("barrier")
                self.barrier()
            else:
                return
        if kind == "barrier":
            self.use("barrier")
            self.barrier()
        elif kind == "reassign":
            self.use("rank_reassign")
            self.before_reassign()
            self.emit("barrier(RANK_REASSIGNED);")
            self.emit(f"thread.oldrank = {self.reassign_perm()};")
            self.barriers += 1
            self.set_change(primitive=False)
        elif kind == "fork":
            self.forks += 1
            e, _ = self.ival(1)
            choices = []
            if self.on("fork"):
                choices.append(("fork", f"1 + (({e}) % 2 + 2) % 2"))
            if self.on("fork_zero"):
                choices.append(("fork_zero", f"thread.rank == 0 ? 1 : (({e}) % 3 + 3) % 3"))
            if self.on("empty_set"):
                choices.append(("empty_set", f"z == 0 ? 0 : (({e}) % 3 + 3) % 3"))
                choices.append(("empty_set", "m"))
            name, count = rng.pick(choices)
            self.use(name)
            c = self.new_name("c")
            self.emit(f"{c} = thread.fork({count});")
            self.set_change(resizes=True)
            self.scopes[0][c] = Var(c, "int", 3, True)
        elif kind == "kill":
            b = self.bval(1)
            if self.on("empty_set") and (not self.on("kill") or rng.chance(0.4)):
                self.use("empty_set")
                self.emit(f"thread.kill(z == 0 || {b});")
            else:
                self.use("kill")
                self.emit(f"thread.kill(thread.rank != 0 && {b});")
            self.set_change(resizes=True)
        elif kind == "sortby":
            ty, k = self.key(sort_kinds)
            self.use("sortby_" + ty)
            self.emit(f"thread.sortby({k});")
            self.set_change()
        elif kind == "tsplit":
            self.use("thread_split")
            self.emit(f"thread.split({self.bval(1)});")
            self.set_change()
        elif kind in ("reduce", "scan", "compact", "sort_idx"):
            before = set(self.scopes[0])
            if kind == "reduce":
                self.reduce_statement()
            elif kind == "scan":
                self.scan_statement()
            elif kind == "compact":
                self.compact_statement()
            else:
                ty, k = self.key(idx_kinds)
                self.use("sort_idx_" + ty)
                self.declare("int", f"sort_idx({k})", RANK_BOUND, implicit=True)
            fresh = set(self.scopes[0]) - before
            for name in fresh:
                self.scopes[0][name].collective = True
            self.after_collective(fresh)
        elif kind == "require":
            self.require_statement()
        elif kind == "inline":
            fn = self.inline_call()
            if fn is not None and fn.kind in ("reduce", "scan", "sort_idx"):
                self.after_collective()
        elif kind == "par":
            self.par_statement()
            self.after_collective()
        elif kind == "put":
            self.put_statement()

    def reassign_perm(self):
        p = perm(self.rng)
        if p == "thread.rank":
            if self.on("reassign_identity"):
                self.use("reassign_identity")
            else:
                p = "thread.size - 1 - thread.rank"
        return p

    def after_collective(self, fresh=()):
        """thread.oldrank after a collective is rejected (found by difftest):
        without `oldrank_after_collective` it is not read any more. Values
        computed from an earlier collective's result do not compile after
        another collective (found by difftest): without
        `collective_derived_value` they are not read any more."""
        if self.set_changed:
            self.set_changed = "collective"
        derived = {v.name for v in self.all_vars().values() if v.cdep and v.name not in fresh}
        if derived:
            if self.on("collective_derived_value"):
                self.use("collective_derived_value")
            else:
                self.dead |= derived

    def pending_puts(self):
        return any(k in ("perm", "shift") for k in self.pending.values())

    def reduce_statement(self):
        rng = self.rng
        kinds = [t for t, c in (("int", "reduce"), ("unsigned", "reduce_unsigned"), ("float", "reduce_float")) if self.on(c)]
        ty = rng.pick(kinds)
        if ty == "int":
            self.use("reduce")
            op = rng.pick(["+", "*", "min", "max", "&", "|", "^"])
            if op == "*":
                e = f"(({self.ival(1)[0]}) % 3 == 0 ? -1 : 1)"
                bound = 1
            else:
                e, b = self.wrap(*self.ival(2))
                bound = None if op in ("+", "&", "|", "^") else b
                if op in ("&", "|", "^"):
                    bound = 16384
                if op == "+":
                    bound = b * 700
            self.declare("int", f"reduce({op}, {e})", bound, implicit=True).varying = False
        elif ty == "unsigned":
            self.use("reduce_unsigned")
            op = rng.pick(["+", "*", "min", "max", "&", "|", "^"])
            self.declare("unsigned", f"reduce({op}, {self.uval(2)})", None, implicit=True).varying = False
        else:
            self.use("reduce_float")
            op = rng.pick(["+", "min", "max"])
            e, b = self.fval(2)
            if op == "+":
                # sums of at most 700 values: keep the total below 2^24/4
                e, b = f"(float)((int)({e}) % 16)", 15
                v = self.declare("float", f"reduce(+, {e})", b * 700, implicit=True)
                v.varying = False
                self.emit(f"{v.name} = (float)((int)({v.name}) % 1000);")
                v.bound = 999
            else:
                self.declare("float", f"reduce({op}, {e})", b, implicit=True).varying = False

    def scan_statement(self):
        rng = self.rng
        self.use("scan")
        ty = rng.weighted([(3, "int"), (1 if self.on("unsigned") else 0, "unsigned"), (1 if self.on("float") else 0, "float")])
        if ty == "int":
            e, b = self.wrap(*self.ival(2))
            x = self.declare("int", e, b, implicit=True)
            op = rng.pick(["+", "max", "min", "^", "|"])
            t = self.declare("int", f"scan({op}, {x.name})", None, implicit=True)
            t.varying = False
            x.bound = None
        elif ty == "unsigned":
            x = self.declare("unsigned", self.uval(2), None, implicit=True)
            op = rng.pick(["+", "*", "max", "min", "^"])
            self.declare("unsigned", f"scan({op}, {x.name})", None, implicit=True).varying = False
        else:
            e, b = self.fval(1)
            x = self.declare("float", f"(float)((int)({e}) % 16)", 15, implicit=True)
            t = self.declare("float", f"scan(+, {x.name})", 15 * 700, implicit=True)
            t.varying = False
            self.emit(f"{x.name} = (float)((int)({x.name}) % 1000);")
            self.emit(f"{t.name} = (float)((int)({t.name}) % 1000);")
            x.bound = 999
            t.bound = 999

    def compact_statement(self):
        rng = self.rng
        kinds = [c for c in ("compact", "split_list") if self.on(c)]
        which = rng.pick(kinds)
        self.use(which)
        first = self.kernel.list_uses == 0
        self.kernel.list_uses += 1
        flag = "true" if first else rng.pick(["true", "false"])
        lst = rng.pick(["L0", "L1"] if self.on("float") else ["L0"])
        self.kernel.list_flags.append(lst)
        if lst == "L1":
            self.use("float")
            src, _ = self.fval(2)
        else:
            src, _ = self.wrap(*self.ival(2))
        if first:
            # The first use of each list in a kernel clears it (the length of a
            # list parameter is known only after a clearing call).
            pass
        if lst in self.kernel.lists_cleared:
            pass
        else:
            flag = "true"
            self.kernel.lists_cleared.add(lst)
        b = self.bval(1)
        # Thread output right after compact/split is printed by rank 0 alone
        # (found by difftest): no printf until the next barrier unless
        # printf_after_compact.
        self.after_list = True
        name = "compact" if which == "compact" else "split"
        v = self.declare("int", f"{name}({lst}, {src}, {b}, {flag})", 2 * RANK_BOUND, implicit=True)
        v.varying = False
        if self.on("info_write"):
            self.use("info_write")
            self.emit(f"if (thread.rank == 0) info[{self.gen.info_slot()}] = {v.name};")

    def require_statement(self):
        rng = self.rng
        k = self.kernel
        kinds = []
        if self.on("require"):
            kinds += ["size", "host"]
        if self.on("require_alloc"):
            kinds.append("alloc")
        kind = rng.pick(kinds)
        if kind == "size":
            self.use("require")
            h = k.host_int()
            self.emit(f"require {{ {h} = thread.size * 10 + it; }}")
        elif kind == "host":
            self.use("require")
            j = self.new_name("j")
            self.emit(f"require {{")
            self.emit(f"  for (int {j} = 0; {j} < 4; {j}++) HA[{j} + {rng.int(0, 4)}] = HA[{j}] % 1000 + thread.size * ({j} + 1) + it;")
            self.emit("}")
        else:
            self.use("require_alloc")
            h = k.host_int()
            lst = k.host_list()
            alloc = rng.pick(["dnew", "dtempnew"])
            self.emit(f"require {{ {h} = thread.size; {lst} = {alloc}[thread.size + 1]int; }}")
            e, _ = self.wrap(*self.ival(2))
            self.emit(f"{lst}[thread.rank] = {e};")
            k.after.append(f'printf("{lst}:");')
            k.after.append(f"for (int i = 0; i < {h}; i++) printf(\" %d\", {lst}[i]);")
            k.after.append('printf("\\n");')

    def put_statement(self):
        rng = self.rng
        vs = [v for v in self.usable("int") if v.top and v.name not in self.readonly]
        kinds = [c for c in ("put_perm", "put_shift") if self.on(c)]
        kind = rng.pick(kinds)
        if vs and rng.chance(0.5):
            p = rng.pick(vs)
        else:
            p = self.declare("int", "0", 0, implicit=True)
        e, b = self.wrap(*self.ival(2))
        if kind == "put_perm":
            self.use("put_perm")
            self.emit(f"thread.put({perm(rng)}, {p.name}, {e});")
            self.pending[p.name] = "perm"
        else:
            self.use("put_shift")
            self.emit(f"thread.put(thread.rank + 1, {p.name}, {e});")
            self.pending[p.name] = "shift"
        p.bound = b
        if self.on("barrier"):
            # A put must reach a barrier: emit it now or soon.
            self.use("barrier")
            if rng.chance(0.5):
                self.simple_statement()
            self.barrier()

    def inline_kinds(self):
        kinds = []
        if self.on("inline_barrier") and self.barriers < 6:
            kinds.append("barrier_get")
        if self.on("inline_get_param") and self.barriers < 6:
            kinds.append("get_param")
        if self.on("inline_collective"):
            kinds += ["reduce", "scan"]
            if self.on("sort_idx_int") and self.barriers < 6:
                kinds.append("sort_idx")
        if self.on("inline_reassign") and self.barriers < 6:
            kinds.append("reassign")
        return kinds

    def inline_call(self, kinds=None, target=None):
        """A call of a new inline function; returns the function."""
        rng = self.rng
        kinds = kinds or self.inline_kinds()
        if self.step_get and not self.on("get_consecutive"):
            kinds = [k for k in kinds if k not in ("barrier_get", "get_param")]
        if not kinds:
            return None
        kind = rng.pick(kinds)
        if kind == "reassign":
            self.before_reassign()
        fn = self.gen.inline_fn(kind, self)
        if fn.reassign:
            self.use("inline_reassign")
            self.emit(f"{fn.name}();")
            self.barriers += 1
            self.set_change("inline", primitive=False)
            return fn
        args = []
        for _ in range(fn.ret):
            e, _ = self.wrap(*self.ival(1, allow_get=not fn.has_get))
            args.append(e)
        call = f"{fn.name}({', '.join(args)})"
        at_barrier = {v.name for v in self.usable() if v.top}
        if target is not None:
            self.emit(f"{target} = {call};")
        else:
            self.declare("int", call, MOD, implicit=True)
        if fn.has_barrier:
            self.barriers += 1
            if self.set_changed:
                # thread.oldrank after an inline function with a barrier is
                # rejected like after one that reassigns ranks.
                self.set_changed = "inline"
            self.prev_step_get = self.step_get
            self.step_get = fn.has_get
            self.reset_modes()
            self.get_ok = True
            self.barrier_vars = at_barrier
        return fn

    def par_statement(self):
        # A collective's result read in a par branch before its barrier does
        # not compile (found by difftest): hidden unless par_after_collective.
        # The branches are collectives too: values computed from earlier
        # collective results are not read in them (see after_collective).
        self.after_collective()
        if any(v.collective for v in self.all_vars().values()):
            if self.on("par_after_collective"):
                self.use("par_after_collective")
            else:
                self.hide_collective = True
        try:
            self.par_statement_body()
        finally:
            self.hide_collective = False

    def par_statement_body(self):
        rng = self.rng
        self.use("par")
        branches = rng.int(2, 3)
        before = {v.name for v in self.usable() if v.top}
        decls = []
        declared = []
        texts = []
        had_barrier = False
        had_get = False
        for _ in range(branches):
            opts = [(2, "sort_idx"), (2, "reduce")]
            if self.on("par_barrier") and self.on("barrier") and self.barriers < 6:
                opts.append((3, "block"))
            inl = [k for k in self.inline_kinds() if k != "reassign"]
            if not self.on("par_get") or (self.step_get and not self.on("get_consecutive")):
                inl = [k for k in inl if k not in ("barrier_get", "get_param")]
            if inl:
                opts.append((2, "inline"))
            kind = rng.weighted(opts)
            name = self.new_name()
            if kind == "sort_idx":
                if self.on("sort_idx_int"):
                    self.use("sort_idx_int")
                    e, _ = self.wrap(*self.ival(1, allow_get=False))
                    texts.append([f"{name} = sort_idx({e});"])
                else:
                    e, _ = self.wrap(*self.ival(1, allow_get=False))
                    texts.append([f"{name} = reduce(max, {e});"])
                    self.use("reduce")
            elif kind == "reduce":
                self.use("reduce")
                e, _ = self.wrap(*self.ival(1, allow_get=False))
                texts.append([f"{name} = reduce(+, {e} % 100);"])
            elif kind == "inline":
                fn = self.gen.inline_fn(rng.pick(inl), self)
                if fn.has_get:
                    self.use("par_get")
                had_barrier |= fn.has_barrier
                had_get |= fn.has_get
                args = ", ".join(self.wrap(*self.ival(1, allow_get=False))[0] for _ in range(fn.ret))
                texts.append([f"{name} = {fn.name}({args});"])
            else:
                self.use("par_barrier")
                had_barrier = True
                decls.append(name)
                lines = ["{"]
                e, _ = self.wrap(*self.ival(1, allow_get=False))
                tmp = self.new_name("p")
                lines.append(f"  int {tmp} = {e};")
                lines.append("  barrier;")
                if self.on("par_get") and (self.on("get") or self.on("get_guarded")) and (self.on("get_consecutive") or not self.step_get):
                    self.use("par_get")
                    self.use("get")
                    had_get = True
                    src = rng.pick(sorted(before)) if before and rng.chance(0.5) else None
                    srcv = self.all_vars().get(src) if src else None
                    if srcv is not None and srcv.ty == "int":
                        lines.append(f"  {name} = ({tmp} + thread.get((thread.rank + 1) % thread.size, {src}) % 1009) % {MOD};")
                    else:
                        lines.append(f"  {name} = ({tmp} + thread.get((thread.rank + 1) % thread.size, {tmp})) % {MOD};")
                else:
                    lines.append(f"  {name} = ({tmp} * 3 + thread.rank) % {MOD};")
                lines.append("}")
                texts.append(lines)
            if kind != "block":
                decls.append(None)
            declared.append(Var(name, "int", None if kind == "reduce" else MOD, True, varying=kind != "reduce"))
        for v in declared:
            self.scopes[0][v.name] = v
        for d in decls:
            if d:
                self.emit(f"{d} = 0;")
        self.emit("par {")
        for t in texts:
            for line in t:
                self.emit("  " + line)
        self.emit("}")
        if had_barrier:
            self.barriers += 1
            if self.set_changed:
                self.set_changed = "inline"
            self.prev_step_get = self.step_get
            self.step_get = had_get
            self.reset_modes()
            self.get_ok = True
            self.barrier_vars = before - set(self.pending)

    # -- the body -----------------------------------------------------
    def generate(self, statements):
        rng = self.rng
        # Values every program starts with.
        e, b = self.wrap(*self.ival(2))
        self.declare("int", e, b, implicit=True)
        for _ in range(statements):
            if rng.chance(0.35):
                self.sync_statement()
            else:
                self.simple_statement()
        # Make the last values visible.
        if self.pending_puts():
            self.barrier()
        vs = [v for v in self.usable("int") if v.top]
        if vs:
            v = rng.pick(vs)
            text = v.name if (v.bound is not None and v.bound <= LIM) else f"({v.name} % 1009)"
            idx = self.array_index_write("A1")
            if idx is not None:
                self.emit(f"A1[{idx}] = {text};")
        return self.lines


class Kernel:
    def __init__(self, gen, index):
        self.gen = gen
        self.name = f"{gen.prefix}k{index}"
        self.host_vars = []
        self.host_lists = []
        self.after = []
        self.list_uses = 0
        self.list_flags = []
        self.lists_cleared = set()

    def host_int(self):
        name = f"hs{len(self.host_vars)}"
        self.host_vars.append(name)
        return name

    def host_list(self):
        name = f"rq{len(self.host_lists)}"
        self.host_lists.append(name)
        return name


class BsgpGenerator:
    """Random BSGP programs (see the module docstring)."""

    CONSTRUCTS = CONSTRUCTS
    DEFAULT_OFF = DEFAULT_OFF
    KNOWN_BUGS = KNOWN_BUGS
    FOUND_BUGS = FOUND_BUGS
    LANG = "bsgp"
    EXT = ".bsgp"

    def on(self, name):
        return name in self.enabled

    def info_slot(self):
        self.info_next += 1
        return (self.info_next - 1) % 32

    def helper(self):
        self.used.add("helper_fn")
        if self.helpers and self.rng.chance(0.6):
            return self.rng.pick(self.helpers)
        name = f"{self.prefix}h{len(self.helpers)}"
        a, b = self.rng.int(2, 40), self.rng.int(-9, 9)
        body = self.rng.pick([
            f"return (a * {a} + b) % 1009;",
            f"if (a > b) return (a - b) % 1009; return (b * {a} + {b}) % 1009;",
            f"int s = 0; for (int i = 0; i < 3; i++) s = (s + a * i + b) % 1009; return s;",
        ])
        self.functions.append(f"inline int {name}(int a, int b) {{ {body} }}")
        self.helpers.append(name)
        return name

    def inline_fn(self, kind, body):
        rng = self.rng
        name = f"{self.prefix}f{self.counter}"
        self.counter += 1
        if kind == "barrier_get":
            self.used.add("inline_barrier")
            self.used.add("get")
            r = rng.pick(["(thread.rank + 1) % thread.size", "thread.size - 1 - thread.rank", "thread.rank"])
            text = (
                f"inline int {name}(int a) {{\n"
                f"  int y = (a * {rng.int(2, 9)} + thread.rank) % 1009;\n"
                f"  barrier;\n"
                f"  return (y + thread.get({r}, y)) % {MOD};\n"
                f"}}"
            )
            fn = InlineFn(name, text, kind, True, True, False, 1)
        elif kind == "get_param":
            self.used.add("inline_get_param")
            self.used.add("get_guarded")
            text = (
                f"inline int {name}(int v) {{\n"
                f"  barrier;\n"
                f"  return thread.rank > 0 ? thread.get(thread.rank - 1, v) : -1;\n"
                f"}}"
            )
            fn = InlineFn(name, text, kind, True, True, False, 1)
        elif kind == "reduce":
            self.used.add("inline_collective")
            self.used.add("reduce")
            op = rng.pick(["+", "max", "min"])
            text = (
                f"inline int {name}(int a) {{\n"
                f"  int t = reduce({op}, a % 100);\n"
                f"  return (t + a) % {MOD};\n"
                f"}}"
            )
            fn = InlineFn(name, text, kind, False, False, False, 1)
        elif kind == "scan":
            self.used.add("inline_collective")
            self.used.add("scan")
            text = (
                f"inline int {name}(int a) {{\n"
                f"  int s = a % 100;\n"
                f"  int t = scan(+, s);\n"
                f"  return (s * 3 + t) % {MOD};\n"
                f"}}"
            )
            fn = InlineFn(name, text, kind, False, False, False, 1)
        elif kind == "sort_idx":
            self.used.add("inline_collective")
            self.used.add("sort_idx_int")
            text = (
                f"inline int {name}(int a) {{\n"
                f"  int s = sort_idx(a % 50);\n"
                f"  barrier;\n"
                f"  return s;\n"
                f"}}"
            )
            fn = InlineFn(name, text, kind, True, False, False, 1)
        else:
            self.used.add("inline_reassign")
            text = (
                f"inline void {name}() {{\n"
                f"  barrier(RANK_REASSIGNED);\n"
                f"  thread.oldrank = {body.reassign_perm()};\n"
                f"}}"
            )
            fn = InlineFn(name, text, kind, True, False, True, 0)
        self.functions.append(fn.text)
        return fn

    def spawn_size(self):
        return self.rng.pick(["n", "n", "n + it", "n / 2 + 1", "m + 1", "n + m"])

    def kernel(self, index):
        rng = self.rng
        k = Kernel(self, index)
        spawns = 2 if self.on("two_spawns") and rng.chance(0.3) else 1
        if spawns == 2:
            self.used.add("two_spawns")
        body_lines = []
        for s in range(spawns):
            body = Body(self, k)
            lines = body.generate(rng.int(6, 18))
            size = self.spawn_size()
            body_lines.append(f"  spawn({size}) {{")
            body_lines.extend("  " + line for line in lines)
            body_lines.append("  }")
            if s == 0 and spawns == 2:
                body_lines.append("  HA[7] = HA[7] + 1;")
        out = [
            f"void {k.name}(int n, int m, int z, int it, int cap, int* A0, int* A1, "
            f"unsigned* U0, float* F0, int* L0, float* L1, int* info, int* HA) {{"
        ]
        for h in k.host_vars:
            out.append(f"  int {h} = -1;")
        for lst in k.host_lists:
            out.append(f"  int* {lst} = NULL;")
        out.extend(body_lines)
        for h in k.host_vars:
            out.append(f'  printf("{h} %d\\n", {h});')
        out.extend("  " + a for a in k.after)
        out.append("}")
        return k, out

    def generate(self, seed, enabled, prefix="", arg_base=0):
        self.rng = Rng(seed * 7919 + 17)
        self.enabled = set(enabled)
        self.prefix = prefix
        self.used = set()
        self.counter = 0
        self.info_next = 0
        self.functions = []
        self.helpers = []
        self.printfs = 0
        rng = self.rng
        kernels = []
        for i in range(rng.int(1, 3)):
            kernels.append(self.kernel(i))
        iterations = rng.int(2, 3) if self.on("host_loop") else 1
        if iterations > 1:
            self.used.add("host_loop")
        n0 = rng.int(1, 10)
        m0 = rng.int(1, 3)
        a = arg_base
        main = [
            f"int {prefix}main({main_params(a)}) {{",
            f"  int n = argi({arg_index(a, 0)}, {n0});",
            f"  int m = argi({arg_index(a, 1)}, {m0});",
            f"  int z = argi({arg_index(a, 2)}, 1);",
            "  if (n < 0) n = 0;",
            "  if (n > 64) n = 64;",
            "  if (m < 0) m = 0;",
            "  if (m > 3) m = 3;",
            "  int cap = (n + 4) * 9 + 1;",
            "  int* A0 = dnew[cap]int;",
            "  int* A1 = dnew[cap]int;",
            "  unsigned* U0 = dnew[cap]unsigned;",
            "  float* F0 = dnew[cap]float;",
            "  int* L0 = dnew[2 * cap]int;",
            "  float* L1 = dnew[2 * cap]float;",
            "  int* info = dnew[32]int;",
            "  int* HA = dnew[16]int;",
            "  for (int i = 0; i < cap; i++) {",
            f"    A0[i] = (i * {rng.int(3, 97)} + {rng.int(0, 50)}) % 1000 - {rng.int(0, 500)};",
            f"    A1[i] = (i * i + {rng.int(0, 9)}) % {rng.int(5, 300)};",
            f"    U0[i] = (unsigned)i * 2654435761u + {rng.int(0, 99)}u;",
            f"    F0[i] = (float)((i * {rng.int(3, 17)}) % 40 - 20) * 0.25f;",
            "  }",
            "  for (int i = 0; i < 2 * cap; i++) { L0[i] = -1; L1[i] = -1.0f; }",
            "  for (int i = 0; i < 32; i++) info[i] = -7;",
            "  for (int i = 0; i < 16; i++) HA[i] = i;",
            f"  for (int it = 0; it < {iterations}; it++) {{",
        ]
        for k, _ in kernels:
            main.append(f"    {k.name}(n, m, z, it, cap, A0, A1, U0, F0, L0, L1, info, HA);")
        main += [
            '    printf("it %d\\nA0", it);',
            '    for (int i = 0; i < cap; i++) printf(" %d", A0[i]);',
            '    printf("\\nA1");',
            '    for (int i = 0; i < cap; i++) printf(" %d", A1[i]);',
            '    printf("\\nU0");',
            '    for (int i = 0; i < cap; i++) printf(" %u", U0[i]);',
            '    printf("\\nF0");',
            '    for (int i = 0; i < cap; i++) printf(" %.2f", F0[i]);',
            '    printf("\\nL0");',
            '    for (int i = 0; i < 2 * cap; i++) printf(" %d", L0[i]);',
            '    printf("\\nL1");',
            '    for (int i = 0; i < 2 * cap; i++) printf(" %.2f", L1[i]);',
            '    printf("\\ninfo");',
            '    for (int i = 0; i < 32; i++) printf(" %d", info[i]);',
            '    printf("\\nHA");',
            '    for (int i = 0; i < 16; i++) printf(" %d", HA[i]);',
            '    printf("\\n");',
            "  }",
            "  return 0;",
            "}",
        ]
        arg_sets = [[str(n0), str(m0), "1"]]
        n1 = rng.pick([1, 2, 3, 7, 13, 17, 33])
        arg_sets.append([str(n1), str(rng.int(1, 3)), "1"])
        if "empty_set" in self.used:
            arg_sets.append([str(n0), "0", "0"])
            arg_sets.append(["0", str(m0), "1"])
        self.used.add("spawn")
        lines = header_lines(self.LANG, seed, arg_sets, self.used)
        lines.append("")
        for f in self.functions:
            lines.extend(f.split("\n"))
            lines.append("")
        for _, text in kernels:
            lines.extend(text)
            lines.append("")
        lines.extend(main)
        return Program(self.LANG, seed, "\n".join(lines) + "\n", arg_sets, self.used)


def main(argv=None):
    return cli(BsgpGenerator, argv)


if __name__ == "__main__":
    sys.exit(main())
