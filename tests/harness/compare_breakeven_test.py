#!/usr/bin/python3
"""ctest Harness.CompareBreakEven: scripts/compare_breakeven.py reads the break-even tables of
two report.md files and counts the cells whose answers differ, leaving out the bracketed
speedups and footnote numbers (which differ between any two runs).

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
    a = write(tmp, "a.md", a="5M (1.20×)", b="> 200M (0.93× at 200M)", c="≈ 10M (noise)¹")
    b = write(tmp, "b.md", a="5M (1.31× [1.2, 1.4])", b="> 200M (0.95× at 200M)",
              c="≈ 10M (noise)³")
    code, out, err = run(a, b)
    check(f"same answers: rc {code}, {out!r} {err!r}", code == 0 and out.endswith("0 of 7 cells differ\n"))
    # A firm size against the noise mark at the same size, and a size one step apart.
    c = write(tmp, "c.md", a="≈ 5M (noise)²", b="> 200M (0.93× at 200M)", c="≈ 20M (noise)¹")
    code, out, err = run(a, c)
    check(f"two differ: rc {code}, {out!r}", code == 1 and out.endswith("2 of 7 cells differ\n"))
    check(f"names the cell: {out!r}",
          "cnn: throughput, Offline (frames per second, saturated) | 2 nodes | experts: 5M  vs  "
          "≈ 5M (noise)" in out)
    check(f"names the latency cell: {out!r}", "≈ 10M (noise)  vs  ≈ 20M (noise)" in out)
    code, out, _ = run(a, c, "--json")
    doc = json.loads(out)
    check(f"json: {doc}", code == 1 and doc["cells"] == 7 and len(doc["differ"]) == 2
          and doc["differ"][0]["a"] == "5M" and doc["differ"][0]["b"] == "≈ 5M (noise)")
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

for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
