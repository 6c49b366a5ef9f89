#!/usr/bin/env python3
"""Summarizes a PGPU_TIMELINE trace for FileCheck: device launches, the
streams they ran on, the host's spans by name, and whether every interval
is well formed (non-negative start and length). With the run's stderr as a
second argument, also whether the trace holds as many launches as the
`pgpu-profile` line counts.

Usage: timeline-summary.py TRACE.json [STDERR]"""
import json
import re
import sys

events = json.load(open(sys.argv[1]))
device = [e for e in events if e.get("ph") == "X" and e.get("pid") == 1]
host = [e for e in events if e.get("ph") == "X" and e.get("pid") == 0]
well_formed = all(e["ts"] >= 0 and e["dur"] >= 0 for e in device + host)
streams = {e["tid"] for e in device}
print(f"device launches {len(device)} streams-used-gt1 {int(len(streams) > 1)} well-formed {int(well_formed)}")
if len(sys.argv) > 2:
    counted = re.search(r"pgpu-profile launches (\d+)", open(sys.argv[2]).read())
    print(f"launches-match {int(bool(counted) and int(counted.group(1)) == len(device))}")
for name in sorted({e["name"] for e in host}):
    print(f"host {name}")
