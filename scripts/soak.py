#!/usr/bin/python3
"""Soak benchmark: three workers, an experts plan, 100,000 frames; memory must stay flat.

    scripts/soak.py [--cli build/rel/tools/dpushard] [--frames 100000] [--chunk 10000]
                    [--backend sim] [--params 1M] [--inflight 8] [--out soak.json]

Starts three `dpushard worker` processes on 127.0.0.1 (ports picked by the system, so no
port lock is needed), makes a CNN with `zoo cnn`, splits it into experts on three nodes and
streams the frames through the workers as consecutive `run --cluster` jobs of --chunk frames
each (the workers stay up, so each job after the first finds its fragments cached). While
a job runs, every worker's RSS is sampled from /proc each 0.2 s.

Prints one line per job: frames done, errors, the job's fps and each worker's RSS (peak
during the job and after it), and at the end the RSS growth after warm-up: from the end of
the first job to the end of the last, and of the in-job peak over the same span. The goal
is zero errors and growth under 5 %. Exits 1 when a job fails or a worker dies.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import worker_files  # scripts/worker_files.py, beside this script


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def wait_for_file(path, process, seconds=30):
    return worker_files.wait_for_file(path, process, "soak", seconds)


class Sampler:
    """Samples each worker's RSS in the background; peak() since the last reset()."""

    def __init__(self, pids):
        self.pids = pids
        self.peaks = [0] * len(pids)
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stopped.wait(0.2):
            values = [rss_kib(pid) for pid in self.pids]
            with self.lock:
                self.peaks = [max(p, v) for p, v in zip(self.peaks, values)]

    def reset(self):
        with self.lock:
            self.peaks = [rss_kib(pid) for pid in self.pids]

    def peak(self):
        with self.lock:
            return list(self.peaks)

    def stop(self):
        self.stopped.set()
        self.thread.join()


def mib(kib):
    return f"{kib / 1024:.1f}"


def growth(before, after):
    return 100.0 * (after - before) / before if before else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cli", default="build/rel/tools/dpushard")
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--backend", default="sim")
    parser.add_argument("--params", default="1M")
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument("--out", help="also write the figures as JSON here")
    args = parser.parse_args()
    cli = os.path.abspath(args.cli)
    if not os.access(cli, os.X_OK):
        raise SystemExit(f"soak: {cli} is not an executable (build the dpushard target)")

    work = tempfile.mkdtemp(prefix="dpushard-soak-")
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write(os.urandom(16).hex() + "\n")
    model = os.path.join(work, "cnn_int.xmodel")
    plan = os.path.join(work, "plan")
    subprocess.run([cli, "zoo", "cnn", "--params", args.params, "--experts", "3", "-o", model],
                   check=True)
    subprocess.run([cli, "split", model, "--nodes", "3", "--strategy", "experts", "-o", plan],
                   check=True, stdout=subprocess.DEVNULL)

    workers = []
    try:
        for i in range(3):
            port_file = os.path.join(work, f"port{i}")
            log = open(os.path.join(work, f"worker{i}.log"), "w")
            process = subprocess.Popen(
                [cli, "worker", "--listen", "127.0.0.1:0", "--backend", args.backend,
                 "--cache", os.path.join(work, f"cache{i}"), "--token-file", token,
                 "--threads", "2", "--name", f"soak{i}", "--port-file", port_file],
                stdout=log, stderr=log)
            workers.append(process)
            workers[-1].port = wait_for_file(port_file, process)
        cluster = os.path.join(work, "cluster.yaml")
        with open(cluster, "w") as f:
            f.write(f"token_file: {token}\nnodes:\n")
            for i, w in enumerate(workers):
                f.write(f"  - {{name: soak{i}, address: \"127.0.0.1:{w.port}\", "
                        f"backend: {args.backend}}}\n")

        pids = [w.pid for w in workers]
        start_rss = [rss_kib(pid) for pid in pids]
        print(f"soak: {args.frames} frames of a {args.params} CNN split into experts on 3 "
              f"{args.backend} workers, {args.chunk} frames a job, {args.inflight} in flight")
        print("soak: RSS MiB at start: " + " ".join(mib(r) for r in start_rss))
        print(f"{'frames':>8} {'errors':>6} {'fps':>9}  RSS MiB per worker: peak during the job"
              " / after it")
        sampler = Sampler(pids)
        done = errors = 0
        rows = []
        began = time.time()
        while done < args.frames:
            frames = min(args.chunk, args.frames - done)
            result_file = os.path.join(work, "result.json")
            sampler.reset()
            run = subprocess.run(
                [cli, "run", plan, "--cluster", cluster, "--frames", str(frames), "--inflight",
                 str(args.inflight), "--seed", str(done), "--out", result_file, "--json"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            peak = sampler.peak()
            time.sleep(0.3)  # the workers unload the job when the orchestrator hangs up
            after = [rss_kib(pid) for pid in pids]
            try:
                result = json.loads(run.stdout)
            except json.JSONDecodeError:
                result = {"frames_completed": 0, "throughput_fps": 0.0,
                          "error": run.stderr.strip()}
            completed = int(result.get("frames_completed", 0))
            errors += frames - completed + (1 if run.returncode != 0 else 0)
            done += frames
            row = {"frames": done, "errors": errors, "fps": result.get("throughput_fps", 0.0),
                   "rss_peak_kib": peak, "rss_after_kib": after, "wall_s": time.time() - began}
            rows.append(row)
            print(f"{done:>8} {errors:>6} {row['fps']:>9.1f}  " +
                  "  ".join(f"{mib(p)}/{mib(a)}" for p, a in zip(peak, after)), flush=True)
            if run.returncode != 0:
                print(f"soak: job failed: {result.get('error', run.stderr.strip())}",
                      file=sys.stderr)
            dead = [i for i, w in enumerate(workers) if w.poll() is not None]
            if dead:
                print(f"soak: worker(s) {dead} died; logs in {work}", file=sys.stderr)
                break
        sampler.stop()
        end_rss = [rss_kib(pid) for pid in pids]
        print("soak: RSS MiB at end: " + " ".join(mib(r) for r in end_rss))
        summary = {"frames": done, "errors": errors, "start_rss_kib": start_rss,
                   "end_rss_kib": end_rss, "rows": rows}
        if len(rows) >= 2:
            warm, last = rows[0], rows[-1]
            after_growth = [growth(b, a) for b, a in
                            zip(warm["rss_after_kib"], last["rss_after_kib"])]
            peak_growth = [growth(b, a) for b, a in
                           zip(warm["rss_peak_kib"], last["rss_peak_kib"])]
            summary["growth_after_warmup_pct"] = after_growth
            summary["peak_growth_after_warmup_pct"] = peak_growth
            print("soak: RSS growth after warm-up (end of job 1 -> end of last job): " +
                  " ".join(f"{g:+.1f}%" for g in after_growth))
            print("soak: in-job peak growth after warm-up (job 1 -> last job):        " +
                  " ".join(f"{g:+.1f}%" for g in peak_growth))
            fps = [r["fps"] for r in rows]
            print(f"soak: fps min {min(fps):.1f}, max {max(fps):.1f}; errors {errors}; "
                  f"wall {rows[-1]['wall_s']:.0f} s")
        if args.out:
            with open(args.out, "w") as f:
                json.dump(summary, f, indent=2)
        return 1 if errors or any(w.poll() is not None for w in workers) else 0
    finally:
        worker_files.stop_workers(workers)
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    sys.exit(main())
