#!/usr/bin/python3
"""`dpushard serve PLAN --cluster C` against a real HTTP client, on 3 workers on 127.0.0.1.

The model, plan and exec's outputs are serve_test.py's (a 300K zoo CNN split into a 3-node
experts plan). Each test starts three `dpushard worker --backend ref` processes on ephemeral
ports, writes their cluster.yaml and serves the plan on them. The tests check infer results
byte-identical to `dpushard exec` (JSON INT8 and the binary extension), concurrent clients,
/v2/health/ready turning ready only once every node has answered, per-node /metrics, a
worker killed while clients keep sending (every request still answered correctly), the
same worker restarted and taken back (ready throughout, no request hanging), the last worker
killed (the requests in flight get the coded error, then 503), and sim workers (requests
fail unless serve runs --timing-only, which marks the zeros "computed": false).

  /usr/bin/python3 tests/serve/serve_cluster_test.py --dpushard build/release/tools/dpushard \\
      [TestClass]
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_test  # noqa: E402
from serve_test import (MODEL, Workspace, binary_request, json_request, parse_metrics,  # noqa: E402
                        split_binary)


class Cluster:
    """Three ref workers (or `backend`'s) and the cluster.yaml that lists them."""

    def __init__(self, tag, count=3, backend="ref"):
        self.dir = os.path.join(Workspace.dir, tag)
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, "token"), "w") as f:
            f.write("serve-cluster-secret\n")
        self.backend = backend
        self.workers = []
        self.ports = []
        for i in range(count):
            with open(os.path.join(self.dir, f"w{i}.log"), "w"):
                pass
            self.workers.append(self._start(i, 0))
            self.ports.append(self._port(os.path.join(self.dir, f"w{i}.port")))
        self.yaml = os.path.join(self.dir, "cluster.yaml")
        with open(self.yaml, "w") as f:
            f.write("token_file: token\nlink_gbps: 1\nnodes:\n")
            for i, port in enumerate(self.ports):
                target = "kv260" if backend == "sim" else "host"
                f.write(f"  - {{name: w{i}, address: '127.0.0.1:{port}', backend: {backend}, "
                        f"target: {target}}}\n")

    def _start(self, i, port):
        """Worker i on `port` (0: any) with its cache, appending to its log."""
        port_file = os.path.join(self.dir, f"w{i}.port")
        if os.path.exists(port_file):
            os.remove(port_file)
        with open(os.path.join(self.dir, f"w{i}.log"), "a") as log:
            return subprocess.Popen(
                [serve_test.DPUSHARD, "worker", "--listen", f"127.0.0.1:{port}", "--cache",
                 os.path.join(self.dir, f"cache-w{i}"), "--token-file",
                 os.path.join(self.dir, "token"), "--name", f"w{i}", "--port-file",
                 port_file, "--backend", self.backend], stdout=log, stderr=subprocess.STDOUT)

    def restart(self, i):
        """Worker i again, on its port and with its cache (after it was killed)."""
        self.workers[i].wait(timeout=10)
        self.workers[i] = self._start(i, self.ports[i])
        self._port(os.path.join(self.dir, f"w{i}.port"))

    def loads(self, i):
        """Jobs worker i has loaded (event=loaded lines in its log, every start of it)."""
        with open(os.path.join(self.dir, f"w{i}.log")) as f:
            return f.read().count("event=loaded")

    @staticmethod
    def _port(port_file):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    text = f.read().strip()
                if text:
                    return int(text)
            time.sleep(0.01)
        raise AssertionError(f"no port in {port_file}")

    def stop(self):
        for w in self.workers:
            if w.poll() is None:
                w.send_signal(signal.SIGCONT)
                w.kill()
            w.wait(timeout=10)


