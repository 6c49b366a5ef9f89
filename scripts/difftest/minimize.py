#!/usr/bin/env python3
"""Delta debugging of a program's lines (issue 39): the smallest program
(by lines and brace blocks) for which a predicate still holds.

    minimize.py PROGRAM --config CONFIG --args "ARGS" [-o OUT]

minimizes PROGRAM for the mismatch between the interpreter and CONFIG
(a runner.py configuration) on ARGS, keeping the kind of the mismatch and
the program valid (runner.py `still_fails`). As a library:
`minimize(source, predicate)` with `predicate(source) -> bool`.

The candidates are, in order: whole top-level definitions (functions),
brace blocks (`... {` to its matching `}` line; a block's opening line
with its `} else {` partner removes only the `else` part), then single
lines, each pass with ddmin's halving of the chunk size. Header lines
(`// difftest-...`) are kept.
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _blocks(lines):
    """[(start, end)] of every brace block: the line that opens it (ends
    with `{`) to the line that closes it (starts with `}`)."""
    out = []
    stack = []
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("}") and stack:
            start = stack.pop()
            if s.endswith("{"):
                # `} else {`: the else part is a block of its own
                out.append((start, i - 1))
                stack.append(i)
            else:
                out.append((start, i))
        elif s.endswith("{"):
            stack.append(i)
    return out


def _remove(lines, removed):
    return [l for i, l in enumerate(lines) if i not in removed]


class Budget:
    def __init__(self, max_tests, max_seconds):
        self.tests = 0
        self.max_tests = max_tests
        self.deadline = time.time() + max_seconds

    def left(self):
        return self.tests < self.max_tests and time.time() < self.deadline


def _ddmin(lines, units, predicate, budget, protected):
    """Remove as many of `units` (each a set of line indexes) as possible
    while predicate holds; returns the new lines."""
    units = [u for u in units if not (u & protected)]
    chunk = max(1, len(units) // 2)
    while units and budget.left():
        changed = False
        i = 0
        while i < len(units) and budget.left():
            group = units[i:i + chunk]
            removed = set().union(*group)
            candidate = _remove(lines, removed)
            budget.tests += 1
            if predicate("\n".join(candidate) + "\n"):
                # Re-index: the remaining units shift.
                keep = [j for j in range(len(lines)) if j not in removed]
                remap = {old: new for new, old in enumerate(keep)}
                lines = candidate
                protected = {remap[p] for p in protected if p in remap}
                rest = units[:i] + units[i + chunk:]
                units = []
                for u in rest:
                    if u & removed:
                        continue
                    units.append({remap[j] for j in u})
                changed = True
            else:
                i += chunk
        if not changed:
            if chunk == 1:
                break
            chunk = max(1, chunk // 2)
    return lines


# Lines kept: the header, and main's calls of the kernel functions (so
# that the minimized program still runs the code that disagrees instead of
# only compiling it).
PROTECT = re.compile(r"^// difftest-|^    \w*k\d+\(")


# For compile-time failures only the header is kept.
PROTECT_HEADER = re.compile(r"^// difftest-")


def minimize(source, predicate, max_tests=400, max_seconds=600, log=None, protect=PROTECT):
    """The smallest variant of `source` (a string) for which `predicate`
    holds; `predicate(source)` must hold at the start."""
    lines = [l for l in source.rstrip("\n").split("\n") if l.strip()]
    if not predicate("\n".join(lines) + "\n"):
        lines = source.rstrip("\n").split("\n")
    budget = Budget(max_tests, max_seconds)

    def protected_of(lines):
        return {i for i, l in enumerate(lines) if protect.search(l)}

    for rounds in range(3):
        before = len(lines)
        # 1. top-level definitions, 2. blocks (largest first), 3. lines.
        top = []
        depth = 0
        start = None
        for i, l in enumerate(lines):
            if depth == 0 and l.strip() and not l.startswith("//"):
                start = i if start is None else start
            depth += l.count("{") - l.count("}")
            if depth == 0 and start is not None:
                top.append(set(range(start, i + 1)))
                start = None
        lines = _ddmin(lines, top, predicate, budget, protected_of(lines))
        blocks = sorted(_blocks(lines), key=lambda b: b[0] - b[1])
        lines = _ddmin(lines, [set(range(a, b + 1)) for a, b in blocks], predicate, budget, protected_of(lines))
        # A block's braces alone: keep its body (unwrap `if (...) {` ... `}`).
        for a, b in sorted(_blocks(lines), key=lambda b: b[0]):
            if not budget.left():
                break
            if a >= len(lines) or b >= len(lines):
                continue
            if not lines[b].strip().startswith("}") or lines[b].strip() != "}":
                continue
            cand = _remove(lines, {a, b})
            budget.tests += 1
            if predicate("\n".join(cand) + "\n"):
                lines = cand
                break  # indexes moved: recompute next round
        singles = [{i} for i in range(len(lines)) if lines[i].strip()]
        lines = _ddmin(lines, singles, predicate, budget, protected_of(lines))
        if log:
            log(f"minimize: round {rounds + 1}: {before} -> {len(lines)} lines, {budget.tests} tests")
        if len(lines) == before or not budget.left():
            break
    return "\n".join(lines) + "\n"


def main():
    import argparse

    import runner

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program")
    parser.add_argument("--config", required=True, help="the configuration that disagrees (runner.py --list-configs)")
    parser.add_argument("--args", default=None, help="the program's arguments (default: its first difftest-args)")
    parser.add_argument("--max-tests", type=int, default=400)
    parser.add_argument("-o", "--output")
    opts = parser.parse_args()
    with open(opts.program) as f:
        source = f.read()
    tools = runner.Tools.from_env()
    lang = "fork" if opts.program.endswith(".fork") else "bsgp"
    from common import parse_header, write_output

    args = opts.args
    if args is None:
        args = (parse_header(source)["args"] or [""])[0]
    kind = runner.mismatch_kind(tools, lang, source, opts.config, args)
    if kind is None:
        print("no mismatch: nothing to minimize", file=sys.stderr)
        return 1
    print(f"mismatch kind: {kind}", file=sys.stderr)
    result = minimize(
        source,
        lambda s: runner.mismatch_kind(tools, lang, s, opts.config, args) == kind,
        max_tests=opts.max_tests,
        log=lambda m: print(m, file=sys.stderr),
        protect=PROTECT_HEADER if kind.startswith("compile-fail") else PROTECT,
    )
    write_output(opts.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
