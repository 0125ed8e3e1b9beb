#!/usr/bin/python3
"""How long the planner takes, and what it predicts, for zoo models on many nodes.

Makes each zoo model once without weights (`dpushard zoo --no-weights`: shapes only, so a
100M or 1B model costs nothing to write) and times `dpushard split` per node count and
strategy (wall time of the whole command: reading the model, planning every candidate,
writing the fragments). Prints one table row per split: the plan it made, its predicted
latency and fps, the predicted speedup over one node (the 1-node plan of the same model,
made first) and the seconds it took. Times are the planner's on this machine; fps and
latency are the cost model's predictions (`--target`), nothing is run.

  /usr/bin/python3 scripts/plan-time.py --dpushard build/rel/tools/dpushard \\
      --families cnn,convvit --params 100M --nodes 4,6,8,12,16 \\
      --strategies experts,pipeline,replicate,hybrid,auto [--json FILE]

Exit status: 0 when every split succeeded, 1 when one failed (its row says why), 2 for bad
arguments. docs/splitting.md ("Planning time") has a measured table.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT_INPUTS = {"cnn": "224x224x3", "convvit": "112x112x3"}


def run(argv):
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return time.monotonic() - start, proc


def error_line(proc):
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"exit status {proc.returncode}"


def plan_label(plan):
    """As the planner names plans (dpushard::plan_label): one replica is not counted."""
    replicas = plan.get("replicas", 0)
    if plan.get("strategy") == "hybrid" and replicas > 0:
        count = f"{replicas}x " if replicas > 1 else ""
        return f"hybrid {count}{plan['inner_strategy']}"
    return plan.get("strategy", "?")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dpushard", required=True, help="the dpushard binary")
    parser.add_argument("--families", default="cnn,convvit")
    parser.add_argument("--params", default="100M", help="zoo sizes, comma-separated")
    parser.add_argument("--nodes", default="4,6,8,12,16")
    parser.add_argument("--strategies", default="experts,pipeline,replicate,hybrid,auto")
    parser.add_argument("--experts", default="3")
    parser.add_argument("--inputs", default="", help="family=HxWxC,... (default cnn 224, convvit 112)")
    parser.add_argument("--seed", default="1")
    parser.add_argument("--target", default="kv260", help="split --target (timing model)")
    parser.add_argument("--objective", default="latency", choices=["latency", "throughput"])
    parser.add_argument("--link-gbps", default="1")
    parser.add_argument("--work", default="", help="folder for models and plans (default: a temporary one)")
    parser.add_argument("--json", default="", help="also write the rows to this file")
    args = parser.parse_args()

    if not os.access(args.dpushard, os.X_OK):
        print(f"plan-time: error: --dpushard {args.dpushard}: not an executable file", file=sys.stderr)
        return 2
    inputs = dict(DEFAULT_INPUTS)
    for item in filter(None, args.inputs.split(",")):
        if "=" not in item:
            print(f"plan-time: error: --inputs: '{item}' is not family=HxWxC", file=sys.stderr)
            return 2
        family, shape = item.split("=", 1)
        inputs[family] = shape
    try:
        nodes = sorted({int(n) for n in args.nodes.split(",") if n})
    except ValueError:
        print(f"plan-time: error: --nodes: '{args.nodes}' is not a list of whole numbers", file=sys.stderr)
        return 2
    if not nodes or min(nodes) < 1:
        print("plan-time: error: --nodes: node counts must be at least 1", file=sys.stderr)
        return 2
    families = [f for f in args.families.split(",") if f]
    strategies = [s for s in args.strategies.split(",") if s]

    work = args.work or tempfile.mkdtemp(prefix="dpushard-plan-time-")
    os.makedirs(work, exist_ok=True)
    rows = []
    failed = False
    header = (f"{'model':<14} {'nodes':>5} {'strategy':<10} {'plan':<20} {'latency ms':>11} "
              f"{'fps':>9} {'speedup':>8} {'split s':>8}")
    print(f"plan-time: {args.dpushard}, target {args.target}, objective {args.objective}, "
          f"link {args.link_gbps} Gbit/s, models without weights in {work}", flush=True)
    print(header)
    print("-" * len(header), flush=True)
    for family in families:
        for size in filter(None, args.params.split(",")):
            name = f"{family}-{size}"
            model = os.path.join(work, name + "_int.xmodel")
            zoo = [args.dpushard, "zoo", family, "--params", size, "--experts", args.experts,
                   "--input", inputs.get(family, "224x224x3"), "--seed", args.seed,
                   "--no-weights", "-o", model]
            seconds, proc = run(zoo)
            if proc.returncode != 0:
                print(f"{name:<14} zoo failed: {error_line(proc)}", flush=True)
                failed = True
                continue
            base_fps = None
            configs = [(1, "replicate")] + [(n, s) for n in nodes if n > 1 for s in strategies]
            for n, strategy in configs:
                out = os.path.join(work, name, f"n{n}-{strategy}")
                argv = [args.dpushard, "split", model, "--nodes", str(n), "--strategy", strategy,
                        "--objective", args.objective, "--target", args.target,
                        "--link-gbps", args.link_gbps, "-o", out, "--json"]
                seconds, proc = run(argv)
                row = {"model": name, "family": family, "size": size, "nodes": n,
                       "strategy": "single" if n == 1 else strategy, "split_s": round(seconds, 3)}
                if proc.returncode != 0:
                    row["error"] = error_line(proc)
                    failed = True
                    print(f"{name:<14} {n:>5} {row['strategy']:<10} failed after {seconds:.2f} s: "
                          f"{row['error']}", flush=True)
                    rows.append(row)
                    continue
                plan = json.loads(proc.stdout)
                predicted = plan["predicted"]
                fallback = [a for a in plan.get("adjustments", []) if a.get("kind") == "fallback"]
                row.update({"plan": plan_label(plan), "latency_ms": predicted["latency_ms"],
                            "fps": predicted["throughput_fps"],
                            "fallback": fallback[0]["reason"] if fallback else ""})
                if n == 1:
                    base_fps = predicted["throughput_fps"]
                row["speedup"] = (predicted["throughput_fps"] / base_fps) if base_fps else None
                rows.append(row)
                speedup = f"{row['speedup']:.2f}x" if row["speedup"] else "—"
                plan_text = row["plan"] + (" (fallback)" if fallback else "")
                print(f"{name:<14} {n:>5} {row['strategy']:<10} {plan_text:<20} "
                      f"{row['latency_ms']:>11.3f} {row['fps']:>9.2f} {speedup:>8} {seconds:>8.2f}",
                      flush=True)
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"dpushard": args.dpushard, "target": args.target,
                       "objective": args.objective, "link_gbps": args.link_gbps,
                       "rows": rows}, f, indent=1)
            f.write("\n")
        os.replace(tmp, args.json)
    slowest = max((r["split_s"] for r in rows if "error" not in r), default=0)
    print(f"plan-time: {len(rows)} splits, slowest {slowest:.2f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
