#!/usr/bin/env python3
"""Differential runner for generated BSGP and Fork programs (issue 39).

    runner.py [run] --lang bsgp|fork --count N --seed S [--jobs J]
              [--configs a,b] [--disable c,d] [--out DIR] [--no-minimize]
    runner.py files PROGRAM...            (programs with difftest headers)
    runner.py build DIR --lang L --count N --seed S [--bundle K]
    runner.py check DIR [--device cuda|cpu]
    runner.py --list-configs

`run` generates programs with gen_bsgp.py / gen_fork.py (seeds S .. S+N-1)
and runs each with every argument set its header lists, under the
reference interpreter (`pgpu run --interpret`, the oracle) and under every
configuration (CONFIGS below): compiled for the CPU at -O0 and -O3,
compiled for cuda (plain and --grid-barriers) and run with --device cpu,
and the kernel pipelines replayed by `pgpu-opt --pgpu-check-semantics`.
Standard output and exit status must agree; a failure of both at the same
source line agrees. Every disagreement is minimized (minimize.py: the same
configuration, the same kind of disagreement, the interpreter still runs
the program) and saved under --out (default /tmp/difftest) as
`<lang>-<seed>/`: the program, the minimized program, and report.txt with
the arguments, every configuration's output and the commands that
reproduce it. The summary prints the counts, the mismatch classes (known
bugs of KNOWN_CLASSES or NEW) and the construct coverage; exit status 1 on
any mismatch or oracle failure.

`build`/`check` run generated programs on a GPU machine that has only
python3: `build` bundles K programs per executable (a dispatcher main
runs program argi(0)), compiles each bundle for cuda (plain and
--grid-barriers), strips and packs them with xz into DIR/bundles.tar.xz,
and records in DIR/expected.json the interpreter's output of every
(program, arguments) case and the CPU device's output of the same
executable. `check DIR` (on the GPU machine) runs every case with
--device cuda (or --device cpu to test the mode here) and compares with
the interpreter; mismatches are marked `gpu-only` when the CPU device
agreed at build time. Exit status 1 on any mismatch.

Tools: $PGPU and $PGPU_OPT (default target/debug/ of the repository).
Copy them first for long runs, as others rebuild target/debug:
    mkdir -p /tmp/difftest-bin && cp target/debug/{pgpu,pgpu-opt,libpgpu_runtime.a} /tmp/difftest-bin/
    PGPU=/tmp/difftest-bin/pgpu PGPU_OPT=/tmp/difftest-bin/pgpu-opt scripts/difftest/runner.py ...
"""

import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from common import parse_header, resolve_constructs, split_names  # noqa: E402

# name -> (kind, detail). Executables: compile flags and run flags.
# opt-*: a prefix of a target's pipeline (up to the pass before `cut`),
# or the paper's pipeline (every barrier kept).
CONFIGS = {
    "cpu-O0": ("exe", ["-O0", "--target", "cpu"], []),
    "cpu-O3": ("exe", ["-O3", "--target", "cpu"], []),
    "cuda": ("exe", ["--target", "cuda"], ["--device", "cpu"]),
    "cuda-grid": ("exe", ["--target", "cuda", "--grid-barriers"], ["--device", "cpu"]),
    "opt-cpu": ("opt", ["--target", "cpu"], "pgpu-lower-to-runtime"),
    "opt-cuda": ("opt", ["--target", "cuda"], "pgpu-offload-kernels"),
    "opt-grid": ("opt", ["--target", "cuda", "--grid-barriers"], "pgpu-offload-kernels"),
    "opt-paper": ("opt", ["--target", "cpu"], "paper"),
}

# Mismatch classes of open known bugs: (id, languages, test) where
# test(source, kind, message, args) says whether a mismatch looks like the
# bug, so that a run reports it as "known: <id>" instead of NEW. Empty:
# every class issue 39 listed and these generators found is fixed
# (docs/testing.md, "Mismatch classes"); add one when a bug stays open.
KNOWN_CLASSES = []


def classify(lang, source, kind, message, args):
    for name, langs, test in KNOWN_CLASSES:
        if lang in langs:
            try:
                if test(source, kind, message or "", args):
                    return "known: " + name
            except re.error:
                pass
    return "NEW"


# ---------------------------------------------------------------------------
# Tools and runs.
# ---------------------------------------------------------------------------


