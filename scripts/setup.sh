#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine: installs LLVM/MLIR 22 from
# Debian's packages and `lit` from PyPI when they are missing, nothing otherwise.
set -euo pipefail

APT_PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22
  libpolly-22-dev libzstd-dev libz3-dev libxml2-dev zlib1g-dev lld-22)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v lit >/dev/null 2>&1 && ! python3 -c 'import lit' >/dev/null 2>&1; then
  echo "setup: installing lit"
  python3 -m pip install -q lit
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install a Rust toolchain (https://rustup.rs)" >&2
  exit 1
fi
