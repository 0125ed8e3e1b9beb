#!/usr/bin/env bash
# ctest Ansible.CompilePlaybook: playbooks/compile.yml against this machine (connection
# local; no ports), with a stand-in for vai_c_xir, since Vitis AI is not installed here: it
# "compiles" the real ResNet-20 `_int` fixture into the real compiled fixture
# (../shared/fixtures/xmodel). A plan of the `_int` file (one fragment) is split, then:
#  1. the play compiles, fetches and records the fragment: plan.yaml gets its compiled entry
#     (file, the fixture's sha256, its DPU fingerprint), `dpushard plan check-compiled` passes;
#  2. a second run changes nothing and does not run the compiler;
#  3. a compiled file made from another `_int` file (its .source-sha256 differs, as after a
#     plan is re-split in the same folder) is compiled again;
#  4. with a compile_vai_c_xir that does not exist, the play fails early with one line;
#  5. compile-plans.yml (what distribute.yml and so site.yml run on a vart inventory) finds
#     every plan under dpushard_models_dir, two of them with the same folder name, compiles
#     each in a folder of its own and checks it (`plan check-compiled`); on a sim inventory
#     it does nothing;
#  6. compile_precompiled_dir: no compiler; each fragment taken from <sha256 of _int>.xmodel,
#     recorded and checked; a missing one is named.
# What the stand-in cannot show: vai_c_xir's own behaviour (that needs Vitis AI).
#
#   compile_playbook.sh SOURCE_DIR DPUSHARD FIXTURE_DIR
set -euo pipefail
src=$1 dpushard=$2 fixtures=$3
compiled=$fixtures/resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel
if [[ ! -f $compiled || ! -f $fixtures/resnet20_cifar10_int_quantized.xmodel ]]; then
  [[ ${DPUSHARD_REQUIRE_SHARED:-0} == 1 ]] && { echo "compile_playbook: FAILED: fixtures missing in $fixtures" >&2; exit 1; }
  echo "skipped: the real xmodel fixtures are missing in $fixtures (no ../shared)"; exit 0
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$src"
export ANSIBLE_CONFIG="$src/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
fail() { echo "compile_playbook: FAILED: $*" >&2; exit 1; }

# An inventory: the local one plus a compiler group (the controller).
mkdir -p "$scratch/inv" "$scratch/bin"
cp -r inventories/local/group_vars "$scratch/inv/"
sed 's|^    provision:|    compiler:\n      hosts:\n        controller:\n    provision:|' \
  inventories/local/hosts.yml > "$scratch/inv/hosts.yml"
