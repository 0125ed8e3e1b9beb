#!/usr/bin/python3
"""Measured and predicted speedup and parallel efficiency of a scaling suite's Offline rows,
computed the same way: a configuration's fps over one board's fps of the same model
(measured over measured, the planner's predicted over predicted), divided by its node
count. Measured fps is the mean over the repetitions. Prints a Markdown table.

  scripts/efficiency-table.py results/<run-id>/bench_cnn_scaling.json
"""
import json
import sys

if len(sys.argv) != 2:
    sys.exit("usage: efficiency-table.py BENCH_JSON")
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
except (OSError, ValueError) as e:
    sys.exit(f"efficiency-table: error: {sys.argv[1]}: {e}")
rows = {}
for b in doc["benchmarks"]:
    if "/scenario:Offline" not in b["run_name"] or b.get("run_type", "iteration") != "iteration":
        continue
    if b.get("error_occurred"):
        rows[b["run_name"]] = None
        continue
    r = rows.setdefault(b["run_name"], {"fps": [], "pred": b.get("predicted_fps", 0),
                                        "nodes": int(b["nodes"]), "label": b.get("label", "")})
    r["fps"].append(b["fps"])


def size(name):
    return name.split("/params:")[1].split("/")[0]


base = {size(n): r for n, r in rows.items() if r and r["nodes"] == 1}
print("| size | plan | nodes | fps (predicted) | speedup measured (predicted) | efficiency measured (predicted) |")
print("|---|---|---|---|---|---|")
for name, r in rows.items():
    strat = name.split("/strategy:")[1].split("/")[0]
    if r is None:
        print(f"| {size(name)} | {strat} | | not possible | | |")
        continue
    b = base[size(name)]
    f, bf = sum(r["fps"]) / len(r["fps"]), sum(b["fps"]) / len(b["fps"])
    s, ps = f / bf, r["pred"] / b["pred"]
    print(f"| {size(name)} | {strat}: {r['label'] or 'whole model'} | {r['nodes']} | {f:.2f} ({r['pred']:.2f}) "
          f"| {s:.2f}x ({ps:.2f}x) | {100 * s / r['nodes']:.0f} % ({100 * ps / r['nodes']:.0f} %) |")
