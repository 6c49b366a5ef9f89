#!/usr/bin/env python3
"""Long differential runs of generated programs, in bundles (issue 39).

    sweep.py run --lang bsgp|fork --seed S --count N --log LOG
                 [--minutes M] [--bundle K] [--jobs J] [--extra-every K] [--no-replay]
                 [--resume] [--out DIR]
    sweep.py summary LOG...

`run` takes the seeds S .. S+N-1 in units of K consecutive seeds. In each
unit every generated program runs standalone under the interpreter (each
argument set its header lists: the oracle); the programs it runs are
bundled into one source (runner.bundle_source: `argi(0)` picks the
program), compiled at -O0 for the CPU and for one more configuration in
turn (cpu-O3, then cuda and cuda-grid run with --device cpu; with
`--extra-every K` only in every K-th unit: a cuda bundle of 5 Fork
programs compiles in 68 s, at -O0 in 9 s), and every
(program, arguments) case of both executables must print what the
interpreter printed and exit as it did. Each program also replays one
kernel pipeline under `pgpu-opt --pgpu-check-semantics` (opt-cpu,
opt-cuda, opt-grid, opt-paper in turn; not with `--no-replay`, for the
GPU machine's copy of pgpu without pgpu-opt). Bundles amortize what a compile
costs whatever the program (the tool's start-up, the link with the
runtime library): a BSGP program costs about half of a standalone
`runner.py run` over the same configurations.

Each unit appends one JSON line to LOG when it ends, so an interrupted
run keeps what it counted, and `--resume` skips the units LOG holds.
`--minutes` starts no unit after that time. At the end, every program
with a mismatch, an oracle failure (the interpreter rejects a generated
program) or a compile failure is run again standalone by runner.py's
`run` on the configurations that disagreed, which minimizes it and saves
a reproducer under --out; its exit status is 1 then.

`summary` totals logs per language: programs generated, programs run on
the interpreter and the CPU, comparisons per configuration, every
mismatch with its seed, and the construct coverage (docs/testing.md's
counts come from it).
"""

import argparse
import collections
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import runner  # noqa: E402
from common import resolve_constructs, split_names  # noqa: E402

# The executable configuration compiled beside cpu-O0, by unit index, and
# the pipeline replayed under pgpu-opt, by seed.
EXTRA_EXE = ["cpu-O3", "cuda", "cuda-grid"]
OPT_ROTATION = ["opt-cpu", "opt-cuda", "opt-grid", "opt-paper"]


