#!/usr/bin/python3
"""Compare the break-even tables of two scaling reports, cell by cell.

  compare_breakeven.py A/report.md B/report.md [--strict] [--json]

Reads the "## Break-even model size" section of each report.md (`dpushard report`), every
table under its "### <family>: throughput ..." and "### <family>: latency ..." headings,
and compares each cell's answer: the size and its marks (`≤`, `>`, the ranges `≈ A–B (noise)`,
`≈ ≥ S (noise)` and `≈ any size (noise)`, "no gain", "not possible", "not swept", "—"). The speedup in brackets after a firm size (`10M (1.18×)`)
and the footnote numbers (`¹`) are left out: they differ between any two runs, the answer
need not.

Two cells are identical when their answers read the same, and consistent when the ranges
they state overlap: a firm answer is a range of one size (`5M`; `≤ 1M`: at or below the
smallest size; `> 200M`: beyond the largest), a noisy one the range `≈ A–B (noise)` from A to
B, `≈ ≥ S (noise)` from S to beyond it (S–> S), `≈ any size (noise)` every size and beyond
(a report from before the ranges, `≈ S (noise)`, reads as S alone). `≈ 2M–5M (noise)` is
consistent with `5M` and with `≈ ≤ 1M–2M (noise)`, not with `10M` or `≤ 1M`. A cell that is
not a size ("no gain", "not possible", "not swept", "—") is consistent only with the same
text, and a cell present in one report only with nothing.

Prints each cell that is not identical, marked consistent or INCONSISTENT, and a last line
"I of M cells identical, C of M consistent". Exit 0 when every cell is consistent (with
--strict: identical), 1 when one is not, 2 on bad input (one line on stderr). --json: the
same as a JSON object instead.
"""
import json
import math
import re
import sys

SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
# "(1.18×)", "(1.18× [1.10, 1.25])", "(0.95× at 200M)": a speedup in brackets.
SPEEDUP = re.compile(r"\s*\([^()]*×[^()]*\)")
# A size as the sweep labels it: "1M", "200M", "1.5G", "500K".
SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMG]?)")
SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
NOISE = " (noise)"
ANY_SIZE = "any size"


def answer(cell):
    """The cell's answer: without footnote numbers and without its bracketed speedup."""
    cell = cell.strip().rstrip(SUPERSCRIPTS).strip()
    return SPEEDUP.sub("", cell).strip()


def end_interval(text):
    """One end of a range as an interval of (parameters, 0 or 1) keys, or None.

    (x, 1) sorts just above x: "> 200M" starts beyond 200M and "200M" does not reach it."""
    text = text.strip()
    mark = ""
    for m in ("≤", "≥", ">"):
        if text.startswith(m):
            mark, text = m, text[len(m):].strip()
    match = SIZE.fullmatch(text)
    if not match:
        return None
    x = float(match.group(1)) * SCALE[match.group(2)]
    if mark == "≤":
        return (0.0, 0), (x, 0)
    if mark == ">":
        return (x, 1), (math.inf, 0)
    if mark == "≥":
        return (x, 0), (math.inf, 0)
    return (x, 0), (x, 0)


def size_range(ans):
    """The range an answer states, as (lowest key, highest key), or None (not a size)."""
    if ans.startswith("≈") and ans.endswith(NOISE):
        body = ans[1:-len(NOISE)].strip()
        if body == ANY_SIZE:  # every size straddles: from below the smallest to beyond
            return (0.0, 0), (math.inf, 0)
        ends = body.split("–")
        if len(ends) == 1:  # "≥ S": S or beyond; the old "≈ S (noise)": S alone
            return end_interval(ends[0])
        if len(ends) != 2:
            return None
        lo, hi = end_interval(ends[0]), end_interval(ends[1])
        if lo is None or hi is None:
            return None
        return lo[0], hi[1]
    return end_interval(ans)


def consistent(x, y):
    """Whether two answers can both be true: the same text, or ranges that overlap."""
    if x == y:
        return True
    rx, ry = size_range(x), size_range(y)
    if rx is None or ry is None:
        return False
    return max(rx[0], ry[0]) <= min(rx[1], ry[1])


def break_even_cells(path):
    """{(table heading, nodes, column): answer} of the report's break-even section."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from e
    try:
        start = lines.index("## Break-even model size")
    except ValueError as e:
        raise ValueError(f"{path}: no '## Break-even model size' section") from e
    cells = {}
    heading, columns = None, None
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if line.startswith("### "):
            heading, columns = line[4:].strip(), None
            continue
        if heading is None or not line.startswith("|"):
            continue
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if columns is None:
            columns = parts
            continue
        if all(set(p) <= set("-:") for p in parts):  # the |---| line
            continue
        for column, cell in zip(columns[1:], parts[1:]):
            cells[(heading, parts[0], column)] = answer(cell)
    if not cells:
        raise ValueError(f"{path}: the break-even section has no table")
    return cells


def compare(a, b):
    """Every cell key, and the cells whose answers differ:
    [(heading, nodes, column, answer in a, in b, consistent)]."""
    keys = list(a) + [k for k in b if k not in a]  # a's order, then b's own cells
    differ = []
    for k in keys:
        x, y = a.get(k), b.get(k)
        if x != y:
            both = x is not None and y is not None and consistent(x, y)
            differ.append((*k, x or "(missing)", y or "(missing)", both))
    return keys, differ


def main(argv):
    flags = {"--json", "--strict"}
    args = [a for a in argv if a not in flags]
    if len(args) != 2 or any(a.startswith("--") for a in args):
        print("usage: compare_breakeven.py A/report.md B/report.md [--strict] [--json]",
              file=sys.stderr)
        return 2
    try:
        a, b = break_even_cells(args[0]), break_even_cells(args[1])
    except ValueError as e:
        print(f"compare_breakeven.py: error: {e}", file=sys.stderr)
        return 2
    keys, differ = compare(a, b)
    identical = len(keys) - len(differ)
    inconsistent = sum(1 for d in differ if not d[5])
    if "--json" in argv:
        print(json.dumps({"cells": len(keys), "identical": identical,
                          "consistent": len(keys) - inconsistent, "differ": [
                              {"table": h, "nodes": n, "column": c, "a": x, "b": y,
                               "consistent": ok} for h, n, c, x, y, ok in differ]},
                         indent=2, ensure_ascii=False))
    else:
        for h, n, c, x, y, ok in differ:
            print(f"{h} | {n} nodes | {c}: {x}  vs  {y}  "
                  f"({'consistent' if ok else 'INCONSISTENT'})")
        print(f"{identical} of {len(keys)} cells identical, "
              f"{len(keys) - inconsistent} of {len(keys)} consistent")
    failed = differ if "--strict" in argv else [d for d in differ if not d[5]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
