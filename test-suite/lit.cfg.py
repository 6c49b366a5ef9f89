# -*- Python -*-
# lit configuration for the pgpu test suite.
#
# Tools come from the Cargo build (PGPU_BUILD_DIR, default ../target/debug)
# and from LLVM 22 (PGPU_LLVM_PREFIX, default /usr/lib/llvm-22).

import os
import shutil
import subprocess

import lit.formats

config.name = "pgpu"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test", ".ptx"]
config.excludes = ["lit.cfg.py", "Inputs", "Output", "utils", "ref"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

repo_root = os.path.dirname(config.test_source_root)
build_dir = os.environ.get("PGPU_BUILD_DIR", os.path.join(repo_root, "target", "debug"))
llvm_prefix = os.environ.get("PGPU_LLVM_PREFIX", "/usr/lib/llvm-22")
llvm_bin = os.path.join(llvm_prefix, "bin")

config.environment["PATH"] = os.pathsep.join([build_dir, os.environ.get("PATH", ""), llvm_bin])
config.environment["FILECHECK_OPTS"] = "--enable-var-scope --allow-unused-prefixes=false"

config.substitutions.append(("%pgpu_dialect_plugin", os.path.join(build_dir, "libPgpuDialectPlugin.so")))
config.substitutions.append(("%repo_root", repo_root))
config.substitutions.append(("%pgpu_bin", build_dir))
config.substitutions.append(("%pgpu_runtime_lib", os.path.join(build_dir, "libpgpu_runtime.a")))
config.substitutions.append(("%clangxx", os.path.join(llvm_bin, "clang++")))
config.substitutions.append(("%clang", os.path.join(llvm_bin, "clang")))
config.substitutions.append(("%llvm_include", os.path.join(llvm_prefix, "include")))
python = shutil.which("python3") or "python3"
config.substitutions.append(("%python", python))
config.substitutions.append(("%expect-exit", f"{python} {os.path.join(config.test_source_root, 'utils', 'expect-exit.py')}"))

for tool in ["pgpu-opt"]:
    path = os.path.join(build_dir, tool)
    if not os.path.exists(path):
        lit_config.fatal(f"{path} not found: run `cargo build` first (make test does)")
for tool in ["FileCheck", "not", "count", "mlir-opt", "mlir-translate", "split-file", "llvm-readelf"]:
    # Only whole command words: not the `not` inside `does-not-exist`.
    config.substitutions.append((r"(?<![-\w/.])%s(?![-\w])" % tool.replace("-", r"\-"), os.path.join(llvm_bin, tool)))


def has_cuda_gpu():
    """A usable NVIDIA GPU: the driver library loads and reports a device."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


if has_cuda_gpu():
    config.available_features.add("cuda")

# The host architecture (tests of host type sizes and layouts).
import platform

if platform.machine() in ("x86_64", "AMD64"):
    config.available_features.add("x86_64")
