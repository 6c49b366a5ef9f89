#!/bin/sh
# Packs the release tools for a machine without LLVM (the GPU machine):
#
#   scripts/difftest/pack-tools.sh BINDIR TARBALL [TOOL...]
#
# BINDIR holds the tools (default: pgpu) and libpgpu_runtime.a
# (target/release). The tarball gets them stripped, and in lib/ every
# shared library they load except the C library's own (libLLVM, libz3,
# libxml2, the C++ library, ...), for LD_LIBRARY_PATH. pgpu alone packs
# into about 53 MiB, under the device tool's 64 MiB, and a link pgpu-opt ->
# pgpu gives pgpu-opt too (pgpu started under that name is pgpu-opt: the
# replays of sweep.py); a separate pgpu-opt binary would add 30 MiB.
set -eu
src=$1
tarball=$2
shift 2
tools=${*:-pgpu}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/lib"
for tool in $tools; do
    strip -o "$stage/$tool" "$src/$tool"
done
[ -e "$stage/pgpu" ] && [ ! -e "$stage/pgpu-opt" ] && ln -s pgpu "$stage/pgpu-opt"
strip --strip-debug -o "$stage/libpgpu_runtime.a" "$src/libpgpu_runtime.a"
for tool in $tools; do
    ldd "$src/$tool" | awk '/=> \// { print $3 }'
done | sort -u | while read -r lib; do
    case $(basename "$lib") in
        libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libresolv.so*) ;;
        libicudata.so*)
            # ICU's 31 MB of locale data serve libxml2's encoding
            # conversions, which LLVM (Windows manifests) and so pgpu never
            # ask for: an empty stub with its symbol (ICU rejects the
            # missing header as invalid data if it is ever read).
            symbol=$(objdump -T "$lib" | awk '/icudt[0-9]*_dat/ { print $NF }')
            echo "const char $symbol[32] = {0};" > "$stage/stub.c"
            cc -shared -o "$stage/lib/$(basename "$lib")" -Wl,-soname,"$(basename "$lib")" "$stage/stub.c"
            rm "$stage/stub.c"
            ;;
        *) cp -L "$lib" "$stage/lib/" ;;
    esac
done
# What sweep.py logs as the tools' version (the GPU machine has no git).
git -C "$(dirname "$0")" describe --always --dirty > "$stage/version.txt" 2>/dev/null || echo unknown > "$stage/version.txt"
XZ_OPT="-9 -T0" tar -cJf "$tarball" -C "$stage" .
du -h "$tarball"
