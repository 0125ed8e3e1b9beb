#!/usr/bin/env bash
# The aarch64 build for the KV260 (Ubuntu 22.04, glibc 2.35), made and tested on this Debian 12
# host (docs/aarch64.md):
#   1. installs the cross toolchain, qemu-user and the arm64 libraries
#      (scripts/install-deps.sh --aarch64); where they cannot be installed, says so in one
#      line and exits 77;
#   2. configures build/aarch64 with cmake/toolchains/aarch64-linux-gnu.cmake and builds only
#      the command line and the core test suites (graph, xmodel, exec, split, net, cluster);
#   3. runs those suites with ctest under qemu-aarch64 (the toolchain's emulator), and the
#      ctest Aarch64.BoardLibraries (step 5);
#   4. same inputs, same sha256: a zoo model written by the host build and by the aarch64
#      build are the same bytes, and `dpushard exec --backend ref --seed 7` gives the same
#      input and output sha256 on both (the zoo model, and the real ResNet-20 fixture);
#   5. (ctests of step 3: scripts/check-aarch64-binary.sh) the binaries a board gets need
#      only libraries the board has, no GLIBC_ symbol newer than 2.35 and no GLIBCXX_ newer
#      than 3.4.30 (Ubuntu 22.04's glibc and GCC 12 libstdc++);
#   6. the board's binary with vart (build/aarch64/board/tools/dpushard, tools/board/), run
#      under qemu with the link stand-ins of libxir.so.3 and libvart-runner.so.3 on its
#      library path: step 4's runs give the same sha256, and `exec --backend vart` reaches
#      the stand-in of libxir.so.3 (on a board, the real one). The vart backend runs VART in
#      its own exec'd DPU process (`dpushard dpu-child`), which an aarch64 host or qemu
#      registered with binfmt_misc can start; plain qemu-user cannot (the kernel refuses the
#      aarch64 image: the child exits with 127), and then the check is that the backend got
#      as far as starting its DPU process.
#
#   scripts/cross-aarch64.sh [HOST_DPUSHARD]
#   scripts/cross-aarch64.sh --board-only
# HOST_DPUSHARD is the host build's command line for step 4 (default: build/release's, as
# scripts/test.sh builds it). DPUSHARD_AARCH64_CTEST="-R ..." narrows step 3.
# --board-only: steps 1 and 2 for the board's binary alone (the target dpushard_board), then
# its symbol-version check (scripts/check-aarch64-binary.sh --needs libxir.so.3); no test
# suite, no qemu. It records the commit the binary was built from in
# build/aarch64/board/tools/dpushard.commit (`git rev-parse HEAD`; "+dirty" when the checkout
# has uncommitted changes). The build role runs it on the controller when the binary the
# boards copy is missing or stale (playbooks/roles/build, build_copy_build_command).
set -euo pipefail
cd "$(dirname "$0")/.."

board_only=0
if [[ ${1:-} == --board-only ]]; then
  board_only=1
  shift
fi

build=build/aarch64
host_cli=${1:-build/release/tools/dpushard}
jobs=$(nproc)
fixtures=${DPUSHARD_FIXTURE_DIR:-../shared/fixtures/xmodel}

# 1. The toolchain. A machine whose apt sources have no arm64 packages cannot cross-build.
if ! scripts/install-deps.sh --aarch64 >"${TMPDIR:-/tmp}/dpushard-aarch64-deps.log" 2>&1; then
  echo "aarch64: skipped: the cross toolchain could not be installed" \
    "(scripts/install-deps.sh --aarch64: $(tail -n 1 "${TMPDIR:-/tmp}/dpushard-aarch64-deps.log"))"
  exit 77
fi

# 2. Configure once; build the command line, the board's command line with vart (when
# ../shared has the Vitis AI 3.5 headers) and the test binaries of the core suites (the
# cross build's tests/CMakeLists.txt holds only those, and no benchmarks).
# ccache only where it is installed: install-deps.sh does not install it, and a minimal
# Debian root has none.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
    -DCMAKE_BUILD_TYPE=Release -DDPUSHARD_UNITY_BUILD=ON -DDPUSHARD_WERROR=ON "${launcher[@]}"
