#!/usr/bin/env bash
# Measures what SLURM costs a sweep (docs/slurm.md): the same sweep on inventories/slurm-local
# run direct (no SLURM at all: Ansible starts the three workers on 127.0.0.1:7711-7713) and
# then as one SLURM job, back to back; the SLURM run's report.md gets the SLURM section with
# the direct run beside it (--direct-baseline).
#
#   scripts/slurm-overhead.sh [BUILD_DIR]      (default build/rel; dpushard and bench_cnn_scaling built)
#
# The sweep: cnn 10M, 20M, 50M at 224x224, 1-3 nodes, three strategies, each configuration
# streaming at least 30 s of frames (sweep_min_seconds): about 11-12 minutes of suites per
# run on the sim workers. The direct run uses fixed ports (127.0.0.1:7711-7713); on a
# machine shared with other runs, set DPUSHARD_PORT_LOCK to a lock file they all take with
# flock(1), and the direct run holds it.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build/rel}" && pwd)
cd "$src"
export ANSIBLE_CONFIG="$src/ansible.cfg" ANSIBLE_NOCOLOR=1
[[ -x "$build/tools/dpushard" && -x "$build/bench/bench_cnn_scaling" ]] ||
  { echo "dpushard: error: $build has no tools/dpushard and bench/bench_cnn_scaling" >&2; exit 1; }
vars=$(cat <<JSON
{"dpushard_build_dir": "$build", "dpushard_families": ["cnn"],
 "dpushard_sizes": ["10M", "20M", "50M"], "sweep_min_seconds": 30,
 "workers_launch_prefix": [], "workers_stop_signal": "TERM"}
JSON
)
lock=()
[[ -n ${DPUSHARD_PORT_LOCK:-} ]] && lock=(flock "$DPUSHARD_PORT_LOCK")

ansible-playbook -i inventories/slurm-local playbooks/slurm-local.yml
echo "slurm-overhead: direct run, $(date -u +%FT%TZ)"
"${lock[@]}" ansible-playbook -i inventories/slurm-local playbooks/site.yml --skip-tags provision \
  -e "$vars" -e dpushard_scheduler=direct
direct_run=$(cat build/work/runs/latest)
echo "slurm-overhead: SLURM run, $(date -u +%FT%TZ)"
ansible-playbook -i inventories/slurm-local playbooks/site.yml --skip-tags provision,distribute \
  -e "$vars" -e dpushard_scheduler=slurm \
  -e "{\"report_extra_args\": [\"--direct-baseline\", \"$src/results/$direct_run\"]}"
slurm_run=$(cat build/work/runs/latest)
echo "slurm-overhead: direct $direct_run, SLURM $slurm_run"
sed -n '/^## SLURM/,/^## Files/p' "results/$slurm_run/report.md"
