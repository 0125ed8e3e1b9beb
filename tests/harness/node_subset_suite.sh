#!/usr/bin/env bash
# ctest Bench.ScalingSuiteSweepsANodeCountForASubset: the scaling suite with
# --node-strategies / --node-sizes registers, on that node count, only those strategies at
# only those sizes (and every strategy at every size on the others), and refuses a bad
# value with one line and exit 2. Lists its benchmarks only (--benchmark_list_tests): it
# makes the models and plans but connects to no worker, so no port is used.
# Also: on a cluster of mixed boards (node3 a ZCU102) the plans the suite makes are the ones
# `dpushard split --target kv260 --node-targets ...` makes (the Ansible models role's).
#
#   node_subset_suite.sh BENCH_CNN_SCALING DPUSHARD_BIN
set -euo pipefail
suite=$1
bin=$2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/node-subset.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

fail() {
  echo "node_subset_suite: FAILED: $*" >&2
  exit 1
}

{
  echo "link_gbps: 1.0"
  echo "nodes:"
  for i in 1 2 3 4; do
    echo "  - {name: node$i, address: \"127.0.0.1:$((7700 + i))\", backend: sim, target: kv260}"
  done
} >"$scratch/cluster.yaml"

# shellcheck disable=SC2054  # the commas are the suite's lists
args=(--cluster "$scratch/cluster.yaml" --models "$scratch/models" --sizes 1M,2M
      --nodes 1,2,4 --strategies experts,replicate,hybrid,auto --input 32x32x3
      --cost-target kv260)
"$suite" "${args[@]}" --node-strategies 4=replicate,hybrid,auto --node-sizes 4=2M \
  --benchmark_list_tests=true >"$scratch/list.txt" 2>"$scratch/err.txt" ||
  { cat "$scratch/err.txt"; fail "the suite failed"; }
# Each configuration is listed once per LoadGen scenario (/scenario:SingleStream, ...).
names=$(sed -e 's|/iterations:.*||' -e 's|/scenario:[A-Za-z]*||' "$scratch/list.txt" | sort -u | tr '\n' ' ')
# 2 nodes: every strategy (auto: measured as the one whose plan it is, unless its own);
# 4 nodes: replicate and hybrid at 2M only (auto's plan is one of them or its own row).
for want in cnn/params:1M/nodes:1/strategy:single cnn/params:2M/nodes:1/strategy:single \
            cnn/params:1M/nodes:2/strategy:experts cnn/params:1M/nodes:2/strategy:replicate \
            cnn/params:1M/nodes:2/strategy:hybrid cnn/params:2M/nodes:2/strategy:experts \
            cnn/params:2M/nodes:4/strategy:replicate cnn/params:2M/nodes:4/strategy:hybrid; do
  [[ " $names" == *" $want "* ]] || fail "$want is not swept: $names"
done
[[ $names != *params:1M/nodes:4* ]] || fail "1M is swept on 4 nodes: $names"
[[ $names != *nodes:4/strategy:experts* ]] || fail "experts is swept on 4 nodes: $names"
[[ -s $scratch/models/e3-32x32x3-s1/cnn-2M/n4-hybrid/plan.yaml ]] || fail "no 2M 4-node hybrid plan"
[[ ! -e $scratch/models/e3-32x32x3-s1/cnn-1M/n4-replicate ]] || fail "a 1M 4-node plan was made"

# Server: one node and replicate (and auto) on the largest node count; with
# --no-server-one-node only the latter.
grep -q '^cnn/params:2M/nodes:1/strategy:single/scenario:Server' "$scratch/list.txt" ||
  fail "no one-node Server: $(grep Server "$scratch/list.txt" | tr '\n' ' ')"
"$suite" "${args[@]}" --node-strategies 4=replicate,hybrid,auto --node-sizes 4=2M \
  --no-server-one-node --benchmark_list_tests=true >"$scratch/list2.txt" 2>"$scratch/err.txt" ||
  { cat "$scratch/err.txt"; fail "the suite failed with --no-server-one-node"; }
! grep -q 'nodes:1/.*scenario:Server' "$scratch/list2.txt" ||
  fail "--no-server-one-node: $(grep Server "$scratch/list2.txt" | tr '\n' ' ')"
grep -q '^cnn/params:2M/nodes:4/strategy:replicate/scenario:Server' "$scratch/list2.txt" ||
  fail "--no-server-one-node: no 4-node replicate Server"
