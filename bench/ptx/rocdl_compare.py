#!/usr/bin/env python3
"""Code quality of the PTX route against the upstream rocdl route
(PERF.md, issue 8): for each pgpu IR file (kernels as `pgpu.spawn`
regions), compile every kernel two ways for gfx942 and compare machine
instructions, VGPRs and SGPRs:

* rocdl: MLIR's own AMDGPU path, the NVPTX backend's pipeline
  (`pgpu-translate --pgpu-to-ptx --print-pipeline`) with
  `rocdl-attach-target` and `convert-gpu-to-rocdl` in place of the NVVM
  steps, to AMDGCN assembly;
* PTX: our NVPTX backend to PTX (`pgpu-translate --pgpu-to-ptx`), then
  our translation (`pgpu-translate --ptx-to-amdgpu -S`).

Usage: bench/ptx/rocdl_compare.py [BUILD_DIR] FILE.mlir ... (BUILD_DIR
defaults to target/release)."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from code_quality import kernels  # noqa: E402

CHIP = "gfx942"


def rocdl_pipeline(build):
    nvptx = subprocess.run([os.path.join(build, "pgpu-translate"), "--pgpu-to-ptx", "--print-pipeline"],
                           capture_output=True, text=True, check=True).stdout.strip()
    pipeline = nvptx.replace("nvvm-attach-target{chip=sm_90 O=3}", f"rocdl-attach-target{{chip={CHIP} O=3}}")
    pipeline = pipeline.replace("gpu.module(convert-gpu-to-nvvm)", "gpu.module(convert-gpu-to-rocdl)")
    # NVVM-only steps (warp reconvergence brackets, NVVM atomics scopes,
    # our libdevice replacement, grid barriers, grid dependencies).
    for step in ("pgpu-reconverge-warps,", "pgpu-relax-atomics,", "pgpu-define-device-math,",
                 "pgpu-define-grid-barrier,", "pgpu-define-range-barrier,", "pgpu-wait-grid-dependencies,"):
        pipeline = pipeline.replace(step, "")
    return pipeline


def unescape(text):
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def main():
    args = sys.argv[1:]
    build = "target/release"
    if args and not args[0].endswith(".mlir"):
        build, args = args[0], args[1:]
    pipeline = rocdl_pipeline(build)
    print("| kernel | rocdl instructions / VGPR / SGPR | PTX route instructions / VGPR / SGPR |")
    print("|---|---|---|")
    for path in args:
        opt = subprocess.run([os.path.join(build, "pgpu-opt"), f"--pass-pipeline={pipeline}", path],
                             capture_output=True, text=True, check=True).stdout
        rocdl = {}
        for assembly in re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', opt):
            rocdl.update(kernels(unescape(assembly)))
        ptx = subprocess.run([os.path.join(build, "pgpu-translate"), "--pgpu-to-ptx", path],
                             capture_output=True, text=True, check=True).stdout
        routed = {}
        for module in re.split(r"^// ----- gpu\.binary @\S+\n", ptx, flags=re.M):
            if ".entry" not in module:
                continue
            with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
                f.write(module)
            out = subprocess.run([os.path.join(build, "pgpu-translate"), "--ptx-to-amdgpu", "--chip", CHIP,
                                  "-S", f.name, "-o", "-"], capture_output=True, text=True, check=True).stdout
            os.unlink(f.name)
            routed.update(kernels(out))
        for name in rocdl:
            a = "{} / {} / {}".format(*rocdl[name])
            b = "{} / {} / {}".format(*routed.get(name, ["-"] * 3))
            print(f"| {name} ({os.path.basename(path)}) | {a} | {b} |")


if __name__ == "__main__":
    main()
