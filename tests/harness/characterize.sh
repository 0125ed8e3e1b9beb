#!/usr/bin/env bash
# ctest Ansible.CharacterizeStandIn: runs playbooks/characterize.yml on this machine (head
# and compiler host both this machine, connection local) in a scratch folder:
#  1. without vai_c_xir: the play stops with one line naming it;
#  2. with a stand-in vai_c_xir (tests/harness/characterize/vai_c_xir: copies a real compiled
#     fixture, refuses conv_k17_fix) on four micro-models: the oracle is learned with the
#     version and the arch.json's sha256 and fingerprint, the refusal is reported and
#     conv_k17_fix left out, oracle.diff is written;
#  3. a second run changes nothing.
# No ports. Skips (one line) without ../shared's fixtures, fails there with
# DPUSHARD_REQUIRE_SHARED=1.
#
#   characterize.sh SOURCE_DIR DPUSHARD_BIN FIXTURE_DIR
set -euo pipefail
src=$1
bin=$2
compiled="$3/resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel"
if [[ ! -f "$compiled" ]]; then
  [[ "${DPUSHARD_REQUIRE_SHARED:-}" == 1 ]] && { echo "characterize: FAILED: no $compiled" >&2; exit 1; }
  echo "characterize: skipped: real xmodel fixture missing: $compiled"
  exit 0
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$src"
export ANSIBLE_CONFIG="$src/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
export DPUSHARD_STANDIN_COMPILED=$compiled
fail() { echo "characterize: FAILED: $*" >&2; exit 1; }
cat >"$scratch/hosts.yml" <<HOSTS
all:
  children:
    head:
      hosts:
        controller:
          ansible_connection: local
    compiler:
      hosts:
        vaihost:
          ansible_connection: local
HOSTS
echo '{"target": "DPUCZDX8G_ISA1_B4096", "fingerprint": "0x101000016010407"}' >"$scratch/arch.json"
play() {  # log-name extra-args...
  local log=$scratch/$1.log
  shift
  ansible-playbook -i "$scratch/hosts.yml" playbooks/characterize.yml \
    -e "characterize_dir=$scratch/char" -e "characterize_remote_dir=$scratch/remote" \
    -e "characterize_dpushard_bin=$bin" -e "characterize_arch_json=$scratch/arch.json" \
    -e '{"characterize_micro_models": ["conv3x3_fix", "conv3x3_nofix", "softmax_fix", "conv_k17_fix"]}' \
    "$@" >"$log" 2>&1
}

# 1. No vai_c_xir.
if play missing -e "characterize_vai_c_xir=$scratch/none/vai_c_xir"; then fail "ran without vai_c_xir"; fi
grep -q "characterize: $scratch/none/vai_c_xir not found on vaihost (install" "$scratch/missing.log" ||
  { cat "$scratch/missing.log" >&2; fail "no one-line message for a missing vai_c_xir"; }
echo "characterize: without vai_c_xir: $(grep -o 'characterize: [^(]*not found on vaihost' "$scratch/missing.log")"

# 2. The stand-in.
standin=$src/tests/harness/characterize/vai_c_xir
play first -e "characterize_vai_c_xir=$standin" || { cat "$scratch/first.log" >&2; fail "first run"; }
oracle=$scratch/char/oracle.yaml
grep -q 'vai_c_xir refused conv_k17_fix (exit 3)' "$scratch/first.log" || fail "refusal not reported"
grep -q '^  vitis_ai: vai_c_xir stand-in 0.0$' "$oracle" || fail "version not recorded"
grep -q '^  arch_fingerprint: 0x101000016010407$' "$oracle" || fail "fingerprint not recorded"
grep -q "^  arch_json_sha256: $(sha256sum "$scratch/arch.json" | cut -d' ' -f1)$" "$oracle" || fail "arch.json sha256"
grep -q '^  conv3x3_nofix: dpu$' "$oracle" || fail "verdicts not learned"
grep -q 'conv_k17_fix' "$oracle" && fail "a refused micro-model is in the oracle"
grep -q '^micro_models.conv3x3_nofix: cpu -> dpu$' "$scratch/char/oracle.diff" || fail "oracle.diff"
"$bin" oracle diff "$oracle" "$oracle" 2>/dev/null || fail "the oracle differs from itself"
echo "characterize: stand-in: $(grep -c '^  [a-z0-9_]*: ' <(sed -n '/^micro_models:/,$p' "$oracle")) micro-models learned, $(wc -l <"$scratch/char/oracle.diff") lines in oracle.diff"

# 3. Again: nothing changes.
play second -e "characterize_vai_c_xir=$standin" || { cat "$scratch/second.log" >&2; fail "second run"; }
grep -E '^(controller|vaihost) +:' "$scratch/second.log" | grep -vq 'changed=0 ' &&
  fail "second run changed something: $(grep -E '^(controller|vaihost) +:' "$scratch/second.log")"
echo "characterize: second run: nothing changed"
