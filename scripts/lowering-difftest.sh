#!/usr/bin/env bash
# Differential test of the C-subset lowering: the front end's random program
# generator (frontends/csubset/tests/generated.rs, GEN_OUT) writes valid
# programs; each one without a spawn gets a printf of its variables, is
# compiled with Clang (-O0 -fwrapv, left-to-right evaluation like the
# lowering) and run with `pgpu run --interpret`. The outputs must agree, or
# the interpreter must stop on undefined behaviour (division by zero,
# poison from an out-of-range shift or conversion) that the C program has.
# Prints the counts and every silent difference; exits 1 if there is one.
# Usage: scripts/lowering-difftest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
clang="${CLANG:-/usr/lib/llvm-22/bin/clang}"
cargo build -q -p pgpu
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/gen"
GEN_OUT="$work/gen" cargo test -q -p pgpu-csubset --test generated >/dev/null
same=0 undefined=0 silent=0
for program in "$work"/gen/*.bsgp; do
  grep -q spawn "$program" && continue
  name="$work/$(basename "$program" .bsgp)"
  python3 - "$program" "$name" <<'EOF'
import sys
src = open(sys.argv[1]).read()
end = src.rindex("return 0;\n}")
dump = ('printf("%d %d %d %u %ld %lu %.3f %.3f %d %d %d %.3f\\n", (int)c, (int)b, i, u, '
        'l, ul, (double)f, d, a[1], a[5], s.x, (double)s.y);\n')
src = src[:end] + dump + src[end:]
for ext in (".c", ".bsgp"):
    open(sys.argv[2] + ext, "w").write(src)
EOF
  "$clang" -w -O0 -fwrapv -include stdio.h -include stdbool.h -o "$name.exe" "$name.c"
  expected="$(timeout 5 "$name.exe" 2>&1 || true)"
  status=0
  actual="$(timeout 20 target/debug/pgpu run --interpret "$name.bsgp" 2>&1)" || status=$?
  if [ "$expected" == "$actual" ]; then
    same=$((same + 1))
  elif [ "$status" -ne 0 ]; then
    undefined=$((undefined + 1))
  else
    silent=$((silent + 1))
    echo "difference: $(basename "$program")"
    diff <(echo "$expected") <(echo "$actual") || true
  fi
done
echo "same $same, stopped on undefined behaviour $undefined, silent differences $silent"
[ "$silent" -eq 0 ]
