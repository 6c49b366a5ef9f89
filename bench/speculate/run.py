#!/usr/bin/env python3
"""Runs the loop-speculation benchmarks of issue 7 on the GPU machine
(after bench/speculate/build.sh; carry bench/speculate/bin), side by side in
one run, and prints the PERF.md tables:

  speedup  MD, CFD and Black-Scholes at 512*k iterations, k = 1..16, no
           run-time dependences (seeds/gpu-tls.txt, Figures 5 and 6):
           the loop with GPU-TLS on the GPU against the sequential loop on
           this machine's CPU (the program without the pragma); MD (16
           partners per atom) and CFD at each iteration weight of WEIGHTS
           (default 1,256: force, f and g averaged over that many samples);
           LOOPS (default md,cfd,blackscholes) picks the loops;
  weight   MD and CFD at 8192 iterations and weights 1 .. 1024, with the
           hand-written CUDA kernel of the same loop without speculation
           (bench/speculate/cuda, built here with nvcc; correct only without
           dependences, which these runs have): the most any TLS scheme can
           reach with one thread per iteration;
  commit   the synthetic loop (N = 7168, M = 10, no dependences) with the
           parallel and the serial commit at Sw-Sr = 1-1 .. 64-64 (Figure 8);
  deps     the synthetic loop (N = 7168, M = 10) without dependences and
           with 1% RAW, WAR and WAW dependences at Sw-Sr = 1-1 .. 16-16
           (Figure 7): GPU-TLS, the direct-update scheme and the in-order
           commit, each against the sequential loop.

Times are the loop's own (the programs' `loop-ms` line, which waits for
the device), medians of REPEAT runs (default 5); every run's output
without that line must equal the sequential program's.
Usage: python3 bench/speculate/run.py [speedup] [weight] [commit] [deps]
"""

import os
import statistics
import subprocess
import sys

BIN = os.environ.get("PGPU_SPECULATE_BIN", "bench/speculate/bin")
REPEAT = int(os.environ.get("REPEAT", "5"))
# The iteration weights of the speedup table's MD and CFD rows.
WEIGHTS = [int(w) for w in os.environ.get("WEIGHTS", "1,256").split(",")]
# The loops of the speedup table.
LOOPS = os.environ.get("LOOPS", "md,cfd,blackscholes").split(",")


def run(program, args, device=None):
    command = [os.path.join(BIN, program)]
    if device:
        command += ["--device", device]
    command += [str(a) for a in args]
    times, output = [], None
    for _ in range(REPEAT):
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed: {done.stderr[:400]}")
        lines = done.stdout.splitlines()
        times.append(float(lines[-1].split()[1]))
        output = lines[:-1]
    return statistics.median(times), output


PARTNERS = 16


def loop_args(name, n, weight):
    return {
        "md": [n, PARTNERS, 7, 0, weight],
        "cfd": [2 * n, n, 7, 0, weight],
        "blackscholes": [n, 7, 0],
    }[name]


def speedup_row(name, n, weight):
    args = loop_args(name, n, weight)
    try:
        gpu, out = run(name, args, "cuda")
    except SystemExit as failure:
        print(f"| {name} | {n} | {weight} | failed | | | {str(failure)[:120]} |")
        return False
    seq, ref = run(name + "_seq", args)
    check = "same" if out == ref else "DIFFERENT"
    print(f"| {name} | {n} | {weight} | {gpu:.3f} | {seq:.3f} | {seq / gpu:.1f}x | {check} |")
    return True


def speedup_table():
    print("| loop | iterations | weight | GPU-TLS ms | sequential ms | speedup | check |")
    print("|---|---|---|---|---|---|---|")
    for name in LOOPS:
        weights = [1] if name == "blackscholes" else WEIGHTS
        for weight in weights:
            for k in range(1, 17):
                if not speedup_row(name, 512 * k, weight):
                    break


def cuda_kernel_ms(name, n, weight):
    """The median kernel time of bench/speculate/cuda/NAME.cu (built once)."""
    exe = os.path.join(BIN, name + "_cuda")
    if not os.path.exists(exe):
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda", name + ".cu")
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", source, "-o", exe], check=True)
    args = {"md": [n, PARTNERS, weight], "cfd": [2 * n, n, weight]}[name]
    done = subprocess.run([exe, *map(str, args), str(max(REPEAT, 5))], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def weight_table():
    print(
        "| loop | iterations | weight | GPU-TLS ms | sequential ms | speedup | CUDA kernel without "
        "speculation ms | its speedup (the ceiling) | GPU-TLS / ceiling | check |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in ("md", "cfd"):
        for weight in (1, 4, 16, 64, 256, 1024):
            args = loop_args(name, 8192, weight)
            gpu, out = run(name, args, "cuda")
            seq, ref = run(name + "_seq", args)
            cuda = cuda_kernel_ms(name, 8192, weight)
            check = "same" if out == ref else "DIFFERENT"
            print(
                f"| {name} | 8192 | {weight} | {gpu:.3f} | {seq:.3f} | {seq / gpu:.1f}x | {cuda:.3f} "
                f"| {seq / cuda:.1f}x | {cuda / gpu:.0%} | {check} |"
            )


def commit_table():
    print("| Sw-Sr | parallel commit ms | serial commit ms | serial/parallel | check |")
    print("|---|---|---|---|---|")
    for s in (1, 2, 4, 8, 16, 32, 64):
        args = [7168, s, s, 10, 0, 0, 7]
        parallel, out = run("synthetic", args, "cuda")
        serial, out2 = run("synthetic_serial", args, "cuda")
        _, ref = run("synthetic_seq", args)
        check = "same" if out == ref and out2 == ref else "DIFFERENT"
        print(f"| {s}-{s} | {parallel:.3f} | {serial:.3f} | {serial / parallel:.1f}x | {check} |")


def deps_table():
    print(
        "| dependences | Sw-Sr | sequential ms | GPU-TLS ms | direct update ms | in-order commit ms "
        "| GPU-TLS speedup | direct update speedup | in-order commit speedup | fastest | check |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for pattern, label in ((0, "none"), (2, "1% WAR"), (3, "1% WAW"), (1, "1% RAW")):
        for s in (1, 2, 4, 8, 16):
            args = [7168, s, s, 10, pattern, 10, 7]
            seq, ref = run("synthetic_seq", args)
            times, same = {}, True
            for scheme, program in (("GPU-TLS", "synthetic"), ("direct update", "synthetic_direct"),
                                    ("in-order commit", "synthetic_serial")):
                times[scheme], out = run(program, args, "cuda")
                same = same and out == ref
            cells = " | ".join(f"{t:.3f}" for t in times.values())
            speedups = " | ".join(f"{seq / t:.1f}x" for t in times.values())
            fastest = min(times, key=times.get)
            check = "same" if same else "DIFFERENT"
            print(f"| {label} | {s}-{s} | {seq:.3f} | {cells} | {speedups} | {fastest} | {check} |")


def main():
    tables = sys.argv[1:] or ["speedup", "commit", "deps"]
    gpu = subprocess.run(
        ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True
    ).stdout.strip()
    print(f"machine: {gpu}, {os.cpu_count()} CPU cores; median of {REPEAT} runs\n")
    for table in tables:
        {
            "speedup": speedup_table,
            "weight": weight_table,
            "commit": commit_table,
            "deps": deps_table,
        }[table]()
        print()


if __name__ == "__main__":
    main()
