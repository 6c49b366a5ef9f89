#!/usr/bin/env python3
"""Random Fork programs, run by the reference interpreter and compiled
natively: the outputs must be the same.

    scripts/fork_differential.py [COUNT [SEED [MAX_PROCESSORS]]]

Each program starts a group and runs a random nest of the constructs whose
lowering differs most between the two (group splits on private conditions,
shrinking loops, loops whose bodies write shared memory, `fork` with the
classic headers, multiprefix on member-dependent cells and in `farm` and
`seq`, concurrent writes, stores at processor IDs (`$`, which a fork sets
and splits inherit, may repeat) and at group ranks (`$$`, renumbered at
every split), shared locals, calls of synchronous functions that read `$`
and `$$` and split, calls of ordinary functions that compute, read or
write). A differing program is kept in /tmp/fork-differential/ with both
outputs. Exits 1 if any differs.
"""

import os
import random
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# FORK_FUZZ_TARGET=cuda compiles for the cuda target, run on the CPU device
# (the offloading host code) unless FORK_FUZZ_DEVICE says otherwise.
TARGET = os.environ.get("FORK_FUZZ_TARGET", "cpu")
DEVICE = os.environ.get("FORK_FUZZ_DEVICE", "cpu")
PGPU = os.environ.get("PGPU", os.path.join(ROOT, "target/debug/pgpu"))
OUT = "/tmp/fork-differential"


def expression(rng):
    return rng.choice(
        [
            "me",
            "$",
            "$$",
            "groupsize()",
            "@",
            "v",
            str(rng.randint(1, 9)),
            "v / 2",
            "me * 3",
            "($ < groupsize() / 2 ? $ : $$ + 20)",
        ]
    )


def condition(rng):
    return rng.choice(
        [
            "v % 3 == 1",
            "$ < groupsize() / 2",
            "$$ < groupsize() / 2",
            "$ % 3 == $$ % 2",
            "(me & 1) == 1",
            "v > me",
            "groupsize() > 2",
            "@ == 0",
        ]
    )


def statements(rng, depth, budget):
    out = []
    for _ in range(rng.randint(1, budget)):
        out.append(statement(rng, depth))
    return "\n".join(out)


def statement(rng, depth):
    kinds = [
        "assign",
        "assign",
        "crcw",
        "mpadd",
        "shared",
        "rank_store",
        "plain_call",
        "farm_mp",
        "seq_mp",
    ]
    if depth < 3:
        kinds += ["if", "while", "for_shared", "fork", "call", "sh_local"]
    kind = rng.choice(kinds)
    if kind == "assign":
        return f"v = v + {expression(rng)};"
    if kind == "crcw":
        writer = rng.choice(["$", "$$"])
        return f"h[((v % 64) + 64) % 64] = me * 10 + {writer};"
    if kind == "farm_mp":
        # Asynchronous: a fetch-and-op whose results nobody reads, so the
        # totals do not depend on the members' order.
        return f"farm {{ mpadd(&cnt[((v % 4) + 4) % 4], {expression(rng)}); }}"
    if kind == "seq_mp":
        return "seq { cnt[0] = cnt[0] + mpadd(&cnt[1], 3); }"
    if kind == "mpadd":
        return f"v = v + mpadd(&cnt[((v % 4) + 4) % 4], {expression(rng)});"
    if kind == "shared":
        return "g[me] = g[(me + 1) % 128] + v;"
    if kind == "plain_call":
        return rng.choice(["v = v + sq(v % 7);", "v = v + peek(me);", "poke(me, v);"])
    if kind == "rank_store":
        rank = rng.choice(["$", "$$"])
        return f"{{ pr int r = {rank}; if ({condition(rng)}) h[((r + 8) % 64 + 64) % 64] = me + v; }}"
    if kind == "if":
        return (
            f"if ({condition(rng)}) {{\n{statements(rng, depth + 1, 2)}\n}} "
            f"else {{\n{statements(rng, depth + 1, 2)}\n}}"
        )
    if kind == "while":
        bound = rng.randint(1, 4)
        return (
            f"{{ pr int w = 0; while (w < (me % {bound + 1}) + {bound}) {{ w = w + 1;\n"
            f"{statements(rng, depth + 1, 2)}\n}} }}"
        )
    if kind == "for_shared":
        return (
            f"for (int k = 0; k < {rng.randint(1, 3)}; k++) {{ "
            f"h[(me + k) % 64] = h[(me + k + 1) % 64] + v;\n"
            f"{statements(rng, depth + 1, 1)}\n}}"
        )
    if kind == "fork":
        header = rng.choice(
            [
                "@ = me % 2; $ = 10 - $",
                "@ = me % 2; $ = $ / 2",
                "@ = $$ % 2; $ = $$ / 2",
                # The classic halving header.
                "@ = $ < groupsize() / 2 ? 0 : 1; $ = $ < groupsize() / 2 ? $ : $ - groupsize() / 2",
            ]
        )
        return f"fork(2; {header}) {{\n{statements(rng, depth + 1, 2)}\n}}"
    if kind == "call":
        return "v = f(v);"
    return "{ sh int s; s = v; v = v + s; }"


def program(rng, max_processors=9):
    processors = rng.randint(1, max_processors)
    body = statements(rng, 0, 4)
    return f"""int g[256];
int h[64];
int cnt[4];

int sq(int x) {{ return x * x; }}
int peek(int i) {{ return g[(i + 3) % 128]; }}
void poke(int i, int x) {{ g[i] = g[i] + x; }}

sync int f(int a) {{
  pr int r = a;
  if (a % 2 == 0) r = r + groupsize() * 100 + $ * 10 + $$;
  else r = r - $ + $$;
  return r;
}}

int main() {{
  start({processors}) {{
    pr int me = $;
    pr int v = me * 7;
{body}
    g[me + 128] = v;
  }}
  for (int i = 0; i < 64; i++) printf("%d %d ", g[i], h[i]);
  for (int i = 128; i < 128 + {processors}; i++) printf("%d ", g[i]);
  printf("| %d %d %d %d\\n", cnt[0], cnt[1], cnt[2], cnt[3]);
  return 0;
}}
"""


def run(command):
    """Exit status, output, and the source position of an error report."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    error = re.search(r"\.fork:(\d+:\d+): error", result.stderr)
    return result.returncode, result.stdout, error.group(1) if error else None


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    max_processors = int(sys.argv[3]) if len(sys.argv) > 3 else 9
    os.makedirs(OUT, exist_ok=True)
    failures = 0
    for index in range(count):
        rng = random.Random(seed * 100003 + index)
        source = os.path.join(OUT, f"p{seed}_{index}.fork")
        with open(source, "w") as text:
            text.write(program(rng, max_processors))
        reference = run([PGPU, "run", "--interpret", source])
        exe = source[: -len(".fork")]
        built = run([PGPU, "compile", "--target", TARGET, source, "-o", exe])
        device = ["--device", DEVICE] if TARGET == "cuda" else []
        native = run([exe, *device]) if built[0] == 0 else built
        # The same output and status; failures at the same source position
        # (the two word their reports differently).
        same = reference == native
        print(f"{'SAME' if same else 'DIFF'} {source}")
        if same:
            os.remove(source)
            if os.path.exists(exe):
                os.remove(exe)
        else:
            failures += 1
            with open(source + ".out", "w") as text:
                text.write(f"interpreter {reference}\nnative {native}\n")
    print(f"{count - failures}/{count} the same")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
