#!/usr/bin/env bash
# ctest Ansible.CalibratePlaybook: runs playbooks/calibrate.yml on this machine as the one
# board of a kria group (connection local), in a scratch folder, with a stand-in dpushard
# (it records its arguments, writes a target YAML where -o says and prints calibrate's JSON;
# the command itself is tested on the VART double, test_vart_calibrate):
#  1. no compiled model: the play stops with one line saying what to run first;
#  2. --check: nothing is copied, run or fetched;
#  3. a real run: the models reach the board's folder, calibrate runs with the base target,
#     the board's name, frames, warm-up, passes and CPU backend, and <board>.yaml and
#     <board>.json come back to the controller's results folder.
# No ports, no root.
#
#   calibrate_playbook.sh SOURCE_DIR
set -euo pipefail
src=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$src"
export ANSIBLE_CONFIG="$src/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
fail() { echo "calibrate_playbook: FAILED: $*" >&2; exit 1; }
cat >"$scratch/hosts.yml" <<HOSTS
all:
  children:
    head:
      hosts:
        controller:
    workers:
      hosts:
        kv260-x:
    kria:
      children:
        workers:
  vars:
    ansible_connection: local
    ansible_python_interpreter: /usr/bin/python3
    dpushard_inventory_name: calibrate-check
    dpushard_backend: vart
    dpushard_node_counts: [1]
HOSTS
cat >"$scratch/dpushard" <<STANDIN
#!/usr/bin/env bash
# Stand-in for dpushard calibrate on a board.
echo "\$@" >"$scratch/args"
out= name=
while (( \$# )); do
  case \$1 in -o) out=\$2; shift ;; --name) name=\$2; shift ;; esac
  shift
done
sed "s/^name: .*/name: \$name/" "$src/targets/kv260_b4096.yaml" >"\$out"
echo '{"parameters": [{"name": "dpu.compute_efficiency", "value": 0.61}], "rms_relative_residual": 0.012}'
STANDIN
chmod +x "$scratch/dpushard"
mkdir -p "$scratch/compiled" "$scratch/none"
for m in conv3x3_fix dw3x3_fix; do echo "$m" >"$scratch/compiled/$m.xmodel"; done
echo whole >"$scratch/resnet50.xmodel"
play() {  # log-name extra-args...
  local log=$scratch/$1.log
  shift
  ansible-playbook -i "$scratch/hosts.yml" playbooks/calibrate.yml \
    -e "calibrate_dpushard_bin=$scratch/dpushard" -e "calibrate_remote_dir=$scratch/board" \
    -e "calibrate_results_dir=$scratch/results" -e calibrate_frames=7 -e calibrate_warmup=2 \
    "$@" >"$log" 2>&1
}

# 1. Nothing to time.
if play empty -e "calibrate_models_dir=$scratch/none"; then fail "ran without compiled models"; fi
# (The message as one line: Ansible's output folds it.)
tr -s ' \n' ' ' <"$scratch/empty.log" |
  grep -q "calibrate: no compiled model in $scratch/none and no calibrate_whole_models (run playbooks/characterize.yml first" || { cat "$scratch/empty.log" >&2; fail "no one-line message without models"; }
echo "calibrate_playbook: without models: fails naming characterize.yml"

# 2. --check.
play check --check -e "calibrate_models_dir=$scratch/compiled" ||
  { cat "$scratch/check.log" >&2; fail "--check run"; }
[[ ! -e $scratch/board && ! -e $scratch/args && ! -e $scratch/results ]] ||
  fail "--check copied, ran or fetched something"
echo "calibrate_playbook: --check: nothing copied, run or fetched"

# 3. The real run.
play run -e "calibrate_models_dir=$scratch/compiled" -e calibrate_passes=3 -e calibrate_cpu_backend=ref \
  -e "{\"calibrate_whole_models\": [\"$scratch/resnet50.xmodel\"]}" ||
  { cat "$scratch/run.log" >&2; fail "run"; }
for m in conv3x3_fix dw3x3_fix resnet50; do
  cmp -s "$scratch/board/models/$m.xmodel" <(cat "$scratch"/compiled/$m.xmodel "$scratch/$m.xmodel" 2>/dev/null) ||
    fail "$m.xmodel did not reach the board"
done
expected="calibrate $scratch/board/models -o $scratch/board/kv260-x.yaml --target kv260 --name kv260-x --frames 7 --warmup 2 --passes 3 --json --cpu-backend ref"
[[ $(cat "$scratch/args") == "$expected" ]] || fail "calibrate ran as: $(cat "$scratch/args")"
grep -qx 'name: kv260-x' "$scratch/results/kv260-x.yaml" || fail "the target did not come back"
/usr/bin/python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["rms_relative_residual"] == 0.012' \
  "$scratch/results/kv260-x.json" || fail "the JSON did not come back"
grep -q 'kv260-x: dpu.compute_efficiency = 0.61; rms relative residual 1.20 %' "$scratch/run.log" ||
  { cat "$scratch/run.log" >&2; fail "the fitted figures were not reported"; }
echo "calibrate_playbook: run: models copied, calibrate run, kv260-x.yaml and kv260-x.json fetched"
