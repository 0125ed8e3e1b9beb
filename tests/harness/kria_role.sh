#!/usr/bin/env bash
# ctest Ansible.KriaRoleCheckMode: runs playbooks/kria.yml (the kria role) against this
# machine, connection local (tests/harness/kria_check/hosts.yml):
#  1. in --check mode on this machine, which is not a Kria board: the play must pass, skip
#     every board-only step and print why;
#  2. with kria_require_board=true: the play must fail, naming the reason;
#  3. on a stand-in board in a scratch folder (an xmutil and an xdputil that print what the
#     real tools print, formats cited in docs/boards.md; a device tree model; a VART
#     library and CMake config; cpufreq policies): in --check mode nothing changes; the
#     first real run loads the app and sets the governor, reads the DPU's fingerprint and
#     clock; the second run changes nothing (and, with the worker unit on and dpushard not
#     built, says it cannot start it yet). The systemd steps (tag kria_systemd) are left
#     out there: they would install units on this machine;
#  4. the collect playbook writes the stand-in's facts into env.json, and leaves them out
#     without kria_collect_board_facts.
#
#   kria_role.sh SOURCE_DIR
set -euo pipefail
src=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$src"
export ANSIBLE_CONFIG="$src/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
# The minimal facts (system, kernel, distribution) are all these runs read; faster.
export ANSIBLE_GATHER_SUBSET="!all,min"
inventory=tests/harness/kria_check/hosts.yml
fail() { echo "kria_role: FAILED: $*" >&2; exit 1; }
play() {  # log-name extra-args...
  local log=$scratch/$1.log
  shift
  ansible-playbook -i "$inventory" playbooks/kria.yml "$@" >"$log" 2>&1
}
recap() { grep -E '^this-machine +:' "$scratch/$1.log" || true; }

# 1. This machine, --check.
play check --check || { cat "$scratch/check.log" >&2; fail "--check run on this machine"; }
grep -q 'skipped: not a Kria board (' "$scratch/check.log" || fail "no skip reason printed"
grep -Eq 'changed=0 .*failed=0' <(recap check) || fail "--check run: $(recap check)"
echo "kria_role: this machine, --check: $(grep -o 'skipped: not a Kria board ([^)]*)' "$scratch/check.log" | head -1)"

# 2. A board is required: must fail.
if play require --check -e kria_require_board=true; then fail "kria_require_board=true passed on a non-board"; fi
grep -q 'is not a Kria board (' "$scratch/require.log" || fail "kria_require_board: no reason in the failure"
echo "kria_role: kria_require_board=true fails as it must"

# 3. A stand-in board.
b=$scratch/board
mkdir -p "$b/bin" "$b/lib" "$b/cmake/vart" "$b/work"
printf 'ZynqMP SMK-K26 Rev1/B/A\0' >"$b/model"
echo k26-starter-kits >"$b/active"
cat >"$b/bin/xmutil" <<XMUTIL
#!/usr/bin/env bash
# Stand-in for xmutil: listapps in its column format, unloadapp, loadapp APP.
state=$b/active
case \$1 in
listapps)
  printf '%-24s%-12s%-24s%-12s%-16s%s\n' Accelerator Accel_type Base Base_type '#slots(PL+AIE)' Active_slot
  for app in k26-starter-kits kv260-benchmark-b4096 kv260-smartcam; do
    slot=-1; [[ \$(cat "\$state") == "\$app" ]] && slot=0,
    printf '%-24s%-12s%-24s%-12s%-16s%s\n' "\$app" XRT_FLAT "\$app" XRT_FLAT '(0+0)' "\$slot"
  done ;;
unloadapp) echo none >"\$state"; echo 'Accelerator successfully removed.' ;;
loadapp) [[ \$(cat "\$state") == none ]] || { echo 'an app is loaded' >&2; exit 1; }
  echo "\$2" >"\$state"; echo 'Accelerator loaded to slot 0' ;;
*) exit 2 ;;
esac
XMUTIL
cat >"$b/bin/xdputil" <<XDPUTIL
#!/usr/bin/env bash
# Stand-in for xdputil query (its JSON layout), reporting the B4096 only when it is loaded.
[[ \$1 == query && \$(cat "$b/active") == kv260-benchmark-b4096 ]] || exit 1
cat <<JSON
{
  "DPU IP Spec": {"DPU Core Count": 1, "IP version": "v4.1.0"},
  "VAI Version": {"libvart-runner.so": "Xilinx vart-runner Version: 3.5.0-7a0d5a69"},
  "kernels": [{"DPU Arch": "DPUCZDX8G_ISA1_B4096", "DPU Frequency (MHz)": 300,
               "cu_idx": 0, "fingerprint": "0x101000016010407", "name": "DPU Core 0"}]
}
JSON
XDPUTIL
chmod +x "$b/bin/xmutil" "$b/bin/xdputil"
: >"$b/lib/libvart-runner.so.3"
: >"$b/cmake/vart/vart-config.cmake"
for p in 0 1; do mkdir -p "$b/cpufreq/policy$p"; echo schedutil >"$b/cpufreq/policy$p/scaling_governor"; done
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$b/token"
# dfx-mgr's configuration, as the Kria image has it (default_accel names the default-app file).
printf '{\n  "default_accel": "%s",\n  "firmware_location": ["/lib/firmware/xilinx"]\n}\n' \
  "$b/default_firmware" >"$b/daemon.conf"
