#!/usr/bin/env bash
# The two ConvViT variants side by side (docs/zoo.md): for each variant and size, the KV260
# timing model's DPU time share and fps (`predict`), then one node against three on local
# `sim` workers (modeled KV260 time; tensors between the processes over an emulated
# 1 Gbit/s link): SingleStream (one frame in flight: latency) and Offline (frames enough in
# flight to saturate the plan: throughput), with the 3-node speedups.
#
#   scripts/convvit-variants.sh [BUILD_DIR] [SIZES]     (defaults: build/release, "20M 100M")
#
#   DPUSHARD_VARIANTS="gated softmax"   the variants to measure
#   DPUSHARD_STRATEGY=auto              the 3-node plan's strategy (split --strategy)
#   DPUSHARD_SECONDS=2                  each run streams frames for about this long at the
#                                       predicted rate (at least 8 SingleStream and 24 Offline
#                                       frames)
#
# Prints a Markdown table on stdout; progress and the commands go to stderr. Needs a built
# dpushard; it starts its workers on 127.0.0.1 (ports chosen by the system) and stops them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
sizes=${2:-20M 100M}
dpushard="$build/tools/dpushard"
[[ -x "$dpushard" ]] || { echo "convvit-variants: no $dpushard (build first)" >&2; exit 1; }
variants=${DPUSHARD_VARIANTS:-gated softmax}
strategy=${DPUSHARD_STRATEGY:-auto}
seconds=${DPUSHARD_SECONDS:-2}
py=/usr/bin/python3

work=$(mktemp -d /tmp/convvit-variants.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

say() { echo "convvit-variants: $*" >&2; }
run() { say "$*"; "$@"; }

# Three sim workers (KV260 timing model, no numerics), each on a port of its own.
for i in 1 2 3; do
  "$dpushard" worker --listen 127.0.0.1:0 --backend sim --name "node$i" \
    --cache "$work/cache$i" --port-file "$work/port$i" 2>"$work/worker$i.log" &
  pids+=($!)
done
for i in 1 2 3; do
  for _ in $(seq 100); do [[ -s "$work/port$i" ]] && break; sleep 0.1; done
  [[ -s "$work/port$i" ]] || { echo "convvit-variants: worker $i did not start" >&2; exit 1; }
done
cluster() {  # cluster.yaml with the first $1 workers
  local n=$1 file="$work/cluster$1.yaml"
  {
    echo "link_gbps: 1.0"
    echo "link_emulation: paced"
    echo "nodes:"
    for i in $(seq "$n"); do
      echo "  - {name: node$i, address: 127.0.0.1:$(cat "$work/port$i"), backend: sim, target: kv260}"
    done
  } >"$file"
  echo "$file"
}
c1=$(cluster 1)
c3=$(cluster 3)

field() { "$py" -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

echo "| variant | size | DPU time share | predicted fps (1 board) | 1 node SingleStream p50 ms | 3 nodes SingleStream p50 ms | SingleStream speedup | 1 node Offline fps | 3 nodes Offline fps | Offline speedup | 3-node plans (latency / throughput) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for variant in $variants; do
  for size in $sizes; do
    tag="$variant-$size"
    model="$work/$tag.xmodel"
    run "$dpushard" zoo convvit --attention "$variant" --params "$size" -o "$model" 2>/dev/null
    "$dpushard" predict "$model" --json >"$work/$tag.predict.json"
    share=$(field "$work/$tag.predict.json" "'%.1f %%' % (100 * j['dpu_share'])")
    fps=$(field "$work/$tag.predict.json" "'%.2f' % j['fps']")
    # Frames for about $seconds at one board's latency (SingleStream) and three boards'
    # throughput (Offline).
    single_frames=$(field "$work/$tag.predict.json" "max(8, int($seconds * 1000 / j['latency_ms']))")
    offline_frames=$(field "$work/$tag.predict.json" "max(24, int($seconds * 3 * j['fps']))")
    # One node: the whole model. Three: the planner's plan for each objective.
    run "$dpushard" split "$model" --nodes 1 --target kv260 -o "$work/$tag-1" 2>/dev/null
    run "$dpushard" split "$model" --nodes 3 --strategy "$strategy" --objective latency \
      --target kv260 --link-gbps 1 -o "$work/$tag-3-latency" 2>/dev/null
    run "$dpushard" split "$model" --nodes 3 --strategy "$strategy" --objective throughput \
      --target kv260 --link-gbps 1 -o "$work/$tag-3-throughput" 2>/dev/null
    measure() {  # plan cluster frames inflight -> json
      run "$dpushard" run "$1" --cluster "$2" --frames "$3" --inflight "$4" --json \
        >"$5" 2>>"$work/run.log"
    }
    measure "$work/$tag-1" "$c1" "$single_frames" 1 "$work/$tag-1-ss.json"
    measure "$work/$tag-3-latency" "$c3" "$single_frames" 1 "$work/$tag-3-ss.json"
    measure "$work/$tag-1" "$c1" "$offline_frames" 4 "$work/$tag-1-off.json"
    measure "$work/$tag-3-throughput" "$c3" "$offline_frames" 12 "$work/$tag-3-off.json"
    p1=$(field "$work/$tag-1-ss.json" "j['latency_ms']['p50']")
    p3=$(field "$work/$tag-3-ss.json" "j['latency_ms']['p50']")
    f1=$(field "$work/$tag-1-off.json" "j['throughput_fps']")
    f3=$(field "$work/$tag-3-off.json" "j['throughput_fps']")
    s3=$(field "$work/$tag-3-ss.json" "j['strategy']")
    o3=$(field "$work/$tag-3-off.json" "j['strategy']")
    "$py" - "$variant" "$size" "$share" "$fps" "$p1" "$p3" "$f1" "$f3" "$s3" "$o3" <<'EOF'
import sys
v, size, share, fps, p1, p3, f1, f3, s3, o3 = sys.argv[1:]
p1, p3, f1, f3 = map(float, (p1, p3, f1, f3))
print(f"| {v} | {size} | {share} | {fps} | {p1:.1f} | {p3:.1f} | {p1 / p3:.2f}x | "
      f"{f1:.2f} | {f3:.2f} | {f3 / f1:.2f}x | {s3} / {o3} |")
EOF
  done
done
say "every figure is modeled KV260 time (sim workers), over an emulated 1 Gbit/s link"
