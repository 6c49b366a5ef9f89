"""Replays the driver's pipeline with pgpu-opt and compares the artifacts.

For each program: `pgpu emit --stage lowered --print-pipeline` gives the
target's LLVM-dialect module and the one-line pipeline that made it;
`pgpu-opt --pass-pipeline=<that>` on `pgpu emit --stage pgpu --debug-info
--generic` must give the same module, byte for byte (but for the time
`gpu-module-to-binary` records in a binary's properties), and
`mlir-translate --mlir-to-llvmir` the same LLVM IR, byte for byte.
`--stage supersteps|kernels` replays that stage's pipeline instead (its
module compared, nothing translated). With
`--compile`, `pgpu compile --print-pipeline` on that program must print
the same pipeline. `--custom-form` prints the `pgpu` stage in the ops'
custom forms, which leave out some block arguments' locations: the replay
then differs, which shows the comparison sees it. `--driver`, `--opt`
and `--passes` replay a driver and a pgpu-opt built with more passes in
them (`pgpu_plugin::Registry`), with those passes run first. Prints one
line per program and exits 1 if any differs.

usage: replay.py --bin DIR --mlir-translate PATH --target cpu|cuda
                 [--stage lowered|kernels|supersteps] [--compile FILE]
                 [--custom-form] [--driver NAME] [--opt NAME]
                 [--passes PIPELINE] FILE...
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

# The one nondeterministic field: how long the binary took to make.
TIMING = re.compile(rb"LLVMIRToISATimeInMs = \d+ : i64")


def run(command, stdin=None):
    done = subprocess.run(command, input=stdin, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command[:3])} ... exited {done.returncode}: "
            + done.stderr.decode(errors="replace").strip()[-2000:]
        )
    return done.stdout, done.stderr


def first_difference(a, b):
    for number, (x, y) in enumerate(zip(a.splitlines(), b.splitlines()), 1):
        if x != y:
            return number
    return min(len(a.splitlines()), len(b.splitlines())) + 1


def driver_options(args):
    """The driver, and the options it compiles with."""
    passes = [f"--passes={args.passes}"] if args.passes else []
    return os.path.join(args.bin, args.driver), ["--target", args.target, *passes]


def replay(args, program):
    pgpu, target = driver_options(args)
    reference, printed = run(
        [pgpu, "emit", *target, "--stage", args.stage, "--debug-info", "--print-pipeline", program]
    )
    pipeline = printed.decode().strip().splitlines()[-1]
    form = [] if args.custom_form else ["--generic"]
    source, _ = run([pgpu, "emit", "--stage", "pgpu", "--debug-info", *form, program])
    replayed, _ = run(
        [
            os.path.join(args.bin, args.opt),
            f"--pass-pipeline={pipeline}",
            "--mlir-print-debuginfo",
            "-",
        ],
        stdin=source,
    )
    name = os.path.relpath(program)
    masked = [TIMING.sub(b"LLVMIRToISATimeInMs = T : i64", m) for m in (reference, replayed)]
    if masked[0] != masked[1]:
        return False, f"{name}: the replayed module differs at line {first_difference(*masked)}"
    if args.stage != "lowered":
        return True, f"{name}: same module ({len(reference)} bytes)"
    translate = [args.mlir_translate, "--mlir-to-llvmir", "-"]
    ir = [run(translate, stdin=module)[0] for module in (reference, replayed)]
    if ir[0] != ir[1]:
        return False, f"{name}: the replayed LLVM IR differs at line {first_difference(*ir)}"
    return True, f"{name}: same module ({len(reference)} bytes) and LLVM IR ({len(ir[0])} bytes)"


def compile_prints_the_pipeline(args, program):
    pgpu, target = driver_options(args)
    _, emitted = run([pgpu, "emit", *target, "--stage", "lowered", "--print-pipeline", program])
    with tempfile.TemporaryDirectory() as scratch:
        _, compiled = run(
            [pgpu, "compile", *target, "--print-pipeline", program, "-o", os.path.join(scratch, "exe")]
        )
    same = compiled.strip() == emitted.strip().splitlines()[-1]
    verdict = "prints the pipeline emit replays" if same else "prints another pipeline"
    return same, f"{args.driver} compile --target {args.target}: {verdict}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--mlir-translate", required=True)
    parser.add_argument("--target", choices=["cpu", "cuda"], required=True)
    parser.add_argument("--stage", choices=["lowered", "kernels", "supersteps"], default="lowered")
    parser.add_argument("--compile")
    parser.add_argument("--custom-form", action="store_true")
    parser.add_argument("--driver", default="pgpu")
    parser.add_argument("--opt", default="pgpu-opt")
    parser.add_argument("--passes")
    parser.add_argument("programs", nargs="+")
    args = parser.parse_args()

    def guarded(check, program):
        try:
            return check(args, program)
        except RuntimeError as error:
            return False, f"{os.path.relpath(program)}: {error}"

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: guarded(replay, p), sorted(args.programs)))
    if args.compile:
        results.append(guarded(compile_prints_the_pipeline, args.compile))
    for _, line in results:
        print(line)
    same = sum(ok for ok, _ in results)
    print(f"{same} of {len(results)} replayed the same")
    return 0 if same == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