grep -q '^    compiler:' "$scratch/inv/hosts.yml" || fail "could not add the compiler group"
cat > "$scratch/bin/vai_c_xir" <<STANDIN
#!/bin/sh
echo "\$@" >> '$scratch/vai_c_xir.calls'
while [ \$# -gt 0 ]; do case \$1 in -o) out=\$2; shift;; -n) name=\$2; shift;; esac; shift; done
cp '$compiled' "\$out/\$name.xmodel"
STANDIN
chmod +x "$scratch/bin/vai_c_xir"
echo '{}' > "$scratch/arch.json"
"$dpushard" split "$fixtures/resnet20_cifar10_int_quantized.xmodel" -o "$scratch/plan" --nodes 1 \
  > /dev/null 2>&1 || fail "dpushard split"

play() {  # log-name extra-args...
  local log=$scratch/$1.log
  shift
  ansible-playbook -i "$scratch/inv" playbooks/compile.yml -e "compile_plan_dir=$scratch/plan" \
    -e "compile_arch_json=$scratch/arch.json" -e "compile_work_dir=$scratch/work" \
    -e "dpushard_bin=$dpushard" "$@" > "$log" 2>&1
}
play first -e "compile_vai_c_xir=$scratch/bin/vai_c_xir" || { cat "$scratch/first.log"; fail "first run"; }
sha=$(sha256sum "$compiled" | cut -d' ' -f1)
grep -q "sha256: $sha" "$scratch/plan/plan.yaml" || fail "plan.yaml does not record the compiled file"
grep -q "file: compiled/whole.xmodel" "$scratch/plan/plan.yaml" || fail "plan.yaml: compiled path"
grep -q "dpu_fingerprint: 0x603000b56011861" "$scratch/plan/plan.yaml" || fail "plan.yaml: fingerprint"
"$dpushard" plan check-compiled "$scratch/plan" || fail "check-compiled after the play"
play second -e "compile_vai_c_xir=$scratch/bin/vai_c_xir" || { cat "$scratch/second.log"; fail "second run"; }
grep -Eq 'changed=0 ' "$scratch/second.log" || { cat "$scratch/second.log"; fail "the second run changed something"; }
calls() { wc -l < "$scratch/vai_c_xir.calls"; }
[[ $(calls) == 1 ]] || fail "vai_c_xir ran $(calls) times over two runs, not once"
int_sha=$(sha256sum "$scratch/plan/fragments/whole_int.xmodel" | cut -d' ' -f1)
[[ $(cat "$scratch/plan/compiled/whole.xmodel.source-sha256") == "$int_sha" ]] ||
  fail "the compiled file does not record its _int file's sha256"
# 3. The compiled file on the compiler host was made from another _int file.
sidecar=$(echo "$scratch"/work/plan-*/out/whole.xmodel.source-sha256)
[[ -f $sidecar ]] || fail "no compile folder plan-<hash> with the source's sha256"
echo 0000 > "$sidecar"
play third -e "compile_vai_c_xir=$scratch/bin/vai_c_xir" || { cat "$scratch/third.log"; fail "third run"; }
[[ $(calls) == 2 ]] || fail "a compiled file made from another _int file was not compiled again"
[[ $(cat "$sidecar") == "$int_sha" ]] || fail "the recompiled file does not record its source"
if play missing -e compile_vai_c_xir=no-such-vai_c_xir; then fail "ran without vai_c_xir"; fi
grep -q "compile: no-such-vai_c_xir not found on controller" "$scratch/missing.log" \
  || { cat "$scratch/missing.log"; fail "no clear line for a missing vai_c_xir"; }

# 5. compile-plans.yml over a models folder with two plans named alike. The local inventory
#    sweeps weightless models, which only sim runs: a vart inventory's have weights.
models=$scratch/models
for m in a b; do
  "$dpushard" split "$fixtures/resnet20_cifar10_int_quantized.xmodel" -o "$models/$m/n1" --nodes 1 \
    > /dev/null 2>&1 || fail "dpushard split ($m)"
done
plans() {  # log-name backend extra-args...
  local log=$scratch/$1.log backend=$2
  shift 2
  ansible-playbook -i "$scratch/inv" playbooks/compile-plans.yml -e "dpushard_models_dir=$models" \
    -e "dpushard_backend=$backend" -e "compile_arch_json=$scratch/arch.json" \
    -e "compile_work_dir=$scratch/work2" -e "dpushard_bin=$dpushard" \
    -e "compile_vai_c_xir=$scratch/bin/vai_c_xir" -e '{"dpushard_zoo_weights": true}' "$@" \
    > "$log" 2>&1
}
plans plans-sim sim || { cat "$scratch/plans-sim.log"; fail "compile-plans.yml on sim"; }
[[ ! -e $scratch/work2 && ! -e $models/a/n1/compiled ]] || fail "compile-plans.yml compiled for a sim inventory"
plans plans-vart vart || { cat "$scratch/plans-vart.log"; fail "compile-plans.yml on vart"; }
for m in a b; do
  grep -q "sha256: $sha" "$models/$m/n1/plan.yaml" || fail "plan $m/n1 not compiled"
  "$dpushard" plan check-compiled "$models/$m/n1" || fail "check-compiled $m/n1"
done
[[ $(ls -d "$scratch"/work2/n1-* | wc -l) == 2 ]] || fail "two plans named n1 shared a compile folder"
grep -q 'Check every compiled fragment of the plan' "$scratch/plans-vart.log" || fail "the plans were not checked"
plans plans-vart2 vart || { cat "$scratch/plans-vart2.log"; fail "compile-plans.yml, second run"; }
grep -Eq 'controller +: .*changed=0 ' "$scratch/plans-vart2.log" || { cat "$scratch/plans-vart2.log"; fail "compile-plans.yml: second run changed something"; }

# 6. Precompiled fragments: no compiler at all.
"$dpushard" split "$fixtures/resnet20_cifar10_int_quantized.xmodel" -o "$scratch/pre/plan" --nodes 1 \
  > /dev/null 2>&1 || fail "dpushard split (precompiled)"
mkdir -p "$scratch/precompiled-empty" "$scratch/precompiled"
if play pre-missing -e compile_vai_c_xir=no-such-vai_c_xir -e "compile_plan_dir=$scratch/pre/plan" \
    -e "compile_precompiled_dir=$scratch/precompiled-empty"; then fail "ran without the precompiled file"; fi
grep -q "compile: fragment whole has no precompiled file" "$scratch/pre-missing.log" ||
  { cat "$scratch/pre-missing.log"; fail "a missing precompiled fragment was not named"; }
cp "$compiled" "$scratch/precompiled/$int_sha.xmodel"
play pre -e compile_vai_c_xir=no-such-vai_c_xir -e "compile_plan_dir=$scratch/pre/plan" \
  -e "compile_precompiled_dir=$scratch/precompiled" || { cat "$scratch/pre.log"; fail "precompiled run"; }
grep -q "sha256: $sha" "$scratch/pre/plan/plan.yaml" || fail "the precompiled fragment was not recorded"
"$dpushard" plan check-compiled "$scratch/pre/plan" || fail "check-compiled after the precompiled run"
echo "compile_playbook: compiled, fetched and recorded; second run unchanged; recompiled when its _int changed; missing vai_c_xir named; compile-plans.yml: two plans named alike in two folders, checked, skipped on sim; precompiled fragments taken by sha256"
