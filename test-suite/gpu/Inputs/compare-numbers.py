#!/usr/bin/env python3
"""Compares two program outputs token by token, numbers to a tolerance.

Usage: compare-numbers.py TOLERANCE EXPECTED ACTUAL

Both outputs must have the same tokens (split at white space); where both
tokens are numbers they may differ by TOLERANCE relative to the larger
magnitude (at least 1, so values near 0 are compared absolutely), other
tokens must be equal. Prints each difference and exits with 1 if any.
"""

import sys


def number(token):
    try:
        return float(token)
    except ValueError:
        return None


def main():
    tolerance = float(sys.argv[1])
    with open(sys.argv[2]) as expected_file, open(sys.argv[3]) as actual_file:
        expected = expected_file.read().split()
        actual = actual_file.read().split()
    if len(expected) != len(actual):
        print(f"{len(expected)} tokens expected, {len(actual)} found")
        return 1
    differences = 0
    for index, (want, got) in enumerate(zip(expected, actual)):
        a, b = number(want), number(got)
        if a is not None and b is not None:
            if a == b or abs(a - b) <= tolerance * max(1.0, abs(a), abs(b)):
                continue
        elif want == got:
            continue
        print(f"token {index}: expected {want}, found {got}")
        differences += 1
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
