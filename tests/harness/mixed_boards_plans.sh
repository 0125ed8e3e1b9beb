#!/usr/bin/env bash
# ctest Ansible.MixedBoardsPlans: the models role (playbooks/distribute.yml, caches not
# pre-seeded: no worker is started, no port is used) plans for the boards of the workers
# that run each plan. Against the local inventory:
#  1. as it is (three KV260s): no plan records node_targets, and the 3-node plan is
#     byte-identical to `dpushard split --target kv260` made by hand (what the role made
#     before it knew of mixed boards);
#  2. with node3 a ZCU102 (a second inventory source on top): the stamp changed, so the
#     plans are made again; the 3-node plans record node_targets [kv260, kv260, zcu102]
#     (and the split command got them), the 1- and 2-node plans, on node1 and node2 (two
#     KV260s), record none and are the same bytes as in 1.;
#  3. the same with models_plan_node_targets false: no plan records node_targets.
# Four nodes are swept for a subset (dpushard_node_strategies, dpushard_node_sizes): only
# replicate, only at 2M; its plan runs on node1..node4, [kv260, kv260, zcu102, kv260] in 2.
#
#   mixed_boards_plans.sh SOURCE_DIR DPUSHARD_BIN
set -euo pipefail
src=$1
bin=$2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/mixed-boards.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

fail() {
  echo "mixed_boards_plans: FAILED: $*" >&2
  exit 1
}

models=$scratch/work/models
vars=$(cat <<JSON
{
  "dpushard_bin": "${bin}",
  "dpushard_work_dir": "${scratch}/work",
  "dpushard_token_file": "${scratch}/work/token",
  "dpushard_families": ["cnn"],
  "dpushard_sizes": ["1M", "2M"],
  "dpushard_node_counts": [1, 2, 3, 4],
  "dpushard_strategies": ["pipeline", "replicate"],
  "dpushard_node_strategies": {"4": ["replicate"]},
  "dpushard_node_sizes": {"4": ["2M"]},
  "dpushard_zoo_inputs": {"cnn": "64x64x3"},
  "models_zoo_in_suites": false,
  "dpushard_zoo_weights": true,
  "models_preseed_caches": false
}
JSON
)
cat >"$scratch/mixed.yml" <<'YAML'
# On top of inventories/local: node3 holds a ZCU102.
all:
  children:
    workers:
      hosts:
        node3:
          dpushard_worker_target: zcu102
YAML

cd "$src"
export ANSIBLE_CONFIG="$src/ansible.cfg" ANSIBLE_NOCOLOR=1
run() { ansible-playbook playbooks/distribute.yml -e "$vars" "$@"; }

plans=$models/e3-64x64x3-s1/cnn-1M
node_targets() {  # the node_targets of a plan, "" when it records none
  /usr/bin/python3 -c 'import sys, yaml; print(",".join(yaml.safe_load(open(sys.argv[1])).get("node_targets") or []))' "$1"
}

# 1. One kind of board.
run -i inventories/local >"$scratch/run1.log" || { cat "$scratch/run1.log"; fail "run 1"; }
for dir in n1 n2-pipeline n3-pipeline n3-replicate; do
  [[ -s $plans/$dir/plan.yaml ]] || fail "$dir/plan.yaml was not made"
  [[ -z $(node_targets "$plans/$dir/plan.yaml") ]] || fail "$dir records node_targets on one kind of board"
done
"$bin" split "$models/e3-64x64x3-s1/cnn-1M_int.xmodel" --nodes 3 --strategy pipeline --objective latency \
  --link-gbps 1.0 --target kv260 -o "$scratch/by-hand" >/dev/null 2>&1
cmp "$scratch/by-hand/plan.yaml" "$plans/n3-pipeline/plan.yaml" ||
  fail "the 3-node plan differs from split --target kv260 by hand"
grep -q '"node_targets": \["kv260", "kv260", "kv260", "kv260"\]' "$models/made-with.json" ||
  fail "made-with.json does not record the workers' targets: $(cat "$models/made-with.json")"
[[ -s $models/e3-64x64x3-s1/cnn-2M/n4-replicate/plan.yaml ]] || fail "2M n4-replicate was not made"
for dir in cnn-1M/n4-replicate cnn-2M/n4-pipeline; do
  [[ ! -e $models/e3-64x64x3-s1/$dir ]] || fail "$dir was made (4 nodes: replicate at 2M only)"
done
cp -r "$plans" "$scratch/single"

# 2. node3 a ZCU102: made again, the 3-node plans for the mixed boards.
run -i inventories/local -i "$scratch/mixed.yml" >"$scratch/run2.log" ||
  { cat "$scratch/run2.log"; fail "run 2"; }
grep -q '"node_targets": \["kv260", "kv260", "zcu102", "kv260"\]' "$models/made-with.json" ||
  fail "made-with.json does not record node3's zcu102: $(cat "$models/made-with.json")"
for dir in n3-pipeline n3-replicate; do
  got=$(node_targets "$plans/$dir/plan.yaml")
  [[ $got == kv260,kv260,zcu102 ]] || fail "$dir records node_targets '$got', not kv260,kv260,zcu102"
done
got=$(node_targets "$models/e3-64x64x3-s1/cnn-2M/n4-replicate/plan.yaml")
[[ $got == kv260,kv260,zcu102,kv260 ]] || fail "2M n4-replicate records node_targets '$got'"
for dir in n1 n2-pipeline n2-replicate; do
  [[ -z $(node_targets "$plans/$dir/plan.yaml") ]] || fail "$dir (node1, node2: KV260s) records node_targets"
  cmp "$scratch/single/$dir/plan.yaml" "$plans/$dir/plan.yaml" || fail "$dir differs from the one-board run"
done
cmp -s "$scratch/single/n3-pipeline/plan.yaml" "$plans/n3-pipeline/plan.yaml" &&
  fail "the 3-node pipeline plan is the one-board one"

# A second run with the same inventory changes nothing.
run -i inventories/local -i "$scratch/mixed.yml" >"$scratch/run3.log" ||
  { cat "$scratch/run3.log"; fail "run 3"; }
grep -q 'changed=0' "$scratch/run3.log" && ! grep -q 'changed=[1-9]' "$scratch/run3.log" ||
  { cat "$scratch/run3.log"; fail "run 3 changed something"; }

# 3. Mixed boards off: every plan for the cost target's board alone.
run -i inventories/local -i "$scratch/mixed.yml" -e models_plan_node_targets=false \
  >"$scratch/run4.log" || { cat "$scratch/run4.log"; fail "run 4"; }
for dir in n1 n2-pipeline n3-pipeline n3-replicate; do
  [[ -z $(node_targets "$plans/$dir/plan.yaml") ]] || fail "$dir records node_targets with models_plan_node_targets false"
done
cmp "$scratch/single/n3-pipeline/plan.yaml" "$plans/n3-pipeline/plan.yaml" ||
  fail "models_plan_node_targets false: the 3-node plan is not the one-board one"
echo "mixed_boards_plans: OK"
