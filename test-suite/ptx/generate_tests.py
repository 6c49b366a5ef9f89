#!/usr/bin/env python3
"""Writes the lit tests that follow from cases.txt and nvcc/ (run from the
repository root after adding a kernel or a case):

* test-suite/run/ptx/STEM.test: every case of nvcc/STEM.ptx on the CPU
  emulation with 32- and 64-lane waves, and the sm_75 PTX, against
  expected/;
* test-suite/frontends/ptx/nvcc-roundtrip.test: every nvcc file round-trips;
* test-suite/backends/ptx-amdgpu/nvcc.test: every nvcc file to HSA code
  objects for gfx942, gfx90a and gfx1100;
* test-suite/gpu/ptx-run-cuda.test (REQUIRES: cuda): every case on the GPU
  through pgpu-run-ptx-cuda, and the divergence and call kernels against the
  CPU emulation."""
import collections
import glob
import os
import re

ROOT = "test-suite"
CASES = os.path.join(ROOT, "ptx", "cases.txt")


def cases():
    for line in open(CASES):
        line = line.split("#")[0].strip()
        if line:
            fields = line.split()
            yield fields[0], fields[1], fields[2]


def prefix(text):
    return re.sub(r"[^A-Z0-9]", "_", text.upper())


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run_tests():
    by_stem = collections.OrderedDict()
    for name, stem, kernel in cases():
        if "/" not in stem:
            by_stem.setdefault(stem, []).append(name)
    for stem, names in by_stem.items():
        lines = [f"# The {stem} kernels of test-suite/ptx/cuda, as nvcc compiled them (sm_90 and",
                 "# sm_75 PTX), run on the CPU with 32-lane and with 64-lane waves: every",
                 "# buffer equals what the same PTX left on the H200 (test-suite/ptx/expected,",
                 "# recorded by test-suite/ptx/record.py). Written by test-suite/ptx/generate_tests.py."]
        for name in names:
            for wave, variant in ((32, None), (64, None), (64, "sm_75")):
                flag = f" --variant {variant}" if variant else ""
                tag = f"{name}.{wave}" + (f".{variant}" if variant else "")
                lines.append(f"# RUN: pgpu run-ptx --cases %repo_root/test-suite/ptx/cases.txt --case {name} --wave {wave}{flag} -o %t.{tag}")
                lines.append(f"# RUN: diff %t.{tag} %repo_root/test-suite/ptx/expected/{name}.out")
        write(os.path.join(ROOT, "run", "ptx", f"{stem}.test"), lines)


def nvcc_files():
    return sorted(glob.glob(os.path.join(ROOT, "ptx", "nvcc", "*.ptx")))


def roundtrip_test():
    lines = ["# The PTX that nvcc (CUDA 13.0, -O3) emits for the test kernels of",
             "# test-suite/ptx/cuda, for sm_90 (PTX ISA 9.0) and sm_75: every file parses,",
             "# passes the checks and prints text that parses back to the same module; the",
             "# printed module keeps every kernel. Written by test-suite/ptx/generate_tests.py."]
    checks = []
    for path in nvcc_files():
        stem = os.path.basename(path)[:-4]
        p = prefix(stem)
        lines.append(f"# RUN: pgpu-translate --ptx-to-ptx --verify-roundtrip %S/../../ptx/nvcc/{stem}.ptx | FileCheck %s --check-prefix={p}")
        text = open(path).read()
        version = re.search(r"[.]version (\S+)", text).group(1)
        checks.append(f"# {p}: .version {version}")
        checks += [f"# {p}: .visible .entry {k}(" for k in re.findall(r"[.]entry (\w+)\(", text)]
    write(os.path.join(ROOT, "frontends", "ptx", "nvcc-roundtrip.test"), lines + [""] + checks)


def amdgpu_test():
    lines = ["# Every test kernel's nvcc PTX (sm_90 and sm_75) translates to an HSA code",
             "# object for a 64-lane CDNA chip (gfx942, gfx90a) and a 32-lane RDNA chip",
             "# (gfx1100): ELF shared objects for the AMD GPU machine of that chip, with",
             "# a kernel descriptor (NAME.kd) for every kernel of the PTX. Written by",
             "# test-suite/ptx/generate_tests.py."]
    checks = []
    for path in nvcc_files():
        stem = os.path.basename(path)[:-4]
        kernels = re.findall(r"[.]entry (\w+)\(", open(path).read())
        for chip in ("gfx942", "gfx90a", "gfx1100"):
            p = prefix(stem) + "_" + chip.upper()
            lines.append(f"# RUN: pgpu-translate --ptx-to-amdgpu --chip {chip} %S/../../ptx/nvcc/{stem}.ptx -o %t.{stem}.{chip}.hsaco")
            lines.append(f"# RUN: llvm-readelf -h -s %t.{stem}.{chip}.hsaco | FileCheck %s --check-prefix={p}")
            checks += [f"# {p}: Type: DYN", f"# {p}: Machine: EM_AMDGPU", f"# {p}: Flags: {{{{.*}}}}{chip}"]
            checks += [f"# {p}-DAG: {k}.kd" for k in kernels]
    write(os.path.join(ROOT, "backends", "ptx-amdgpu", "nvcc.test"), lines + [""] + checks)


def gpu_test():
    lines = ["# REQUIRES: cuda",
             "# The GPU side of `pgpu run-ptx`: every recorded case run by",
             "# pgpu-run-ptx-cuda (driver API, no LLVM) on the sm_90 and sm_75 PTX gives",
             "# the recorded buffers, and the divergence and call kernels give on the GPU",
             "# what the CPU wave emulation gives. Written by test-suite/ptx/generate_tests.py."]
    for name, stem, kernel in cases():
        variants = [("", "")] if "/" in stem else [("", ""), (" --variant sm_75", ".sm_75")]
        for flag, tag in variants:
            lines.append(f"# RUN: pgpu run-ptx --device cuda --cases %repo_root/test-suite/ptx/cases.txt --case {name}{flag} -o %t.{name}{tag}")
            lines.append(f"# RUN: diff %t.{name}{tag} %repo_root/test-suite/ptx/expected/{name}.out")
    divergence = " ".join(["u32[40]:zero"] * 5)
    for file, kernel, block, args in (("divergence", "divergence", 40, divergence), ("calls", "k", 64, "u32[64]:zero")):
        for device in ("--device cuda", "--wave 64"):
            tag = "gpu" if "cuda" in device else "cpu"
            lines.append(f"# RUN: pgpu run-ptx {device} %repo_root/test-suite/run/ptx/{file}.ptx --kernel {kernel} --block {block} --args {args} -o %t.{file}.{tag}")
        lines.append(f"# RUN: diff %t.{file}.gpu %t.{file}.cpu")
    write(os.path.join(ROOT, "gpu", "ptx-run-cuda.test"), lines)


if __name__ == "__main__":
    run_tests()
    roundtrip_test()
    amdgpu_test()
    gpu_test()