# The DPU's device groups: this machine's user (root here) joins none it lacks in the real
# runs (its own primary group); the --check run asks for one it lacks and must change nothing.
me=$(id -un) my_group=$(id -gn)
other_group=$(getent group video >/dev/null && echo video || echo "$(getent group | cut -d: -f1 | grep -vx "$my_group" | head -1)")
board=(-e "kria_xmutil=$b/bin/xmutil" -e "kria_xdputil=$b/bin/xdputil"
  -e "kria_device_tree_model=$b/model" -e "kria_become=false" -e '{"kria_packages": []}'
  -e "{\"kria_vart_library_dirs\": [\"$b/lib\"], \"kria_vart_cmake_dirs\": [\"$b/cmake/vart\"]}"
  -e "kria_cpufreq_dir=$b/cpufreq" -e "dpushard_work_dir=$b/work" -e "dpushard_token_file=$b/token"
  -e '{"kria_apt_repositories": []}' -e "kria_dfx_daemon_conf=$b/daemon.conf"
  -e "kria_worker_user=$me" -e "{\"kria_worker_groups\": [\"$my_group\"]}"
  -e kria_require_board=true --skip-tags kria_systemd)
groups_before=$(id -Gn "$me")
play board-check --check "${board[@]}" -e kria_worker_service_enabled=true \
  -e "{\"kria_worker_groups\": [\"$my_group\", \"$other_group\"]}" ||
  { cat "$scratch/board-check.log" >&2; fail "stand-in board, --check"; }
[[ $(cat "$b/active") == k26-starter-kits ]] || fail "--check loaded the app"
[[ ! -e $b/default_firmware ]] || fail "--check wrote dfx-mgr's default app"
[[ $(id -Gn "$me") == "$groups_before" ]] || fail "--check changed $me's groups"
grep -A3 "Give the worker's user the DPU's device groups" "$scratch/board-check.log" | grep -q '^changed:' ||
  { cat "$scratch/board-check.log" >&2; fail "--check did not report adding $me to $other_group"; }
grep -q 'not enabled: xdputil query has not answered on this run' "$scratch/board-check.log" ||
  fail "--check: the worker unit's enabling was not held back until xdputil answers"
grep -qx schedutil "$b/cpufreq/policy0/scaling_governor" || fail "--check set the governor"
grep -q 'DPUCZDX8G_ISA1_B4096, fingerprint 0x101000016010407, 300 MHz' "$scratch/board-check.log" &&
  fail "--check read the DPU of an app it did not load"

play board-1 "${board[@]}" || { cat "$scratch/board-1.log" >&2; fail "stand-in board, first run"; }
[[ $(cat "$b/active") == kv260-benchmark-b4096 ]] || fail "the app was not loaded"
for p in 0 1; do grep -qx performance "$b/cpufreq/policy$p/scaling_governor" || fail "policy$p governor"; done
[[ $(stat -c %a "$b/work/service/token") == 600 ]] || fail "the token is not mode 0600"
[[ $(cat "$b/default_firmware") == kv260-benchmark-b4096 ]] || fail "dfx-mgr's default app is not the DPU's"
cmp -s "$b/token" "$b/work/service/token" || fail "the token was not copied"
grep -q 'DPUCZDX8G_ISA1_B4096, fingerprint 0x101000016010407, 300 MHz' "$scratch/board-1.log" ||
  { cat "$scratch/board-1.log" >&2; fail "the DPU's facts were not read"; }
echo "kria_role: stand-in board, first run: $(recap board-1)"

# The second run also turns the worker unit on, with dpushard not built: it must say so.
play board-2 "${board[@]}" -e kria_worker_service_enabled=true -e "dpushard_bin=$b/no-dpushard" ||
  { cat "$scratch/board-2.log" >&2; fail "stand-in board, second run"; }
grep -Eq 'changed=0 ' <(recap board-2) || { cat "$scratch/board-2.log" >&2; fail "second run not idempotent: $(recap board-2)"; }
grep -q "not started yet: $b/no-dpushard is not built" "$scratch/board-2.log" ||
  fail "the worker unit's missing binary was not reported"
echo "kria_role: stand-in board, second run: $(recap board-2)"

