#!/usr/bin/env bash
# ctest Ansible.BuildCopyMode: the build role with build_mode copy (how inventories/kria gets
# the boards' cross-built binary, docs/aarch64.md), on this machine in a scratch folder:
#  1. the binary to copy is missing: the play fails, in one line saying how to build it;
#  2. it is there: it is copied to <dpushard_build_dir>/tools/dpushard, byte for byte and
#     executable; a second run changes nothing;
#  3. inventories/kria copies the cross build's board binary (build/aarch64/board).
#
#   build_copy.sh SOURCE_DIR
set -euo pipefail
src=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$src"
export ANSIBLE_CONFIG="$src/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
fail() { echo "build_copy: FAILED: $*" >&2; exit 1; }
play() {  # log-name
  ansible-playbook -i tests/harness/build_copy/hosts.yml tests/harness/build_copy/build.yml \
    -e "build_copy_from=$scratch/cross/board dpushard_build_dir=$scratch/node-build" \
    >"$scratch/$1.log" 2>&1
}
recap() { grep -E '^board +:' "$scratch/$1.log" || true; }

# 1. Nothing built yet.
if play missing; then fail "the play passed without a binary to copy"; fi
# (Ansible's YAML output wraps the message: read it as one line.)
tr -s ' \n' ' ' <"$scratch/missing.log" |
  grep -q "build_mode copy: $scratch/cross/board/tools/dpushard does not exist on the controller: build it first" ||
  { cat "$scratch/missing.log" >&2; fail "no reason for the failure"; }
echo "build_copy: a missing binary stops the play, saying how to build it"

# 2. A built binary (any file stands for it here).
mkdir -p "$scratch/cross/board/tools"
printf '#!/bin/sh\necho stand-in for the board binary\n' >"$scratch/cross/board/tools/dpushard"
play first || { cat "$scratch/first.log" >&2; fail "first run"; }
grep -Eq 'changed=[1-9].*failed=0' <(recap first) || fail "first run: $(recap first)"
cmp "$scratch/cross/board/tools/dpushard" "$scratch/node-build/tools/dpushard" ||
  fail "the copy differs"
[[ -x $scratch/node-build/tools/dpushard ]] || fail "the copy is not executable"
play second || { cat "$scratch/second.log" >&2; fail "second run"; }
grep -Eq 'changed=0 .*failed=0' <(recap second) || fail "second run: $(recap second)"
echo "build_copy: copied byte for byte and executable; the second run changes nothing"

# 3. The kria inventory ships the cross-built board binary.
vars=$(ansible-inventory -i inventories/kria --host kv260-a)
/usr/bin/python3 -c 'import json, sys
v = json.loads(sys.argv[1])
assert v["build_mode"] == "copy", v["build_mode"]
assert v["build_copy_from"].endswith("/build/aarch64/board"), v["build_copy_from"]' "$vars" ||
  fail "inventories/kria does not copy build/aarch64/board"
echo "build_copy: inventories/kria copies build/aarch64/board/tools/dpushard"
