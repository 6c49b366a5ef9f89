#!/usr/bin/env python3
"""Runs the same programs built two ways (two folders of executables, A
and B) side by side on one machine, and prints a table of their times.

Each case is `NAME ARG...`: the executable NAME of both folders with those
arguments. The time of a run is the sum of its kernels' GPU times
(`PGPU_PROFILE=kernels`, the `pgpu-profile-kernel` lines), what a change
of the device code changes; with TIME=loop it is the program's own
`loop-ms T` line (bench/speculate's timed loops, host work and copies
included). The variants alternate, REPEAT times (default 5), and the
table has medians. Every run's output without its timing lines (`loop-ms
T`, `bench-ms T`, `phase-ms T`: any `NAME-ms` line) must be the same in
A and B.

usage: bench/ab.py A_DIR B_DIR 'NAME ARG...' ...
"""

import os
import re
import statistics
import subprocess
import sys


# The benchmarks' own timing lines.
TIMING = re.compile(r"^[a-z][a-z-]*-ms ")


def run(directory, case):
    name, *args = case.split()
    environment = dict(os.environ, PGPU_PROFILE="kernels")
    done = subprocess.run([os.path.join(directory, name), *args], capture_output=True,
                          text=True, env=environment, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{directory}/{case} failed: {done.stderr[-400:]}")
    lines = done.stdout.splitlines()
    loop = [float(line.split()[1]) for line in lines if line.startswith("loop-ms ")]
    kernels = [float(line.split()[1]) for line in done.stderr.splitlines()
               if line.startswith("pgpu-profile-kernel ")]
    output = [line for line in lines if not TIMING.match(line)]
    if os.environ.get("TIME", "kernels") == "loop":
        if not loop:
            raise SystemExit(f"{directory}/{case} prints no loop-ms line")
        return loop[0], output
    return sum(kernels), output


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    first, second, cases = sys.argv[1], sys.argv[2], sys.argv[3:]
    repeat = int(os.environ.get("REPEAT", "5"))
    print(f"| case | A ms | B ms | A/B | output |")
    print("|---|---:|---:|---:|---|")
    for case in cases:
        times = {first: [], second: []}
        outputs = {}
        for _ in range(repeat):
            for directory in times:
                milliseconds, outputs[directory] = run(directory, case)
                times[directory].append(milliseconds)
        a, b = (statistics.median(times[d]) for d in (first, second))
        same = "same" if outputs[first] == outputs[second] else "DIFFERS"
        ratio = f"{a / b:.2f}" if b > 0 else "-"
        print(f"| `{case}` | {a:.3f} | {b:.3f} | {ratio} | {same} |", flush=True)


if __name__ == "__main__":
    main()