# A runtime of another version than kria_vitis_ai_version stops the role, naming both.
if play version "${board[@]}" -e kria_vitis_ai_version=3.0; then fail "a 3.5 runtime passed kria_vitis_ai_version=3.0"; fi
grep -q 'version "3.5.0-7a0d5a69", not' "$scratch/version.log" ||
  { cat "$scratch/version.log" >&2; fail "no clear line for the wrong runtime version"; }
echo "kria_role: a runtime of the wrong version is named"
# dfx-mgr's configuration without default_accel: the role stops saying what to add.
echo '{"firmware_location": ["/lib/firmware/xilinx"]}' >"$b/daemon-nodefault.conf"
if play nodefault "${board[@]}" -e "kria_dfx_daemon_conf=$b/daemon-nodefault.conf"; then fail "passed without default_accel"; fi
grep -q 'has no "default_accel"' "$scratch/nodefault.log" || { cat "$scratch/nodefault.log" >&2; fail "no clear line without default_accel"; }
echo "kria_role: dfx-mgr without a default app is named"

# 4. The collect playbook writes the board's facts into env.json (hosts.<host>.board), and
#    leaves them out where kria_collect_board_facts is off (the local inventories).
mkdir -p "$b/work/runs/kria-check" "$b/results"
echo '{"benchmarks": []}' >"$b/work/runs/kria-check/bench_stand_in.json"
collect() {  # log-name extra-args...
  local log=$scratch/$1.log
  shift
  ansible-playbook -i "$inventory" playbooks/collect.yml "${board[@]}" -e dpushard_run_id=kria-check \
    -e "dpushard_results_root=$b/results" -e collect_worker_logs=false "$@" >"$log" 2>&1 ||
    { cat "$log" >&2; fail "collect ($log)"; }
}
env_json=$b/results/kria-check/env.json
collect collect-board -e kria_collect_board_facts=true
/usr/bin/python3 - "$env_json" <<'PY' || fail "env.json lacks the board's facts"
import json, sys
board = json.load(open(sys.argv[1]))["hosts"]["this-machine"]["board"]
dpu = board["dpu"][0]
assert (dpu["arch"], dpu["fingerprint"], dpu["clock_mhz"]) == ("DPUCZDX8G_ISA1_B4096", "0x101000016010407", 300), dpu
assert board["firmware_app"] == "kv260-benchmark-b4096" and board["model"] == "ZynqMP SMK-K26 Rev1/B/A", board
assert board["kernel"] and board["image"], board
print("kria_role: env.json board:", json.dumps(board, sort_keys=True))
PY
collect collect-plain
/usr/bin/python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["hosts"]["this-machine"]; sys.exit("board" in h)' \
  "$env_json" || fail "env.json has a board entry without kria_collect_board_facts"

# 5. The worker unit (its tasks are tagged kria_systemd and not run above): rendered with
#    the role's defaults and inventories/kria's backend, it runs that backend (the
#    inventory's dpushard_backend, as the sweep's workers), and every option of its command
#    line must be one `dpushard worker` defines (tools/cmd_worker.cpp).
kria_backend=$(sed -n 's/^dpushard_backend: *//p' inventories/kria/group_vars/all.yml)
[[ $kria_backend == vart ]] || fail "inventories/kria's dpushard_backend is '$kria_backend', not vart"
ansible -i "$inventory" this-machine -m ansible.builtin.template \
  -a "src=playbooks/roles/kria/templates/worker.service.j2 dest=$scratch/worker.service mode=0644" \
  -e @playbooks/roles/common/defaults/main.yml -e @playbooks/roles/kria/defaults/main.yml \
  -e "dpushard_backend=$kria_backend" \
  -e ansible_user=ubuntu >"$scratch/render.log" 2>&1 || { cat "$scratch/render.log" >&2; fail "rendering the unit"; }
exec_start=$(grep '^ExecStart=' "$scratch/worker.service") || fail "the unit has no ExecStart"
[[ $exec_start == *" worker --backend vart "* ]] || fail "the unit does not run a vart worker: $exec_start"
grep -qx 'Description=dpushard worker (this-machine, vart backend)' "$scratch/worker.service" ||
  fail "the unit's description does not name its backend"
for opt in $(grep -o -- ' --[a-z-]*' <<<"$exec_start"); do
  grep -q "\"$opt[\",]" tools/cmd_worker.cpp || fail "dpushard worker has no option $opt"
done
grep -qx 'ExecStartPre=/usr/bin/xdputil query' "$scratch/worker.service" || fail "the unit does not wait for xdputil query"
grep -qx 'SupplementaryGroups=render video' "$scratch/worker.service" || fail "the unit lacks the DPU's device groups"
echo "kria_role: unit: ${exec_start#ExecStart=}"
echo "kria_role: OK"
