#!/usr/bin/python3
"""Node-loss benchmark (issue 27): a worker killed in the middle of a run, then re-planned around.

    scripts/node_loss_bench.py [--cli build/release/tools/dpushard] [--params 20M]
                               [--frames 2000] [--inflight 8] [--objective throughput]
                               [--clusters 3,4] [--peer-timeout 1] [--restart-after S]
                               [--out bench.json] [--results-dir RUN_DIR]

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

--restart-after S restarts the killed worker (same address, name and cache) S seconds after
the kill, so the run also records its return. --results-dir RUN_DIR writes the figures to
RUN_DIR/node_loss.json (atomically: a temporary file, then a rename), with the command line,
the revision and every loss and return; `dpushard report RUN_DIR` renders them as its "Node
loss and return" section (docs/benchmarking.md).
"""

import argparse
import json
import os
import shlex
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

    def start_worker(i, port=0):
        port_file = os.path.join(work, f"n{nodes}-w{i}.port")
        if os.path.exists(port_file):
            os.remove(port_file)
        with open(logs[i], "a") as err:
            return subprocess.Popen(
                [cli, "worker", "--listen", f"127.0.0.{11 + i}:{port}", "--backend", "sim",
                 "--target", "kv260", "--name", f"w{i}", "--cache",
                 os.path.join(work, f"n{nodes}-cache{i}"), "--port-file", port_file,
                 "--queue", str(max(64, 2 * args.inflight))],
                stdout=subprocess.DEVNULL, stderr=err)

    for i in range(nodes):
        logs.append(os.path.join(work, f"n{nodes}-w{i}.log"))
        open(logs[i], "w").close()
        workers.append(start_worker(i))
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
            if args.restart_after is not None:
                workers[victim].wait(timeout=10)
                try:
                    run.wait(timeout=args.restart_after)
                except subprocess.TimeoutExpired:  # still running: the node comes back
                    workers[victim] = start_worker(victim, ports[victim])
                    wait_for_file(os.path.join(work, f"n{nodes}-w{victim}.port"),
                                  workers[victim])
            run.wait(timeout=600)
        with open(out) as f:
            result = json.load(f)
    finally:
        worker_files.stop_workers(workers)
    return result, predicted, killed_at


def frame_accounting(result):
    """Distinct frames delivered, frames never delivered, frames delivered more than once."""
    order = [f["frame"] for f in result.get("frame_outputs", [])]
    distinct = len(set(order))
    return {"frames_delivered": distinct,
            "frames_lost": result["frames"] - distinct,
            "frames_duplicated": len(order) - distinct,
            "in_order": order == sorted(set(order))}


def run_record(nodes, result, predicted, killed_at):
    """One run for node_loss.json: the run's own figures and every loss and return."""
    events = []
    for e in result["node_events"]:
        event = {k: e.get(k) for k in (
            "kind", "node", "cause", "detected_s", "plan_ms", "upload_s", "upload_bytes",
            "fragments_uploaded", "switch_s", "first_frame_s", "outage_s", "frames_resent",
            "plan_after", "nodes_after", "fps_before", "fps_during", "fps_after",
            "predicted_fps_after")}
        if e["first_frame_s"] >= 0:
            event["first_frame_without_upload_s"] = e["first_frame_s"] - e["upload_s"]
        if e["kind"] == "loss" and e["node"] == "w1":  # the worker this script killed
            event["detected_after_fault_s"] = (
                result["stream_start_unix_s"] + e["detected_s"] - killed_at)
        events.append(event)
    return {"nodes": nodes, "plan": result["strategy"], "predicted_fps": predicted,
            "complete": result["complete"], "error": result.get("error"),
            "frames": result["frames"], "frames_completed": result["frames_completed"],
            **frame_accounting(result), "frames_resent": result["frames_resent"],
            "stale_messages_dropped": result["stale_messages_dropped"], "events": events}


def revision():
    """The checkout this script runs from (short commit, "-dirty" with local changes)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        return subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_atomically(path, doc):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def report(nodes, result, predicted, killed_at):
    accounting = frame_accounting(result)
    exact = (result["complete"] and accounting["frames_lost"] == 0
             and accounting["frames_duplicated"] == 0 and accounting["in_order"])
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
    for e in result["node_events"]:
        if e["kind"] == "return":
            print(f"   return of {e['node']} at t={e['detected_s']:.2f} s: {e['plan_after']} on "
                  f"{', '.join(e['nodes_after'])}, first frame {e['first_frame_s']:.3f} s after; "
                  f"fps after {e['fps_after']:.1f} (predicted {e['predicted_fps_after']:.1f})")
    print(f"   every frame exactly once and in order: {'yes' if exact else 'NO'} "
          f"(lost {accounting['frames_lost']}, duplicated {accounting['frames_duplicated']}); "
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
    parser.add_argument("--restart-after", type=float, metavar="S",
                        help="restart the killed worker S seconds after the kill (a return)")
    parser.add_argument("--out", help="also write every run's JSON here")
    parser.add_argument("--results-dir", metavar="RUN_DIR",
                        help="write the figures to RUN_DIR/node_loss.json for `dpushard report`")
    args = parser.parse_args()
    if args.results_dir and not os.path.isdir(args.results_dir):
        raise SystemExit(f"node_loss_bench: --results-dir {args.results_dir}: not a folder")
    cli = os.path.abspath(args.cli)
    command = shlex.join(["/usr/bin/python3", *sys.argv])
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="node-loss-bench-") as work:
        model = os.path.join(work, "cnn_int.xmodel")
        subprocess.run([cli, "zoo", "cnn", "--params", args.params, "-o", model], check=True,
                       capture_output=True)
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
              f"{os.getloadavg()[2]:.2f}; {args.params} CNN, {args.frames} frames, "
              f"{args.inflight} in flight, objective {args.objective}, sim workers (kv260), "
              f"1 Gbit/s paced link")
        ok, runs, records = True, {}, []
        for nodes in [int(n) for n in args.clusters.split(",")]:
            result, predicted, killed_at = run_one(cli, work, model, nodes, args)
            runs[str(nodes)] = result
            records.append(run_record(nodes, result, predicted, killed_at))
            ok = report(nodes, result, predicted, killed_at) and ok
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
              f"{os.getloadavg()[2]:.2f}")
        if args.out:
            with open(args.out, "w") as f:
                json.dump(runs, f, indent=1)
        if args.results_dir:
            path = os.path.join(args.results_dir, "node_loss.json")
            write_atomically(path, {
                "command": command, "revision": revision(), "date_utc": started,
                "model": f"{args.params} CNN", "workers": "sim (kv260)",
                "link": "1 Gbit/s, paced", "objective": args.objective, "frames": args.frames,
                "inflight": args.inflight, "peer_timeout_s": args.peer_timeout,
                "restart_after_s": args.restart_after, "load_average_start": load_start,
                "load_average_end": os.getloadavg()[0], "runs": records})
            print(f"wrote {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
