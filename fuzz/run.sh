#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time, as CI does (scripts/test.sh):
#   fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET] [XMODEL_SEED_DIR...]
# BUILD_DIR is configured with CXX=clang++ -DDPUSHARD_BUILD_FUZZERS=ON -DDPUSHARD_SANITIZE=ON
# and holds fuzz_frame_decoder, fuzz_xmodel_reader and make_frame_seeds (fuzz/CMakeLists.txt).
# The frame decoder starts from one frame of every message type (make_frame_seeds), the
# xmodel reader from the xmodel files in the seed folders. A crash, a sanitizer report, a
# leak, a slow input or running out of memory makes the fuzzer, and so this script, exit
# non-zero; the input that did it is kept in BUILD_DIR/fuzz/artifacts/.
set -euo pipefail
build=$1
seconds=${2:-60}
shift $(($# < 2 ? $# : 2))
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/frame" "$corpus/frame-seeds" "$corpus/xmodel" "$build/fuzz/artifacts"
common=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$build/fuzz/artifacts/")

"$build/fuzz/make_frame_seeds" "$corpus/frame-seeds"
echo "fuzz: frame decoder for ${seconds}s"
"$build/fuzz/fuzz_frame_decoder" "${common[@]}" "$corpus/frame" "$corpus/frame-seeds"

xmodel_seeds=()
for dir in "$@"; do
  [[ -d "$dir" ]] || { echo "fuzz/run.sh: seed folder $dir does not exist" >&2; exit 1; }
  xmodel_seeds+=("$dir")
done
echo "fuzz: xmodel reader for ${seconds}s (seeds: ${xmodel_seeds[*]:-none})"
"$build/fuzz/fuzz_xmodel_reader" "${common[@]}" -max_len=65536 "$corpus/xmodel" \
  "${xmodel_seeds[@]}"
