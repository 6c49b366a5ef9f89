#!/usr/bin/env python3
"""Differential test of cuda-target executables on a GPU machine that has no
compiler (the lent GPU machine has CUDA and Python, no LLVM or Rust).

Here, where pgpu is built:

    scripts/gpu_differential.py build gpu-check

compiles every examples/bsgp and examples/fork program with `pgpu compile
--target cuda` into gpu-check/ (stripped), and writes the expected output of
every case: the argument sets of test-suite/run/bsgp/*.test (lines `%t.exe
ARGS`) and test-suite/run/fork/*.test (lines `%t.native ARGS`), checked by
the reference interpreter there, plus larger sizes below (LARGE,
FORK_LARGE), and every program in the run tests' Inputs/ (REGRESSIONS),
whose expected output is the interpreter's. Expected
outputs come from the same executable run here on the CPU device, whose
kernels and collectives are the CPU runtime's. Then, on the GPU machine
(carry gpu-check/):

    python3 scripts/gpu_differential.py check gpu-check

runs every case with `--device cuda` and compares output and exit status;
it prints one line per case and exits 1 if any differs. `check` also runs
the out-of-bounds program and expects its kernel report.

PGPU_COMPILE_FLAGS adds options to every `pgpu compile` of `build` (e.g.
`--grid-barriers`, so that the GPU runs the grid kernels; the CPU device
runs the split versions, so the expected outputs stay the split code's).
"""

import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Sizes that fill a GPU, per example (its argi arguments).
LARGE = {
    "listing1_find_faces": ["1000000 300000"],
    "listing9_find_faces_get": ["1000000 300000"],
    "radix_sort": ["1000000 30"],
    "stream_compaction": ["1000000"],
    "histogram": ["1000000 64"],
    "particle_binning": ["200000"],
}

# Fork programs at sizes that give the groups work (beyond the run tests'
# argument sets, which every Fork example is also checked with).
FORK_LARGE = {
    "sieve": ["100000 4096"],
    "quicksort": ["100000 256 3"],
    "matmul": ["128 4096"],
    "list_ranking": ["4096 9"],
    "parallel_merge": ["4096 4096 1024 2"],
}

# Loop speculation (issue 7): examples/speculate with the argument grids of
# test-suite/run/speculate/Inputs (the CPU device's outputs there equal the
# sequential programs': lowering.test), and the synthetic loop with windows
# of 64 threads (forwarding among the GPU's 32-thread warps, many windows)
# and with the direct-update scheme (writes in place, undone on a
# violation; windows of 8192 and of 64 threads).
SPECULATE = ["synthetic", "md", "cfd", "blackscholes"]
# The synthetic loop lowered with other pgpu-lower-speculation options.
SYNTHETIC_LOWERED = {
    "speculate_synthetic_w64": "window=64",
    "speculate_synthetic_direct": "commit=direct",
    "speculate_synthetic_direct_w64": "window=64 commit=direct",
}
SPECULATE_LARGE = {
    "synthetic": ["7168 5 5 10 0 0 7", "7168 5 5 10 1 10 7", "7168 5 5 10 1 100 7", "7168 8 8 3 3 10 7", "7168 2 2 3 2 10 7", "3000 1 1 1 4 1000 7"],
    "md": ["8192 4 7 0", "8192 4 7 10"],
    "cfd": ["16384 8192 7 0", "16384 8192 7 10", "4096 8192 7 100"],
}

# Regression programs (issue 39's reproducers and the generators' finds):
# every BSGP and Fork input of the run tests, with its default arguments;
# their expected output is the reference interpreter's.
REGRESSIONS = ["test-suite/run/bsgp/Inputs/*.bsgp", "test-suite/run/fork/Inputs/*.fork"]

OUT_OF_BOUNDS = "test-suite/run/errors/Inputs/kernel-out-of-bounds.bsgp"
OUT_OF_BOUNDS_REPORT = "error: in kernel main kernel 0: CUDA_ERROR_ASSERT"


def regressions():
    """(name, path) of the regression programs."""
    return [
        ("reg_" + os.path.basename(path).rsplit(".", 1)[0].replace("-", "_"), path)
        for pattern in REGRESSIONS
        for path in sorted(glob.glob(os.path.join(ROOT, pattern)))
    ]


def cases():
    """(example, arguments) pairs: the run tests' and LARGE."""
    found = [(name, "") for name, _ in regressions()]
    for test in sorted(glob.glob(os.path.join(ROOT, "test-suite/run/bsgp/*.test"))):
        name = os.path.basename(test)[: -len(".test")]
        if not os.path.exists(os.path.join(ROOT, f"examples/bsgp/{name}.bsgp")):
            continue
        with open(test) as text:
            for match in re.finditer(r"// RUN: %t\.exe ?(.*?) > %t\.native", text.read()):
                found.append((name, match.group(1).strip()))
    for name, sizes in LARGE.items():
        found.extend((name, args) for args in sizes)
    for test in sorted(glob.glob(os.path.join(ROOT, "test-suite/run/fork/*.test"))):
        name = os.path.basename(test)[: -len(".test")]
        # Tests of an example; the others' programs are REGRESSIONS.
        if not os.path.exists(os.path.join(ROOT, f"examples/fork/{name}.fork")):
            continue
        with open(test) as text:
            for match in re.finditer(r"// RUN: %t\.native ?(.*?) (>|\|)", text.read()):
                found.append(("fork_" + name, match.group(1).strip()))
    for name, sizes in FORK_LARGE.items():
        found.extend(("fork_" + name, args) for args in sizes)
    for name in SPECULATE:
        grid = os.path.join(ROOT, f"test-suite/run/speculate/Inputs/{name}.grid")
        with open(grid) as lines:
            runs = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
        runs += SPECULATE_LARGE.get(name, [])
        found.extend(("speculate_" + name, args) for args in runs)
        if name == "synthetic":
            for lowered in SYNTHETIC_LOWERED:
                found.extend((lowered, args) for args in runs)
    return found