fi
if ((board_only)); then
  if ! ninja -C "$build" -t targets all | grep -q '^dpushard_board:'; then
    echo "aarch64: error: $build has no target dpushard_board: the board's binary needs the" \
      "Vitis AI 3.5 headers in ../shared/vitis-ai-runtime (DPUSHARD_BOARD_VART, docs/aarch64.md)" >&2
    exit 1
  fi
  cmake --build "$build" -j "$jobs" --target dpushard_board
  board_binary=$build/board/tools/dpushard
  scripts/check-aarch64-binary.sh --needs libxir.so.3 "$board_binary"
  commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
  if [[ $commit != unknown && -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
    commit+="+dirty"
  fi
  printf '%s\n' "$commit" >"$board_binary.commit.tmp"
  mv "$board_binary.commit.tmp" "$board_binary.commit"
  echo "aarch64: board binary $board_binary (commit $commit): built, its libraries and symbol versions checked"
  exit 0
fi
cmake --build "$build" -j "$jobs"

# 3. The suites under qemu-aarch64. Left out: the two cases that need the cpu backend,
# which this build has not (DPUSHARD_WITH_ONEDNN=OFF; they would report themselves skipped), and
# the LinkPacing cases, which time the emulated link against the wall clock within 10 %:
# under emulation every send costs ten times the CPU, and one of them failed (0.147 s for
# 0.130 +- 0.013 s). The pacing code is the same on both architectures; the x86 suite runs them.
# And the worker under a 100 MB address-space limit (prlimit --as): qemu-user reserves the
# guest's address space itself, so the limit stops qemu before the worker starts.
# And CliCluster.MixedSimWorkersRunAtThePredictedRate, which holds sim workers to their
# predicted rate by the wall clock (44 s under qemu, all of it emulated CPU): as LinkPacing.
# And the node-loss cases (CliNodeLoss.*: workers killed, frozen or restarted, replanned
# around by heartbeats and peer timeouts): the same code on both architectures, driven by
# the wall clock, 73 s of the suite's 330 under qemu; the x86 suite runs them.
# And the cluster's image cases (CliClusterFrames.EveryImageOfAFolderIsExecsBytes): the cross
# build has no image decoding (docs/aarch64.md); its npy cases run here.
# shellcheck disable=SC2086  # DPUSHARD_AARCH64_CTEST is a list of ctest arguments
ctest --test-dir "$build" -j "$jobs" --output-on-failure \
  -E '^(ClusterRunTest\.CpuWorkersMatchTheWholeModelOnRef|CpuBackend\.SumsPastFloatPrecisionStayExact|LinkPacing\..*|CliCluster\.AWorkerUnderAMemoryLimitRefusesAFragmentItCannotHold|CliCluster\.MixedSimWorkersRunAtThePredictedRate|CliNodeLoss\..*|Strategies/CliClusterFrames\.EveryImageOfAFolderIsExecsBytes/.*)$' \
  ${DPUSHARD_AARCH64_CTEST:-}

# 4. Same inputs, same sha256.
arm_cli=(qemu-aarch64 "$build/tools/dpushard")  # the multiarch arm64 libc, as ctest
work=$build/same-sha256
rm -rf "$work"
mkdir -p "$work"
if [[ ! -x $host_cli ]]; then
  echo "aarch64: error: no host build at $host_cli to compare with (build it, or give its path)" >&2
  exit 1
fi
zoo_args=(zoo cnn --params 500K --experts 2 --input 32x32x3 --classes 10 --seed 3)
"$host_cli" "${zoo_args[@]}" -o "$work/zoo_x86_int.xmodel" 2>/dev/null
"${arm_cli[@]}" "${zoo_args[@]}" -o "$work/zoo_aarch64_int.xmodel" 2>/dev/null
x86_zoo=$(sha256sum <"$work/zoo_x86_int.xmodel" | cut -d' ' -f1)
arm_zoo=$(sha256sum <"$work/zoo_aarch64_int.xmodel" | cut -d' ' -f1)
if [[ $x86_zoo != "$arm_zoo" ]]; then
  echo "aarch64: error: dpushard ${zoo_args[*]} wrote different files: x86 $x86_zoo, aarch64 $arm_zoo" >&2
  exit 1
fi
echo "aarch64: same sha256: dpushard ${zoo_args[*]} -> $arm_zoo on both"
# Each run: the model and its extra exec arguments. The compiled ResNet-20 runs its DPU
# computation lowered to `_int` ops, weights from the `_int` file (lower_compiled.hpp).
runs=("$work/zoo_x86_int.xmodel|")
resnet20_int=$fixtures/resnet20_cifar10_int_quantized.xmodel
resnet20_compiled=$fixtures/resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel
if [[ -f $resnet20_int && -f $resnet20_compiled ]]; then
  runs+=("$resnet20_int|" "$resnet20_compiled|--weights-from $resnet20_int")
else
  echo "aarch64: the ResNet-20 fixtures are missing in $fixtures (no ../shared): the zoo model only"
fi
# The name and sha256 of every input and output of `exec --json`, on one line (Python:
# install-deps.sh installs it; jq it does not).
digests() {
  /usr/bin/python3 -c 'import json, sys
run = json.load(sys.stdin)
print(json.dumps([{"name": t["name"], "sha256": t["sha256"]} for t in run["inputs"] + run["outputs"]]))'
}
# 6. The board's binary, with the link stand-ins in place of the board's Vitis AI runtime.
board_cli=()
if [[ -x $build/board/tools/dpushard ]]; then
  board_cli=(qemu-aarch64 -E "LD_LIBRARY_PATH=$build/board/link-stubs" "$build/board/tools/dpushard")
else
  echo "aarch64: no board binary with vart (DPUSHARD_BOARD_VART off: no Vitis AI 3.5 headers in ../shared)"
fi
for run in "${runs[@]}"; do
  model=${run%%|*}
  read -ra extra <<<"${run#*|}"
  args=(exec "$model" --backend ref --seed 7 "${extra[@]}" --json)
  x86=$("$host_cli" "${args[@]}" | digests)
  arm=$("${arm_cli[@]}" "${args[@]}" | digests)
  board=$arm
  ((${#board_cli[@]} == 0)) || board=$("${board_cli[@]}" "${args[@]}" | digests)
  if [[ $x86 != "$arm" ]] || [[ $x86 != "$board" ]]; then
    echo "aarch64: error: dpushard ${args[*]} differs:" >&2
    echo "  x86:     $x86" >&2
    echo "  aarch64: $arm" >&2
    echo "  aarch64 board binary (vart): $board" >&2
    exit 1
  fi
  weights=""
  ((${#extra[@]} == 0)) || weights=" ${extra[0]} $(basename "${extra[1]}")"
  echo "aarch64: same sha256: dpushard exec $(basename "$model") --backend ref --seed 7$weights: $arm"
done

# 6. The board binary's vart backend calls into libxir.so.3: here the stand-in, which says so
# and aborts (the DPU process it runs in dies, and exec fails); on a board, Vitis AI's XIR.
if ((${#board_cli[@]} > 0)) && [[ -f $resnet20_compiled ]]; then
  if vart_out=$("${board_cli[@]}" exec "$resnet20_compiled" --backend vart --seed 7 2>&1); then
    echo "aarch64: error: the board binary ran exec --backend vart on the link stand-ins" >&2
    exit 1
  fi
  can_exec_aarch64=0
  if [[ "$(uname -m)" == aarch64 ]] || grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64; then
    can_exec_aarch64=1
  fi
  if grep -q 'libxir.so.3 here is the link-only stand-in' <<<"$vart_out"; then
    called=$(sed -n "s/.* library (\([^(]*\)(.*/\1/p" <<<"$vart_out" | head -n 1)
    echo "aarch64: board binary: exec --backend vart reaches libxir.so.3 ($called, the stand-in here)"
  elif ((can_exec_aarch64 == 0)) &&
    grep -q 'the DPU process died loading the fragments (exited with status 127)' <<<"$vart_out"; then
    echo "aarch64: board binary: exec --backend vart starts its DPU process (dpu-child), which" \
      "plain qemu-user cannot exec without binfmt_misc (status 127); libxir.so.3 not reached here"
  else
    echo "aarch64: error: the board binary's exec --backend vart did not reach libxir.so.3:" >&2
    echo "$vart_out" >&2
    exit 1
  fi
fi
