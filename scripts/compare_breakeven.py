#!/usr/bin/python3
"""Compare the break-even tables of two scaling reports, cell by cell.

  compare_breakeven.py A/report.md B/report.md [--json]

Reads the "## Break-even model size" section of each report.md (`dpushard report`), every
table under its "### <family>: throughput ..." and "### <family>: latency ..." headings,
and compares each cell's answer: the size and its marks (`≤`, `>`, `≈ ... (noise)`, "not
possible", "not swept", "—"). The speedup in brackets after a firm size (`10M (1.18×)`) and
the footnote numbers (`¹`) are left out: they differ between any two runs, the answer need
not. Prints each differing cell and a last line "N of M cells differ" (a cell present in one
report only counts as differing). Exit 0 when every cell reads the same, 1 when some differ,
2 on bad input (one line on stderr). --json: the same as a JSON object instead.
"""
import json
import re
import sys

SUPERSCRIPTS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
# "(1.18×)", "(1.18× [1.10, 1.25])", "(0.95× at 200M)": a speedup in brackets.
SPEEDUP = re.compile(r"\s*\([^()]*×[^()]*\)")


def answer(cell):
    """The cell's answer: without footnote numbers and without its bracketed speedup."""
    cell = cell.strip().rstrip(SUPERSCRIPTS).strip()
    return SPEEDUP.sub("", cell).strip()


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
    """The cells whose answers differ: [(heading, nodes, column, answer in a, in b)]."""
    keys = list(a) + [k for k in b if k not in a]  # a's order, then b's own cells
    return keys, [(*k, a.get(k, "(missing)"), b.get(k, "(missing)")) for k in keys
                  if a.get(k) != b.get(k)]


def main(argv):
    args = [a for a in argv if a != "--json"]
    if len(args) != 2:
        print("usage: compare_breakeven.py A/report.md B/report.md [--json]", file=sys.stderr)
        return 2
    try:
        a, b = break_even_cells(args[0]), break_even_cells(args[1])
    except ValueError as e:
        print(f"compare_breakeven.py: error: {e}", file=sys.stderr)
        return 2
    keys, differ = compare(a, b)
    if "--json" in argv:
        print(json.dumps({"cells": len(keys), "differ": [
            {"table": h, "nodes": n, "column": c, "a": x, "b": y} for h, n, c, x, y in differ]},
            indent=2, ensure_ascii=False))
    else:
        for h, n, c, x, y in differ:
            print(f"{h} | {n} nodes | {c}: {x}  vs  {y}")
        print(f"{len(differ)} of {len(keys)} cells differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
