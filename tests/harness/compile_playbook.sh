#!/usr/bin/env bash
# ctest Ansible.CompilePlaybook: playbooks/compile.yml against this machine (connection
# local; no ports), with a stand-in for vai_c_xir, since Vitis AI is not installed here: it
# "compiles" the real ResNet-20 `_int` fixture into the real compiled fixture
# (../shared/fixtures/xmodel). A plan of the `_int` file (one fragment) is split, then:
#  1. the play compiles, fetches and records the fragment: plan.yaml gets its compiled entry
#     (file, the fixture's sha256, its DPU fingerprint), `dpushard plan check-compiled` passes;
#  2. a second run changes nothing;
#  3. with a compile_vai_c_xir that does not exist, the play fails early with one line.
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
if play missing -e compile_vai_c_xir=no-such-vai_c_xir; then fail "ran without vai_c_xir"; fi
grep -q "compile: no-such-vai_c_xir not found on controller" "$scratch/missing.log" \
  || { cat "$scratch/missing.log"; fail "no clear line for a missing vai_c_xir"; }
echo "compile_playbook: compiled, fetched and recorded; second run unchanged; missing vai_c_xir named"
