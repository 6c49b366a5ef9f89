#!/usr/bin/env python3
"""Code quality of the PTX -> AMDGPU translation (PERF.md, issue 8): per
kernel of the given PTX files, the number of machine instructions and the
VGPR and SGPR counts LLVM reports (`.vgpr_count`, `.sgpr_count` in the
code object metadata), for a 64-lane CDNA chip (gfx942) and a 32-lane RDNA
chip (gfx1100), and gfx1100 in wave64 mode.

Usage: bench/ptx/code_quality.py [PGPU_TRANSLATE] FILE.ptx ...
(PGPU_TRANSLATE defaults to target/release/pgpu-translate)."""
import re
import subprocess
import sys

BUILDS = [("gfx942", None), ("gfx1100", None), ("gfx1100", 64)]


def assembly(tool, path, chip, wave):
    command = [tool, "--ptx-to-amdgpu", "--chip", chip, "-S", path, "-o", "-"]
    if wave:
        command += ["--wave", str(wave)]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def kernels(text):
    """{name: (instructions, vgprs, sgprs)} from AMDGCN assembly."""
    counts = {}
    for match in re.finditer(r"^(\w+):\n(.*?)^\.Lfunc_end\d+:", text, re.S | re.M):
        body = match.group(2)
        instructions = sum(
            1 for line in body.splitlines() if re.match(r"\s+[a-z_][a-z0-9_]*(\s|$)", line)
        )
        counts[match.group(1)] = [instructions, None, None]
    metadata = text[text.find("amdhsa.kernels:"):]
    for chunk in re.split(r"^  - ", metadata, flags=re.M)[1:]:
        name = re.search(r"^\s+\.name:\s+(\S+)", chunk, re.M)
        vgpr = re.search(r"^\s+\.vgpr_count:\s+(\d+)", chunk, re.M)
        sgpr = re.search(r"^\s+\.sgpr_count:\s+(\d+)", chunk, re.M)
        if name and name.group(1) in counts:
            counts[name.group(1)][1] = int(vgpr.group(1)) if vgpr else None
            counts[name.group(1)][2] = int(sgpr.group(1)) if sgpr else None
    return counts


def main():
    args = sys.argv[1:]
    tool = "target/release/pgpu-translate"
    if args and not args[0].endswith(".ptx"):
        tool, args = args[0], args[1:]
    header = " | ".join(f"{chip}{' wave64' if wave else ''} instructions / VGPR / SGPR" for chip, wave in BUILDS)
    print(f"| kernel | {header} |")
    print("|---|" + "---|" * len(BUILDS))
    for path in args:
        results = [kernels(assembly(tool, path, chip, wave)) for chip, wave in BUILDS]
        for name in results[0]:
            cells = " | ".join("{} / {} / {}".format(*r.get(name, ["-"] * 3)) for r in results)
            print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
