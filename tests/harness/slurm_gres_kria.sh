#!/usr/bin/env bash
# ctest Ansible.SlurmGres.kria: renders the slurm role's gres.conf with the kria inventory's
# variables and checks each board's node names its DPU device (File=/dev/dri/renderD128),
# while slurm-local's stays count-only.
#
#   slurm_gres_kria.sh SOURCE_DIR
set -euo pipefail
src=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$src"
export ANSIBLE_CONFIG="$src/ansible.cfg" ANSIBLE_NOCOLOR=1
render() {  # inventory output extra-vars...: the template module outside the role
  local inventory=$1 out=$2
  shift 2
  ansible -i "inventories/$inventory" controller -m ansible.builtin.template \
    -a "src=playbooks/roles/slurm/templates/gres.conf.j2 dest=$out mode=0644" "$@" >"$scratch/log" ||
    { cat "$scratch/log" >&2; echo "slurm_gres_kria: FAILED: rendering for $inventory" >&2; exit 1; }
}
# kria sets slurm_gres_file and slurm_nodes; the rest are the role's defaults.
render kria "$scratch/kria.conf" -e slurm_gres_name=fpga -e slurm_gres_type=kv260 -e slurm_gres_count=1
# slurm-local sets none of the slurm role's variables: all are the defaults.
render slurm-local "$scratch/local.conf" -e @playbooks/roles/slurm/defaults/main.yml
cat "$scratch/kria.conf"
for node in kv260-a kv260-b kv260-c; do
  grep -qx "NodeName=$node Name=fpga Type=kv260 File=/dev/dri/renderD128" "$scratch/kria.conf" ||
    { echo "slurm_gres_kria: FAILED: no File= line for $node" >&2; exit 1; }
done
[[ $(grep -c '^NodeName=kv260-[1-3] Name=fpga Type=kv260 Count=1$' "$scratch/local.conf") -eq 3 ]] ||
  { echo "slurm_gres_kria: FAILED: slurm-local's gres.conf is not count-only" >&2; exit 1; }
! grep -q 'File=' <(grep -v '^#' "$scratch/local.conf") ||
  { echo "slurm_gres_kria: FAILED: slurm-local's gres.conf names a device" >&2; exit 1; }
echo "slurm_gres_kria: OK"
