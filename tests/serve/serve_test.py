#!/usr/bin/python3
"""`dpushard serve` against a real HTTP client (http.client), as a user would run it.

A small zoo CNN (32x32x3 -> 10 classes) is split into a 3-node experts plan; `serve --local
--listen 127.0.0.1:0` runs it and prints the bound port. The tests check the Open Inference
Protocol (KServe v2 REST) endpoints, infer results byte-identical to `dpushard exec` on the
same inputs (JSON and the binary tensor data extension), concurrent clients, each bad
request's status and error, the bearer token, and /metrics (parsed, counts adding up).

  /usr/bin/python3 tests/serve/serve_test.py --dpushard build/release/tools/dpushard \\
      [--bench build/release/bench/bench_serve_load] [TestClass]
"""

import http.client
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

DPUSHARD = None
BENCH = None  # bench_serve_load, for LoadGenerator
MODEL = "zoo_cnn"
SHAPE = [1, 32, 32, 3]
COUNT = 32 * 32 * 3


def run(*args, check=True):
    r = subprocess.run([DPUSHARD, *args], capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise AssertionError(f"dpushard {' '.join(args)} failed: {r.stderr}")
    return r


def write_npy_int8(path, shape, data):
    header = "{'descr': '|i1', 'fortran_order': False, 'shape': (%s), }" % "".join(
        f"{d}, " for d in shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(bytes(data))


def read_npy_int8(path):
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:6] == b"\x93NUMPY", path
    header_len = struct.unpack("<H", raw[8:10])[0]
    assert "'|i1'" in raw[10:10 + header_len].decode() or "'i1'" in raw[10:10 + header_len].decode()
    return raw[10 + header_len:]


def frame(seed):
    """Deterministic int8 values of one input frame, as unsigned bytes."""
    return bytes(((seed * 131 + k * 7 + (k * k) % 13) % 256) for k in range(COUNT))


def signed(b):
    return [x - 256 if x >= 128 else x for x in b]


class Workspace:
    """The model, its plan and exec's outputs for frames 0..N-1, made once per process."""

    dir = None
    expected = {}  # seed -> the int8 bytes of exec's output

    @classmethod
    def make(cls, frames=10):
        if cls.dir:
            return
        cls.tmp = tempfile.TemporaryDirectory(prefix="dpushard-serve-")
        cls.dir = cls.tmp.name
        d = cls.dir
        run("zoo", "cnn", "--params", "300K", "--experts", "3", "--input", "32x32x3", "--classes",
            "10", "-o", f"{d}/model.xmodel")
        run("split", f"{d}/model.xmodel", "--nodes", "3", "--strategy", "experts", "-o",
            f"{d}/plan")
        batch = b"".join(frame(s) for s in range(frames))
        write_npy_int8(f"{d}/batch.npy", [frames, 32, 32, 3], batch)
        run("exec", f"{d}/model.xmodel", "--input", f"{d}/batch.npy", "--output", f"{d}/exec")
        for s in range(frames):
            cls.expected[s] = read_npy_int8(f"{d}/exec/{s:06d}.classifier_fix.npy")


class Server:
    def __init__(self, *extra, plan="plan"):
        Workspace.make()
        self.proc = subprocess.Popen(
            [DPUSHARD, "serve", f"{Workspace.dir}/{plan}", "--local", "--listen", "127.0.0.1:0",
             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/v2", line)
        if not m:
            self.proc.kill()
            raise AssertionError(f"serve did not say its port: {line!r} {self.proc.stderr.read()}")
        self.port = int(m.group(1))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("serve did not stop on SIGTERM")
        assert code == 0, f"serve exited {code}: {self.proc.stderr.read()}"

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def call(self, method, path, body=None, headers=None, conn=None):
        c = conn or self.conn()
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        if conn is None:
            c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    def json(self, method, path, body=None, headers=None, conn=None):
        status, h, data = self.call(method, path,
                                    None if body is None else json.dumps(body).encode(), headers,
                                    conn)
        return status, json.loads(data)


def json_request(seed, **extra):
    body = {"id": f"req-{seed}",
            "inputs": [{"name": "input_fix", "shape": SHAPE, "datatype": "INT8",
                        "data": signed(frame(seed))}]}
    body.update(extra)
    return body


def binary_request(seed, outputs_binary=True):
    header = {"inputs": [{"name": "input_fix", "shape": SHAPE, "datatype": "INT8",
                          "parameters": {"binary_data_size": COUNT}}],
              "outputs": [{"name": "classifier_fix", "parameters": {"binary_data": outputs_binary}}]}
    h = json.dumps(header).encode()
    return h + frame(seed), {"Inference-Header-Content-Length": str(len(h)),
                             "Content-Type": "application/octet-stream"}


def split_binary(headers, data):
    n = int(headers["inference-header-content-length"])
    return json.loads(data[:n]), data[n:]


class ServerTest(unittest.TestCase):
    server_args = ()

    def setUp(self):
        self.server = Server(*self.server_args)

    def tearDown(self):
        self.server.stop()


class HealthAndMetadata(ServerTest):
    def test_health_metadata_and_routes(self):
        s = self.server
        self.assertEqual(s.json("GET", "/v2/health/live"), (200, {"live": True}))
        self.assertEqual(s.json("GET", "/v2/health/ready"), (200, {"ready": True}))
        status, meta = s.json("GET", "/v2")
        self.assertEqual(status, 200)
        self.assertEqual(meta["name"], "dpushard")
        self.assertIn("binary_tensor_data", meta["extensions"])
        status, model = s.json("GET", f"/v2/models/{MODEL}")
        self.assertEqual(status, 200)
        self.assertEqual(model["name"], MODEL)
        self.assertEqual(model["platform"], "dpushard")
        self.assertEqual(model["inputs"][0]["name"], "input_fix")
        self.assertEqual(model["inputs"][0]["datatype"], "INT8")
        self.assertEqual(model["inputs"][0]["shape"], SHAPE)
        self.assertEqual(model["outputs"][0]["name"], "classifier_fix")
        self.assertEqual(model["outputs"][0]["shape"], [1, 10])
        self.assertEqual(s.json("GET", f"/v2/models/{MODEL}/ready")[0], 200)
        status, err = s.json("GET", "/v2/models/other")
        self.assertEqual(status, 404)
        self.assertIn("unknown model", err["error"])
        self.assertEqual(s.json("POST", "/v2/models/other/infer", json_request(0))[0], 404)
        self.assertEqual(s.json("GET", "/v2/nothing/here")[0], 404)
        status, err = s.json("GET", f"/v2/models/{MODEL}/infer")
        self.assertEqual(status, 405)
        self.assertIn("error", err)
        self.assertEqual(s.json("POST", "/v2/health/live", {})[0], 405)
        status, err = raw_exchange(s.port, b"GET /v2/\xff\xfe HTTP/1.1\r\nHost: x\r\n"
                                           b"Connection: close\r\n\r\n")
        self.assertEqual(status, 404)
        self.assertIn("no route /v2/\ufffd\ufffd", err["error"])


class Infer(ServerTest):
    def test_json_int8_is_byte_identical_to_exec(self):
        conn = self.server.conn()  # one keep-alive connection for every request
        for seed in range(3):
            status, r = self.server.json("POST", f"/v2/models/{MODEL}/infer", json_request(seed),
                                         conn=conn)
            self.assertEqual(status, 200, r)
            self.assertEqual(r["id"], f"req-{seed}")
            self.assertEqual(r["model_name"], MODEL)
            out = r["outputs"][0]
            self.assertEqual((out["name"], out["datatype"], out["shape"]),
                             ("classifier_fix", "INT8", [1, 10]))
            self.assertEqual(bytes(x & 0xFF for x in out["data"]), Workspace.expected[seed])
        conn.close()

    def test_fp32_in_and_dequantized_out(self):
        status, model = self.server.json("GET", f"/v2/models/{MODEL}")
        fp_in = model["inputs"][0]["parameters"]["fix_point"]
        fp_out = model["outputs"][0]["parameters"]["fix_point"]
        values = [q * 2.0 ** -fp_in for q in signed(frame(4))]
        body = {"inputs": [{"name": "input_fix", "shape": SHAPE, "datatype": "FP32",
                            "data": values}], "parameters": {"dequantize": True}}
        status, r = self.server.json("POST", f"/v2/models/{MODEL}/infer", body)
        self.assertEqual(status, 200, r)
        self.assertNotIn("id", r)
        out = r["outputs"][0]
        self.assertEqual(out["datatype"], "FP32")
        self.assertEqual(out["data"], [q * 2.0 ** -fp_out for q in signed(Workspace.expected[4])])

    def test_binary_extension(self):
        body, headers = binary_request(5)
        status, h, data = self.server.call("POST", f"/v2/models/{MODEL}/infer", body, headers)
        self.assertEqual(status, 200, data)
        header, binary = split_binary(h, data)
        out = header["outputs"][0]
        self.assertEqual(out["parameters"]["binary_data_size"], 10)
        self.assertNotIn("data", out)
        self.assertEqual(binary, Workspace.expected[5])
        # Binary input, JSON output.
        body, headers = binary_request(6, outputs_binary=False)
        status, h, data = self.server.call("POST", f"/v2/models/{MODEL}/infer", body, headers)
        self.assertEqual(status, 200, data)
        self.assertNotIn("inference-header-content-length", h)
        out = json.loads(data)["outputs"][0]
        self.assertEqual(bytes(x & 0xFF for x in out["data"]), Workspace.expected[6])
        # FP32 binary input, FP32 binary output.
        _, model = self.server.json("GET", f"/v2/models/{MODEL}")
        fp_in = model["inputs"][0]["parameters"]["fix_point"]
        fp_out = model["outputs"][0]["parameters"]["fix_point"]
        floats = struct.pack(f"<{COUNT}f", *[q * 2.0 ** -fp_in for q in signed(frame(7))])
        header = json.dumps({"inputs": [{"name": "input_fix", "shape": SHAPE, "datatype": "FP32",
                                         "parameters": {"binary_data_size": len(floats)}}],
                             "outputs": [{"name": "classifier_fix",
                                          "parameters": {"binary_data": True,
                                                         "dequantize": True}}]}).encode()
        status, h, data = self.server.call(
            "POST", f"/v2/models/{MODEL}/infer", header + floats,
            {"Inference-Header-Content-Length": str(len(header))})
        self.assertEqual(status, 200, data)
        header, binary = split_binary(h, data)
        self.assertEqual(header["outputs"][0]["datatype"], "FP32")
        self.assertEqual(list(struct.unpack("<10f", binary)),
                         [q * 2.0 ** -fp_out for q in signed(Workspace.expected[7])])


class ExpectContinue(ServerTest):
    def test_100_continue_before_the_body(self):
        body = json.dumps(json_request(8)).encode()
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
            s.sendall(f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: x\r\n"
                      f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n"
                      "Connection: close\r\n\r\n".encode())
            interim = s.recv(4096)
            self.assertTrue(interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), interim)
            s.sendall(body)
            received = interim[len(b"HTTP/1.1 100 Continue\r\n\r\n"):]
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                received += chunk
        head, _, data = received.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
        out = json.loads(data)["outputs"][0]
        self.assertEqual(bytes(x & 0xFF for x in out["data"]), Workspace.expected[8])


class ConcurrentClients(ServerTest):
    server_args = ("--runners", "2", "--io-threads", "2")  # strands under real concurrency

    def test_8_clients_10_requests_each(self):
        failures = []

        def client(t):
            conn = self.server.conn()
            for i in range(10):
                seed = (t + i) % 10
                if i % 2:
                    body, headers = binary_request(seed)
                    status, h, data = self.server.call("POST", f"/v2/models/{MODEL}/infer", body,
                                                       headers, conn)
                    got = split_binary(h, data)[1] if status == 200 else data
                else:
                    status, r = self.server.json("POST", f"/v2/models/{MODEL}/infer",
                                                 json_request(seed), conn=conn)
                    got = bytes(x & 0xFF for x in r["outputs"][0]["data"]) if status == 200 else r
                    if status == 200 and r["id"] != f"req-{seed}":
                        failures.append(f"client {t}: id {r['id']} for seed {seed}")
                if status != 200 or got != Workspace.expected[seed]:
                    failures.append(f"client {t} request {i}: {status} {got!r}")
            conn.close()

        threads = [threading.Thread(target=client, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])
        metrics = parse_metrics(self.server.call("GET", "/metrics")[2].decode())
        self.assertEqual(metrics[("dpushard_inference_requests_total", (("outcome", "success"),))],
                         80)


class QueueFull(unittest.TestCase):
    """A plan slow enough (about 150 ms a frame on ref) that 12 simultaneous requests
    overflow a queue of 2 behind 1 runner: the overflow gets 503, the rest run."""

    def test_full_queue_is_503_and_the_queued_run(self):
        Workspace.make()
        d = Workspace.dir
        if not os.path.exists(f"{d}/bigplan"):
            run("zoo", "cnn", "--params", "3M", "--input", "128x128x3", "--classes", "10", "-o",
                f"{d}/big.xmodel")
            run("split", f"{d}/big.xmodel", "--nodes", "1", "--strategy", "pipeline", "-o",
                f"{d}/bigplan")
        server = Server("--queue", "2", "--runners", "1", plan="bigplan")
        try:
            _, model = server.json("GET", "/v2/models/zoo_cnn")
            shape = model["inputs"][0]["shape"]
            n = shape[1] * shape[2] * shape[3]
            header = json.dumps({"inputs": [{"name": "input_fix", "shape": shape,
                                             "datatype": "INT8",
                                             "parameters": {"binary_data_size": n}}]}).encode()
            body = header + bytes(n)
            barrier = threading.Barrier(12)
            results = []

            def client():
                conn = server.conn()
                barrier.wait()
                results.append(server.call("POST", "/v2/models/zoo_cnn/infer", body,
                                           {"Inference-Header-Content-Length": str(len(header))},
                                           conn))
                conn.close()

            threads = [threading.Thread(target=client) for _ in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            statuses = sorted(r[0] for r in results)
            self.assertEqual(len(statuses), 12)
            self.assertEqual(set(statuses), {200, 503}, statuses)
            self.assertGreaterEqual(statuses.count(200), 1)
            self.assertLessEqual(statuses.count(200), 6)  # 1 running + 2 queued, and a margin
            for status, _, data in results:
                if status == 503:
                    self.assertIn("queue is full", json.loads(data)["error"])
                else:
                    self.assertEqual(json.loads(data)["outputs"][0]["shape"], [1, 10])
            m = parse_metrics(server.call("GET", "/metrics")[2].decode())
            self.assertEqual(m[("dpushard_inference_requests_total", (("outcome", "queue_full"),))],
                             statuses.count(503))
            self.assertEqual(m[("dpushard_inference_requests_total", (("outcome", "success"),))],
                             statuses.count(200))
            self.assertEqual(m[("dpushard_queue_capacity", ())], 2)
        finally:
            server.stop()


def raw_exchange(port, data, read_timeout=10):
    """Sends raw bytes, returns (status, JSON body) of the one response."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as s:
        s.sendall(data)
        received = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    return status, json.loads(body)


class BadRequests(ServerTest):
    server_args = ("--max-body", "65536", "--read-timeout-ms", "500")

    def bad(self, body, expected_status, message, headers=None):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        status, h, data = self.server.call("POST", f"/v2/models/{MODEL}/infer", body, headers)
        self.assertEqual(status, expected_status, data)
        self.assertEqual(h["content-type"], "application/json")
        self.assertIn(message, json.loads(data)["error"])

    def good(self):
        status, r = self.server.json("POST", f"/v2/models/{MODEL}/infer", json_request(1))
        self.assertEqual(status, 200)
        self.assertEqual(bytes(x & 0xFF for x in r["outputs"][0]["data"]), Workspace.expected[1])

    def test_each_bad_request_gets_its_error_and_the_next_request_runs(self):
        wrong_shape = json_request(0)
        wrong_shape["inputs"][0]["shape"] = [1, 32, 3, 32]
        self.bad(wrong_shape, 400, "shape [1,32,3,32], the model takes [1,32,32,3]")
        self.good()
        wrong_type = json_request(0)
        wrong_type["inputs"][0]["datatype"] = "FP16"
        self.bad(wrong_type, 400, "datatype FP16")
        too_few = json_request(0)
        too_few["inputs"][0]["data"] = too_few["inputs"][0]["data"][:-1]
        self.bad(too_few, 400, "3071 values")
        out_of_range = json_request(0)
        out_of_range["inputs"][0]["data"][0] = 300
        self.bad(out_of_range, 400, "is not an INT8")
        self.bad(b'{"inputs": [', 400, "not valid JSON")
        self.bad({"inputs": []}, 400, "missing input 'input_fix'")
        unknown = json_request(0)
        unknown["inputs"][0]["name"] = "nope"
        self.bad(unknown, 400, "unknown input 'nope'")
        self.bad(json_request(0, outputs=[{"name": "nope"}]), 400, "unknown output 'nope'")
        self.bad(json_request(0, id=7), 400, "'id' must be a string")
        body, headers = binary_request(0)
        self.bad(body[:-5], 400, "fewer binary bytes", headers)
        self.bad(body + b"xx", 400, "binary bytes no input claims", headers)
        headers["Inference-Header-Content-Length"] = "abc"
        self.bad(body, 400, "Inference-Header-Content-Length", headers)
        self.good()

    def test_oversize_body_is_413(self):
        self.bad(b"x" * 70000, 413, "exceeds 65536 bytes")
        # Announced but not sent: refused from the header alone.
        status, err = raw_exchange(
            self.server.port,
            f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n"
            .encode())
        self.assertEqual(status, 413)
        self.good()

    def test_slow_client_times_out_while_others_run(self):
        slow = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        slow.sendall(f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                     "\r\n{\"inp".encode())
        self.good()  # served while the slow client dawdles
        start = time.monotonic()
        received = b""
        while True:
            chunk = slow.recv(65536)
            if not chunk:
                break
            received += chunk
        slow.close()
        self.assertLess(time.monotonic() - start, 5)
        self.assertTrue(received.startswith(b"HTTP/1.1 408"), received)
        self.assertIn(b'"error"', received)
        self.good()

    def test_malformed_http_is_400(self):
        status, err = raw_exchange(self.server.port, b"GARBAGE\x01 / HTTP/9\r\n\r\n")
        self.assertEqual(status, 400)
        self.assertIn("malformed HTTP", err["error"])
        self.good()


class Token(ServerTest):
    def setUp(self):
        Workspace.make()
        self.token_file = os.path.join(Workspace.dir, "token")
        with open(self.token_file, "w") as f:
            f.write("s3cret-token\n")
        self.server = Server("--token-file", self.token_file)

    def test_bearer_token(self):
        s = self.server
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
            status, err = s.json("GET", f"/v2/models/{MODEL}", headers=headers)
            self.assertEqual(status, 401)
            self.assertIn("Bearer", err["error"])
            self.assertEqual(s.json("POST", f"/v2/models/{MODEL}/infer", json_request(0),
                                    headers)[0], 401)
        ok = {"Authorization": "Bearer s3cret-token"}
        self.assertEqual(s.json("GET", "/v2/health/ready", headers=ok)[0], 200)
        status, r = s.json("POST", f"/v2/models/{MODEL}/infer", json_request(2), ok)
        self.assertEqual(status, 200)
        self.assertEqual(bytes(x & 0xFF for x in r["outputs"][0]["data"]), Workspace.expected[2])
        self.assertEqual(s.call("GET", "/metrics")[0], 401)
        self.assertEqual(s.call("GET", "/metrics", headers=ok)[0], 200)


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ([-+0-9.eE]+|\+Inf|NaN)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """Prometheus text format -> {(name, sorted labels): value}; checks every line's form
    and that every sample's family has a TYPE line."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
            continue
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        name, labels = m.group(1), tuple(sorted(LABEL.findall(m.group(3) or "")))
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in types or family in types, f"no TYPE for {name}"
        samples[(name, labels)] = float(m.group(4))
    return samples


class Metrics(ServerTest):
    def test_metrics_count_what_happened(self):
        s = self.server
        body, headers = binary_request(3)
        for _ in range(3):
            self.assertEqual(s.call("POST", f"/v2/models/{MODEL}/infer", body, headers)[0], 200)
        bad = json_request(0)
        bad["inputs"][0]["shape"] = [1]
        self.assertEqual(s.json("POST", f"/v2/models/{MODEL}/infer", bad)[0], 400)
        self.assertEqual(s.json("GET", "/v2/nope")[0], 404)
        self.assertEqual(s.json("GET", "/v2/health/live")[0], 200)
        status, h, data = s.call("GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(h["content-type"].startswith("text/plain; version=0.0.4"))
        m = parse_metrics(data.decode())

        def value(name, **labels):
            return m[(name, tuple(sorted(labels.items())))]

        # Every response before this one, by code (this one is counted once sent).
        self.assertEqual(value("dpushard_http_requests_total", code="200"), 4)
        self.assertEqual(value("dpushard_http_requests_total", code="400"), 1)
        self.assertEqual(value("dpushard_http_requests_total", code="404"), 1)
        self.assertEqual(sum(v for (n, _), v in m.items() if n == "dpushard_http_requests_total"),
                         6)
        self.assertEqual(value("dpushard_inference_requests_total", outcome="success"), 3)
        self.assertEqual(value("dpushard_inference_requests_total", outcome="bad_request"), 1)
        self.assertEqual(value("dpushard_inference_requests_total", outcome="queue_full"), 0)
        self.assertEqual(value("dpushard_inference_failures_total"), 0)
        buckets = sorted(((float(dict(l)["le"]), v) for (n, l), v in m.items()
                          if n == "dpushard_inference_latency_seconds_bucket"))
        self.assertEqual(buckets[-1], (float("inf"), 3))
        self.assertEqual([v for _, v in buckets], sorted(v for _, v in buckets))
        self.assertEqual(value("dpushard_inference_latency_seconds_count"), 3)
        self.assertGreater(value("dpushard_inference_latency_seconds_sum"), 0)
        self.assertEqual(value("dpushard_queue_depth"), 0)
        self.assertEqual(value("dpushard_node_frames_total", node="local"), 3)
        self.assertEqual(value("dpushard_node_bytes_total", node="local", direction="in"),
                         3 * COUNT)
        self.assertEqual(value("dpushard_node_bytes_total", node="local", direction="out"), 30)
        self.assertGreater(value("dpushard_node_busy_seconds_total", node="local"), 0)
        self.assertGreater(value("dpushard_node_utilization", node="local"), 0)
        m2 = parse_metrics(s.call("GET", "/metrics")[2].decode())
        self.assertEqual(m2[("dpushard_http_requests_total", (("code", "200"),))], 5)


class LoadGenerator(ServerTest):
    """bench_serve_load (given with --bench) against this server and in-process."""

    def test_poisson_load_runs_without_errors(self):
        self.assertIsNotNone(BENCH, "run with --bench PATH/bench_serve_load")
        r = subprocess.run([BENCH, f"{Workspace.dir}/plan", "--server",
                            f"127.0.0.1:{self.server.port}", "--in-process", "--rate", "100",
                            "--duration", "1", "--concurrency", "4", "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = json.loads(r.stdout)
        for side in ("serve", "in_process"):
            self.assertEqual(report[side]["errors"], {})
            self.assertEqual(report[side]["ok"], report[side]["sent"])
            self.assertGreater(report[side]["ok"], 50)
            self.assertGreater(report[side]["p99_ms"], 0)
        self.assertIn("p50", report["serve_overhead_ms"])
        m = parse_metrics(self.server.call("GET", "/metrics")[2].decode())
        self.assertEqual(m[("dpushard_inference_requests_total", (("outcome", "success"),))],
                         report["serve"]["ok"])


class CommandLine(unittest.TestCase):
    def test_where_to_run_is_checked(self):
        Workspace.make()
        r = run("serve", f"{Workspace.dir}/plan", "--cluster", "c.yaml", "--local", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--local and --cluster exclude each other", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1)
        r = run("serve", f"{Workspace.dir}/plan", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--local (in this process) or --cluster", r.stderr)
        r = run("serve", f"{Workspace.dir}/plan", "--cluster", f"{Workspace.dir}/none.yaml",
                "--on-node-loss", "fail", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("none.yaml", r.stderr)
        r = run("serve", f"{Workspace.dir}/plan", "--local", "--listen", "nowhere", check=False)
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "--dpushard":
        sys.exit(__doc__)
    DPUSHARD = args[1]
    args = args[2:]
    if len(args) >= 2 and args[0] == "--bench":
        BENCH = args[1]
        args = args[2:]
    unittest.main(argv=[sys.argv[0], *args], verbosity=2)
