#!/usr/bin/env python3
"""Random Fork programs for differential testing (issue 39).

    gen_fork.py SEED [--disable a,b] [--only a,b]
                [--list-constructs] [--constructs]

A seed gives one program, the same on every machine. `main` reads the
group sizes with `argi`, initializes the globals, runs one or more
`start(P)` groups (in a host loop) and prints every global afterwards.

How the generator keeps the output deterministic (docs/models.md; the
subgroups of one split run in an undefined order, and `farm` members
asynchronously):

- Concurrency. `split` counts the enclosing splits whose subgroups run
  side by side: the arms of an `if` on a private condition and the bodies
  of a `fork`. (A shrinking loop runs its remaining members alone; an
  `if` on a uniform value takes one arm.) Globals g0, g1 and M2 (2-D) are
  written only where split = 0, at any index (Priority CRCW); o0 and o1
  only at [me] (me is the processor's start rank); mk only at cells keyed
  by the subgroup (its arm and fork id), so sibling subgroups never share
  a cell. `sh` locals are written only by the group that declared them
  (not from inside its splits). Multiprefix follows the same rules.
- `farm`: members write only their own elements; a `barrier` separates
  the phases in which they read other members' elements. Multiprefix
  results are unused there, and the multiprefixes on shared cells (`mc`)
  between two barriers are of one kind (an `mpor` and an `mpmax` of one
  cell do not commute). `seq` prints
  only where split = 0.
- `$` follows the Fork book: set by `start` and fork's `$ = e`,
  inherited unchanged by the subgroups of private `if`s and loops and by
  `?:` arms (`dollar_inherited`). Where `$` is 0..groupsize()-1 in order
  (directly in a start or fork body, in functions called there, and under
  `if`s on uniform values, after start, the `fork` headers `$ = $ / k`
  (with `@ = $ % k`) and the halving `$ < half ? $ : $ - half`) it also
  makes rank-like fork headers. `$$` (the group rank renumbered at every
  split, `dollar2`) may appear anywhere in synchronous code.
- No call of a sync function follows a conditional `return` in the rest
  of its function, or a `break`/`continue` in the rest of its loop (the
  frontend rejects one, csubset::E901).
- Values: ints bounded below 10^4 (reduced `% 10007`), no division by
  non-constants, every array element initialized by the host first.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Program, Rng, arg_index, cli, header_lines, main_params  # noqa: E402

LIM = 10000
MOD = 10007
MAXP = 320
KEYS = 128  # keyed cells per site in mk (subgroups of 3 levels of splits)
SITES = 8

CONSTRUCTS = {
    "host_loop": "a host for loop around the start blocks",
    "multi_start": "several start blocks of different sizes",
    "large_group": "an argument set with more processors than a thread block (300)",
    "private_if": "if/else on private values (splits the group)",
    "uniform_if": "if on uniform values (no split)",
    "private_loop": "while/for loops on private values (shrinking groups)",
    "uniform_loop": "for loops with uniform trip counts",
    "break_continue": "break and continue in private loops",
    "ternary": "?: (on private values: a split in an expression)",
    "and_or": "&& and || in conditions",
    "fork": "fork(k; @ = e; $ = e) stmt",
    "fork_skip": "fork ids outside 0..k-1 (those members skip the body)",
    "fork_halving": "the halving header fork(2; @ = $ < half ? 0 : 1; $ = $ < half ? $ : $ - half)",
    "nested_fork": "fork inside fork",
    "dollar": "$ where every definition agrees",
    "dollar2": "$$ (the group rank renumbered at every split)",
    "dollar_inherited": "$ in subgroups of private if/loops and ?: arms (inherited, the Fork book's definition)",
    "dollar_in_loop": "$ in the body of a loop with a uniform trip count",
    "group_id": "@ reads",
    "groupsize": "groupsize() reads",
    "sync_fn": "sync functions called from group code",
    "sh_param": "sync functions with sh parameters",
    "sh_ptr_param": "sh arrays passed as pointers to sync functions",
    "early_return": "return inside private control in sync functions",
    "recursion": "recursive sync functions (fork or if splits, sh locals)",
    "sh_local": "sh scalar locals",
    "sh_array": "sh array locals",
    "seq": "seq { } (rank 0 of the group alone)",
    "seq_printf": "printf in seq",
    "farm": "farm { } with barriers",
    "mp_in_farm": "multiprefix in farm",
    "mp_in_seq": "multiprefix in seq",
    "mpadd": "mpadd",
    "mpmax": "mpmax",
    "mpand": "mpand",
    "mpor": "mpor",
    "mp_keyed": "multiprefix on cells keyed by the subgroup",
    "crcw": "concurrent writes to one cell (Priority CRCW)",
    "crcw_keyed": "concurrent writes in subgroups on keyed cells",
    "array_2d": "2-D global arrays",
    "own_slot": "writes at the processor's own element",
}

DEFAULT_OFF = set()

# Constructs behind open known bugs (/work/shared/bugs/fork), which the lit
# tests turn off until the fixes land: none open.
KNOWN_BUGS = {}

# Constructs behind open bugs this generator found (test-suite/difftest/found/):
# none open.
FOUND_BUGS = {}


class Var:
    __slots__ = ("name", "bound", "shared", "group", "array", "readonly")

    def __init__(self, name, bound, shared=False, group=None, array=0, readonly=False):
        self.name = name
        self.bound = bound  # None: any int
        self.shared = shared
        self.group = group
        self.array = array  # element count of an sh array (0: scalar)
        self.readonly = readonly


class Ctx:
    """Where a statement stands (copied for nested bodies)."""

    def __init__(self):
        self.split = 0
        self.dollar = "canonical"  # "canonical" | "explicit" | "inherited" | "none"
        self.me_is_dollar = True
        self.group = 0
        self.key = ("0", 1)  # (private int expression, range) naming the subgroup
        self.loop = 0
        # The function being generated (for return); its "exited" is set
        # once a conditional `return` was emitted, and the loop's
        # `loop_exit["exited"]` once a `break`/`continue` was (both shared by
        # the copies): the frontend rejects a sync call after one
        # (csubset::E901), so none follows.
        self.func = None
        self.loop_exit = None
        self.mode = "sync"  # "sync" | "seq" | "farm"
        self.depth = 0
        self.farm = None  # farm phase state: {"written": set(), "read": set()}

    def copy(self, **kw):
        c = Ctx()
        c.__dict__.update(self.__dict__)
        c.__dict__.update(kw)
        return c


class ForkGenerator:
    """Random Fork programs (see the module docstring)."""

    CONSTRUCTS = CONSTRUCTS
    DEFAULT_OFF = DEFAULT_OFF
    KNOWN_BUGS = KNOWN_BUGS
    FOUND_BUGS = FOUND_BUGS
    LANG = "fork"
    EXT = ".fork"

    def on(self, name):
        return name in self.enabled

    def use(self, name):
        self.used.add(name)

    def name(self, base="v"):
        self.counter += 1
        return f"{base}{self.counter}"

    def gname(self, base):
        return f"{self.prefix}{base}"

    # -- scopes ---------------------------------------------------------
    def push(self):
        self.scopes.append({})

    def pop(self):
        self.scopes.pop()

    def vars(self):
        out = {}
        for s in self.scopes:
            out.update(s)
        return out

    def add(self, var):
        self.scopes[-1][var.name] = var
        return var

    def emit(self, ctx, text):
        self.out.append("  " * (ctx.depth + 2) + text)

    # -- expressions ----------------------------------------------------
    def wrap(self, text, bound):
        if bound is None or bound > LIM:
            return f"(({text}) % {MOD})", MOD - 1
        return text, bound

    def idx(self, e, n):
        return f"((({e}) % {n} + {n}) % {n})"

    def uniform(self, ctx, d):
        """(text, bound) of a value that is the same in every member."""
        rng = self.rng
        opts = [(3, "const"), (2, "host")]
        if self.on("groupsize"):
            opts.append((2, "size"))
        if self.on("group_id"):
            opts.append((1, "id"))
        shs = [v for v in self.vars().values() if v.shared and not v.array]
        if shs and ctx.mode != "farm":
            opts.append((2, "sh"))
        k = rng.weighted(opts)
        if k == "host":
            return self.gname("P"), MAXP
        if k == "size":
            self.use("groupsize")
            return "groupsize()", MAXP
        if k == "id":
            self.use("group_id")
            return "@", 64
        if k == "sh":
            v = rng.pick(shs)
            return (v.name, v.bound) if v.bound is not None and v.bound <= LIM else (f"({v.name} % 1009)", 1008)
        c = rng.int(0, 12)
        return str(c), c

    def ival(self, ctx, d, private=True):
        rng = self.rng
        if d <= 0 or rng.chance(0.3):
            return self.leaf(ctx, private)
        k = rng.int(0, 7)
        a, ba = self.ival(ctx, d - 1, private)
        if k <= 2:
            b, bb = self.ival(ctx, d - 1, private)
            return f"({a} {rng.pick('+-')} {b})", ba + bb
        if k == 3:
            b, bb = self.ival(ctx, d - 1, private)
            if ba * bb > LIM * 100:
                a, ba = f"({a} % 97)", 96
                b, bb = f"({b} % 89)", 88
            return f"({a} * {b})", ba * bb
        if k == 4:
            c = rng.int(2, 9)
            op = rng.pick("/%")
            return f"({a} {op} {c})", ba if op == "/" else c - 1
        if k == 5:
            b, bb = self.ival(ctx, d - 1, private)
            bound = 1
            while bound <= max(ba, bb):
                bound *= 2
            return f"({a} {rng.pick('&|^')} {b})", bound * 2
        if k == 6 and self.on("ternary") and ctx.mode == "sync":
            self.use("ternary")
            # The arms of a ?: on a private condition run in subgroups: `$`
            # only as inherited there.
            c = self.bval(ctx, d - 1, private)
            inner = ctx.copy(dollar=self.inherited_dollar(ctx))
            x, bx = self.ival(inner, d - 1, private)
            y, by = self.ival(inner, d - 1, private)
            return f"({c} ? {x} : {y})", max(bx, by)
        return f"(-{a})", ba

    def inherited_dollar(self, ctx):
        """ctx.dollar inside a subgroup of a private if or loop, a `?:` arm or
        a uniform loop: `$` keeps its value there (the Fork book), but is no
        longer 0 .. groupsize()-1 in order."""
        if ctx.dollar != "none" and self.on("dollar_inherited"):
            return "inherited"
        return "none"

    def leaf(self, ctx, private=True):
        rng = self.rng
        if not private:
            return self.uniform(ctx, 0)
        opts = [(2, "const"), (4, "var"), (2, "me"), (2, "uniform"), (2, "g")]
        if ctx.dollar != "none" and self.on("dollar"):
            opts.append((2, "dollar"))
        if self.on("dollar2") and ctx.mode == "sync":
            opts.append((1, "dollar2"))
        if self.on("own_slot"):
            opts.append((1, "o"))
        if self.on("array_2d"):
            opts.append((1, "m2"))
        arrays = [v for v in self.vars().values() if v.array]
        if arrays:
            opts.append((2, "sharr"))
        k = rng.weighted(opts)
        if k == "var":
            vs = [v for v in self.vars().values() if not v.array and (ctx.mode != "farm" or not v.shared)]
            if vs:
                v = rng.pick(vs)
                if v.bound is None or v.bound > LIM:
                    return f"({v.name} % 1009)", 1008
                return v.name, v.bound
            k = "me"
        if k == "me":
            return "me", MAXP
        if k == "uniform":
            return self.uniform(ctx, 0)
        if k == "dollar":
            self.use("dollar")
            if ctx.dollar == "inherited":
                self.use("dollar_inherited")
            return "$", 400
        if k == "dollar2":
            self.use("dollar2")
            return "$$", MAXP
        if k == "g":
            arr = rng.pick(["g0", "g1"])
            e, _ = self.ival(ctx, 0, private)
            return f"{self.gname(arr)}[{self.idx(e, 64)}]", LIM
        if k == "o":
            arr = rng.pick(["o0", "o1"])
            if ctx.split == 0 and ctx.mode == "sync" and rng.chance(0.5):
                e, _ = self.ival(ctx, 0, private)
                return f"{self.gname(arr)}[{self.idx(e, MAXP)}]", LIM
            if ctx.mode == "farm" and ctx.farm is not None and arr not in ctx.farm["written"] and rng.chance(0.5):
                ctx.farm["read"].add(arr)
                return f"{self.gname(arr)}[(me + {rng.int(1, 3)}) % {self.gname('P')}]", LIM
            return f"{self.gname(arr)}[me]", LIM
        if k == "m2":
            self.use("array_2d")
            a, _ = self.ival(ctx, 0, private)
            b, _ = self.ival(ctx, 0, private)
            return f"{self.gname('M2')}[{self.idx(a, 8)}][{self.idx(b, 8)}]", LIM
        if k == "sharr" and ctx.mode != "farm":
            v = rng.pick(arrays)
            e, _ = self.ival(ctx, 0, private)
            return f"{v.name}[{self.idx(e, v.array)}]", LIM
        c = rng.int(-30, 99)
        return (f"({c})" if c < 0 else str(c)), abs(c)

    def bval(self, ctx, d, private=True):
        rng = self.rng
        k = rng.int(0, 6)
        if d > 0 and k <= 1 and self.on("and_or"):
            self.use("and_or")
            a = self.bval(ctx, d - 1, private)
            b = self.bval(ctx, d - 1, private)
            return f"({a} {rng.pick(['&&', '||'])} {b})"
        if k == 2:
            a, _ = self.ival(ctx, d, private)
            return f"(({a} & {rng.pick([1, 2, 3])}) == 0)"
        a, _ = self.ival(ctx, d, private)
        b, _ = self.ival(ctx, d, private)
        return f"({a} {rng.pick(['<', '>', '<=', '>=', '==', '!='])} {b})"

    # -- statements -----------------------------------------------------
    def block(self, ctx, count):
        self.push()
        for _ in range(count):
            self.statement(ctx)
        self.pop()

    def assignable(self, ctx):
        out = []
        for v in self.vars().values():
            if v.array or v.readonly:
                continue
            if v.shared and (v.group != ctx.group or ctx.mode != "sync"):
                continue
            out.append(v)
        return out

    def mp_target(self, ctx):
        """A multiprefix cell that no sibling subgroup uses, or None."""
        rng = self.rng
        opts = []
        if ctx.split == 0 and ctx.mode != "farm":
            opts.append("mc")
        if ctx.mode == "farm" and self.on("mp_in_farm"):
            opts.append("mc")
        if self.on("own_slot"):
            opts.append("mo")
        if ctx.split > 0 and self.on("mp_keyed") and ctx.key[1] <= KEYS and ctx.mode == "sync":
            opts.append("mk")
        shs = [v for v in self.vars().values() if v.shared and not v.array and v.group == ctx.group and ctx.mode == "sync"]
        if shs:
            opts.append("sh")
        if not opts:
            return None
        k = rng.pick(opts)
        if k == "mc":
            e, _ = self.ival(ctx, 1)
            return f"&{self.gname('mc')}[{self.idx(e, 8)}]"
        if k == "mo":
            return f"&{self.gname('mo')}[me]"
        if k == "mk":
            self.use("mp_keyed")
            return f"&{self.gname('mk')}[{self.site() * KEYS} + {ctx.key[0]}]"
        v = rng.pick(shs)
        v.bound = None
        return f"&{v.name}"

    def site(self):
        self.sites = (self.sites + 1) % SITES
        return self.sites

    def mp_statement(self, ctx):
        rng = self.rng
        ops = [o for o in ("mpadd", "mpmax", "mpand", "mpor") if self.on(o)]
        if not ops:
            return False
        if ctx.mode == "seq" and not self.on("mp_in_seq"):
            return False
        if ctx.mode == "farm" and not self.on("mp_in_farm"):
            return False
        target = self.mp_target(ctx)
        if target is None:
            return False
        op = rng.pick(ops)
        if ctx.mode == "farm" and target.startswith(f"&{self.gname('mc')}["):
            # Members reach shared cells in an undefined order, and two
            # kinds (`mpor` then `mpmax`, or the other way) do not commute:
            # one kind per cell class between barriers.
            op = ctx.farm.setdefault("mc_op", op)
        self.use(op)
        if ctx.mode == "seq":
            self.use("mp_in_seq")
        if ctx.mode == "farm":
            self.use("mp_in_farm")
        if op in ("mpand", "mpor"):
            e = f"(1 << {self.idx(self.ival(ctx, 1)[0], 12)})" if rng.chance(0.5) else self.idx(self.ival(ctx, 1)[0], 4096)
        else:
            e, _ = self.wrap(*self.ival(ctx, 1))
        if ctx.mode == "farm" or rng.chance(0.3):
            # In farm the members' order is undefined: the result is unused.
            self.emit(ctx, f"{op}({target}, {e});")
        else:
            v = self.add(Var(self.name(), None))
            decl = "pr int" if ctx.mode == "sync" else "int"
            self.emit(ctx, f"{decl} {v.name} = {op}({target}, {e});")
        return True

    def statement(self, ctx):
        rng = self.rng
        if ctx.mode == "seq":
            return self.seq_statement(ctx)
        if ctx.mode == "farm":
            return self.farm_statement(ctx)
        opts = [(5, "decl"), (4, "assign"), (2, "write"), (2, "mp")]
        if ctx.depth < 4:
            if self.on("private_if"):
                opts.append((2, "pif"))
            if self.on("uniform_if"):
                opts.append((1, "uif"))
            if self.on("private_loop"):
                opts.append((1.2, "ploop"))
            if self.on("uniform_loop"):
                opts.append((0.6, "uloop"))
            if self.on("fork") and self.forks < 6 and (ctx.split == 0 or self.on("nested_fork")):
                opts.append((1.5, "fork"))
            exited = (ctx.func is not None and ctx.func.get("exited")) or (
                ctx.loop_exit is not None and ctx.loop_exit["exited"])
            if self.on("sync_fn") and self.functions_made < 5 and not exited:
                opts.append((1.2, "call"))
            if self.on("recursion") and self.recursions < 2 and ctx.loop == 0 and not exited:
                opts.append((0.7, "rec"))
            if self.on("seq"):
                opts.append((0.7, "seq"))
            if self.on("farm") and ctx.split == 0 and ctx.loop == 0 and self.farms < 2:
                opts.append((0.7, "farm"))
        if self.on("sh_local") or self.on("sh_array"):
            opts.append((1, "sh"))
        if ctx.loop and self.on("break_continue"):
            opts.append((0.5, "jump"))
        if ctx.func is not None and self.on("early_return") and ctx.split > ctx.func["split"]:
            opts.append((0.4, "return"))
        kind = rng.weighted(opts)
        if kind == "decl":
            e, b = self.wrap(*self.ival(ctx, 2))
            v = self.add(Var(self.name(), b))
            self.emit(ctx, f"{rng.pick(['pr int', 'int'])} {v.name} = {e};")
        elif kind == "assign":
            vs = self.assignable(ctx)
            if not vs:
                return self.statement(ctx) if rng.chance(0.5) else None
            v = rng.pick(vs)
            e, b = self.wrap(*self.ival(ctx, 2))
            if ctx.loop:
                e, b = self.wrap(e, None)
            v.bound = b if v.bound is None or ctx.depth == 0 else max(v.bound, b)
            if v.shared:
                self.use("sh_local")
                v.bound = max(b, v.bound or 0)
            self.emit(ctx, f"{v.name} = {e};")
        elif kind == "write":
            self.write_statement(ctx)
        elif kind == "mp":
            if not self.mp_statement(ctx):
                self.write_statement(ctx)
        elif kind == "pif":
            self.if_statement(ctx, private=True)
        elif kind == "uif":
            self.if_statement(ctx, private=False)
        elif kind == "ploop":
            self.loop_statement(ctx, private=True)
        elif kind == "uloop":
            self.loop_statement(ctx, private=False)
        elif kind == "fork":
            self.fork_statement(ctx)
        elif kind == "call":
            self.call_statement(ctx)
        elif kind == "rec":
            self.recursion_statement(ctx)
        elif kind == "seq":
            self.use("seq")
            self.emit(ctx, "seq {")
            inner = ctx.copy(mode="seq", depth=ctx.depth + 1)
            self.block(inner, rng.int(1, 3))
            self.emit(ctx, "}")
        elif kind == "farm":
            self.farm_block(ctx)
        elif kind == "sh":
            self.sh_statement(ctx)
        elif kind == "jump":
            self.use("break_continue")
            c = self.bval(ctx, 1)
            self.emit(ctx, f"if ({c}) {rng.pick(['break', 'continue'])};")
            if ctx.loop_exit is not None:
                ctx.loop_exit["exited"] = True
        elif kind == "return":
            self.use("early_return")
            c = self.bval(ctx, 1)
            e, _ = self.wrap(*self.ival(ctx.copy(dollar="none"), 1))
            self.emit(ctx, f"if ({c}) return {e};")
            ctx.func["exited"] = True

    def write_statement(self, ctx):
        rng = self.rng
        opts = []
        if self.on("own_slot"):
            opts.append((3, "own"))
        if ctx.split == 0 and self.on("crcw"):
            opts.append((3, "crcw"))
            if self.on("array_2d"):
                opts.append((1, "m2"))
        if ctx.split > 0 and self.on("crcw_keyed") and ctx.key[1] <= KEYS:
            opts.append((2, "keyed"))
        arrays = [v for v in self.vars().values() if v.array and v.group == ctx.group]
        if arrays:
            opts.append((2, "sharr"))
        if not opts:
            return
        kind = rng.weighted(opts)
        e, _ = self.wrap(*self.ival(ctx, 2))
        if kind == "own":
            self.use("own_slot")
            self.emit(ctx, f"{self.gname(rng.pick(['o0', 'o1']))}[me] = {e};")
        elif kind == "crcw":
            self.use("crcw")
            i, _ = self.ival(ctx, 1)
            self.emit(ctx, f"{self.gname(rng.pick(['g0', 'g1']))}[{self.idx(i, 64)}] = {e};")
        elif kind == "m2":
            self.use("array_2d")
            self.use("crcw")
            a, _ = self.ival(ctx, 1)
            b, _ = self.ival(ctx, 0)
            self.emit(ctx, f"{self.gname('M2')}[{self.idx(a, 8)}][{self.idx(b, 8)}] = {e};")
        elif kind == "keyed":
            self.use("crcw_keyed")
            self.emit(ctx, f"{self.gname('mk')}[{self.site() * KEYS} + {ctx.key[0]}] = {e};")
        else:
            v = rng.pick(arrays)
            i, _ = self.ival(ctx, 1)
            self.emit(ctx, f"{v.name}[{self.idx(i, v.array)}] = {e};")

    def sh_statement(self, ctx):
        rng = self.rng
        kinds = [k for k in ("sh_local", "sh_array") if self.on(k)]
        kind = rng.pick(kinds)
        self.use(kind)
        if kind == "sh_local":
            e, b = self.wrap(*self.ival(ctx, 1))
            v = self.add(Var(self.name("s"), b, shared=True, group=ctx.group))
            # Of the members' initial values the first member's is stored.
            self.emit(ctx, f"sh int {v.name} = {e};")
        else:
            n = rng.pick([4, 8, 16])
            v = self.add(Var(self.name("t"), LIM, shared=True, group=ctx.group, array=n))
            self.emit(ctx, f"sh int {v.name}[{n}];")
            init, _ = self.uniform(ctx, 0)
            j = self.name("i")
            self.emit(ctx, f"for (int {j} = 0; {j} < {n}; {j}++) {v.name}[{j}] = {j} * 3 + {init};")

    def subgroup_key(self, ctx, inner, part, parts):
        """Give `inner` (a body that runs beside its siblings) its key: heap
        numbering with 4 children per node (a fork has at most 4
        subgroups, an if 2), so every subgroup of the whole split tree has a
        number of its own; 3 levels fit in KEYS."""
        expr, top = ctx.key
        if top * 4 + 4 >= KEYS:
            inner.key = ("0", KEYS + 1)  # too deep: no keyed cells here
            return
        k = self.name("k")
        self.emit(inner, f"pr int {k} = {expr} * 4 + {part} + 1;")
        self.scopes[-1][k] = Var(k, KEYS, readonly=True)
        inner.key = (k, top * 4 + 4)

    def if_statement(self, ctx, private):
        rng = self.rng
        if private:
            self.use("private_if")
            c = self.bval(ctx, 2)
        else:
            self.use("uniform_if")
            c = self.bval(ctx, 1, private=False)
        self.emit(ctx, f"if ({c}) {{")
        for arm in (0, 1):
            if arm == 1:
                if not rng.chance(0.6):
                    break
                self.emit(ctx, "} else {")
            if private:
                self.groups += 1
                inner = ctx.copy(split=ctx.split + 1, dollar=self.inherited_dollar(ctx), me_is_dollar=False,
                                 group=self.groups, depth=ctx.depth + 1)
            else:
                inner = ctx.copy(dollar="canonical" if ctx.dollar == "canonical" else self.inherited_dollar(ctx),
                                 depth=ctx.depth + 1)
            self.push()
            if private:
                self.subgroup_key(ctx, inner, arm, 2)
            for _ in range(rng.int(1, 3)):
                self.statement(inner)
            self.pop()
        self.emit(ctx, "}")

    def loop_statement(self, ctx, private):
        rng = self.rng
        self.push()  # the counter's scope
        if private:
            self.use("private_loop")
            inner = ctx.copy(dollar=self.inherited_dollar(ctx), me_is_dollar=False, loop=ctx.loop + 1,
                             depth=ctx.depth + 1, loop_exit={"exited": False})
            e, _ = self.ival(ctx, 1)
            if rng.chance(0.5):
                w = self.name("w")
                self.emit(ctx, f"pr int {w} = {self.idx(e, 4)};")
                self.add(Var(w, 3, readonly=True))
                self.emit(ctx, f"while ({w} > 0) {{")
                self.emit(inner, f"{w} = {w} - 1;")
            else:
                j = self.name("j")
                self.emit(ctx, f"for (int {j} = 0; {j} < {self.idx(e, 4)}; {j}++) {{")
                self.add(Var(j, 3, readonly=True))
        else:
            self.use("uniform_loop")
            # $ in a loop body: the lowered module races (found by difftest).
            keep = ctx.dollar == "canonical" and self.on("dollar_in_loop")
            inner = ctx.copy(loop=ctx.loop + 1, depth=ctx.depth + 1, loop_exit={"exited": False},
                             dollar="canonical" if keep else self.inherited_dollar(ctx))
            if keep:
                self.use("dollar_in_loop")
            j = self.name("j")
            u, _ = self.uniform(ctx, 0)
            self.emit(ctx, f"for (int {j} = 0; {j} < {self.idx(u, 3)}; {j}++) {{")
            self.add(Var(j, 3, readonly=True))
        self.block(inner, rng.int(1, 3))
        self.emit(ctx, "}")
        self.pop()

    def fork_statement(self, ctx):
        rng = self.rng
        self.use("fork")
        self.forks += 1
        k = rng.int(1, 4)
        inner = ctx.copy(split=ctx.split + 1, depth=ctx.depth + 1, me_is_dollar=False, loop=0)
        headers = []
        e, _ = self.ival(ctx.copy(dollar="none"), 1)
        headers.append((f"{self.idx(e, k)}", "100 - me", "explicit"))
        headers.append(("me % " + str(k), "me", "explicit"))
        if ctx.dollar == "canonical" and self.on("dollar"):
            headers.append((f"$ % {k}", f"$ / {k}", "canonical"))
        if ctx.me_is_dollar:
            headers.append((f"me % {k}", f"me / {k}", "canonical"))
        if self.on("fork_skip"):
            headers.append((f"me % {k + 1}", "me", "explicit"))
        if self.on("fork_halving") and ctx.dollar == "canonical" and self.on("dollar"):
            headers.append(("HALF", "HALF", "canonical"))
        at, dollar, state = rng.pick(headers)
        if at == "HALF":
            self.use("fork_halving")
            self.use("dollar")
            h = self.name("half")
            self.emit(ctx, f"pr int {h} = groupsize() / 2;")
            self.add(Var(h, MAXP, readonly=True))
            k = 2
            at = f"$ < {h} ? 0 : 1"
            dollar = f"$ < {h} ? $ : $ - {h}"
        elif "$" in at:
            self.use("dollar")
        if at.startswith("me % ") and at != f"me % {k}":
            self.use("fork_skip")
        if ctx.split > 0:
            self.use("nested_fork")
        self.emit(ctx, f"fork({k}; @ = {at}; $ = {dollar}) {{")
        inner.dollar = state
        self.groups += 1
        inner.group = self.groups
        self.push()
        self.subgroup_key(ctx, inner, "@", k)
        for _ in range(rng.int(1, 4)):
            self.statement(inner)
        self.pop()
        self.emit(ctx, "}")

    def call_statement(self, ctx):
        """A new sync function, called here (its body sees this context)."""
        rng = self.rng
        self.use("sync_fn")
        self.functions_made += 1
        name = self.gname(f"f{self.counter}")
        self.counter += 1
        params = ["int me", "int a"]
        args = ["me", self.wrap(*self.ival(ctx, 1))[0]]
        body_vars = [Var("a", LIM)]
        if self.on("sh_param") and rng.chance(0.5):
            self.use("sh_param")
            params.append("sh int b")
            u, _ = self.ival(ctx, 1)
            args.append(self.wrap(u, LIM + 1)[0])
        key = None
        if ctx.key[0] != "0":
            key = ctx.key
            params.append("int kk")
            args.append(ctx.key[0])
        arrays = [v for v in self.vars().values() if v.array]
        ptr = None
        if self.on("sh_ptr_param") and arrays and rng.chance(0.6):
            self.use("sh_ptr_param")
            ptr = rng.pick(arrays)
            params.append("int* arr")
            args.append(ptr.name)
        saved_out, saved_scopes = self.out, self.scopes
        self.out = []
        self.scopes = [{}]
        # The function's body runs in the caller's group (and split).
        fctx = ctx.copy(depth=-1, loop=0, loop_exit=None, func={"split": ctx.split}, me_is_dollar=ctx.me_is_dollar)
        if key is not None:
            fctx.key = ("kk", key[1])
            self.add(Var("kk", KEYS, readonly=True))
        self.add(Var("me", MAXP, readonly=True))
        for v in body_vars:
            self.add(v)
        if "sh int b" in params:
            self.add(Var("b", MOD, shared=True, group=ctx.group))
        if ptr is not None:
            self.add(Var("arr", LIM, shared=True, group=ptr.group if ptr.group == ctx.group else -1, array=ptr.array))
        self.emit(fctx, "pr int r = a;")
        self.add(Var("r", LIM))
        for _ in range(rng.int(2, 5)):
            self.statement(fctx)
        e, _ = self.wrap(*self.ival(fctx.copy(dollar="none"), 1))
        self.emit(fctx, f"return {e};")
        body = self.out
        self.out, self.scopes = saved_out, saved_scopes
        self.functions.append([f"sync int {name}({', '.join(params)}) {{"] + body + ["}"])
        v = self.add(Var(self.name(), MOD))
        self.emit(ctx, f"pr int {v.name} = {name}({', '.join(args)});")

    def recursion_statement(self, ctx):
        rng = self.rng
        self.use("recursion")
        self.recursions += 1
        name = self.gname(f"rec{self.counter}")
        self.counter += 1
        cell = self.site()
        shape = rng.pick(["fork", "if"]) if self.on("fork") else "if"
        halving = shape == "fork" and self.on("fork_halving") and self.on("dollar") and ctx.dollar == "canonical" and rng.chance(0.5)
        lines = [f"sync int {name}(int me, sh int d, int x) {{"]
        lines.append("  pr int r = x % 100;")
        if self.on("sh_local"):
            self.use("sh_local")
            lines.append("  sh int s = d * 10;")
            lines.append("  r = r + s;")
        lines.append(f"  {self.gname('o1')}[me] = {self.gname('o1')}[me] + d;" if self.on("own_slot") else "  r = r + d;")
        if self.on("mpadd") and self.on("own_slot"):
            self.use("mpadd")
            lines.append(f"  r = r + mpadd(&{self.gname('mo')}[me], d + 1) % 100;")
        if shape == "fork":
            if halving:
                self.use("fork_halving")
                self.use("dollar")
                lines.append("  pr int half = groupsize() / 2;")
                lines.append("  fork(2; @ = $ < half ? 0 : 1; $ = $ < half ? $ : $ - half) {")
            else:
                lines.append("  fork(2; @ = me % 2; $ = me) {")
            self.use("fork")
            lines.append("    if (d > 0 && groupsize() > 1) {")
            lines.append(f"      r = (r + {name}(me, d - 1, x * 2 + @)) % {MOD};")
            lines.append("    } else {")
            lines.append(f"      r = (r * 3 + @ + groupsize()) % {MOD};")
            lines.append("    }")
            lines.append("  }")
        else:
            self.use("private_if")
            lines.append("  if (d > 0) {")
            lines.append(f"    if (me % 2 == 0) r = (r + {name}(me, d - 1, x + 1)) % {MOD};")
            lines.append(f"    else r = (r + {name}(me, d - 1, x + 2) * 2) % {MOD};")
            lines.append("  }")
        lines.append("  return r;")
        lines.append("}")
        self.functions.append(lines)
        e, _ = self.wrap(*self.ival(ctx, 1))
        v = self.add(Var(self.name(), MOD))
        self.emit(ctx, f"pr int {v.name} = {name}(me, {rng.int(1, 3)}, {e});")

    def seq_statement(self, ctx):
        rng = self.rng
        opts = [(3, "write"), (1, "loop")]
        if ctx.split == 0 and self.on("seq_printf"):
            opts.append((2, "printf"))
        if self.on("mp_in_seq"):
            opts.append((1, "mp"))
        k = rng.weighted(opts)
        if k == "printf":
            self.use("seq_printf")
            e, _ = self.wrap(*self.ival(ctx, 1))
            self.emit(ctx, f'printf("seq{self.counter} %d %d\\n", groupsize(), {e});')
            self.counter += 1
        elif k == "mp":
            self.mp_statement(ctx)
        elif k == "loop":
            j = self.name("i")
            arr = self.gname("g1") if ctx.split == 0 else None
            if arr is None:
                self.emit(ctx, f"for (int {j} = 0; {j} < 3; {j}++) {self.gname('o0')}[me] = {self.gname('o0')}[me] % 1000 + {j};")
            else:
                self.emit(ctx, f"for (int {j} = 0; {j} < 8; {j}++) {arr}[{j}] = {arr}[{j} + 8] % 1000 + {j};")
        else:
            e, _ = self.wrap(*self.ival(ctx, 1))
            if ctx.split == 0 and rng.chance(0.6):
                i, _ = self.ival(ctx, 1)
                self.emit(ctx, f"{self.gname(rng.pick(['g0', 'g1']))}[{self.idx(i, 64)}] = {e};")
            else:
                self.emit(ctx, f"{self.gname('o0')}[me] = {e};")

    def farm_block(self, ctx):
        rng = self.rng
        self.use("farm")
        self.farms += 1
        self.emit(ctx, "farm {")
        inner = ctx.copy(mode="farm", depth=ctx.depth + 1, farm={"written": set(), "read": set()})
        self.push()
        for _ in range(rng.int(2, 5)):
            self.farm_statement(inner)
        self.pop()
        self.emit(ctx, "}")

    def farm_statement(self, ctx):
        rng = self.rng
        opts = [(3, "own"), (2, "decl"), (1, "barrier")]
        if self.on("mp_in_farm"):
            opts.append((1, "mp"))
        k = rng.weighted(opts)
        if k == "barrier":
            self.emit(ctx, "barrier;")
            ctx.farm["written"] = set()
            ctx.farm["read"] = set()
            ctx.farm.pop("mc_op", None)
        elif k == "mp":
            self.mp_statement(ctx)
        elif k == "decl":
            e, b = self.wrap(*self.ival(ctx, 1))
            v = self.add(Var(self.name(), b))
            self.emit(ctx, f"int {v.name} = {e};")
        else:
            arr = rng.pick(["o0", "o1"])
            if arr in ctx.farm["read"]:
                return
            e, _ = self.wrap(*self.ival(ctx, 1))
            if arr in ctx.farm["read"]:
                return
            ctx.farm["written"].add(arr)
            self.use("own_slot")
            self.emit(ctx, f"{self.gname(arr)}[me] = {e};")

    # -- the program ----------------------------------------------------
    def start_block(self, size):
        rng = self.rng
        ctx = Ctx()
        self.out = []
        self.scopes = [{}]
        self.emit(Ctx().copy(depth=-1), f"start({size}) {{")
        self.emit(ctx, "pr int me = $;")
        self.add(Var("me", MAXP, readonly=True))
        e, b = self.wrap(*self.ival(ctx, 1))
        self.emit(ctx, f"pr int v = {e};")
        self.add(Var("v", b))
        for _ in range(rng.int(3, 9)):
            self.statement(ctx)
        vs = [v for v in self.vars().values() if not v.shared and not v.array]
        v = rng.pick(vs)
        text = v.name if v.bound is not None and v.bound <= LIM else f"({v.name} % 1009)"
        self.emit(ctx, f"{self.gname('res')}[me] = {text};")
        self.emit(Ctx().copy(depth=-1), "}")
        return self.out

    def generate(self, seed, enabled, prefix="", arg_base=0):
        self.rng = Rng(seed * 104729 + 3)
        rng = self.rng
        self.enabled = set(enabled)
        self.prefix = prefix
        self.used = set()
        self.counter = 0
        self.functions = []
        self.functions_made = 0
        self.recursions = 0
        self.forks = 0
        self.farms = 0
        self.groups = 0
        self.sites = 0
        p0 = rng.int(1, 12)
        q0 = rng.int(1, 9)
        starts = rng.int(2, 3) if self.on("multi_start") else 1
        blocks = []
        for i in range(starts):
            size = "p" if i == 0 else rng.pick(["q", "p + q", "p / 2 + 1"])
            if i > 0:
                self.use("multi_start")
            blocks.append(self.start_block(size))
        iterations = rng.int(1, 2) if self.on("host_loop") else 1
        if iterations > 1:
            self.use("host_loop")
        self.use("start")
        g = self.gname
        a = arg_base
        lines = []
        for arr, n in (("g0", 64), ("g1", 64), ("o0", MAXP), ("o1", MAXP), ("res", MAXP), ("mc", 8), ("mo", MAXP),
                       ("mk", SITES * KEYS)):
            lines.append(f"int {g(arr)}[{n}];")
        lines.append(f"int {g('M2')}[8][8];")
        lines.append(f"int {g('P')};")
        lines.append("")
        for f in self.functions:
            lines.extend(f)
            lines.append("")
        main = [
            f"int {prefix}main({main_params(a)}) {{",
            f"  int p = argi({arg_index(a, 0)}, {p0});",
            f"  int q = argi({arg_index(a, 1)}, {q0});",
            "  if (p < 1) p = 1;",
            f"  if (p > {MAXP // 2}) p = {MAXP // 2};",
            "  if (q < 1) q = 1;",
            f"  if (q > {MAXP // 2}) q = {MAXP // 2};",
            f"  {g('P')} = p;",
            f"  for (int i = 0; i < 64; i++) {{ {g('g0')}[i] = (i * {rng.int(3, 50)}) % 97; {g('g1')}[i] = i % {rng.int(2, 9)}; }}",
            f"  for (int i = 0; i < {MAXP}; i++) {{ {g('o0')}[i] = i; {g('o1')}[i] = (i * 7) % 13; {g('res')}[i] = -1; {g('mo')}[i] = 0; }}",
            f"  for (int i = 0; i < 8; i++) {g('mc')}[i] = i;",
            f"  for (int i = 0; i < {SITES * KEYS}; i++) {g('mk')}[i] = 0;",
            f"  for (int i = 0; i < 8; i++) for (int j = 0; j < 8; j++) {g('M2')}[i][j] = i * 8 + j;",
            f"  for (int it = 0; it < {iterations}; it++) {{",
        ]
        for block in blocks:
            for line in block:
                main.append("  " + line)
            if len(blocks) > 1:
                main.append(f"    {g('P')} = {g('P')};")
        main += [
            '    printf("it %d\\ng0", it);',
            f'    for (int i = 0; i < 64; i++) printf(" %d", {g("g0")}[i]);',
            '    printf("\\ng1");',
            f'    for (int i = 0; i < 64; i++) printf(" %d", {g("g1")}[i]);',
            '    printf("\\no0");',
            f'    for (int i = 0; i < p + q; i++) printf(" %d", {g("o0")}[i]);',
            '    printf("\\no1");',
            f'    for (int i = 0; i < p + q; i++) printf(" %d", {g("o1")}[i]);',
            '    printf("\\nres");',
            f'    for (int i = 0; i < p + q; i++) printf(" %d", {g("res")}[i]);',
            '    printf("\\nmo");',
            f'    for (int i = 0; i < p + q; i++) printf(" %d", {g("mo")}[i]);',
            '    printf("\\nmc");',
            f'    for (int i = 0; i < 8; i++) printf(" %d", {g("mc")}[i]);',
            '    printf("\\nmk");',
            f'    for (int i = 0; i < {SITES * KEYS}; i++) if ({g("mk")}[i] != 0) printf(" %d:%d", i, {g("mk")}[i]);',
            '    printf("\\nM2");',
            f'    for (int i = 0; i < 64; i++) printf(" %d", {g("M2")}[i / 8][i % 8]);',
            '    printf("\\n");',
            "  }",
            "  return 0;",
            "}",
        ]
        lines.extend(main)
        arg_sets = [[str(p0), str(q0)], [str(rng.pick([1, 2, 5, 8, 17, 33])), str(rng.int(1, 12))]]
        if self.on("large_group") and rng.chance(0.15):
            self.use("large_group")
            arg_sets.append(["150", "150"])
        text = header_lines(self.LANG, seed, arg_sets, self.used) + [""] + lines
        return Program(self.LANG, seed, "\n".join(text) + "\n", arg_sets, self.used)


def main(argv=None):
    return cli(ForkGenerator, argv)


if __name__ == "__main__":
    sys.exit(main())
