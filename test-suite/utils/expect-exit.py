#!/usr/bin/env python3
"""Runs a command and fails unless it exits with exactly the given status.

Usage: expect-exit.py STATUS COMMAND [ARGS...]

Standard output and error pass through. A death by signal (a crash) or any
other status is reported and fails, so tests can tell a clean diagnostic
exit (1) from a panic (101) or an abort.
"""

import subprocess
import sys


def main():
    expected = int(sys.argv[1])
    result = subprocess.run(sys.argv[2:])
    if result.returncode != expected:
        print(f"expect-exit: '{' '.join(sys.argv[2:])}' exited with {result.returncode}, expected {expected}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