def build(directory):
    pgpu = os.environ.get("PGPU", os.path.join(ROOT, "target/debug/pgpu"))
    os.makedirs(directory, exist_ok=True)
    programs = [
        (os.path.basename(path)[: -len(".bsgp")], path)
        for path in sorted(glob.glob(os.path.join(ROOT, "examples/bsgp/*.bsgp")))
    ]
    programs.append(("kernel-out-of-bounds", os.path.join(ROOT, OUT_OF_BOUNDS)))
    programs.extend(regressions())
    programs.extend(
        ("fork_" + os.path.basename(path)[: -len(".fork")], path)
        for path in sorted(glob.glob(os.path.join(ROOT, "examples/fork/*.fork")))
    )
    programs.extend(
        ("speculate_" + name, os.path.join(ROOT, f"examples/speculate/{name}.c")) for name in SPECULATE
    )
    emitted = subprocess.run(
        [pgpu, "emit", os.path.join(ROOT, "examples/speculate/synthetic.c")],
        check=True, capture_output=True, text=True,
    ).stdout
    for name, options in SYNTHETIC_LOWERED.items():
        lowered = os.path.join(directory, name + ".mlir")
        with open(lowered, "w") as out:
            subprocess.run(
                [os.environ.get("PGPU_OPT", os.path.join(os.path.dirname(pgpu), "pgpu-opt")),
                 f"--pass-pipeline=builtin.module(pgpu-lower-speculation{{{options}}})"],
                input=emitted, stdout=out, check=True, text=True,
            )
        programs.append((name, lowered))
    for name, program in programs:
        exe = os.path.join(directory, name)
        flags = os.environ.get("PGPU_COMPILE_FLAGS", "").split()
        subprocess.run(
            [pgpu, "compile", "--target", "cuda", *flags, program, "-o", exe], check=True
        )
        if shutil.which("strip"):
            subprocess.run(["strip", exe], check=True)
    expected = []
    sources = dict(regressions())
    for name, args in cases():
        if name in sources:
            # The oracle: the interpreter; a program it rejects is no case.
            command = [pgpu, "run", "--interpret", sources[name]]
        else:
            command = [os.path.join(directory, name), "--device", "cpu", *args.split()]
        run = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if name in sources and run.returncode != 0:
            continue
        expected.append({"name": name, "args": args, "status": run.returncode, "stdout": run.stdout})
    with open(os.path.join(directory, "expected.json"), "w") as out:
        json.dump(expected, out)
    print(f"{len(expected)} cases in {directory}")


# Executables `check` runs at once.
JOBS = 8


def check(directory):
    with open(os.path.join(directory, "expected.json")) as text:
        expected = json.load(text)
    failures = 0

    def run_case(case):
        command = [os.path.join(directory, case["name"]), "--device", "cuda", *case["args"].split()]
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return None

    # Several executables share the GPU at once: their start-up (driver,
    # module loading) dominates the small cases.
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
        runs = list(pool.map(run_case, expected))
    for case, run in zip(expected, runs):
        if run is None:
            print(f"DIFF {case['name']} {case['args']}".rstrip())
            print("  timed out after 120 s (a hang)", flush=True)
            failures += 1
            continue
        same = run.returncode == case["status"] and run.stdout == case["stdout"]
        print(f"{'SAME' if same else 'DIFF'} {case['name']} {case['args']}".rstrip(), flush=True)
        if not same:
            failures += 1
            print(f"  status {run.returncode} (expected {case['status']})")
            print("  " + run.stderr[:600].replace("\n", "\n  "))
    oob = os.path.basename(OUT_OF_BOUNDS)[: -len(".bsgp")]
    run = subprocess.run(
        [os.path.join(directory, oob), "--device", "cuda"], capture_output=True, text=True, timeout=120
    )
    reported = run.returncode == 1 and OUT_OF_BOUNDS_REPORT in run.stderr
    print(f"{'SAME' if reported else 'DIFF'} {oob} (kernel error report)")
    failures += 0 if reported else 1
    print(f"{len(expected) + 1 - failures} of {len(expected) + 1} cases agree")
    return 1 if failures else 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "check"):
        print(__doc__)
        return 2
    if sys.argv[1] == "build":
        build(sys.argv[2])
        return 0
    return check(sys.argv[2])


if __name__ == "__main__":
    sys.exit(main())
