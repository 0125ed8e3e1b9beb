#!/usr/bin/env bash
# ctest Ansible.SweepServeStep: the sweep role's Server scenario through `dpushard serve`
# (tasks/serve.yml) on two `dpushard worker --backend sim` processes on ephemeral ports of
# 127.0.0.1, a weightless 1M CNN planned replicate on 2 nodes, and a synthetic suite JSON
# whose Server row (the planner's choice) gives the bound and the rates:
#  1. the step writes serve-cnn-1M.json (atomically, by bench_serve_load --out) with a rate
#     within the bound, the measurement at the in-process rate and what was served, and
#     stops serve;
#  2. with a bench_serve_load that fails, the play fails naming the step, and serve is
#     stopped all the same (block/always).
#
#   serve_step.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
bin=$build/tools/dpushard
scratch=$(mktemp -d "${TMPDIR:-/tmp}/serve-step.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT
fail() {
  echo "serve_step: FAILED: $*" >&2
  exit 1
}

work=$scratch/work
run=$work/runs/test
mkdir -p "$run" "$work/models/e3-32x32x3-s1-nw/cnn-1M"
model=$work/models/e3-32x32x3-s1-nw/cnn-1M_int.xmodel
"$bin" zoo cnn --params 1M --experts 3 --input 32x32x3 --seed 1 --no-weights -o "$model" >/dev/null
"$bin" split "$model" --nodes 2 --strategy replicate \
  -o "$work/models/e3-32x32x3-s1-nw/cnn-1M/n2-replicate" >/dev/null 2>&1

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$scratch/token"
for i in 1 2; do
  "$bin" worker --listen 127.0.0.1:0 --port-file "$scratch/port$i" --backend sim \
    --cache "$scratch/cache$i" --token-file "$scratch/token" >"$scratch/worker$i.log" 2>&1 &
  pids+=($!)
done
for i in 1 2; do
  for _ in $(seq 1 100); do [[ -s "$scratch/port$i" ]] && break; sleep 0.1; done
  [[ -s "$scratch/port$i" ]] || fail "worker $i did not listen"
done
cat >"$run/cluster.yaml" <<YAML
link_gbps: 1.0
link_emulation: "off"
token_file: "$scratch/token"
nodes:
  - {name: node1, address: "127.0.0.1:$(cat "$scratch/port1")", backend: sim, target: kv260}
  - {name: node2, address: "127.0.0.1:$(cat "$scratch/port2")", backend: sim, target: kv260}
YAML
# The suite's Server row of the planner's choice on the largest node count (2), and a
# 1-node row the step must not take.
/usr/bin/python3 - "$run/bench_cnn_scaling.json" <<'PY'
import json, sys
row = {"run_type": "iteration", "iterations": 1, "real_time": 1.0, "time_unit": "ms",
       "fps": 40.0, "p50_ms": 3.0, "p99_ms": 6.0, "latency_bound_ms": 400.0,
       "offline_fps": 120.0, "nodes": 2}
server = dict(row, name="cnn/params:1M/nodes:2/strategy:replicate/scenario:Server/iterations:1/manual_time",
              label="replicate [planner's choice]")
server["run_name"] = server["name"]
one = dict(row, name="cnn/params:1M/nodes:1/strategy:single/scenario:Server/iterations:1/manual_time", nodes=1)
one["run_name"] = one["name"]
json.dump({"context": {"backend": "sim"}, "benchmarks": [one, server]}, open(sys.argv[1], "w"))
PY

cat >"$scratch/play.yml" <<'YAML'
- name: The sweep role's Server scenario through serve
  hosts: head
  gather_facts: false
  tasks:
    - name: Run the serve step
      ansible.builtin.include_role:
        name: sweep
        tasks_from: serve
YAML
vars=$(cat <<JSON
{
  "dpushard_build_dir": "${build}",
  "dpushard_work_dir": "${work}",
  "dpushard_token_file": "${scratch}/token",
  "dpushard_families": ["cnn"],
  "dpushard_sizes": ["1M"],
  "dpushard_node_counts": [1, 2],
  "dpushard_node_strategies": {},
  "dpushard_node_sizes": {},
  "dpushard_zoo_inputs": {"cnn": "32x32x3"},
  "dpushard_backend": "sim",
  "sweep_run_dir": "${run}",
  "sweep_serve_sizes": ["1M"],
  "sweep_min_seconds": 0,
  "sweep_serve_ready_timeout": 30,
  "sweep_serve_timeout": 120,
  "sweep_poll_interval": 1
}
JSON
)
cd "$src"
export ANSIBLE_CONFIG="$src/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
serve_left() { pgrep -f -- "serve $work/models" >/dev/null; }

# 1. The search through serve.
SECONDS=0
ansible-playbook -i inventories/local "$scratch/play.yml" -e "$vars" >"$scratch/ok.log" 2>&1 ||
  { cat "$scratch/ok.log" >&2; fail "the serve step failed"; }
serve_left && fail "serve is still running after the step"
[[ -e "$work/serve/serve.pid" ]] && fail "serve's pid file is left"
/usr/bin/python3 - "$run/serve-cnn-1M.json" <<'PY' || fail "serve-cnn-1M.json"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["kind"] == "serve_server_search", doc
ctx, s = doc["context"], doc["search"]
assert ctx == {"family": "cnn", "size": "1M", "nodes": "2", "strategy": "replicate",
               "plan_label": "replicate", "backend": "sim",
               "suite_benchmark": "cnn/params:1M/nodes:2/strategy:replicate/scenario:Server/iterations:1/manual_time"}, ctx
assert doc["plan"].endswith("/e3-32x32x3-s1-nw/cnn-1M/n2-replicate"), doc["plan"]
assert s["bound_ms"] == 400 and s["top_rate"] == 120, s
assert 0 < s["rate"] <= 120 and 0 < s["p99_ms"] <= 400 and s["errors"] == 0, s
assert s["trials"] >= 6 and len(s["tried"]) == s["trials"], s
at = s["at_rate"]
assert at["rate"] == 40 and at["ok"] == at["sent"] > 0 and not at["errors"], at
print(f"serve_step: through serve {s['rate']:.1f}/s within {s['bound_ms']} ms "
      f"(p50 {s['p50_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms); at 40/s p50 {at['p50_ms']:.2f} ms")
PY
echo "serve_step: the step took ${SECONDS} s"
grep -q "timing only" "$work/serve/serve.log" || fail "serve did not run --timing-only on sim workers"

# 2. A failing search: the play fails naming the step, serve is stopped all the same.
mkdir -p "$scratch/bench"
printf '#!/bin/sh\necho "bench_serve_load: error: stand-in failure" >&2\nexit 1\n' \
  >"$scratch/bench/bench_serve_load"
chmod +x "$scratch/bench/bench_serve_load"
if ansible-playbook -i inventories/local "$scratch/play.yml" -e "$vars" \
    -e "dpushard_bench_dir=$scratch/bench" >"$scratch/fail.log" 2>&1; then
  fail "the play passed with a failing bench_serve_load"
fi
# (Ansible wraps and quotes the message: compare it unwrapped.)
tr -s ' \n' '  ' <"$scratch/fail.log" | grep -q "Search the highest rate within the suite''s bound through serve'' failed: bench_serve_load: error: stand-in failure" ||
  { cat "$scratch/fail.log" >&2; fail "the failure does not name the step"; }
grep -q "TASK \[sweep : Stop serve\]" "$scratch/fail.log" || fail "serve was not stopped after the failure"
serve_left && fail "serve is still running after the failed step"
echo "serve_step: OK"
