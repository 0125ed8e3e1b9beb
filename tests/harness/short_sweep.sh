#!/usr/bin/env bash
# The short sweep of the CI: site.yml without provisioning, against the local inventory
# (four sim workers on 127.0.0.1:7701-7704) on the ctest build tree, with one small model
# per family, 1 and 2 nodes, two strategies (and hybrid, auto), 4 nodes for hybrid, replicate
# and auto only (as the local inventory sweeps them), few frames and the worker caches
# pre-seeded by hash. Then checks what a user would look at: the report, the raw JSON (also through
# compare.py), env.json, the worker logs and the fragments in the caches.
#
#   short_sweep.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
scratch=$(mktemp -d "${build}/short-sweep.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

fail() {
  echo "short_sweep: FAILED: $*" >&2
  exit 1
}

vars=$(cat <<JSON
{
  "dpushard_build_dir": "${build}",
  "dpushard_work_dir": "${scratch}/work",
  "dpushard_results_root": "${scratch}/results",
  "dpushard_token_file": "${scratch}/work/token",
  "dpushard_families": ["cnn", "convvit"],
  "dpushard_sizes": ["1M"],
  "dpushard_node_counts": [1, 2, 4],
  "dpushard_strategies": ["experts", "replicate", "hybrid", "auto"],
  "dpushard_node_strategies": {"4": ["hybrid", "replicate", "auto"]},
  "dpushard_node_sizes": {"4": ["1M"]},
  "dpushard_zoo_inputs": {"cnn": "64x64x3", "convvit": "64x64x3"},
  "models_zoo_in_suites": false,
  "models_preseed_caches": true,
  "sweep_frames": 4,
  "sweep_inflight": 2,
  "sweep_warmup_frames": 1,
  "sweep_repetitions": 2,
  "sweep_contrast_softmax_sizes": ["1M"],
  "sweep_min_seconds": 0,
  "sweep_timeout": 240,
  "sweep_poll_interval": 2,
  "workers_max_lifetime": 300
}
JSON
)

cd "$src"
export ANSIBLE_CONFIG="$src/ansible.cfg" ANSIBLE_NOCOLOR=1
ansible-playbook -i inventories/local playbooks/site.yml --skip-tags provision -e "$vars"

run_id=$(cat "$scratch/work/runs/latest")
results="$scratch/results/$run_id"
echo "short_sweep: run $run_id in $results"

for f in report.md env.json bench_cnn_scaling.json bench_convvit_scaling.json \
         bench_convvit-softmax_scaling.json cluster.yaml \
         logs/node1.log logs/node2.log logs/node4.log plots/cnn_speedup.png plots/convvit_bytes.png; do
  [[ -s "$results/$f" ]] || fail "$f is missing or empty"
done
grep -q '^> \*\*Timing: modeled.\*\*' "$results/report.md" || fail "report.md does not say modeled"
grep -q '^## Break-even model size' "$results/report.md" || fail "report.md has no break-even"
grep -q '^\*\*Contrast rows: a transformer with softmax attention on the A53\*\*' "$results/report.md" ||
  fail "report.md has no contrast rows for the softmax ConvViT"
grep -q '^| link | emulated 1 Gbit/s (paced), 100 us one way |' "$results/report.md" || fail "the link is not emulated"
grep -q '^### Predicted and measured' "$results/report.md" || fail "no predicted/measured section"
grep -q 'replicate (data-parallel baseline)' "$results/report.md" || fail "no data-parallel column"
grep -q '^| 2 | ' "$results/report.md" || fail "no 2-node break-even row"
# hybrid needs 4 nodes: not possible on 2, said so; auto's plan is one of the others, marked.
grep -q '^| 1M | 2 | hybrid | not possible' "$results/report.md" || fail "hybrid on 2 nodes is not 'not possible'"
grep -q '^### Strategies against one board and against replicate' "$results/report.md" ||
  fail "no strategies section"
grep -q ' ★ |' "$results/report.md" || fail "the planner's choice is not marked"
grep -q '^- 1M on 2 nodes: the planner picks ' "$results/report.md" || fail "no planner's choice line"
# 4 nodes: a hybrid measured (2 replicas of 2), against one board and against replicate;
# experts not swept there.
grep -Eq '^\| 1M \| 4 \| hybrid [0-9]+x [a-z]+ \| [0-9.]+ \| [0-9.]+× .* \| [0-9.]+ % \| [0-9.]+× \|' "$results/report.md" ||
  fail "no measured 4-node hybrid row with its speedup, efficiency and fps over replicate"
grep -q '^| 1M | 4 | replicate ' "$results/report.md" || fail "no 4-node replicate row"
grep -q '^| 4 | not swept | ' "$results/report.md" || fail "the break-even tables do not say experts was not swept on 4 nodes"
# auto is a column of its own only where its plan is no other row's (else it marks that row).
grep -Eq '^On 4 nodes only (replicate, hybrid and auto|replicate and hybrid) were swept' "$results/report.md" ||
  fail "no note on what 4 nodes swept"
grep -q '^- 1M on 4 nodes: the planner picks ' "$results/report.md" || fail "no 4-node planner's choice line"
if grep -q '^## Failed configurations' "$results/report.md"; then
  sed -n '/^## Failed configurations/,/^## /p' "$results/report.md" >&2
  fail "some configurations failed"
fi

/usr/bin/python3 - "$results" <<'PY'
import json, sys
results = sys.argv[1]
env = json.load(open(results + "/env.json"))
assert env["backend"] == "sim" and env["inventory"] == "local" and env["timing"] == "modeled", env
assert set(env["hosts"]) == {"controller", "node1", "node2", "node3", "node4"}, env["hosts"].keys()
assert env["hosts"]["node1"]["address"] == "127.0.0.1:7701", env["hosts"]["node1"]
for family in ("cnn", "convvit"):
    doc = json.load(open(f"{results}/bench_{family}_scaling.json"))
    ctx = doc["context"]
    for key in ("git_revision", "backend", "target", "link_gbps", "inventory"):
        assert ctx.get(key), (family, key, ctx)
    # Two repetitions of each configuration, plus Google Benchmark's aggregates of them.
    runs = [b for b in doc["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    # hybrid on 2 nodes: not possible, nothing run; auto: measured as the strategy whose
    # plan it is (marked in that one's label), or as its own row when no other has its plan.
    hybrid = [b for b in runs if "nodes:2/strategy:hybrid" in b["run_name"]]
    assert hybrid and all(b.get("error_occurred") and
                          b["error_message"].startswith("not possible: ") for b in hybrid), hybrid
    runs = [b for b in runs if b not in hybrid]
    chosen = [b for b in runs if b.get("label", "").endswith("[planner's choice]")]
    assert chosen, "no configuration carries the planner's choice"
    # Every configuration in MLPerf LoadGen's SingleStream (one frame in flight) and Offline;
    # Server for replicate and auto on 4 nodes only (the local inventory's
    # sweep_server_one_node: false).
    names = sorted({b["run_name"] for b in runs if "/scenario:Offline" in b["run_name"]})
    # 1 node, 2 nodes x {experts, replicate} (+ auto), 4 nodes x {replicate, hybrid} (+ auto)
    assert len(names) in (5, 6, 7), names
    single = {b["run_name"]: b for b in runs if "/scenario:SingleStream" in b["run_name"]}
    for name in names:
        twin = name.replace("/scenario:Offline", "/scenario:SingleStream")
        assert twin in single and single[twin]["inflight"] == 1, (name, "no SingleStream")
    server = [b for b in runs if "/scenario:Server" in b["run_name"]]
    assert not any("nodes:1/" in b["run_name"] for b in server), "a one-node Server run"
    assert any("nodes:4/strategy:replicate" in b["run_name"] for b in server), "no 4-node Server"
    for b in server:
        assert b["latency_bound_ms"] > 0 and b["fps"] >= 0, b
    runs = [b for b in runs if b not in server]
    assert not [n for n in names if "nodes:4/strategy:experts" in n], names
    assert any("nodes:4/strategy:hybrid" in n for n in names), names
    for name in names:
        assert sum(b["run_name"] == name for b in runs) == 2, (name, "repetitions")
    assert any(b.get("aggregate_name") == "mean" for b in doc["benchmarks"]), "no aggregates"
    for b in runs:
        assert not b.get("error_occurred"), b
        for counter in ("params", "gmacs", "fps", "p50_ms", "p99_ms", "speedup", "efficiency",
                        "bytes_per_frame", "inflight", "bound_port_fps"):
            assert counter in b, (counter, b["run_name"])
        assert b["fps"] > 0 and b["real_time"] > 0, b
PY

/usr/bin/python3 /usr/share/benchmark/compare.py benchmarks \
  "$results/bench_cnn_scaling.json" "$results/bench_cnn_scaling.json" >"$scratch/compare.txt" ||
  fail "compare.py cannot read the suite's JSON"
grep -q 'cnn/params:1M/nodes:2/strategy:experts' "$scratch/compare.txt" || fail "compare.py output"

# Pre-seeded caches: node1 runs slot 0 of every plan, node2 slot 1 of the 2- and 4-node
# plans, node4 slot 3 of the 4-node plans.
ls "$scratch/work/node1/cache/"*.xmodel >/dev/null 2>&1 || fail "node1's cache is empty"
ls "$scratch/work/node2/cache/"*.xmodel >/dev/null 2>&1 || fail "node2's cache is empty"
ls "$scratch/work/node4/cache/"*.xmodel >/dev/null 2>&1 || fail "node4's cache is empty (4-node plans)"
for f in "$scratch/work/node1/cache/"*.xmodel; do
  [[ "$(sha256sum "$f" | cut -d' ' -f1).xmodel" == "$(basename "$f")" ]] || fail "$f: not named by its hash"
done
echo "short_sweep: OK"