def split_pipeline(text):
    """The passes of `builtin.module(a,b{x=1},c)` as strings."""
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module("):-1]
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


class Tools:
    def __init__(self, pgpu, pgpu_opt):
        self.pgpu = pgpu
        self.pgpu_opt = pgpu_opt
        self._pipelines = {}
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls):
        pgpu = os.environ.get("PGPU", os.path.join(ROOT, "target/debug/pgpu"))
        opt = os.environ.get("PGPU_OPT", os.path.join(os.path.dirname(pgpu), "pgpu-opt"))
        return cls(pgpu, opt)

    def pipeline(self, config, lang):
        """The pass pipeline of an opt-* configuration."""
        _, flags, cut = CONFIGS[config]
        key = (config, lang)
        with self._lock:
            if key in self._pipelines:
                return self._pipelines[key]
            with tempfile.TemporaryDirectory() as tmp:
                src = os.path.join(tmp, "p." + lang)
                with open(src, "w") as f:
                    f.write("int main() { return 0; }\n")
                r = subprocess.run(
                    [self.pgpu, "compile", *flags, "--print-pipeline", src, "-o", os.path.join(tmp, "x")],
                    capture_output=True, text=True, timeout=300,
                )
            line = next((l for l in r.stderr.splitlines() if l.startswith("builtin.module(")), None)
            if line is None:
                raise RuntimeError(f"no pipeline from pgpu compile --print-pipeline: {r.stderr[:500]}")
            passes = split_pipeline(line)
            if cut == "paper":
                cut = "pgpu-lower-to-runtime"
                passes = [p for p in passes if p != "pgpu-eliminate-barriers"]
            names = [p.split("{")[0] for p in passes]
            if cut in names:
                passes = passes[: names.index(cut)]
            text = "builtin.module(" + ",".join(passes) + ")"
            self._pipelines[key] = text
            return text


class Result:
    """One run: status, output, and the first error's line and message."""

    __slots__ = ("rc", "out", "err", "line", "msg", "timeout", "compile_failed")

    def __init__(self, rc, out, err, timeout=False, compile_failed=False):
        self.rc = rc
        self.out = out
        self.err = err
        self.timeout = timeout
        self.compile_failed = compile_failed
        self.line, self.msg = error_of(err)
        if self.msg is None and (rc < 0 or rc >= 128) and not timeout:
            self.msg = f"crashed with signal {-rc if rc < 0 else rc - 128}"

    def failed(self):
        return self.timeout or self.compile_failed or self.rc != 0 or self.msg is not None

    def brief(self):
        what = "timeout" if self.timeout else ("compile failed" if self.compile_failed else f"status {self.rc}")
        return f"{what}; error at line {self.line}: {self.msg}" if self.msg else what

    def to_json(self):
        return {"rc": self.rc, "stdout": self.out, "stderr": self.err[-4000:], "timeout": self.timeout,
                "compile_failed": self.compile_failed}


_LOC = re.compile(r"\.(?:bsgp|fork|mlir|c):(\d+):(\d+): error: (.*)")
_MIETTE = re.compile(r"×\s*(.*)")
_MIETTE_LOC = re.compile(r"╭─\[[^\]]*?:(\d+):(\d+)\]")


def normalize(msg):
    # A file named in the message (a temporary directory's, which differs
    # per run) is left out.
    msg = re.sub(r"(?:/[\w.+-]+)+\.(?:bsgp|fork|mlir|c)\b:?", "FILE", msg)
    msg = re.sub(r"%\w+", "%V", msg)
    msg = re.sub(r"'v\d+'|`v\d+`", "VAR", msg)
    msg = re.sub(r"\d+", "N", msg)
    return msg.strip()[:160]


def error_of(err):
    """(line, normalized message) of the first error in stderr, or (None, None)."""
    m = _LOC.search(err)
    if m:
        return int(m.group(1)), normalize(m.group(3))
    m = _MIETTE.search(err)
    if m:
        loc = _MIETTE_LOC.search(err)
        return (int(loc.group(1)) if loc else None), normalize(m.group(1))
    for line in err.splitlines():
        if "error" in line.lower() or "panicked" in line:
            return None, normalize(line)
    return None, None


