#!/usr/bin/env bash
# The main job: the whole benchmark on this machine, as a new user runs it. Installs what
# is missing (scripts/install-deps.sh --run), then runs the Ansible site playbook on the local
# inventory: build, four local `sim` workers standing in for four KV260 boards, the CNN and
# ConvViT scaling sweeps at 1M-200M (models without weights, made by the suites), and
# results/<run-id>/report.md.
#
#   scripts/run-local.sh                                  # the default sweep
#   scripts/run-local.sh -e '{"dpushard_sizes": ["10M", "100M"]}'   # any ansible-playbook args
#
# Equivalent to: ansible-playbook -i inventories/local playbooks/site.yml
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --run

# Ansible reads ./ansible.cfg only from a folder that is not world-writable; name it.
export ANSIBLE_CONFIG="$PWD/ansible.cfg"
start=$(date +%s)
ansible-playbook -i inventories/local playbooks/site.yml "$@"

run_id=$(cat build/work/runs/latest 2>/dev/null || true)
echo "run-local: done in $(($(date +%s) - start)) s; report: results/${run_id:-<run-id>}/report.md"
