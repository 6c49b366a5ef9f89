#!/usr/bin/env python3
"""A fake `pgpu` for difftest's self-test (runner.test): it runs the real
driver ($REAL_PGPU), except that `pgpu compile ... -o EXE` builds the real
executable as EXE.real and writes EXE as a wrapper that runs it and
changes every digit 7 of its output into 8. A checker that accepts this
executable's output cannot fail."""
import os
import subprocess
import sys

real = os.environ["REAL_PGPU"]
args = sys.argv[1:]
if args and args[0] == "compile" and "-o" in args:
    i = args.index("-o")
    exe = args[i + 1]
    args[i + 1] = exe + ".real"
    r = subprocess.run([real, *args])
    if r.returncode != 0:
        sys.exit(r.returncode)
    with open(exe, "w") as f:
        f.write("#!/bin/sh\n")
        f.write(f"'{exe}.real' \"$@\" | tr 7 8\n")
        f.write("exit 0\n")
    os.chmod(exe, 0o755)
    sys.exit(0)
os.execv(real, [real, *args])