def run_cmd(cmd, timeout, **kw):
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=timeout, **kw)
        return Result(r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace"))
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        return Result(124, out, f"timed out after {timeout} s", timeout=True)


class Workspace:
    """A program's files and its runs under every configuration (cached)."""

    def __init__(self, tools, lang, source, directory, timeouts=None):
        self.tools = tools
        self.lang = lang
        self.dir = directory
        self.src = os.path.join(directory, "p." + lang)
        with open(self.src, "w") as f:
            f.write(source)
        self.timeouts = timeouts or {"interp": 120, "compile": 300, "exe": 60, "opt": 180}
        self.compiled = {}
        self.emitted = None

    def interp(self, args):
        return run_cmd([self.tools.pgpu, "run", "--interpret", self.src, "--", *args.split()],
                       self.timeouts["interp"], cwd=self.dir)

    def run(self, config, args):
        kind, flags, extra = CONFIGS[config]
        if kind == "exe":
            if config not in self.compiled:
                exe = os.path.join(self.dir, config + ".exe")
                r = run_cmd([self.tools.pgpu, "compile", *flags, self.src, "-o", exe],
                            self.timeouts["compile"], cwd=self.dir)
                self.compiled[config] = (exe, r)
            exe, r = self.compiled[config]
            if r.rc != 0 or r.timeout:
                return Result(r.rc, "", r.err, timeout=r.timeout, compile_failed=True)
            return run_cmd([exe, *extra, *args.split()], self.timeouts["exe"], cwd=self.dir)
        # opt: emit once, replay the pipeline under --pgpu-check-semantics.
        if self.emitted is None:
            mlir = os.path.join(self.dir, "p.mlir")
            r = run_cmd([self.tools.pgpu, "emit", self.src, "--stage", "pgpu", "--debug-info"],
                        self.timeouts["compile"], cwd=self.dir)
            if r.rc == 0:
                with open(mlir, "w") as f:
                    f.write(r.out)
            self.emitted = (mlir, r)
        mlir, r = self.emitted
        if r.rc != 0:
            return Result(r.rc, "", r.err, compile_failed=True)
        pipeline = self.tools.pipeline(config, self.lang)
        return run_cmd([self.tools.pgpu_opt, mlir, f"--pgpu-check-semantics={args}",
                        f"--pass-pipeline={pipeline}", "-o", os.devnull],
                       self.timeouts["opt"], cwd=self.dir)


def compare(config, ref, got):
    """None if `got` (of config) agrees with the interpreter's `ref`, else the
    kind of the disagreement."""
    opt = CONFIGS[config][0] == "opt"
    if ref.failed() and ref.msg is not None:
        # The oracle failed: agreement only if the other fails at the same line.
        if opt:
            if got.rc != 0 and got.msg and ("input module fails" in got.msg or got.line == ref.line
                                            or got.compile_failed):
                return None
            return "interp-error" if got.rc == 0 else "error-location"
        if got.failed() and got.line is not None and got.line == ref.line:
            return None
        if got.failed():
            return "error-location"
        return "interp-error"
    if got.timeout:
        return "timeout"
    if got.compile_failed:
        return "compile-fail"
    if opt:
        return None if got.rc == 0 else "opt-fail"
    if got.rc == ref.rc and got.out == ref.out:
        return None
    if got.rc < 0 or got.rc >= 128:
        return "crash"
    if got.msg is not None and got.rc != 0:
        return "run-error"
    if got.rc != ref.rc:
        return "status"
    return "stdout"


def signature(kind, ref, got):
    """What must stay the same while minimizing."""
    if kind in ("compile-fail", "run-error", "opt-fail", "error-location"):
        return f"{kind}: {got.msg}"
    if kind == "interp-error":
        return f"{kind}: {ref.msg}"
    return kind


def mismatch_kind(tools, lang, source, config, args):
    """The signature of the disagreement of config with the interpreter on
    source (None if they agree or the program is not valid any more)."""
    with tempfile.TemporaryDirectory(prefix="difftest-min-") as tmp:
        ws = Workspace(tools, lang, source, tmp)
        ref = ws.interp(args)
        if ref.timeout:
            return None
        if config == "oracle":
            return f"oracle: {ref.msg}" if ref.msg else None
        got = ws.run(config, args)
        kind = compare(config, ref, got)
        if kind is None:
            return None
        if kind not in ("interp-error", "error-location") and ref.failed():
            return None  # the interpreter must run the program
        return signature(kind, ref, got)


# ---------------------------------------------------------------------------
# run: generate, compare, minimize, save.
# ---------------------------------------------------------------------------


def generator(lang):
    if lang == "bsgp":
        from gen_bsgp import BsgpGenerator
        return BsgpGenerator
    from gen_fork import ForkGenerator
    return ForkGenerator


class Outcome:
    def __init__(self, name, lang, seed, source, constructs, arg_sets):
        self.name = name
        self.lang = lang
        self.seed = seed
        self.source = source
        self.constructs = constructs
        self.arg_sets = arg_sets
        self.comparisons = 0
        self.mismatches = []  # (config, args, kind, signature, ref, got)
        self.oracle = []  # (args, ref): the interpreter failed
        self.results = {}


def check_program(tools, outcome, configs, workdir, keep):
    directory = tempfile.mkdtemp(prefix=f"{outcome.name}-", dir=workdir)
    try:
        ws = Workspace(tools, outcome.lang, outcome.source, directory)
        for args in outcome.arg_sets:
            ref = ws.interp(args)
            outcome.results[("interp", args)] = ref
            if ref.msg is not None or ref.timeout:
                outcome.oracle.append((args, ref))
            for config in configs:
                got = ws.run(config, args)
                outcome.results[(config, args)] = got
                outcome.comparisons += 1
                kind = compare(config, ref, got)
                if kind:
                    outcome.mismatches.append((config, args, kind, signature(kind, ref, got), ref, got))
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)
    return outcome


