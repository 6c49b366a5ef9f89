"""Shared pieces of the difftest program generators (stdlib only).

A generator is a class with `CONSTRUCTS` (name -> one-line description),
`DEFAULT_OFF` (constructs that stay off unless asked for, e.g. language
features that do not exist yet) and `generate(seed, enabled, prefix,
arg_base)` returning a `Program`. `cli(...)` gives every generator the
same command line:

    gen_X.py SEED [--count N] [--disable a,b] [--only a,b] [--enable a,b]
             [--list-constructs] [--constructs] [-o FILE]
"""

import argparse
import json
import random
import sys


class Program:
    """A generated program: its source text, the argument sets to run it
    with (lists of strings), and the constructs it uses."""

    def __init__(self, lang, seed, source, arg_sets, constructs):
        self.lang = lang
        self.seed = seed
        self.source = source
        self.arg_sets = arg_sets
        self.constructs = sorted(constructs)

    def header(self):
        return {
            "lang": self.lang,
            "seed": self.seed,
            "args": [" ".join(a) for a in self.arg_sets],
            "constructs": self.constructs,
        }


def parse_header(source):
    """The `// difftest:` header lines of a generated program: its seed,
    argument sets and constructs (also for programs edited by hand or
    minimized, as long as the header lines stay)."""
    info = {"args": [], "constructs": []}
    for line in source.splitlines():
        if line.startswith("// difftest-args:"):
            info["args"].append(line.split(":", 1)[1].strip())
        elif line.startswith("// difftest-constructs:"):
            info["constructs"] = line.split(":", 1)[1].split()
        elif line.startswith("// difftest-seed:"):
            info["seed"] = line.split(":", 1)[1].strip()
        elif line.startswith("// difftest-lang:"):
            info["lang"] = line.split(":", 1)[1].strip()
    return info


def header_lines(lang, seed, arg_sets, constructs):
    out = [
        f"// difftest-lang: {lang}",
        f"// difftest-seed: {seed}",
    ]
    for a in arg_sets:
        out.append("// difftest-args: " + " ".join(a))
    out.append("// difftest-constructs: " + " ".join(sorted(constructs)))
    return out


def resolve_constructs(all_constructs, default_off, disable=(), only=None, enable=()):
    """The enabled set: everything but `default_off`, or `only`, minus
    `disable`, plus `enable`. Unknown names are an error."""
    for name in list(disable) + list(only or []) + list(enable):
        if name not in all_constructs:
            raise SystemExit(f"unknown construct {name!r}; --list-constructs lists them")
    if only:
        chosen = set(only)
    else:
        chosen = set(all_constructs) - set(default_off)
    chosen -= set(disable)
    chosen |= set(enable)
    return chosen


def split_names(text):
    return [n for n in (text or "").replace(",", " ").split() if n]


class Rng:
    """random.Random with the few helpers the generators use. Python's
    Random(int) sequence is stable across 3.x versions, so a seed gives the
    same program everywhere."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def chance(self, p):
        return self.r.random() < p

    def int(self, lo, hi):
        return self.r.randint(lo, hi)

    def pick(self, items):
        return self.r.choice(list(items))

    def weighted(self, pairs):
        """pairs: [(weight, value)]; weights <= 0 are skipped."""
        pairs = [(w, v) for w, v in pairs if w > 0]
        total = sum(w for w, _ in pairs)
        x = self.r.random() * total
        for w, v in pairs:
            x -= w
            if x < 0:
                return v
        return pairs[-1][1]


def cli(generator_class, argv=None):
    parser = argparse.ArgumentParser(description=generator_class.__doc__)
    parser.add_argument("seed", type=int, nargs="?", default=1)
    parser.add_argument("--disable", default="", help="constructs to leave out (comma-separated)")
    parser.add_argument("--only", default="", help="use only these constructs")
    parser.add_argument("--enable", default="", help="turn on constructs that are off by default")
    parser.add_argument("--features", default="", help="alias of --enable (language features)")
    parser.add_argument("--list-constructs", action="store_true")
    parser.add_argument("--constructs", action="store_true", help="print the constructs the program uses (JSON) instead of the program")
    parser.add_argument("--count", type=int, default=1, help="programs of seeds SEED .. SEED+COUNT-1, one after the other")
    parser.add_argument("-o", "--output")
    args = parser.parse_args(argv)
    gen = generator_class
    if args.list_constructs:
        for name, text in gen.CONSTRUCTS.items():
            off = " (off by default)" if name in gen.DEFAULT_OFF else ""
            print(f"{name:24} {text}{off}")
        return 0
    enabled = resolve_constructs(
        gen.CONSTRUCTS,
        gen.DEFAULT_OFF,
        split_names(args.disable),
        split_names(args.only) or None,
        split_names(args.enable) + split_names(args.features),
    )
    text = ""
    for seed in range(args.seed, args.seed + max(1, args.count)):
        program = gen().generate(seed, enabled)
        text += json.dumps(program.header()) + "\n" if args.constructs else program.source
    write_output(args.output, text)
    return 0


def write_output(path, text):
    """`text` into the file `path`, or to standard output without one."""
    if path:
        with open(path, "w") as out:
            out.write(text)
    else:
        sys.stdout.write(text)


def arg_index(base, k):
    """The index of a generated main's k-th `argi`: `base` is a number (the
    arguments start there) or the name of main's parameter that holds
    where they start (a bundle that runs several cases in one process)."""
    return str(base + k) if isinstance(base, int) else f"{base} + {k}"


def main_params(base):
    """The parameter list of a generated main (see `arg_index`)."""
    return "" if isinstance(base, int) else f"int {base}"
