#!/usr/bin/env python3
"""Checks a PGPU_PROFILE=kernels report of a program compiled with
--count-sm-cycles (test-suite/gpu/sm-cycles.test): every kernel with a
cycle count also has a device time with the same number of launches, and
every count is positive; every timed kernel's launch shapes add up to its
launches. Prints one summary line, then `cycles NAME N` for the kernels
named on the command line after the report."""

import sys


def main():
    report, wanted = sys.argv[1], sys.argv[2:]
    times, cycles, shapes = {}, {}, {}
    for line in open(report):
        fields = line.split()
        if len(fields) >= 6 and fields[0] == "pgpu-profile-kernel":
            times[" ".join(fields[5:])] = int(fields[3])
        elif len(fields) >= 6 and fields[0] == "pgpu-profile-kernel-cycles":
            cycles[" ".join(fields[5:])] = (int(fields[1]), int(fields[3]))
        elif len(fields) >= 8 and fields[0] == "pgpu-profile-kernel-launch":
            name = " ".join(fields[7:])
            shapes[name] = shapes.get(name, 0) + int(fields[5])
    matched = all(name in times and times[name] == launches for name, (_, launches) in cycles.items())
    positive = all(count > 0 for count, _ in cycles.values())
    shaped = shapes == times
    print(
        f"counted {len(cycles)} of {len(times)} launches-match {int(matched)} positive {int(positive)} "
        f"shapes-match {int(shaped)}"
    )
    for name in wanted:
        print(f"cycles {name} {cycles.get(name, (0, 0))[0]}")


if __name__ == "__main__":
    main()
