#!/usr/bin/python3
"""Network faults between dpushard's processes, in network namespaces of our own.

Three `dpushard worker --backend sim --sim-numerics` processes (modeled KV260s that also
compute the values) each run in a namespace of their own, joined by a veth pair to the
orchestrator's namespace, which routes between them (10.77.<i>.1 on its side, 10.77.<i>.2
on worker i's). `dpushard run` streams frames of a 3-node experts plan through them while
one fault is injected on worker w1's link (or on every link for loss):

  none        no fault
  loss1/loss5 1 % / 5 % of packets dropped at random, both ways, every worker (nftables
              `numgen random mod 100 < N drop`)
  tbf100      every worker's link 100 Mbit/s both ways (tc tbf), the plan made for 0.1 Gbit/s
  linkdown    w1's link down for 2 s mid-run, then up again (the peer timeout is 3 s)
  partition   w1 cut off (nftables drop) for longer than the 1 s peer timeout
  jitter      w1 reached through a userspace relay in the orchestrator's namespace that
              delays every chunk 5 ms +- 2 ms, in order (this kernel's tc has no netem)

A run must complete with frame 0's outputs byte-identical to `dpushard exec` (sha256), or,
for the partition, fail naming w1 within the peer timeout (plus a second of slack). Every
command is bounded by a timeout. Prints one table row per fault: outcome, time to detect
(partition), measured fps and the planner's predicted fps for that link.

  /usr/bin/python3 tests/faults/net_faults.py --dpushard build/release/tools/dpushard \\
      [--faults none,loss1,loss5,tbf100,linkdown,partition,jitter] [--frames N]

Needs root (namespaces, nftables, tc); without it, or without nft/ip/tc, it prints one line
saying why and exits 77 (ctest's skip). Exit 1 when a fault's outcome is wrong.
Namespaces and processes are removed on exit, whatever happens.
"""

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
ALL_FAULTS = ["none", "loss1", "loss5", "tbf100", "linkdown", "partition", "jitter"]
PORT = 7000
RELAY_PORT = 7100
PEER_TIMEOUT_S = 1.0


def sh(*argv, check=True, timeout=20):
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=timeout)