[[ $(grep -c 'scenario:Offline' "$scratch/list2.txt") == $(grep -c 'scenario:Offline' "$scratch/list.txt") ]] ||
  fail "--no-server-one-node changed the Offline configurations"

# Bad values: one line naming the flag, exit 2.
for bad in "--node-strategies 4=fast" "--node-sizes 4=3M" "--node-sizes four=2M" \
           "--node-strategies 1=replicate"; do
  # shellcheck disable=SC2086
  if "$suite" "${args[@]}" $bad >"$scratch/out.txt" 2>"$scratch/err.txt"; then
    fail "$bad was accepted"
  else
    rc=$?
  fi
  [[ $rc == 2 ]] || fail "$bad: exit $rc, not 2"
  [[ $(wc -l <"$scratch/err.txt") == 1 ]] || fail "$bad: not one line: $(cat "$scratch/err.txt")"
  grep -q "error: ${bad%% *}: " "$scratch/err.txt" || fail "$bad: $(cat "$scratch/err.txt")"
done

# Mixed boards: node3 a ZCU102.
sed -i 's|node3, address: "127.0.0.1:7703", backend: sim, target: kv260|node3, address: "127.0.0.1:7703", backend: sim, target: zcu102|' \
  "$scratch/cluster.yaml"
grep -q 'target: zcu102' "$scratch/cluster.yaml" || fail "cluster.yaml: $(cat "$scratch/cluster.yaml")"
"$suite" --cluster "$scratch/cluster.yaml" --models "$scratch/mixed" --sizes 1M --nodes 1,2,3 \
  --strategies pipeline --input 32x32x3 --cost-target kv260 --benchmark_list_tests=true \
  >/dev/null 2>"$scratch/err.txt" || { cat "$scratch/err.txt"; fail "the mixed suite failed"; }
model=$scratch/mixed/e3-32x32x3-s1/cnn-1M_int.xmodel
"$bin" split "$model" --nodes 3 --strategy pipeline --objective latency --link-gbps 1 \
  --target kv260 --node-targets kv260,kv260,zcu102 -o "$scratch/by-hand3" >/dev/null 2>&1
cmp "$scratch/by-hand3/plan.yaml" "$scratch/mixed/e3-32x32x3-s1/cnn-1M/n3-pipeline/plan.yaml" ||
  fail "the suite's 3-node plan on mixed boards is not split --node-targets kv260,kv260,zcu102's"
"$bin" split "$model" --nodes 2 --strategy pipeline --objective latency --link-gbps 1 \
  --target kv260 -o "$scratch/by-hand2" >/dev/null 2>&1
cmp "$scratch/by-hand2/plan.yaml" "$scratch/mixed/e3-32x32x3-s1/cnn-1M/n2-pipeline/plan.yaml" ||
  fail "the suite's 2-node plan on two KV260s is not split --target kv260's"

# Models without weights (--no-weights, the local inventory's): the suite's plans are the
# ones `dpushard split` makes of the weightless model, fragments and all.
"$suite" --cluster "$scratch/cluster.yaml" --models "$scratch/nw" --sizes 1M --nodes 1,2 \
  --strategies experts --input 32x32x3 --cost-target kv260 --no-weights \
  --benchmark_list_tests=true >/dev/null 2>"$scratch/err.txt" ||
  { cat "$scratch/err.txt"; fail "the weightless suite failed"; }
model=$scratch/nw/e3-32x32x3-s1-nw/cnn-1M_int.xmodel
[[ $(stat -c %s "$model") -lt 100000 ]] || fail "$model is $(stat -c %s "$model") bytes: weights?"
"$bin" split "$model" --nodes 2 --strategy experts --objective latency --link-gbps 1 \
  --target kv260 -o "$scratch/by-hand-nw" >/dev/null 2>&1
cmp "$scratch/by-hand-nw/plan.yaml" "$scratch/nw/e3-32x32x3-s1-nw/cnn-1M/n2-experts/plan.yaml" ||
  fail "the suite's weightless 2-node plan is not split --target kv260's"
for f in "$scratch"/by-hand-nw/fragments/*; do
  cmp "$f" "$scratch/nw/e3-32x32x3-s1-nw/cnn-1M/n2-experts/fragments/$(basename "$f")" ||
    fail "fragment $(basename "$f") differs"
done
echo "node_subset_suite: OK"
