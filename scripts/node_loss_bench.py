#!/usr/bin/python3
"""Node-loss benchmark (issue 27): a worker killed in the middle of a run, then re-planned around.

    scripts/node_loss_bench.py [--cli build/release/tools/dpushard] [--params 20M]
                               [--frames 2000] [--inflight 8] [--objective throughput]
                               [--clusters 3,4] [--peer-timeout 1] [--out bench.json]

For each cluster size N (3, then 4): starts N `sim` workers (modeled KV260s, timing only)
on 127.0.0.x loopback (ports picked by the system), splits a CNN made by `dpushard zoo cnn
--params P` for N nodes (`split --target kv260 --objective O`, so plan.yaml records the
model), runs --frames frames with `run --cluster --on-node-loss replan` on the emulated
1 Gbit/s link (every node sim: the link is paced), and SIGKILLs worker 1 when about half the
frames should be done (from the plan's predicted throughput, counted from the job's load).

Prints, per N: when the loss was detected (after the kill, and in the run's clock), the time
from detection to the first frame on the new plan and, separately, the upload of the
fragments the survivors lacked, frames re-sent, throughput before / during / after the loss,
the survivors' plan's predicted throughput and the ratio, and whether every frame came back
exactly once and in order. Goals: first frame on the new plan within 2 s of detection
(upload excluded), survivors within 10 % of their prediction, no frame lost or duplicated.
Exits 1 when a run fails or a goal is missed.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import worker_files  # scripts/worker_files.py, beside this script


def wait_for_file(path, process, seconds=60):
    return worker_files.wait_for_file(path, process, "node_loss_bench", seconds)


def count_in(path, text):
    try:
        with open(path) as f:
            return f.read().count(text)
    except OSError:
        return 0


def run_one(cli, work, model, nodes, args):
    plan = os.path.join(work, f"plan{nodes}")
    split = subprocess.run(
        [cli, "split", model, "--nodes", str(nodes), "--target", "kv260", "--objective",
         args.objective, "--inflight", str(args.inflight), "-o", plan, "--json"],
        capture_output=True, text=True, check=True)
    predicted = json.loads(split.stdout)["predicted"]["throughput_fps"]

    workers, logs = [], []
    for i in range(nodes):
        port_file = os.path.join(work, f"n{nodes}-w{i}.port")
        log = os.path.join(work, f"n{nodes}-w{i}.log")
        logs.append(log)
        with open(log, "w") as err:
            workers.append(subprocess.Popen(
                [cli, "worker", "--listen", f"127.0.0.{11 + i}:0", "--backend", "sim",
                 "--target", "kv260", "--name", f"w{i}", "--cache",
                 os.path.join(work, f"n{nodes}-cache{i}"), "--port-file", port_file,
                 "--queue", str(max(64, 2 * args.inflight))],
                stdout=subprocess.DEVNULL, stderr=err))
    try:
        ports = [wait_for_file(os.path.join(work, f"n{nodes}-w{i}.port"), workers[i])
                 for i in range(nodes)]
        cluster = os.path.join(work, f"cluster{nodes}.yaml")
        with open(cluster, "w") as f:
            f.write("link_gbps: 1\nnodes:\n")
            for i, port in enumerate(ports):
                f.write(f"  - {{name: w{i}, address: '127.0.0.{11 + i}:{port}', backend: sim, "
                        f"target: kv260}}\n")
        out = os.path.join(work, f"run{nodes}.json")
        with open(out, "w") as stdout, open(os.path.join(work, f"run{nodes}.err"), "w") as stderr:
            run = subprocess.Popen(
                [cli, "run", plan, "--cluster", cluster, "--frames", str(args.frames),
                 "--inflight", str(args.inflight), "--peer-timeout", str(args.peer_timeout),
                 "--on-node-loss", "replan", "--frame-hashes", "--json"],
                stdout=stdout, stderr=stderr)
            # The job is loaded on the victim when frames start; kill it halfway.
            victim = 1
            deadline = time.time() + 300
            while count_in(logs[victim], "event=loaded") == 0:
                if run.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"node_loss_bench: N={nodes}: the run never started")
                time.sleep(0.01)
            time.sleep(0.5 * args.frames / predicted)
            if run.poll() is not None:
                raise SystemExit(f"node_loss_bench: N={nodes}: the run ended before the kill")
            workers[victim].send_signal(signal.SIGKILL)
            killed_at = time.time()
            run.wait(timeout=600)
        with open(out) as f:
            result = json.load(f)
    finally:
        worker_files.stop_workers(workers)
    return result, predicted, killed_at


def report(nodes, result, predicted, killed_at):
    order = [f["frame"] for f in result.get("frame_outputs", [])]
    exact = result["complete"] and order == list(range(result["frames"]))
    print(f"== {nodes} workers, {result['strategy']} plan predicted {predicted:.1f} fps; "
          f"{result['frames_completed']}/{result['frames']} frames, complete {result['complete']}")
    if not result["complete"]:
        print(f"   error: {result.get('error')}")
    ok = exact
    losses = [e for e in result["node_events"] if e["kind"] == "loss"]
    if not losses:
        print("   no loss recorded")
        return False
    for e in losses:
        detected_after_kill = result["stream_start_unix_s"] + e["detected_s"] - killed_at
        to_first = e["first_frame_s"] - e["upload_s"]
        ratio = e["fps_after"] / e["predicted_fps_after"] if e["predicted_fps_after"] else 0
        print(f"   loss of {e['node']}: detected {detected_after_kill * 1000:.0f} ms after the "
              f"kill (t={e['detected_s']:.2f} s): {e['cause']}")
        print(f"   new plan {e['plan_after']} on {', '.join(e['nodes_after'])}: planner "
              f"{e['plan_ms']:.0f} ms, upload {e['upload_s']:.3f} s "
              f"({e['upload_bytes'] / 1e6:.1f} MB, {e['fragments_uploaded']} fragments), "
              f"switch {e['switch_s']:.3f} s")
        print(f"   first frame on the new plan {e['first_frame_s']:.3f} s after detection "
              f"({to_first:.3f} s without the upload; outage {e['outage_s']:.3f} s); "
              f"frames re-sent {e['frames_resent']}")
        print(f"   throughput before {e['fps_before']:.1f} fps, during {e['fps_during']:.1f}, "
              f"after {e['fps_after']:.1f} (survivors' plan predicts "
              f"{e['predicted_fps_after']:.1f}: {ratio:.3f}x)")
        ok = ok and 0 <= to_first <= 2.0 and abs(ratio - 1) <= 0.10
    print(f"   every frame exactly once and in order: {'yes' if exact else 'NO'}; "
          f"frames re-sent {result['frames_resent']}, stale messages dropped "
          f"{result['stale_messages_dropped']}")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default="build/release/tools/dpushard")
    parser.add_argument("--params", default="20M")
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument("--objective", default="throughput", choices=["throughput", "latency"])
    parser.add_argument("--clusters", default="3,4")
    parser.add_argument("--peer-timeout", type=float, default=1.0)
    parser.add_argument("--out", help="also write every run's JSON here")
    args = parser.parse_args()
    cli = os.path.abspath(args.cli)
    with tempfile.TemporaryDirectory(prefix="node-loss-bench-") as work:
        model = os.path.join(work, "cnn_int.xmodel")
        subprocess.run([cli, "zoo", "cnn", "--params", args.params, "-o", model], check=True,
                       capture_output=True)
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
              f"{os.getloadavg()[2]:.2f}; {args.params} CNN, {args.frames} frames, "
              f"{args.inflight} in flight, objective {args.objective}, sim workers (kv260), "
              f"1 Gbit/s paced link")
        ok, runs = True, {}
        for nodes in [int(n) for n in args.clusters.split(",")]:
            result, predicted, killed_at = run_one(cli, work, model, nodes, args)
            runs[str(nodes)] = result
            ok = report(nodes, result, predicted, killed_at) and ok
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
              f"{os.getloadavg()[2]:.2f}")
        if args.out:
            with open(args.out, "w") as f:
                json.dump(runs, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