class Net:
    """The namespaces: one orchestrator ns routing between one ns per worker."""

    def __init__(self, workers):
        tag = f"dpsf{os.getpid() % 100000}"
        self.orch = f"{tag}o"
        self.workers = [f"{tag}w{i}" for i in range(workers)]
        self.created = []

    def ns(self, name, *argv, check=True, timeout=20):
        return sh("ip", "netns", "exec", name, *argv, check=check, timeout=timeout)

    def up(self):
        for name in [self.orch] + self.workers:
            sh("ip", "netns", "add", name)
            self.created.append(name)
            self.ns(name, "ip", "link", "set", "lo", "up")
        self.ns(self.orch, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        for i, w in enumerate(self.workers):
            outer, inner = self.veth(i)
            sh("ip", "link", "add", outer, "netns", self.orch, "type", "veth", "peer", "name",
               inner, "netns", w)
            self.ns(self.orch, "ip", "addr", "add", f"10.77.{i}.1/24", "dev", outer)
            self.ns(self.orch, "ip", "link", "set", outer, "up")
            self.ns(w, "ip", "addr", "add", f"10.77.{i}.2/24", "dev", inner)
            self.ns(w, "ip", "link", "set", inner, "up")
            self.route(i)

    def veth(self, i):
        return f"{self.orch}v{i}", f"{self.orch}p{i}"

    def route(self, i):
        self.ns(self.workers[i], "ip", "route", "replace", "default", "via", f"10.77.{i}.1")

    def address(self, i):
        return f"10.77.{i}.2:{PORT}"

    def down(self):
        for name in reversed(self.created):
            sh("ip", "netns", "del", name, check=False)
        self.created = []


def can_run():
    if os.geteuid() != 0:
        return "needs root (network namespaces, nftables, tc)"
    for tool in ("ip", "nft", "tc"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed"
    probe = f"dpsfprobe{os.getpid() % 100000}"
    made = sh("ip", "netns", "add", probe, check=False)
    if made.returncode != 0:
        return "cannot create a network namespace: " + made.stderr.strip()
    sh("ip", "netns", "del", probe, check=False)
    return ""


# --- the delaying relay (runs inside the orchestrator's namespace) -------------------------
async def pump(reader, writer, delay_s, jitter_s):
    last = 0.0
    loop = asyncio.get_running_loop()
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            # Each chunk later by delay +- jitter, never before the one ahead of it.
            due = max(last, loop.time() + delay_s + random.uniform(-jitter_s, jitter_s))
            last = due
            await asyncio.sleep(max(0.0, due - loop.time()))
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def relay(listen, target, delay_ms, jitter_ms):
    host, port = listen.rsplit(":", 1)
    t_host, t_port = target.rsplit(":", 1)

    async def serve(reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection(t_host, int(t_port))
        except OSError:
            writer.close()
            return
        await asyncio.gather(pump(reader, up_writer, delay_ms / 1e3, jitter_ms / 1e3),
                             pump(up_reader, writer, delay_ms / 1e3, jitter_ms / 1e3))

    server = await asyncio.start_server(serve, host, int(port))
    async with server:
        await server.serve_forever()


# --- one fault ------------------------------------------------------------------------------
class Harness:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.net = Net(3)
        self.procs = []
        self.baseline_fps = 1000.0  # until the fault-free run measures it

    def spawn(self, ns, argv, log):
        out = open(log, "w")
        p = subprocess.Popen(["ip", "netns", "exec", ns] + argv, stdout=out, stderr=out,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []

    def start_workers(self):
        token = os.path.join(self.work, "token")
        for i, ns in enumerate(self.net.workers):
            ready = os.path.join(self.work, f"w{i}.port")
            if os.path.exists(ready):
                os.remove(ready)
            self.spawn(ns, [self.args.dpushard, "worker", "--listen", self.net.address(i),
                            "--backend", "sim", "--sim-numerics", "--target", "kv260",
                            "--cache", os.path.join(self.work, f"cache{i}"), "--token-file",
                            token, "--name", f"w{i}", "--port-file", ready],
                       os.path.join(self.work, f"w{i}.log"))
            deadline = time.monotonic() + 20
            while not (os.path.exists(ready) and open(ready).read().strip()):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"worker w{i} did not start")
                time.sleep(0.02)

    def cluster(self, name, addresses, emulation, gbps):
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write(f"token_file: token\nlink_gbps: {gbps}\nlink_emulation: {emulation}\nnodes:\n")
            for i, a in enumerate(addresses):
                f.write(f"  - {{name: w{i}, address: '{a}', backend: sim, target: kv260}}\n")
        return path

    def nft_drop(self, ns, percent):
        rule = ["drop"] if percent >= 100 else ["numgen", "random", "mod", "100", "<",
                                                str(percent), "drop"]
        self.net.ns(ns, "nft", "add", "table", "inet", "fault")
        for chain, hook in (("in", "input"), ("out", "output")):
            self.net.ns(ns, "nft", "add", "chain", "inet", "fault", chain,
                        f"{{ type filter hook {hook} priority 0; }}")
            self.net.ns(ns, "nft", "add", "rule", "inet", "fault", chain, *rule)

    def nft_clear(self, ns):
        self.net.ns(ns, "nft", "delete", "table", "inet", "fault", check=False)

    def tbf(self, i, rate):
        outer, inner = self.net.veth(i)
        for ns, dev in ((self.net.orch, outer), (self.net.workers[i], inner)):
            self.net.ns(ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate,
                        "burst", "64kb", "latency", "100ms")

    def tbf_clear(self, i):
        outer, inner = self.net.veth(i)
        self.net.ns(self.net.orch, "tc", "qdisc", "del", "dev", outer, "root", check=False)
        self.net.ns(self.net.workers[i], "tc", "qdisc", "del", "dev", inner, "root", check=False)

    def run(self, fault, exec_hashes, predicted):
        plan = self.args.plan_slow if fault == "tbf100" else self.args.plan
        addresses = [self.net.address(i) for i in range(3)]
        emulation, gbps = ("off", 0.1) if fault == "tbf100" else ("paced", 1.0)
        if fault == "jitter":
            addresses[1] = f"10.77.1.1:{RELAY_PORT}"
            self.spawn(self.net.orch, ["/usr/bin/python3", os.path.abspath(__file__), "--relay",
                                       f"10.77.1.1:{RELAY_PORT}", self.net.address(1), "5", "2"],
                       os.path.join(self.work, "relay.log"))
            time.sleep(0.5)
        cluster = self.cluster(f"{fault}.yaml", addresses, emulation, gbps)
        if fault in ("loss1", "loss5"):
            for ns in self.net.workers:
                self.nft_drop(ns, 1 if fault == "loss1" else 5)
        if fault == "tbf100":
            for i in range(3):
                self.tbf(i, "100mbit")
        out = os.path.join(self.work, f"{fault}.json")
        frames = self.args.frames
        if fault == "partition":
            frames = 100_000_000  # ends only by the fault
        elif fault == "linkdown":
            # Long enough to be running before, during and after the 2 s outage.
            frames = max(frames, int(self.baseline_fps * (self.args.fault_after + 4.0)))
        argv = ["ip", "netns", "exec", self.net.orch, self.args.dpushard, "run", plan, "--cluster",
                cluster, "--frames", str(frames), "--inflight", "3", "--seed", "7",
                "--json", "--out", out]
        if fault == "partition":
            argv += ["--peer-timeout", str(PEER_TIMEOUT_S)]
        start = time.monotonic()
        run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
        detect = None
        if fault in ("linkdown", "partition"):
            time.sleep(self.args.fault_after)
            _, inner = self.net.veth(1)
            if fault == "linkdown":
                self.net.ns(self.net.workers[1], "ip", "link", "set", inner, "down")
                time.sleep(2.0)
                self.net.ns(self.net.workers[1], "ip", "link", "set", inner, "up")
                self.net.route(1)  # a link that goes down loses its routes
            else:
                self.nft_drop(self.net.workers[1], 100)
                cut = time.monotonic()
        try:
            stdout, stderr = run.communicate(timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.communicate()
            return {"fault": fault, "ok": False, "outcome": "HUNG (killed after "
                    f"{self.args.timeout} s)", "detect_s": None, "fps": None,
                    "predicted": predicted[plan]}
        finally:
            for ns in self.net.workers:
                self.nft_clear(ns)
            if fault == "tbf100":
                for i in range(3):
                    self.tbf_clear(i)
        ended = time.monotonic()
        if fault == "partition":
            detect = ended - cut
        row = {"fault": fault, "detect_s": detect, "fps": None, "predicted": predicted[plan],
               "wall_s": ended - start}
        try:
            result = json.loads(stdout)
        except json.JSONDecodeError:
            result = {}
        err = stderr.strip().splitlines()
        last = err[-1] if err else ""
        if fault == "partition":
            named = "node 'w1'" in last
            row["ok"] = run.returncode == 1 and named and detect <= PEER_TIMEOUT_S + 1.5
            row["outcome"] = (f"failed naming w1 after {detect:.2f} s" if named
                              else f"exit {run.returncode}: {last[:120]}")
            return row
        hashes = [o.get("sha256") for o in result.get("outputs", [])]
        row["fps"] = result.get("steady_fps")
        if fault == "none" and row["fps"]:
            self.baseline_fps = row["fps"]
        row["ok"] = run.returncode == 0 and result.get("complete") is True and hashes == exec_hashes
        row["outcome"] = ("complete, outputs = exec" if row["ok"]
                          else f"exit {run.returncode}: {last[:160]}")
        return row


def predicted_fps(dpushard, plan):
    with open(os.path.join(plan, "plan.yaml")) as f:
        text = f.read()
    # predicted: throughput_fps: N (plan.yaml's own block; docs/plan.md)
    block = text[text.index("\npredicted:"):]
    for line in block.splitlines()[1:6]:
        if line.strip().startswith("throughput_fps:"):
            return float(line.split(":", 1)[1])
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dpushard")
    parser.add_argument("--faults", default=",".join(ALL_FAULTS))
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--fault-after", type=float, default=0.5,
                        help="seconds into the run before linkdown/partition")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per run at most")
    parser.add_argument("--relay", nargs=4, metavar=("LISTEN", "TARGET", "DELAY_MS", "JITTER_MS"))
    args = parser.parse_args()
    if args.relay:
        listen, target, delay, jitter = args.relay
        asyncio.run(relay(listen, target, float(delay), float(jitter)))
        return 0
    if not args.dpushard:
        parser.error("--dpushard is required")
    args.dpushard = os.path.abspath(args.dpushard)
    faults = [f for f in args.faults.split(",") if f]
    unknown = [f for f in faults if f not in ALL_FAULTS]
    if unknown:
        parser.error(f"unknown fault(s) {', '.join(unknown)} (known: {', '.join(ALL_FAULTS)})")
    why = can_run()
    if why:
        print(f"net_faults: skipped: {why}")
        return SKIP

    work = tempfile.mkdtemp(prefix="dpushard-net-faults-")
    harness = Harness(args, work)
    rows = []
    try:
        with open(os.path.join(work, "token"), "w") as f:
            f.write("fault-secret\n")
        model = os.path.join(work, "model_int.xmodel")
        sh(args.dpushard, "zoo", "cnn", "--params", "1M", "--experts", "3", "--input",
           "112x112x3", "--classes", "10", "-o", model, timeout=120)
        args.plan = os.path.join(work, "plan")
        args.plan_slow = os.path.join(work, "plan-100mbit")
        sh(args.dpushard, "split", model, "--nodes", "3", "--strategy", "experts", "--target",
           "kv260", "-o", args.plan, timeout=120)
        sh(args.dpushard, "split", model, "--nodes", "3", "--strategy", "experts", "--target",
           "kv260", "--link-gbps", "0.1", "-o", args.plan_slow, timeout=120)
        predicted = {p: predicted_fps(args.dpushard, p) for p in (args.plan, args.plan_slow)}
        exec_out = json.loads(sh(args.dpushard, "exec", model, "--seed", "7", "--json",
                                 timeout=120).stdout)
        exec_hashes = [o["sha256"] for o in exec_out["outputs"]]
        harness.net.up()
        harness.start_workers()
        for fault in faults:
            rows.append(harness.run(fault, exec_hashes, predicted))
            # The relay and anything else the fault started go; the workers stay.
            for p in harness.procs[3:]:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
            harness.procs = harness.procs[:3]
            if any(p.poll() is not None for p in harness.procs):
                raise RuntimeError(f"a worker died during '{fault}'")
    finally:
        harness.stop_all()
        harness.net.down()
        if not os.environ.get("DPUSHARD_KEEP_FAULT_DIR"):
            shutil.rmtree(work, ignore_errors=True)

    print(f"| fault | outcome | time to detect | fps (steady) | predicted fps | measured / "
          f"predicted |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        detect = f"{r['detect_s']:.2f} s" if r.get("detect_s") is not None else "-"
        fps = f"{r['fps']:.1f}" if r.get("fps") else "-"
        pred = f"{r['predicted']:.1f}" if r.get("predicted") else "-"
        ratio = f"{r['fps'] / r['predicted']:.2f}" if r.get("fps") and r.get("predicted") else "-"
        mark = "" if r["ok"] else " **FAILED**"
        print(f"| {r['fault']} | {r['outcome']}{mark} | {detect} | {fps} | {pred} | {ratio} |")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
