#!/usr/bin/env python3
"""Fails when a FileCheck directive in a test file lacks its colon.

A directive is a known prefix (CHECK or any name given to --check-prefix(es)
in the file's RUN lines) followed by an optional suffix (-NEXT, -SAME, -DAG,
-NOT, -LABEL, -EMPTY, -COUNT-n), at the start of a comment. Written without
the colon, FileCheck ignores it and the test asserts nothing.
"""

import os
import re
import sys

SUFFIXES = r"(?:-NEXT|-SAME|-DAG|-NOT|-LABEL|-EMPTY|-COUNT-\d+)?"
COMMENT = r"^\s*(?://|#|;)\s*"


def prefixes_of(text):
    found = {"CHECK"}
    for match in re.finditer(r"--check-prefix(?:es)?[= ]([\w,-]+)", text):
        found.update(p for p in match.group(1).split(",") if p)
    return found


def lint_file(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    prefixes = "|".join(sorted((re.escape(p) for p in prefixes_of(text)), key=len, reverse=True))
    bad = re.compile(COMMENT + r"((?:%s)%s)(?=\s|$)(?!\s*:)" % (prefixes, SUFFIXES))
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        match = bad.match(line)
        if match:
            problems.append(f"{path}:{number}: FileCheck directive '{match.group(1)}' without its colon")
    return problems


def main(roots):
    problems = []
    for root in roots:
        for directory, subdirs, files in os.walk(root):
            subdirs[:] = [d for d in subdirs if d != "Output" and not (d == "Inputs" and root != directory and "lint" in directory)]
            for name in sorted(files):
                if name.endswith((".mlir", ".test", ".bsgp", ".fork", ".c", ".ptx")):
                    problems.extend(lint_file(os.path.join(directory, name)))
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} malformed FileCheck directive(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["."]))
