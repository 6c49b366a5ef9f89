"""Runs a program once per line of a grid file (its arguments) and prints
each run's arguments and output, so that two programs' runs over the same
grid can be compared with diff. Usage: run_grid.py GRID PROGRAM [ARGS...]"""

import subprocess
import sys

grid, program = sys.argv[1], sys.argv[2:]
with open(grid) as lines:
    for line in lines:
        arguments = line.split()
        if not arguments or arguments[0].startswith("#"):
            continue
        run = subprocess.run(program + arguments, capture_output=True, text=True)
        print(f"args {' '.join(arguments)} exit {run.returncode}")
        sys.stdout.write(run.stdout)
        if run.returncode != 0:
            sys.stdout.write(run.stderr)