class ClusterServer(serve_test.Server):
    """serve PLAN --cluster C --listen 127.0.0.1:0 (the port from its first stdout line)."""

    def __init__(self, cluster, *extra, plan="plan"):
        Workspace.make()
        self.proc = subprocess.Popen(
            [serve_test.DPUSHARD, "serve", f"{Workspace.dir}/{plan}", "--cluster", cluster.yaml,
             "--listen", "127.0.0.1:0", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/v2", line)
        if not m:
            self.proc.kill()
            raise AssertionError(f"serve did not say its port: {line!r} {self.proc.stderr.read()}")
        self.port = int(m.group(1))

    def wait_ready(self, seconds=30):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.call("GET", "/v2/health/ready")[0] == 200:
                return
            time.sleep(0.02)
        raise AssertionError("serve --cluster never became ready")


class ClusterTest(unittest.TestCase):
    serve_args = ()

    def setUp(self):
        Workspace.make()
        self.cluster = Cluster(type(self).__name__)
        self.server = None

    def tearDown(self):
        try:
            if self.server:
                self.server.stop()
        finally:
            self.cluster.stop()  # the workers go even when serve did not stop cleanly

    def serve(self):
        self.server = ClusterServer(self.cluster, *self.serve_args)
        return self.server

    def infer_json(self, seed, conn=None):
        status, r = self.server.json("POST", f"/v2/models/{MODEL}/infer", json_request(seed),
                                     conn=conn)
        self.assertEqual(status, 200, r)
        self.assertEqual(r["id"], f"req-{seed}")
        return bytes(x & 0xFF for x in r["outputs"][0]["data"])


class ClusterInfer(ClusterTest):
    def test_json_and_binary_are_byte_identical_to_exec(self):
        s = self.serve()
        s.wait_ready()
        conn = s.conn()
        for seed in range(4):
            self.assertEqual(self.infer_json(seed, conn), Workspace.expected[seed])
        conn.close()
        body, headers = binary_request(5)
        status, h, data = s.call("POST", f"/v2/models/{MODEL}/infer", body, headers)
        self.assertEqual(status, 200, data)
        header, binary = split_binary(h, data)
        self.assertEqual(header["outputs"][0]["parameters"]["binary_data_size"], 10)
        self.assertEqual(binary, Workspace.expected[5])

    def test_concurrent_clients_and_node_metrics(self):
        s = self.serve()
        s.wait_ready()
        failures = []

        def client(k):
            conn = s.conn()
            try:
                for n in range(6):
                    seed = (k + n) % 10
                    status, r = s.json("POST", f"/v2/models/{MODEL}/infer", json_request(seed),
                                       conn=conn)
                    got = bytes(x & 0xFF for x in r["outputs"][0]["data"]) if status == 200 else None
                    if status != 200 or got != Workspace.expected[seed]:
                        failures.append((k, n, status, r))
            finally:
                conn.close()

        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])
        m = parse_metrics(s.call("GET", "/metrics")[2].decode())
        self.assertEqual(m[("dpushard_inference_requests_total", (("outcome", "success"),))], 48)
        # The workers' own counters, asked every 250 ms: each expert node computed frames.
        deadline = time.monotonic() + 5
        while True:
            m = parse_metrics(s.call("GET", "/metrics")[2].decode())
            frames = [m[("dpushard_node_frames_total", (("node", n),))] for n in ("w0", "w1", "w2")]
            if min(frames) > 0 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for node in ("w0", "w1", "w2"):
            self.assertGreater(m[("dpushard_node_frames_total", (("node", node),))], 0)
            self.assertGreater(m[("dpushard_node_busy_seconds_total", (("node", node),))], 0)
            self.assertGreater(m[("dpushard_node_bytes_total",
                                  (("direction", "out"), ("node", node)))], 0)