def tools_version():
    if os.environ.get("PGPU_TOOLS_VERSION"):
        return os.environ["PGPU_TOOLS_VERSION"]
    try:
        rev = subprocess.run(["git", "-C", HERE, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        rev = ""
    return rev or "unknown"


def run_unit(tools, lang, enabled, index, seeds, workdir, extra_every=1, replay=True):
    """Runs one unit; returns its log record. Every `extra_every`-th unit
    compiles an EXTRA_EXE configuration beside cpu-O0; `replay` replays a
    pipeline per program under pgpu-opt."""
    started = time.time()
    extra = EXTRA_EXE[(index // extra_every) % len(EXTRA_EXE)] if index % extra_every == 0 else None
    record = {
        "lang": lang, "first": seeds[0], "last": seeds[-1], "generated": len(seeds), "programs": 0,
        "configs": {}, "mismatches": [], "oracle": [], "compile_failures": [], "coverage": {},
    }
    valid = []
    for seed, program, refs in (runner.interpret_generated(tools, lang, enabled, s) for s in seeds):
        bad = next(((a, r) for a, r in refs if r.msg is not None or r.timeout), None)
        if bad:
            record["oracle"].append({"seed": seed, "args": bad[0], "error": bad[1].brief()})
        else:
            valid.append((seed, refs, program))
    directory = tempfile.mkdtemp(prefix=f"sweep-{lang}-{seeds[0]}-", dir=workdir)
    try:
        configs = ["cpu-O0"] + ([extra] if extra else [])
        variants = [(c, runner.CONFIGS[c][1]) for c in configs]
        group, built, dropped = runner.compile_bundle(
            tools, lang, enabled, [(seed, refs) for seed, refs, _ in valid], "unit", directory, variants)
        for seed, config, message in dropped:
            record["compile_failures"].append({"seed": seed, "config": config, "error": message})
        compiled = {seed for seed, _ in group}
        record["programs"] = len(group)
        coverage = collections.Counter()
        for seed, _, program in valid:
            if seed in compiled:
                coverage.update(program.constructs)
        record["coverage"] = dict(coverage)

        def count(config, seed, args, ref, got):
            entry = record["configs"].setdefault(config, {"cases": 0, "agree": 0})
            entry["cases"] += 1
            kind = runner.compare(config, ref, got)
            if kind is None:
                entry["agree"] += 1
            else:
                record["mismatches"].append({"seed": seed, "config": config, "args": args,
                                             "kind": runner.signature(kind, ref, got)})

        for i, (seed, refs) in enumerate(group):
            for config, exe in built:
                run_flags = runner.CONFIGS[config][2]
                for args, ref in refs:
                    got = runner.run_cmd([exe, *run_flags, str(i), *args.split()], 60, cwd=directory)
                    count(config, seed, args, ref, got)
        for seed, refs, program in valid:
            if seed not in compiled or not replay:
                continue
            config = OPT_ROTATION[seed % len(OPT_ROTATION)]
            with tempfile.TemporaryDirectory(dir=directory) as tmp:
                ws = runner.Workspace(tools, lang, program.source, tmp)
                for args, ref in refs:
                    count(config, seed, args, ref, ws.run(config, args))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    record["seconds"] = round(time.time() - started, 1)
    return record


def sweep(opts):
    tools = runner.Tools.from_env()
    for tool in (tools.pgpu, tools.pgpu_opt) if opts.replay else (tools.pgpu,):
        if not os.path.exists(tool):
            sys.exit(f"sweep: {tool} not found (set PGPU / PGPU_OPT)")
    gen = runner.generator(opts.lang)
    enabled = resolve_constructs(gen.CONSTRUCTS, gen.DEFAULT_OFF, split_names(opts.disable))
    done = set()
    if opts.resume and os.path.exists(opts.log):
        for record in read_log(opts.log):
            if record["lang"] == opts.lang:
                done.add(record["first"])
    units = []
    for index, first in enumerate(range(opts.seed, opts.seed + opts.count, opts.bundle)):
        if first not in done:
            units.append((index, list(range(first, min(first + opts.bundle, opts.seed + opts.count)))))
    deadline = time.time() + opts.minutes * 60 if opts.minutes else None
    version = tools_version()
    workdir = tempfile.mkdtemp(prefix="sweep-work-")
    lock = threading.Lock()
    findings = collections.OrderedDict()  # seed -> configurations
    totals = collections.Counter()
    started = time.time()

    def work(unit):
        index, seeds = unit
        if deadline and time.time() > deadline:
            return None
        record = run_unit(tools, opts.lang, enabled, index, seeds, workdir, max(1, opts.extra_every), opts.replay)
        record["tools"] = version
        with lock:
            with open(opts.log, "a") as f:
                f.write(json.dumps(record) + "\n")
            totals["units"] += 1
            totals["programs"] += record["programs"]
            totals["comparisons"] += sum(c["cases"] for c in record["configs"].values())
            for m in record["mismatches"]:
                findings.setdefault(m["seed"], set()).add(m["config"])
            for m in record["compile_failures"]:
                findings.setdefault(m["seed"], set()).add(m["config"])
            for m in record["oracle"]:
                findings.setdefault(m["seed"], set()).add("cpu-O0")
            bad = len(record["mismatches"]) + len(record["compile_failures"]) + len(record["oracle"])
            print(f"{'DIFF' if bad else 'SAME'} {opts.lang} {seeds[0]}-{seeds[-1]}: {record['programs']} programs, "
                  f"{bad} problems, {record['seconds']} s (total {totals['programs']} programs, "
                  f"{time.time() - started:.0f} s)", flush=True)
        return record

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        list(pool.map(work, units))
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"{totals['units']} units, {totals['programs']} programs, {totals['comparisons']} comparisons, "
          f"{len(findings)} programs with problems ({time.time() - started:.0f} s)")
    if not findings or opts.no_reproduce:
        return 1 if findings else 0
    configs = sorted(set().union(*findings.values()))
    print(f"running the {len(findings)} programs with problems standalone ({', '.join(configs)})", flush=True)
    again = types.SimpleNamespace(configs=",".join(configs), out=opts.out, jobs=opts.jobs, keep=False,
                                  no_minimize=False, max_minimize=opts.max_minimize, max_tests=opts.max_tests)
    runner.run_all(again, list(runner.programs_from_seeds(opts.lang, list(findings), enabled)))
    return 1


def read_log(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)


def summary(opts):
    per_lang = collections.OrderedDict()
    for path in opts.logs:
        for r in read_log(path):
            s = per_lang.setdefault(r["lang"], {
                "units": 0, "generated": 0, "programs": 0, "seconds": 0.0, "configs": collections.Counter(),
                "agree": collections.Counter(), "mismatches": [], "oracle": [], "compile_failures": [],
                "coverage": collections.Counter(), "ranges": [], "tools": set()})
            s["units"] += 1
            s["generated"] += r["generated"]
            s["programs"] += r["programs"]
            s["seconds"] += r["seconds"]
            s["ranges"].append((r["first"], r["last"]))
            s["tools"].add(r.get("tools", "unknown"))
            for config, c in r["configs"].items():
                s["configs"][config] += c["cases"]
                s["agree"][config] += c["agree"]
            s["mismatches"] += r["mismatches"]
            s["oracle"] += r["oracle"]
            s["compile_failures"] += r["compile_failures"]
            s["coverage"].update(r["coverage"])
    status = 0
    for lang, s in per_lang.items():
        gen = runner.generator(lang)
        ranges = merge_ranges(s["ranges"])
        print(f"{lang}: {s['programs']} programs run on the interpreter and the CPU "
              f"({s['generated']} generated, seeds {', '.join(f'{a}-{b}' for a, b in ranges)}; "
              f"{s['units']} units, {s['seconds'] / 3600:.1f} CPU-hours; tools {', '.join(sorted(s['tools']))})")
        for config in sorted(s["configs"]):
            print(f"  {config:10} {s['agree'][config]} of {s['configs'][config]} cases agree")
        for what, label in (("mismatches", "mismatch"), ("compile_failures", "compile failure"),
                            ("oracle", "oracle failure")):
            for m in s[what]:
                status = 1
                print(f"  {label}: seed {m['seed']} "
                      f"{m.get('config', 'interpreter')} [{m.get('args', '')}] {m.get('kind') or m.get('error')}")
        missing = [c for c in gen.CONSTRUCTS if not s["coverage"].get(c)]
        print(f"  constructs used: {sum(1 for c in gen.CONSTRUCTS if s['coverage'].get(c))} of "
              f"{len(gen.CONSTRUCTS)}" + (f"; never: {', '.join(missing)}" if missing else ""))
    return status


def merge_ranges(ranges):
    out = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run")
    p.add_argument("--lang", choices=["bsgp", "fork"], default="bsgp")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--bundle", type=int, default=None, help="programs per unit (default 25 BSGP, 5 Fork)")
    p.add_argument("--jobs", type=int, default=2, help="units at once")
    p.add_argument("--no-replay", dest="replay", action="store_false",
                   help="no pipeline replays under pgpu-opt (a machine with pgpu only)")
    p.add_argument("--extra-every", type=int, default=1,
                   help="compile the extra configuration (cpu-O3, cuda, cuda-grid in turn) in every K-th unit only")
    p.add_argument("--minutes", type=float, default=0, help="start no unit after this many minutes")
    p.add_argument("--log", required=True, help="JSON lines, one per unit (appended)")
    p.add_argument("--resume", action="store_true", help="skip the units the log holds")
    p.add_argument("--disable", default="")
    p.add_argument("--out", default="/tmp/difftest")
    p.add_argument("--no-reproduce", action="store_true", help="do not rerun the programs with problems")
    p.add_argument("--max-minimize", type=int, default=4)
    p.add_argument("--max-tests", type=int, default=150)
    p = sub.add_parser("summary")
    p.add_argument("logs", nargs="+")
    opts = parser.parse_args(argv)
    if opts.command == "summary":
        return summary(opts)
    if opts.bundle is None:
        opts.bundle = 25 if opts.lang == "bsgp" else 5
    return sweep(opts)


if __name__ == "__main__":
    sys.exit(main())
