#!/usr/bin/env python3
"""Code quality of the PTX route against the upstream rocdl route
(PERF.md, issue 8): every kernel of the given programs is compiled two
ways from the same kernel IR (the kernel stage without Fork block groups
and grid barriers, which both `pgpu emit --stage ptx` and
`--stage amdgcn` use), for one AMD chip:

* rocdl: `pgpu emit FILE --stage amdgcn --chip CHIP`, the AMDGPU backend
  (upstream's `convert-gpu-to-rocdl` and LLVM's AMDGPU backend);
* PTX route: `pgpu emit FILE --stage ptx` (the NVPTX backend, sm_90), then
  each module through `pgpu-translate --ptx-to-amdgpu --chip CHIP -S`.

For each kernel it reads the machine instructions and the VGPR and SGPR
counts of the code object metadata (code_quality.kernels), prints a
summary per program and overall (geometric means of the PTX route's
ratios to rocdl, and how often each route is smaller), and with
--details FILE writes the per-kernel table.

Usage: bench/ptx/rocdl_compare.py [--build DIR] [--chip CHIP]
       [--details FILE] PROGRAM...   (DIR defaults to target/release)."""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from code_quality import kernels  # noqa: E402

SEPARATOR = re.compile(r"^// ----- gpu\.binary @(\S+)\n", re.M)


def modules(listing):
    """(binary name, text) of every module of a `// ----- gpu.binary` listing."""
    parts = SEPARATOR.split(listing)
    return list(zip(parts[1::2], parts[2::2]))


def run(command):
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def per_module(text):
    """{binary/kernel: counts} of every module of a listing (kernels of
    different modules may share a name)."""
    found = {}
    for binary, module in modules(text):
        for name, counts in kernels(module).items():
            found[f"{binary}/{name}"] = counts
    return found


def rocdl_route(build, program, chip):
    return per_module(run([os.path.join(build, "pgpu"), "emit", program, "--stage", "amdgcn", "--chip", chip]))


def ptx_route(build, program, chip):
    listing = run([os.path.join(build, "pgpu"), "emit", program, "--stage", "ptx"])
    found = {}
    with tempfile.TemporaryDirectory() as scratch:
        for index, (binary, module) in enumerate(modules(listing)):
            if ".entry" not in module:
                continue
            path = os.path.join(scratch, f"module{index}.ptx")
            with open(path, "w") as f:
                f.write(module)
            assembly = run([os.path.join(build, "pgpu-translate"), "--ptx-to-amdgpu", "--chip", chip,
                            "-S", path, "-o", "-"])
            for name, counts in kernels(assembly).items():
                found[f"{binary}/{name}"] = counts
    return found


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="target/release")
    parser.add_argument("--chip", default="gfx942")
    parser.add_argument("--details")
    parser.add_argument("programs", nargs="+")
    args = parser.parse_args()

    rows = []
    print(f"| program | kernels | instructions rocdl / PTX route | max VGPR rocdl / PTX route "
          f"| max SGPR rocdl / PTX route |")
    print("|---|---|---|---|---|")
    for program in args.programs:
        rocdl = rocdl_route(args.build, program, args.chip)
        routed = ptx_route(args.build, program, args.chip)
        names = [name for name in rocdl if name in routed]
        missing = sorted(set(rocdl) ^ set(routed))
        if missing:
            print(f"warning: {program}: kernels of only one route: {', '.join(missing)}", file=sys.stderr)
        for name in names:
            rows.append((os.path.basename(program), name, rocdl[name], routed[name]))
        mine = [r for r in rows if r[0] == os.path.basename(program)]
        total = [sum(r[k][0] for r in mine) for k in (2, 3)]
        vgpr = [max(r[k][1] for r in mine) for k in (2, 3)]
        sgpr = [max(r[k][2] for r in mine) for k in (2, 3)]
        print(f"| {os.path.basename(program)} | {len(mine)} | {total[0]} / {total[1]} | {vgpr[0]} / {vgpr[1]} "
              f"| {sgpr[0]} / {sgpr[1]} |")

    print()
    print(f"{len(rows)} kernels on {args.chip}. PTX route / rocdl, geometric mean over kernels:")
    for index, what in enumerate(("instructions", "VGPRs", "SGPRs")):
        ratios = [r[3][index] / r[2][index] for r in rows if r[2][index] and r[3][index]]
        smaller = sum(1 for r in rows if r[3][index] < r[2][index])
        larger = sum(1 for r in rows if r[3][index] > r[2][index])
        print(f"- {what}: {geomean(ratios):.3f} (PTX route smaller for {smaller}, larger for {larger}, "
              f"equal for {len(rows) - smaller - larger})")

    if args.details:
        with open(args.details, "w") as f:
            f.write(f"| program | kernel | rocdl instructions / VGPR / SGPR ({args.chip}) "
                    f"| PTX route instructions / VGPR / SGPR |\n|---|---|---|---|\n")
            for program, name, a, b in rows:
                f.write(f"| {program} | {name} | {a[0]} / {a[1]} / {a[2]} | {b[0]} / {b[1]} / {b[2]} |\n")


if __name__ == "__main__":
    main()