class TimingOnly(ClusterTest):
    """Workers on the timing-only sim backend: a request fails (500, naming --timing-only)
    unless serve runs --timing-only, which answers the zeros marked "computed": false."""

    def setUp(self):
        Workspace.make()
        self.cluster = Cluster(type(self).__name__, backend="sim")
        self.server = None

    def test_sim_outputs_fail_without_the_flag_and_are_marked_with_it(self):
        self.server = ClusterServer(self.cluster, "--on-node-loss", "fail")
        self.server.wait_ready()
        status, r = self.server.json("POST", f"/v2/models/{MODEL}/infer", json_request(1))
        self.assertEqual(status, 500, r)
        self.assertIn("--timing-only", r["error"])
        self.server.stop()
        self.server = ClusterServer(self.cluster, "--on-node-loss", "fail", "--timing-only")
        self.server.wait_ready()
        status, r = self.server.json("POST", f"/v2/models/{MODEL}/infer", json_request(2))
        self.assertEqual(status, 200, r)
        out = r["outputs"][0]
        self.assertEqual(out["data"], [0] * 10)
        self.assertIs(out["parameters"]["computed"], False)
        body, headers = binary_request(3)
        status, h, data = self.server.call("POST", f"/v2/models/{MODEL}/infer", body, headers)
        self.assertEqual(status, 200, data)
        header, binary = split_binary(h, data)
        self.assertIs(header["outputs"][0]["parameters"]["computed"], False)
        self.assertEqual(binary, bytes(10))
        r = subprocess.run([serve_test.DPUSHARD, "serve", f"{Workspace.dir}/plan", "--local",
                            "--timing-only"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--timing-only is for --cluster", r.stderr)


class ReadyAfterNodesAnswer(ClusterTest):
    serve_args = ("--on-node-loss", "fail")

    def test_not_ready_while_a_node_is_silent(self):
        frozen = self.cluster.workers[2]
        frozen.send_signal(signal.SIGSTOP)  # accepts the connection, answers no HELLO
        s = self.serve()
        time.sleep(0.5)
        status, body = s.json("GET", "/v2/health/ready")
        self.assertEqual((status, body["ready"]), (503, False))
        status, r = s.json("POST", f"/v2/models/{MODEL}/infer", json_request(0))
        self.assertEqual(status, 503, r)
        frozen.send_signal(signal.SIGCONT)
        s.wait_ready()
        self.assertEqual(self.infer_json(1), Workspace.expected[1])


class WorkerKilledUnderLoad(ClusterTest):
    serve_args = ("--peer-timeout", "1")

    def test_every_request_is_answered_through_a_replan(self):
        s = self.serve()
        s.wait_ready()
        failures, answered = [], []
        stop = threading.Event()

        def client(k):
            conn = s.conn()
            n = 0
            try:
                while not stop.is_set() or n < 3:
                    seed = (k * 3 + n) % 10
                    status, r = s.json("POST", f"/v2/models/{MODEL}/infer", json_request(seed),
                                       conn=conn)
                    got = bytes(x & 0xFF for x in r["outputs"][0]["data"]) if status == 200 else None
                    if status != 200 or got != Workspace.expected[seed]:
                        failures.append((k, n, status, r))
                    answered.append(seed)
                    n += 1
            finally:
                conn.close()

        threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        time.sleep(0.7)
        before = len(answered)
        self.cluster.workers[1].kill()  # mid-load: frames are in flight on it
        time.sleep(2.0)
        self.assertEqual(s.json("GET", "/v2/health/ready")[0], 200)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        self.assertEqual(failures, [])
        self.assertGreater(before, 0)
        self.assertGreater(len(answered), before + 6)  # served on after the loss
        # The loss was planned around: both survivors loaded a second job (the new plan).
        for survivor in (0, 2):
            with open(os.path.join(self.cluster.dir, f"w{survivor}.log")) as f:
                self.assertGreaterEqual(f.read().count("event=loaded"), 2, f"w{survivor}")
        m = parse_metrics(s.call("GET", "/metrics")[2].decode())
        self.assertEqual(m[("dpushard_inference_requests_total", (("outcome", "success"),))],
                         len(answered))


class WorkerKilledAndTakenBack(ClusterTest):
    """serve --cluster's default, --on-node-loss replan, through a loss and a return under load.

    Six clients send without pause. w1 is killed (SIGKILL) while frames are in flight on it,
    then restarted on its port with its cache. Every request must get either exec's output,
    byte for byte, or the protocol's error object (a JSON {"error": ...}), none may hang, and
    /v2/health/ready (sampled every 50 ms throughout) must stay ready: a plan serves the
    model all along. The restarted worker is taken back: it loads the full plan's job again
    and requests go on being answered.
    """
    serve_args = ("--peer-timeout", "1")

    def test_loss_and_return_under_load(self):
        s = self.serve()
        s.wait_ready()
        bad, answered, errors, not_ready = [], [], [], []
        stop = threading.Event()

        def client(k):
            n = 0
            conn = s.conn()
            try:
                while not stop.is_set():
                    seed = (k * 5 + n) % 10
                    try:
                        status, r = s.json("POST", f"/v2/models/{MODEL}/infer",
                                           json_request(seed), conn=conn)
                    except Exception as e:  # a hung request times out (30 s) here
                        bad.append((k, n, "no answer", repr(e)))
                        return
                    if status == 200:
                        got = bytes(x & 0xFF for x in r["outputs"][0]["data"])
                        if got != Workspace.expected[seed]:
                            bad.append((k, n, "wrong output", seed))
                        answered.append(seed)
                    elif isinstance(r, dict) and isinstance(r.get("error"), str) and r["error"]:
                        errors.append((status, r["error"]))
                    else:
                        bad.append((k, n, status, r))
                    n += 1
            finally:
                conn.close()

        def ready_probe():
            while not stop.is_set():
                status = s.call("GET", "/v2/health/ready")[0]
                if status != 200:
                    not_ready.append((time.monotonic(), status))
                time.sleep(0.05)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(6)]
        threads.append(threading.Thread(target=ready_probe))
        for t in threads:
            t.start()
        try:
            time.sleep(0.7)
            loads = [self.cluster.loads(i) for i in range(3)]
            self.cluster.workers[1].kill()  # frames are in flight on it
            self._wait(lambda: self.cluster.loads(0) > loads[0], "the survivors' plan")
            after_loss = len(answered)
            self.cluster.restart(1)
            self._wait(lambda: self.cluster.loads(1) > loads[1], "w1 taken back")
            taken_back = len(answered)
            self._wait(lambda: len(answered) > taken_back + 12, "requests after the return")
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        self.assertEqual([t.name for t in threads if t.is_alive()], [], "a request hangs")
        self.assertEqual(bad, [])
        self.assertEqual(not_ready, [])
        self.assertGreater(after_loss, 0)
        # A loss and a return, both without an error (the frames in flight were re-sent).
        self.assertEqual(errors, [])
        # Every survivor switched twice (the 2-node plan, then the full one again).
        for survivor in (0, 2):
            self.assertGreaterEqual(self.cluster.loads(survivor), loads[survivor] + 2)
        m = parse_metrics(s.call("GET", "/metrics")[2].decode())
        self.assertEqual(m[("dpushard_inference_requests_total", (("outcome", "success"),))],
                         len(answered))

    def _wait(self, condition, what, seconds=30):
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                self.fail(f"timed out waiting for {what}")
            time.sleep(0.02)


class LastWorkerLost(ClusterTest):
    """A 1-node plan on one worker, killed under load: nothing is left to plan on."""

    def setUp(self):
        Workspace.make()
        plan1 = os.path.join(Workspace.dir, "plan1")
        if not os.path.exists(os.path.join(plan1, "plan.yaml")):
            serve_test.run("split", f"{Workspace.dir}/model.xmodel", "--nodes", "1", "-o", plan1)
        self.cluster = Cluster(type(self).__name__, count=1)
        self.server = None

    def test_requests_in_flight_fail_with_the_coded_error_then_503(self):
        s = self.server = ClusterServer(self.cluster, plan="plan1")
        s.wait_ready()
        statuses, bad = [], []
        stop = threading.Event()

        def client(k):
            conn = s.conn()
            n = 0
            try:
                while not stop.is_set():
                    seed = (k + n) % 10
                    status, r = s.json("POST", f"/v2/models/{MODEL}/infer", json_request(seed),
                                       conn=conn)
                    statuses.append(status)
                    ok = (status == 200 and bytes(x & 0xFF for x in r["outputs"][0]["data"])
                          == Workspace.expected[seed]) or \
                         (status == 500 and "no_plan: no node is left" in r["error"]) or \
                         status == 503
                    if not ok:
                        bad.append((status, r))
                    n += 1
            finally:
                conn.close()

        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        self.cluster.workers[0].kill()
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        self.assertEqual(bad, [])
        self.assertIn(200, statuses)
        self.assertIn(500, statuses)  # the frames in flight at the loss
        self.assertEqual(s.json("GET", "/v2/health/ready")[0], 503)
        self.assertEqual(s.json("POST", f"/v2/models/{MODEL}/infer", json_request(1))[0], 503)


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "--dpushard":
        sys.exit(__doc__)
    serve_test.DPUSHARD = args[1]
    unittest.main(argv=[sys.argv[0], *args[2:]], verbosity=2)
