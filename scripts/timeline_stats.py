#!/usr/bin/env python3
"""Figures of a PGPU_TIMELINE trace (a Chrome trace, plain or gzipped):
the span of the run, the device's busy time (the union of the launches'
intervals) against the sum of their lengths (their ratio is the average
concurrency while busy), the kernels by total time, and the host's time in
each kind of driver call (a `download` or `synchronize` is the host
waiting for the device; `join` a taskgroup waiting for its tasks' host
code on task threads). With task threads, the host's calls are also
counted per thread, and the device window (first launch to the last
launch's end) shows how busy the device was while the program used it.

Usage: scripts/timeline_stats.py TRACE.json[.gz] [TOP]"""
import collections
import gzip
import json
import sys


def union_length(intervals):
    """Total length covered by (start, end) intervals."""
    total, current = 0.0, None
    for start, end in sorted(intervals):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = [start, end]
        else:
            current[1] = max(current[1], end)
    if current is not None:
        total += current[1] - current[0]
    return total


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as trace:
        events = json.load(trace)
    spans = [e for e in events if e.get("ph") == "X"]
    if not spans:
        print("no spans")
        return
    device = [e for e in spans if e.get("pid") == 1]
    host = [e for e in spans if e.get("pid") == 0]
    start = min(e["ts"] for e in spans)
    end = max(e["ts"] + e["dur"] for e in spans)
    ms = lambda us: us / 1000.0
    busy = union_length((e["ts"], e["ts"] + e["dur"]) for e in device)
    summed = sum(e["dur"] for e in device)
    print(f"span {ms(end - start):.1f} ms")
    print(
        f"device launches {len(device)} streams {len({e['tid'] for e in device})} "
        f"busy {ms(busy):.1f} ms kernel-sum {ms(summed):.1f} ms "
        f"concurrency {summed / busy if busy else 0:.2f}"
    )
    by_kernel = collections.defaultdict(list)
    for e in device:
        by_kernel[e["name"]].append(e["dur"])
    for name, lengths in sorted(by_kernel.items(), key=lambda item: -sum(item[1]))[:top]:
        lengths.sort()
        print(
            f"  kernel {name!r} launches {len(lengths)} total {ms(sum(lengths)):.1f} ms "
            f"median {ms(lengths[len(lengths) // 2]):.3f} ms max {ms(lengths[-1]):.3f} ms"
        )
    if device:
        first = min(e["ts"] for e in device)
        last = max(e["ts"] + e["dur"] for e in device)
        window = last - first
        print(
            f"device window {ms(window):.1f} ms (first launch to last end), "
            f"busy {100 * busy / window if window else 0:.0f}% of it"
        )
    in_calls = union_length((e["ts"], e["ts"] + e["dur"]) for e in host)
    print(f"host in driver calls {ms(in_calls):.1f} ms")
    by_call = collections.defaultdict(lambda: [0, 0.0])
    for e in host:
        by_call[e["name"]][0] += 1
        by_call[e["name"]][1] += e["dur"]
    for name, (count, total) in sorted(by_call.items(), key=lambda item: -item[1][1]):
        print(f"  host {name} calls {count} total {ms(total):.1f} ms")
    threads = collections.defaultdict(lambda: collections.defaultdict(float))
    for e in host:
        threads[e.get("tid", 0)][e["name"]] += e["dur"]
    if len(threads) > 1:
        waits = ("download", "synchronize", "join")
        main_thread = threads.get(0, {})
        print(
            f"host threads {len(threads)}; the program's thread waits "
            + ", ".join(f"{name} {ms(main_thread.get(name, 0.0)):.1f} ms" for name in waits)
        )


if __name__ == "__main__":
    main()
