#!/bin/sh
# Seeds the corpora of the fuzz targets from the examples and the test
# suite (the corpora are not committed, see .gitignore). Run from anywhere.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$here/..
seed() {
    corpus=$here/corpus/$1
    shift
    mkdir -p "$corpus"
    for file in "$@"; do
        [ -f "$file" ] && cp "$file" "$corpus/seed-$(echo "$file" | tr / _)"
    done
    echo "$(ls "$corpus" | wc -l) seeds in $corpus"
}
seed bsgp "$root"/examples/bsgp/*.bsgp "$root"/test-suite/frontends/bsgp/*.bsgp "$root"/test-suite/frontends/bsgp/*/*.bsgp
seed fork "$root"/examples/fork/*.fork "$root"/test-suite/frontends/fork/*.fork "$root"/test-suite/frontends/fork/*/*.fork
seed csubset "$root"/examples/speculate/*.c "$root"/test-suite/frontends/csubset/*.c "$root"/test-suite/frontends/csubset/*/*.c "$root"/test-suite/frontends/speculate/*.c
seed opt "$root"/examples/ir/*.mlir "$root"/test-suite/passes/*.mlir "$root"/test-suite/dialects/pgpu/*.mlir
