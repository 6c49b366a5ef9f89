#!/usr/bin/env python3
"""Joins the Petri-net model's predictions with the H200's measurements.

Inputs (bench/perf-model/README in PERF.md, "Validation on the H200"):
predicted/<case>.csv from build.sh (pgpu perf-model --csv) and
measured/<case>.<r>.txt from measure.sh (PGPU_PROFILE=kernels lines:
`pgpu-profile-kernel MS ms N launches NAME`). A kernel's measured time is
its device time per launch, the median over the runs. Kernels of the
runtime's collectives are measured but not modelled (the model sees only
the program's own kernels); they are counted, not joined.

The roofline estimate of a kernel is max(threads * x_a / OPS, threads *
x_g * 4 B / BW): every arithmetic operation one lane-instruction at the
chip's rate and every global access 4 bytes through the measured copy
bandwidth (OPS and BW below, for the H200), with the same instruction mix
as the model. Ranks are what Spearman's coefficient compares, so neither
estimate needs a scale; the model's steps are also fitted to seconds
(least squares, as `pgpu perf-calibrate` does, which writes the file).

Prints the table and the correlations as markdown; with --steps-seconds F
writes `steps,seconds,label` lines for pgpu perf-calibrate.

With --cycles a kernel's measurement is its busiest multiprocessor's span
in cycles (`pgpu-profile-kernel-cycles` lines of executables built with
CYCLES=1, `pgpu compile --count-sm-cycles`) instead of its device time
between events: the launch's own cost (about 3 us) is left out, which is
the time the model does not describe.
"""

import argparse
import csv
import glob
import os
import statistics
import sys

# H200: 132 multiprocessors x 128 lanes x 1.98 GHz; bandwidth of a large
# device-to-device copy measured on the GPU machine (PERF.md, issue 5).
OPS_PER_SECOND = 132 * 128 * 1.98e9
BYTES_PER_SECOND = 4182e9
BYTES_PER_ACCESS = 4

# The radix-sort variants of the model's paper (Section 5): the kernel that
# sorts, and the case names (variant + group suffix) whose order the model
# should reproduce (P = 256 and 64 in cases.txt, 128 in heldout.txt).
RADIX_KERNEL = "__group_radix_sort kernel 0"
RADIX_VARIANTS = ["radix_global", "radix_shared_count", "radix_shared_scatter"]
RADIX_GROUPS = ["", "_p64", "_p128"]


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(xs, ys):
    if len(xs) < 2:
        return float("nan")
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / (vx * vy) ** 0.5 if vx and vy else float("nan")


