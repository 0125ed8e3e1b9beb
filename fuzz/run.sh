#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time, as CI does:
#   fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET] [XMODEL_SEED_DIR]
# BUILD_DIR is configured with CXX=clang++ -DDPUSHARD_BUILD_FUZZERS=ON -DDPUSHARD_SANITIZE=ON.
# Corpora are kept in a temporary folder; a crash leaves its input in the current folder.
set -euo pipefail
build=$1
seconds=${2:-60}
seeds=${3:-}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/frame" "$corpus/xmodel"

echo "fuzz: frame decoder for ${seconds}s"
"$build/fuzz/fuzz_frame_decoder" -max_total_time="$seconds" -rss_limit_mb=2048 \
  -print_final_stats=1 "$corpus/frame"

xmodel_seeds=()
[[ -n "$seeds" && -d "$seeds" ]] && xmodel_seeds=("$seeds")
echo "fuzz: xmodel reader for ${seconds}s"
"$build/fuzz/fuzz_xmodel_reader" -max_total_time="$seconds" -rss_limit_mb=2048 \
  -max_len=65536 -print_final_stats=1 "$corpus/xmodel" "${xmodel_seeds[@]}"