def save_reproducer(out_dir, outcome, minimized, cls, mism):
    ext = "." + outcome.lang
    d = os.path.join(out_dir, outcome.name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "program" + ext), "w") as f:
        f.write(outcome.source)
    if minimized:
        with open(os.path.join(d, "min" + ext), "w") as f:
            f.write(minimized)
    config, args, kind, sig, ref, got = mism
    lines = [
        f"program: {outcome.name} ({outcome.lang}, seed {outcome.seed})",
        f"class: {cls}",
        f"first mismatch: {config} on arguments [{args}]: {sig}",
        "",
        "all mismatches:",
    ]
    for c, a, k, s, _, _ in outcome.mismatches:
        lines.append(f"  {c} [{a}]: {s}")
    for a, r in outcome.oracle:
        lines.append(f"  oracle [{a}]: the interpreter fails: {r.brief()}")
    lines += ["", "reproduce:", f"  pgpu run --interpret {d}/min{ext} -- {args}"]
    kindc, flags, extra = CONFIGS[config] if config in CONFIGS else ("", [], [])
    if kindc == "exe":
        lines.append(f"  pgpu compile {' '.join(flags)} {d}/min{ext} -o /tmp/x && /tmp/x {' '.join(extra)} {args}")
    elif kindc == "opt":
        lines.append(f"  pgpu emit {d}/min{ext} --stage pgpu --debug-info | pgpu-opt "
                     f"--pgpu-check-semantics='{args}' --pass-pipeline='<{config} pipeline: runner.py --list-configs>'")
    lines.append(f"  scripts/difftest/minimize.py {d}/program{ext} --config {config} --args '{args}'")
    lines += ["", "outputs on the mismatching arguments:"]
    for (c, a), r in sorted(outcome.results.items()):
        if a != args:
            continue
        lines.append(f"--- {c}: {r.brief()}")
        lines.append(r.out.rstrip("\n")[-3000:])
        if r.err.strip():
            lines.append("  stderr: " + r.err.strip()[-1500:].replace("\n", "\n  "))
    with open(os.path.join(d, "report.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return d


def programs_from_seeds(lang, seeds, enabled):
    gen = generator(lang)
    for s in seeds:
        p = gen().generate(s, enabled)
        yield Outcome(f"{lang}-{s}", lang, s, p.source, p.constructs, [" ".join(a) for a in p.arg_sets])


def programs_from_files(paths):
    for path in paths:
        with open(path) as f:
            source = f.read()
        info = parse_header(source)
        lang = "fork" if path.endswith(".fork") else "bsgp"
        name = os.path.splitext(os.path.basename(path))[0]
        yield Outcome(name, lang, info.get("seed", "?"), source, info["constructs"], info["args"] or [""])


def run_all(opts, programs):
    tools = Tools.from_env()
    for tool in (tools.pgpu, tools.pgpu_opt):
        if not os.path.exists(tool):
            sys.exit(f"runner: {tool} not found (set PGPU / PGPU_OPT)")
    configs = split_names(opts.configs) or list(CONFIGS)
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"runner: unknown configuration {c!r}; --list-configs lists them")
    os.makedirs(opts.out, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="difftest-work-")
    started = time.time()
    outcomes = []
    coverage = collections.Counter()
    lock = threading.Lock()

    def work(outcome):
        check_program(tools, outcome, configs, workdir, opts.keep)
        with lock:
            status = "SAME" if not outcome.mismatches and not outcome.oracle else "DIFF"
            detail = ""
            if outcome.mismatches:
                c, a, k, s, _, _ = outcome.mismatches[0]
                detail = f" {c} [{a}] {s}"
            elif outcome.oracle:
                detail = f" oracle [{outcome.oracle[0][0]}] {outcome.oracle[0][1].brief()}"
            print(f"{status} {outcome.name}{detail}", flush=True)
        return outcome

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        for outcome in pool.map(work, programs):
            outcomes.append(outcome)
            coverage.update(outcome.constructs)

    # Minimize and classify: one minimization per signature (the first
    # program that shows it), up to --max-minimize.
    classes = collections.OrderedDict()
    minimized_sigs = {}
    budget = opts.max_minimize
    for outcome in outcomes:
        problems = list(outcome.mismatches)
        if not problems and outcome.oracle:
            args, ref = outcome.oracle[0]
            problems = [("oracle", args, "interp-error", f"oracle: {ref.msg or ref.brief()}", ref, ref)]
        if not problems:
            continue
        mism = problems[0]
        config, args, kind, sig, ref, got = mism
        minimized = None
        key = (config, sig)
        if not opts.no_minimize and key not in minimized_sigs and budget > 0:
            budget -= 1
            print(f"minimizing {outcome.name}: {config} [{args}] {sig}", flush=True)
            try:
                from minimize import PROTECT, PROTECT_HEADER, minimize
                minimized = minimize(
                    outcome.source,
                    lambda s: mismatch_kind(tools, outcome.lang, s, config, args) == sig,
                    max_tests=opts.max_tests,
                    log=lambda m: print("  " + m, flush=True),
                    protect=PROTECT_HEADER if kind == "compile-fail" else PROTECT,
                )
            except Exception as e:  # keep going: the original is saved
                print(f"  minimization failed: {e}", flush=True)
            minimized_sigs[key] = outcome.name
        cls_source = minimized or outcome.source
        cls = classify(outcome.lang, cls_source, kind, (got.msg if kind != "interp-error" else ref.msg) or "", args)
        d = save_reproducer(opts.out, outcome, minimized, cls, mism)
        entry = classes.setdefault((cls, config, sig), {"programs": [], "reproducer": None})
        entry["programs"].append(outcome.name)
        if minimized or entry["reproducer"] is None:
            if minimized or not entry["reproducer"]:
                entry["reproducer"] = os.path.join(d, ("min." if minimized else "program.") + outcome.lang)

    comparisons = sum(o.comparisons for o in outcomes)
    mismatching = sum(len(o.mismatches) for o in outcomes)
    oracle = sum(1 for o in outcomes if o.oracle)
    print()
    print(f"programs: {len(outcomes)}  ({time.time() - started:.0f} s, {opts.jobs} jobs)")
    print(f"configurations: {len(configs)} ({', '.join(configs)}) x argument sets = {comparisons} comparisons")
    print(f"agreements: {comparisons - mismatching}")
    print(f"mismatches: {mismatching} in {sum(1 for o in outcomes if o.mismatches)} programs")
    print(f"oracle failures (the interpreter rejects a generated program): {oracle}")
    if classes:
        print("mismatch classes:")
        for (cls, config, sig), e in classes.items():
            print(f"  [{cls}] {config}: {sig}")
            print(f"      {len(e['programs'])} programs ({', '.join(e['programs'][:6])}{' ...' if len(e['programs']) > 6 else ''}); {e['reproducer']}")
    print("construct coverage (programs using each construct):")
    gen = generator(outcomes[0].lang) if outcomes else None
    names = list(gen.CONSTRUCTS) if gen else []
    names += sorted(set(coverage) - set(names))
    row = []
    for name in names:
        row.append(f"{name} {coverage.get(name, 0)}")
    for i in range(0, len(row), 4):
        print("  " + "; ".join(row[i:i + 4]))
    uncovered = [n for n in names if not coverage.get(n)]
    if uncovered:
        print("constructs no program used: " + ", ".join(uncovered))
    summary = {
        "programs": len(outcomes),
        "configurations": configs,
        "comparisons": comparisons,
        "agreements": comparisons - mismatching,
        "mismatches": mismatching,
        "oracle_failures": oracle,
        "classes": [{"class": c, "config": cfg, "signature": s, **e} for (c, cfg, s), e in classes.items()],
        "coverage": dict(coverage),
    }
    with open(os.path.join(opts.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    shutil.rmtree(workdir, ignore_errors=True)
    return 1 if mismatching or oracle else 0


# ---------------------------------------------------------------------------
# build / check: GPU batches.
# ---------------------------------------------------------------------------


# A bundle's main runs one program (`argi(0)`, its arguments from 1) or,
# when its first argument is MULTI_CASE + N, N cases in turn: each is the
# program's index and its arguments (the bundle's width of them), and
# each ends with CASE_END and its program's status on stdout.
MULTI_CASE = 1000000
CASE_END = "@@difftest-case-end"


def bundle_source(lang, programs):
    """One source that holds every program (renamed with a prefix, their
    arguments from main's `base`) and a main that runs them (MULTI_CASE)."""
    # Every case passes the most arguments any program of the bundle takes.
    width = max((len(a) for p in programs for a in p.arg_sets), default=0)
    parts = []
    for i, p in enumerate(programs):
        parts.append(f"// ---- program {i}: seed {p.seed}")
        parts.extend(l for l in p.source.splitlines() if not l.startswith("// difftest-"))
    parts += [
        "int main() {",
        "  int first = argi(0, 0);",
        "  int cases = 1;",
        "  int pos = 0;",
        "  int multi = 0;",
        f"  if (first >= {MULTI_CASE}) {{ multi = 1; cases = first - {MULTI_CASE}; pos = 1; }}",
        "  int status = 99;",
        "  for (int c = 0; c < cases; c++) {",
        "    int which = argi(pos, 0);",
        "    status = 99;",
    ]
    for i, _ in enumerate(programs):
        parts.append(f"    if (which == {i}) status = b{i}_main(pos + 1);")
    parts += [
        f'    if (multi == 1) printf("{CASE_END} %d\\n", status);',
        f"    pos = pos + 1 + {width};",
        "  }",
        "  return status;",
        "}",
    ]
    return "\n".join(parts) + "\n"


def interpret_generated(tools, lang, enabled, seed):
    """(seed, program, [(arguments, the interpreter's Result)]) of the
    generated program `seed`, run standalone under the interpreter."""
    p = generator(lang)().generate(seed, enabled)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(tools, lang, p.source, tmp)
        refs = [(" ".join(a), ws.interp(" ".join(a))) for a in p.arg_sets]
    return seed, p, refs


def compile_bundle(tools, lang, enabled, group, name, staging, variants, strip=False, timeout=1800):
    """Compiles the programs of `group` ((seed, ...) pairs) as one bundle
    (bundle_source) for every variant ((name, compile flags)), into
    staging/<name>.<variant>. A program whose compile fails is dropped
    (the one that holds the failing line, or all of them without a line)
    and the rest compiled again. Returns (the group compiled, [(variant,
    executable)], [(seed, variant, message)] of the dropped programs)."""
    gen = generator(lang)
    dropped = []
    while group:
        progs = [gen().generate(seed, enabled, prefix=f"b{i}_", arg_base="base") for i, (seed, *_) in enumerate(group)]
        src = os.path.join(staging, name + "." + lang)
        with open(src, "w") as f:
            f.write(bundle_source(lang, progs))
        failure = None
        built = []
        for variant, flags in variants:
            exe = os.path.join(staging, f"{name}.{variant}")
            r = run_cmd([tools.pgpu, "compile", *flags, src, "-o", exe], timeout)
            if r.rc != 0:
                failure = (variant, r)
                break
            if strip and shutil.which("strip"):
                subprocess.run(["strip", exe], check=False)
            built.append((variant, exe))
        if failure is None:
            return group, built, dropped
        variant, r = failure
        print(f"{name}: {variant} compile fails: {r.msg}", flush=True)
        if not r.line:
            dropped += [(seed, variant, r.msg or r.brief()) for seed, *_ in group]
            return [], [], dropped
        with open(src) as f:
            lines = f.read().splitlines()
        owner = 0
        for l in lines[:r.line]:
            m = re.match(r"// ---- program (\d+)", l)
            if m:
                owner = int(m.group(1))
        print(f"{name}: dropping program seed {group[owner][0]} (compile error)", flush=True)
        dropped.append((group[owner][0], variant, r.msg or r.brief()))
        group = group[:owner] + group[owner + 1:]
    return [], [], dropped


def build(opts):
    tools = Tools.from_env()
    os.makedirs(opts.dir, exist_ok=True)
    gen = generator(opts.lang)
    enabled = resolve_constructs(gen.CONSTRUCTS, gen.DEFAULT_OFF, split_names(opts.disable))
    staging = tempfile.mkdtemp(prefix="difftest-build-")
    cases = []
    bundles = []
    seeds = [int(s) for s in split_names(opts.seeds)] or list(range(opts.seed, opts.seed + opts.count))
    jobs = max(1, opts.jobs)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda seed: interpret_generated(tools, opts.lang, enabled, seed), seeds))
    valid = []
    skipped = 0
    for seed, p, refs in results:
        if any(r.msg is not None or r.timeout for _, r in refs):
            skipped += 1
            continue
        valid.append((seed, refs))
    print(f"{len(valid)} programs run under the interpreter ({skipped} skipped: the interpreter fails)")
    variants = [("cuda", ["--target", "cuda"]), ("grid", ["--target", "cuda", "--grid-barriers"])]

    def build_bundle(b):
        """Compiles bundle `b` and runs its cases on the CPU device: (name
        or None, [case])."""
        name = f"bundle{b // opts.bundle:03d}"
        group, built, _ = compile_bundle(tools, opts.lang, enabled, valid[b:b + opts.bundle], name, staging,
                                         variants, strip=True)
        if not group:
            return None, []
        bundle_cases = []
        for i, (seed, refs) in enumerate(group):
            for args, ref in refs:
                full = f"{i} {args}".strip()
                case = {"bundle": name, "seed": seed, "args": full, "status": ref.rc, "stdout": ref.out, "cpu": {}}
                for variant, exe in built:
                    r = run_cmd([exe, "--device", "cpu", *full.split()], 120)
                    case["cpu"][variant] = r.rc == ref.rc and r.out == ref.out
                bundle_cases.append(case)
        return name, bundle_cases

    # Bundles compile independently: one per worker (a machine with many
    # cores builds a batch in minutes).
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, bundle_cases in pool.map(build_bundle, range(0, len(valid), opts.bundle)):
            if name is not None:
                bundles.append(name)
                cases.extend(bundle_cases)
    archive = os.path.join(opts.dir, "bundles.tar.xz")
    with tarfile.open(archive, "w:xz") as tar:
        for name in bundles:
            for variant in ("cuda", "grid"):
                path = os.path.join(staging, f"{name}.{variant}")
                if os.path.exists(path):
                    tar.add(path, arcname=f"{name}.{variant}")
    with open(os.path.join(opts.dir, "expected.json"), "w") as f:
        json.dump({"lang": opts.lang, "seeds": seeds, "cases": cases}, f)
    shutil.rmtree(staging, ignore_errors=True)
    size = os.path.getsize(archive) + os.path.getsize(os.path.join(opts.dir, "expected.json"))
    cpu_bad = sum(1 for c in cases for ok in c["cpu"].values() if not ok)
    print(f"{len(cases)} cases in {len(bundles)} bundles, {size / 2**20:.1f} MiB in {opts.dir}; "
          f"{cpu_bad} (case, variant) pairs already differ on the CPU device")
    if size > 60 * 2**20:
        print("warning: the batch is over 60 MiB: build fewer programs per batch")
    return 0


def check(opts):
    with open(os.path.join(opts.dir, "expected.json")) as f:
        expected = json.load(f)
    tmp = tempfile.mkdtemp(prefix="difftest-check-")
    with tarfile.open(os.path.join(opts.dir, "bundles.tar.xz"), "r:xz") as tar:
        tar.extractall(tmp)
    for name in os.listdir(tmp):
        os.chmod(os.path.join(tmp, name), 0o755)
    failures = collections.Counter()
    runs = []
    for index, case in enumerate(expected["cases"]):
        variants = [v for v in ("cuda", "grid") if os.path.exists(os.path.join(tmp, f"{case['bundle']}.{v}"))]
        if opts.variants == "alternate" and variants:
            # A program's cases take turns, so that a program of two or
            # more cases runs split and --grid-barriers both.
            variants = [variants[index % len(variants)]]
        runs.extend((case, variant) for variant in variants)

    # Cases that pass their bundle's full width of arguments (the most any
    # case of it passes: bundle_source) and exit with 0 run --multi at a
    # time in one process (a process's start-up, the CUDA context and the
    # module, costs more than most cases); the rest, and every case of a
    # multi-case process that failed, run alone. (An executable without
    # multi-case runs returns 99 to one: its cases then run alone.)
    widths = collections.Counter()
    for case in expected["cases"]:
        widths[case["bundle"]] = max(widths[case["bundle"]], len(case["args"].split()))
    items = []
    grouped = collections.defaultdict(list)
    for case, variant in runs:
        full_width = len(case["args"].split()) == widths[case["bundle"]]
        if opts.multi > 1 and case["status"] == 0 and full_width:
            grouped[(case["bundle"], variant)].append((case, variant))
        else:
            items.append([(case, variant)])
    for group in grouped.values():
        items += [group[i:i + opts.multi] for i in range(0, len(group), opts.multi)]

    def run_alone(run):
        case, variant = run
        exe = os.path.join(tmp, f"{case['bundle']}.{variant}")
        return run_cmd([exe, "--device", opts.device, *case["args"].split()], opts.timeout)

    def run_item(item):
        """[(run, Result or None when the deadline passed)] and the seconds
        of each process."""
        if opts.until and time.time() >= opts.until:
            return [(run, None) for run in item], []
        start = time.monotonic()
        if len(item) == 1:
            result = run_alone(item[0])
            return [(item[0], result)], [time.monotonic() - start]
        case, variant = item[0]
        exe = os.path.join(tmp, f"{case['bundle']}.{variant}")
        args = [str(MULTI_CASE + len(item))] + [a for c, _ in item for a in c["args"].split()]
        r = run_cmd([exe, "--device", opts.device, *args], opts.timeout * 2)
        pieces = re.split(CASE_END + r" (-?\d+)\n", r.out)
        if r.failed() or len(pieces) != 2 * len(item) + 1 or pieces[-1]:
            seconds = [time.monotonic() - start]
            results = []
            for run in item:
                start = time.monotonic()
                results.append((run, run_alone(run)))
                seconds.append(time.monotonic() - start)
            return results, seconds
        results = [(run, Result(int(pieces[2 * i + 1]) & 255, pieces[2 * i], ""))
                   for i, run in enumerate(item)]
        return results, [time.monotonic() - start]

    # Processes share the GPU: several at once hide each one's start-up
    # (driver initialization, module loading), which dominates small cases.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        done_items = list(pool.map(run_item, items))
    timed = [(run, r) for results, _ in done_items for run, r in results]
    processes = [t for _, seconds in done_items for t in seconds]
    # Runs the deadline (--until) left out do not count.
    done = [(run, r) for run, r in timed if r is not None]
    left_out = len(timed) - len(done)
    runs = [run for run, _ in done]
    results = [r for _, r in done]
    seconds = sorted(processes)
    total = len(runs)
    checked = {case["seed"] for case, _ in runs}
    for (case, variant), r in zip(runs, results):
        if r.rc == case["status"] and r.out == case["stdout"]:
            continue
        where = "gpu-only" if case["cpu"].get(variant) else "also on the CPU device"
        failures[where] += 1
        print(f"DIFF {case['bundle']}.{variant} {case['args']} (seed {case['seed']}, {where}): {r.brief()}",
              flush=True)
        for a, b in zip(case["stdout"].splitlines(), r.out.splitlines()):
            if a != b:
                print(f"  expected: {a[:200]}\n  got:      {b[:200]}")
                break
    shutil.rmtree(tmp, ignore_errors=True)
    bad = sum(failures.values())
    seeds = expected.get("seeds", [])
    print(f"{total - bad} of {total} runs agree with the interpreter ({expected['lang']}, "
          f"{len(checked)} programs run, seeds {seeds[0] if seeds else '?'}..{seeds[-1] if seeds else '?'}, "
          f"device {opts.device})")
    if left_out:
        print(f"  {left_out} runs left out: the deadline (--until) passed")
    for where, n in failures.items():
        print(f"  {n} mismatches {where}")
    if seconds:
        print(f"{len(seconds)} processes for {total} runs; seconds per process: median "
              f"{seconds[len(seconds) // 2]:.2f}, max {seconds[-1]:.2f}, {opts.jobs} at once")
    return 1 if bad else 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--list-configs" in argv:
        tools = Tools.from_env()
        for name, (kind, flags, extra) in CONFIGS.items():
            if kind == "exe":
                print(f"{name:10} pgpu compile {' '.join(flags)}; run with {' '.join(extra) or '(no flags)'}")
            else:
                print(f"{name:10} pgpu-opt --pgpu-check-semantics --pass-pipeline='{tools.pipeline(name, 'bsgp')}'")
        return 0
    if not argv or argv[0] not in ("run", "files", "build", "check"):
        argv.insert(0, "run")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    for name in ("run", "files"):
        p = sub.add_parser(name)
        if name == "run":
            p.add_argument("--lang", choices=["bsgp", "fork"], default="bsgp")
            p.add_argument("--count", type=int, default=20)
            p.add_argument("--seed", type=int, default=1)
            p.add_argument("--seeds", default="", help="a list of seeds (comma-separated) instead of --seed/--count")
            p.add_argument("--disable", default="", help="constructs to leave out (gen_*.py --list-constructs)")
            p.add_argument("--enable", default="", help="constructs that are off by default to turn on")
        else:
            p.add_argument("programs", nargs="+")
        p.add_argument("--jobs", type=int, default=2)
        p.add_argument("--configs", default="", help="comma-separated (default all; --list-configs)")
        p.add_argument("--out", default="/tmp/difftest")
        p.add_argument("--no-minimize", action="store_true")
        p.add_argument("--max-minimize", type=int, default=8, help="minimizations per run (one per mismatch signature)")
        p.add_argument("--max-tests", type=int, default=300, help="predicate runs per minimization")
        p.add_argument("--keep", action="store_true", help="keep the work directories")
    p = sub.add_parser("build")
    p.add_argument("dir")
    p.add_argument("--lang", choices=["bsgp", "fork"], default="bsgp")
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seeds", default="", help="a list of seeds (comma-separated) instead of --seed/--count")
    p.add_argument("--bundle", type=int, default=25, help="programs per executable")
    p.add_argument("--disable", default="")
    p.add_argument("--jobs", type=int, default=2)
    p = sub.add_parser("check")
    p.add_argument("dir")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--timeout", type=int, default=120)
    p.add_argument("--jobs", type=int, default=8, help="executables run at once (they share the GPU)")
    p.add_argument("--multi", type=int, default=25,
                   help="cases of one executable run in one process, at most (1: each alone)")
    p.add_argument("--variants", default="all", choices=["all", "alternate"],
                   help="every case on both executables, or each case on one, in turn")
    p.add_argument("--until", type=float, default=0,
                   help="start no run after this time (seconds since the epoch); those left out are counted")
    opts = parser.parse_args(argv)
    if opts.command == "run":
        gen = generator(opts.lang)
        enabled = resolve_constructs(gen.CONSTRUCTS, gen.DEFAULT_OFF, split_names(opts.disable), None,
                                     split_names(opts.enable))
        seeds = [int(s) for s in split_names(opts.seeds)] or list(range(opts.seed, opts.seed + opts.count))
        return run_all(opts, list(programs_from_seeds(opts.lang, seeds, enabled)))
    if opts.command == "files":
        return run_all(opts, list(programs_from_files(opts.programs)))
    if opts.command == "build":
        return build(opts)
    return check(opts)


if __name__ == "__main__":
    sys.exit(main())