def fit(xs, ys):
    """Least squares y = a x + b, through the origin when b or a comes out
    negative (as `pgpu perf-calibrate` fits)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    a = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    b = my - a * mx
    if a <= 0 or b < 0:
        squares = sum(x * x for x in xs)
        a, b = (sum(x * y for x, y in zip(xs, ys)) / squares if squares else 0.0), 0.0
    return a, b


MEASURED = "measured"
# What a kernel's measurement is: "us" (device time between events) or
# "cycles" (the busiest multiprocessor's span).
UNIT = "us"
# The H200's multiprocessor clock (boost), to state thresholds given in us
# in cycles.
CYCLES_PER_US = 1980


def from_us(us):
    """`us` microseconds in UNIT."""
    return us * CYCLES_PER_US if UNIT == "cycles" else us


def to_us(value):
    """`value` in UNIT in microseconds."""
    return value / CYCLES_PER_US if UNIT == "cycles" else value


def measured(here, case):
    """Kernel name -> (median UNIT per launch, launches)."""
    runs = {}
    prefix, scale = ("pgpu-profile-kernel-cycles", 1.0) if UNIT == "cycles" else ("pgpu-profile-kernel", 1e3)
    for path in sorted(glob.glob(os.path.join(here, MEASURED, f"{case}.*.txt"))):
        for line in open(path):
            fields = line.split()
            if len(fields) < 6 or fields[0] != prefix:
                continue
            value, launches, name = float(fields[1]), int(fields[3]), " ".join(fields[5:])
            runs.setdefault(name, []).append((value * scale / launches, launches))
    return {
        name: (statistics.median(t for t, _ in samples), samples[0][1])
        for name, samples in runs.items()
    }


def join(here, predicted):
    """The kernels both predicted (csv files in `predicted`) and measured."""
    rows, unmodelled, unpredicted, unmeasured = [], 0, [], []
    for path in sorted(glob.glob(os.path.join(predicted, "*.csv"))):
        case = os.path.basename(path)[: -len(".csv")]
        times = measured(here, case)
        predicted_names = set()
        for row in csv.DictReader(open(path)):
            name = row["kernel"]
            predicted_names.add(name)
            if row["steps"] in ("", "-"):
                unpredicted.append(f"{case}: {name}")
                continue
            if name not in times:
                unmeasured.append(f"{case}: {name}")
                continue
            threads = int(row["threads"])
            x_a, x_s, x_g = int(row["x_a"]), int(row["x_s"]), int(row["x_g"])
            roofline = max(
                threads * x_a / OPS_PER_SECOND,
                threads * x_g * BYTES_PER_ACCESS / BYTES_PER_SECOND,
            )
            value, launches = times[name]
            rows.append(
                {
                    "case": case,
                    "kernel": name,
                    "threads": threads,
                    "x_a": x_a,
                    "x_s": x_s,
                    "x_g": x_g,
                    "steps": int(row["steps"]),
                    "roofline_us": roofline * 1e6,
                    "measured": value,
                    "launches": launches,
                    "bound": "lower bound" in row.get("notes", ""),
                }
            )
        unmodelled += sum(1 for name in times if name not in predicted_names)
    return rows, unmodelled, unpredicted, unmeasured


def correlations(subset):
    measured = [r["measured"] for r in subset]
    return (
        len(subset),
        spearman([r["steps"] for r in subset], measured),
        spearman([r["roofline_us"] for r in subset], measured),
    )


# Thresholds (us) of the subsets chosen on the model's side: kernels whose
# predicted execution, the fitted seconds per step times their steps (the
# launch intercept left out), exceeds them. A kernel predicted far below
# the launch floor (3-30 us measured for one-warp kernels) is measured as
# launch noise, which no model ranks.
PREDICTED_US_THRESHOLDS = [1, 10]


def subsets(rows, floor_us):
    per_step = fit([r["steps"] for r in rows], [r["measured"] for r in rows])[0] if len(rows) > 1 else 0
    return [
        ("all joined", rows),
        (f"measured above {floor_us:g} us", [r for r in rows if r["measured"] > from_us(floor_us)]),
        ("exact mixes (no lower bounds)", [r for r in rows if not r["bound"]]),
    ] + [
        (
            f"predicted above {us:g} us",
            [r for r in rows if r["steps"] * per_step > from_us(us)],
        )
        for us in PREDICTED_US_THRESHOLDS
    ]


def radix_orders(rows):
    """For each group of the radix-sort variants (RADIX_GROUPS): the
    variants in measured order and in the model's order."""
    kernels = {r["case"]: r for r in rows if r["kernel"] == RADIX_KERNEL}
    orders = []
    for suffix in RADIX_GROUPS:
        group = [kernels[v + suffix] for v in RADIX_VARIANTS if v + suffix in kernels]
        if len(group) < 2:
            continue
        by = lambda key: [r["case"] for r in sorted(group, key=lambda r: r[key])]
        orders.append((suffix, by("measured"), by("steps")))
    return orders


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument(
        "--predicted", help="the folder of predictions (default: DIR/predicted)"
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="summarize every DIR/predicted-l1-<L> folder of sweep.sh instead",
    )
    parser.add_argument(
        "--measured", default="measured", help="the folder of measure.sh's runs, in DIR"
    )
    parser.add_argument(
        "--prefix",
        default="predicted-l1",
        help="--sweep's folders, <prefix>-<L> (predicted-launched-l1: sweep.sh with LAUNCHES)",
    )
    parser.add_argument("--steps-seconds", help="write steps,seconds,label lines here")
    parser.add_argument(
        "--cycles",
        action="store_true",
        help="measure kernels by their busiest multiprocessor's cycles (CYCLES=1 builds)",
    )
    parser.add_argument(
        "--floor-us",
        type=float,
        default=20.0,
        help="the second correlation keeps kernels measured above this (launch floor)",
    )
    options = parser.parse_args()
    here = options.dir
    global MEASURED, UNIT
    MEASURED = options.measured
    UNIT = "cycles" if options.cycles else "us"
    if options.sweep:
        return sweep(here, options.floor_us, options.prefix)
    rows, unmodelled, unpredicted, unmeasured = join(
        here, options.predicted or os.path.join(here, "predicted")
    )
    if not rows:
        sys.exit("no kernel is both predicted and measured")
    a, b = fit([r["steps"] for r in rows], [r["measured"] for r in rows])
    if options.steps_seconds:
        with open(options.steps_seconds, "w") as out:
            out.write("steps,seconds,label\n")
            for r in rows:
                out.write(f"{r['steps']},{to_us(r['measured']) * 1e-6:.9g},{r['case']}: {r['kernel']}\n")

    print(
        f"| case | kernel | threads | x_a | x_s | x_g | steps | model {UNIT} | roofline us "
        f"| measured {UNIT} | launches |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in sorted(rows, key=lambda r: r["measured"]):
        print(
            f"| {r['case']} | {r['kernel']}{' (lower bound)' if r['bound'] else ''} | {r['threads']} "
            f"| {r['x_a']} | {r['x_s']} | {r['x_g']} | {r['steps']} "
            f"| {a * r['steps'] + b:.1f} | {r['roofline_us']:.2f} | {r['measured']:.1f} | {r['launches']} |"
        )
    print()
    print("| kernels | n | Spearman (model steps) | Spearman (roofline) |")
    print("|---|---:|---:|---:|")
    for label, subset in subsets(rows, options.floor_us):
        n, model, roofline = correlations(subset)
        print(f"| {label} | {n} | {model:.3f} | {roofline:.3f} |")
    print()
    for suffix, measured_order, model_order in radix_orders(rows):
        verdict = "same order" if measured_order == model_order else "DIFFERENT order"
        print(
            f"radix variants{suffix or ''}: measured {' < '.join(measured_order)}; "
            f"model {' < '.join(model_order)} ({verdict})"
        )
    if UNIT == "cycles":
        print(f"fit: measured cycles = {a:.4f} cycles/step x steps + {b:.0f} cycles")
    else:
        print(f"fit: measured us = {a * 1e3:.4f} ns/step x steps + {b:.2f} us")
    print(
        f"{len(rows)} kernels joined; {len(unpredicted)} without a prediction (unknown thread count); "
        f"{len(unmeasured)} predicted but not launched; {unmodelled} measured kernels not modelled "
        "(the runtime's collectives)"
    )
    by_case = {}
    for name in unmeasured:
        case = name.split(":", 1)[0]
        by_case[case] = by_case.get(case, 0) + 1
    if by_case:
        print(
            "  not launched (the other version of a kernel, or a branch not taken): "
            + ", ".join(f"{case} {count}" for case, count in sorted(by_case.items()))
        )


def sweep(here, floor_us, prefix):
    """One line per <prefix>-<L> folder: the correlations and whether the
    radix variants come in the measured order."""
    folders = glob.glob(os.path.join(here, f"{prefix}-*"))
    if not folders:
        sys.exit(f"no {prefix}-<L> folders: run bench/perf-model/sweep.sh first")
    folders.sort(key=lambda f: int(f.rsplit("-", 1)[1]))
    labels = [label for label, _ in subsets([], floor_us)]
    print("| l1 | " + " | ".join(f"{label}: n, model, roofline" for label in labels) + " | radix order |")
    print("|---:|" + "---|" * (len(labels) + 1))
    for folder in folders:
        rows = join(here, folder)[0]
        cells = []
        for _, subset in subsets(rows, floor_us):
            n, model, roofline = correlations(subset)
            cells.append(f"{n}, {model:.3f}, {roofline:.3f}")
        radix = ", ".join(
            ("same" if m == p else "different") + (s or "")
            for s, m, p in radix_orders(rows)
        )
        print(f"| {folder.rsplit('-', 1)[1]} | " + " | ".join(cells) + f" | {radix} |")


if __name__ == "__main__":
    main()
