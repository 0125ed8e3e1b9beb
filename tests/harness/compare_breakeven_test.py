#!/usr/bin/python3
"""ctest Harness.CompareBreakEven: scripts/compare_breakeven.py reads the break-even tables of
two report.md files and counts the cells whose answers are identical and those whose ranges
overlap (consistent), leaving out the bracketed speedups and footnote numbers (which differ
between any two runs); its exit status follows consistency, or identity with --strict.

  compare_breakeven_test.py SOURCE_DIR
"""
import json
import pathlib
import subprocess
import sys
import tempfile

script = pathlib.Path(sys.argv[1]) / "scripts" / "compare_breakeven.py"

REPORT = """# Scaling report

## Break-even model size

The rule, stated.

### cnn: throughput, Offline (frames per second, saturated)

| nodes | experts | pipeline | hybrid |
|---|---|---|---|
| 2 | {a} | ≈ 2M (noise)¹ | not possible |
| 3 | 10M (1.18× [1.10, 1.25]) | {b} | not possible |

¹ Noise: 2 nodes, pipeline: 1M's 0.99× [0.93, 1.06] lies within 7 % of 1.05×.

### cnn: latency, SingleStream (p50 of one frame alone)

| nodes | experts |
|---|---|
| 2 | {c} |

## cnn

| size | nodes | ignored |
|---|---|---|
| 1M | 2 | {a} |
"""


def run(*args):
    p = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def write(folder, name, **cells):
    path = pathlib.Path(folder) / name
    path.write_text(REPORT.format(**cells), encoding="utf-8")
    return str(path)


failures = []


def check(what, ok):
    if not ok:
        failures.append(what)


with tempfile.TemporaryDirectory() as tmp:
    # The same answers with other speedups and footnote numbers: identical.
    a = write(tmp, "a.md", a="5M (1.20×)", b="> 200M (0.93× at 200M)", c="≈ 2M–10M (noise)¹")
    b = write(tmp, "b.md", a="5M (1.31× [1.2, 1.4])", b="> 200M (0.95× at 200M)",
              c="≈ 2M–10M (noise)³")
    code, out, err = run(a, b)
    check(f"same answers: rc {code}, {out!r} {err!r}",
          code == 0 and out == "7 of 7 cells identical, 7 of 7 consistent\n")
    code, out, err = run(a, b, "--strict")
    check(f"same answers, strict: rc {code}", code == 0)
    # Ranges that overlap: not identical, consistent. A firm size inside the other's range,
    # a range overlapping it, "> S" against a range reaching beyond S.
    c = write(tmp, "c.md", a="≈ 2M–5M (noise)²", b="≈ 100M–> 200M (noise)",
              c="≈ ≤ 1M–2M (noise)¹")
    code, out, err = run(a, c)
    check(f"consistent: rc {code}, {out!r}",
          code == 0 and out.endswith("4 of 7 cells identical, 7 of 7 consistent\n"))
    check(f"names the cell: {out!r}",
          "cnn: throughput, Offline (frames per second, saturated) | 2 nodes | experts: 5M  vs  "
          "≈ 2M–5M (noise)  (consistent)" in out)
    check(f"names the latency cell: {out!r}",
          "≈ 2M–10M (noise)  vs  ≈ ≤ 1M–2M (noise)  (consistent)" in out)
    code, out, err = run(a, c, "--strict")
    check(f"strict: rc {code}, {out!r}", code == 1 and "4 of 7 cells identical" in out)
    # Ranges that do not overlap: a firm size outside the range, "> S" against S, "≤ S"
    # against a larger size, and a size against "not possible".
    d = write(tmp, "d.md", a="≈ 10M–20M (noise)", b="200M (1.10×)", c="≤ 1M (1.60×)")
    code, out, err = run(a, d)
    check(f"inconsistent: rc {code}, {out!r}",
          code == 1 and out.endswith("4 of 7 cells identical, 4 of 7 consistent\n")
          and out.count("INCONSISTENT") == 3)
    e = write(tmp, "e.md", a="not possible¹", b="> 200M (0.93× at 200M)", c="≈ 10M (noise)")
    code, out, err = run(a, e)
    # The old "≈ S (noise)" reads as S: 10M lies in 2M-10M.
    check(f"not possible, old noise cell: rc {code}, {out!r}",
          code == 1 and "5M  vs  not possible  (INCONSISTENT)" in out
          and "≈ 2M–10M (noise)  vs  ≈ 10M (noise)  (consistent)" in out)
    code, out, _ = run(a, d, "--json")
    doc = json.loads(out)
    check(f"json: {doc}", code == 1 and doc["cells"] == 7 and doc["identical"] == 4
          and doc["consistent"] == 4 and len(doc["differ"]) == 3
          and doc["differ"][0]["a"] == "5M" and doc["differ"][0]["b"] == "≈ 10M–20M (noise)"
          and doc["differ"][0]["consistent"] is False)
    # "≈ ≥ S (noise)" is S or beyond: consistent with "> S" and S, not with a smaller size.
    f = write(tmp, "f.md", a="≈ ≥ 200M (noise)²", b="≈ ≥ 200M (noise)", c="≈ ≥ 10M (noise)")
    g = write(tmp, "g.md", a="200M (1.06×)", b="> 200M (0.95× at 200M)", c="5M (1.12×)")
    code, out, err = run(f, g)
    check(f"at least S: rc {code}, {out!r}",
          code == 1 and out.endswith("4 of 7 cells identical, 6 of 7 consistent\n")
          and "≈ ≥ 200M (noise)  vs  200M  (consistent)" in out
          and "≈ ≥ 10M (noise)  vs  5M  (INCONSISTENT)" in out)
    # "≈ any size (noise)" is every size and beyond: consistent with any size, "≤ S" and
    # "> S"; "no gain" (a strategy that cannot gain) only with itself, whatever its note.
    h = write(tmp, "h.md", a="≈ any size (noise)", b="≈ any size (noise)¹", c="no gain²")
    i = write(tmp, "i.md", a="≤ 1M (1.60×)", b="> 200M (0.93× at 200M)", c="no gain³")
    code, out, err = run(h, i)
    check(f"any size, no gain: rc {code}, {out!r}",
          code == 0 and out.endswith("5 of 7 cells identical, 7 of 7 consistent\n"))
    j = write(tmp, "j.md", a="no gain¹", b="≈ any size (noise)", c="≈ any size (noise)")
    code, out, err = run(h, j)
    check(f"no gain against a size: rc {code}, {out!r}",
          code == 1 and "≈ any size (noise)  vs  no gain  (INCONSISTENT)" in out
          and "no gain  vs  ≈ any size (noise)  (INCONSISTENT)" in out)
    # Bad input: one line, exit 2.
    code, out, err = run(a, str(pathlib.Path(tmp) / "missing.md"))
    check(f"missing file: rc {code}, {err!r}", code == 2 and err.count("\n") == 1
          and "missing.md" in err)
    other = pathlib.Path(tmp) / "other.md"
    other.write_text("# no tables here\n", encoding="utf-8")
    code, out, err = run(a, str(other))
    check(f"no section: rc {code}, {err!r}", code == 2 and "no '## Break-even model size'" in err)
    code, out, err = run(a)
    check(f"usage: rc {code}", code == 2 and "usage" in err)
    code, out, err = run(a, b, "--loose")
    check(f"unknown option: rc {code}", code == 2 and "usage" in err)

for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
