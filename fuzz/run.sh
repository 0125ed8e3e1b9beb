#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time, as CI does (scripts/test.sh):
#   fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET] [XMODEL_SEED_DIR...]
# BUILD_DIR is configured with CXX=clang++ -DDPUSHARD_BUILD_FUZZERS=ON -DDPUSHARD_SANITIZE=ON
# and holds the fuzz_* targets and make_frame_seeds (fuzz/CMakeLists.txt).
# Seeds: the frame decoder starts from one frame of every message type (make_frame_seeds),
# the xmodel reader from the xmodel files in the seed folders, the plan.yaml, cluster.yaml
# and .npy readers and the image decoders from the files in fuzz/seeds/{plan,cluster,npy,image}/.
# Corpus: what each fuzzer finds is kept in BUILD_DIR/fuzz/corpus/<target>/, so a later run
# in the same build folder starts from there. A crash, a sanitizer report, a leak, a slow
# input or running out of memory makes the fuzzer, and so this script, exit non-zero; the
# input that did it is kept in BUILD_DIR/fuzz/artifacts/. Each run ends with libFuzzer's
# stat::number_of_executed_units (the executions) on stderr; a summary line per target
# follows at the end.
set -euo pipefail
build=$1
seconds=${2:-30}
shift $(($# < 2 ? $# : 2))
seeds=$(cd "$(dirname "$0")" && pwd)/seeds
corpus=$build/fuzz/corpus
frame_seeds=$(mktemp -d)
logs=$(mktemp -d)
trap 'rm -rf "$frame_seeds" "$logs"' EXIT
mkdir -p "$build/fuzz/artifacts"
# A fixed seed (DPUSHARD_FUZZ_SEED, 1) makes a CI run replayable: the same build explores
# the same inputs first. Set it to 0 for a random seed in a long local run.
common=(-seed="${DPUSHARD_FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$build/fuzz/artifacts/")
# The targets run DPUSHARD_FUZZ_JOBS at a time (default: one per core). Each fuzzer is one
# process on one core, so two cores fuzz two targets in the time of one, with the same
# executions each; their output is printed target by target once all have ended.
jobs=${DPUSHARD_FUZZ_JOBS:-$(nproc)}
targets=()
running=0

# fuzz TARGET EXTRA_FLAGS... -- SEED_DIRS...
fuzz() {
  local target=$1
  shift
  local flags=()
  while [[ $1 != -- ]]; do flags+=("$1"); shift; done
  shift
  mkdir -p "$corpus/$target"
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  echo "fuzz: $target for ${seconds}s (seeds: $*)"
  (
    rc=0
    "$build/fuzz/$target" "${common[@]}" "${flags[@]}" "$corpus/$target" "$@" >"$logs/$target.log" 2>&1 || rc=$?
    echo "$rc" >"$logs/$target.rc"
  ) &
  running=$((running + 1))
  targets+=("$target")
}

"$build/fuzz/make_frame_seeds" "$frame_seeds"
fuzz fuzz_frame_decoder -- "$frame_seeds"

xmodel_seeds=()
for dir in "$@"; do
  [[ -d "$dir" ]] || { echo "fuzz/run.sh: seed folder $dir does not exist" >&2; exit 1; }
  xmodel_seeds+=("$dir")
done
fuzz fuzz_xmodel_reader -max_len=65536 -- "${xmodel_seeds[@]}"
fuzz fuzz_plan_yaml -max_len=65536 -- "$seeds/plan"
fuzz fuzz_cluster_yaml -max_len=4096 -- "$seeds/cluster"
fuzz fuzz_npy_reader -max_len=16384 -- "$seeds/npy"
# Built only with DPUSHARD_WITH_IMAGES (libturbojpeg0-dev, libpng-dev).
if [[ -x "$build/fuzz/fuzz_image_decoder" ]]; then
  fuzz fuzz_image_decoder -max_len=16384 -- "$seeds/image"
fi

wait
summary=()
failed=()
for target in "${targets[@]}"; do
  echo "fuzz: --- $target ---"
  cat "$logs/$target.log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$target.log" | tail -1)
  summary+=("$target: ${runs:-?} executions in ${seconds}s, corpus $corpus/$target ($(find "$corpus/$target" -type f | wc -l) inputs)")
  rc=$(cat "$logs/$target.rc" 2>/dev/null || echo "?")
  [[ $rc == 0 ]] || failed+=("$target (exit $rc)")
done
printf 'fuzz: %s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
  echo "fuzz: FAILED: ${failed[*]}; the inputs are kept in $build/fuzz/artifacts/" >&2
  exit 1
fi
