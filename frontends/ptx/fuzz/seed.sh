#!/bin/sh
# Seeds the corpus of the `parse` fuzz target with the PTX of the test suite
# (nvcc's output for the test kernels and the instruction-family file).
# Run from anywhere; the corpus is not committed (see .gitignore).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../../..
corpus=$here/corpus/parse
mkdir -p "$corpus"
for file in "$root"/test-suite/ptx/nvcc/*.ptx "$root"/test-suite/frontends/ptx/families.ptx; do
    cp "$file" "$corpus/seed-$(basename "$file")"
done
echo "seeded $(ls "$corpus" | wc -l) files into $corpus"
