#!/usr/bin/env bash
# ctest Ansible.BuildCopyMode: the build role with build_mode copy (how inventories/kria gets
# the boards' cross-built binary, docs/aarch64.md), on this machine in a scratch folder:
#  1. the binary to copy is missing: the play fails, in one line saying how to build it;
#  2. it is there: it is copied to <dpushard_build_dir>/tools/dpushard, byte for byte and
#     executable; a second run changes nothing;
#  3. inventories/kria copies the cross build's board binary (build/aarch64/board), which the
#     controller builds with scripts/cross-aarch64.sh --board-only when it is missing or stale;
#  4. with a build command (a stand-in here, stand_in_build.sh: no cross-compiling) in a
#     scratch checkout: a missing binary is built on the controller, recorded with the
#     checkout's commit and copied; a second run changes nothing and builds nothing; a source
#     newer than the binary, then a new commit, each make one build; run again, nothing.
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
assert v["build_copy_from"].endswith("/build/aarch64/board"), v["build_copy_from"]
assert v["build_copy_build_command"] == "scripts/cross-aarch64.sh --board-only", v["build_copy_build_command"]' "$vars" ||
  fail "inventories/kria does not copy build/aarch64/board, built with cross-aarch64.sh --board-only"
echo "build_copy: inventories/kria copies build/aarch64/board/tools/dpushard, built by cross-aarch64.sh --board-only"

# 4. The controller builds the binary when it is missing or stale: a scratch checkout (a git
# repository with one source file) and the stand-in build command.
checkout=$scratch/checkout
mkdir -p "$checkout/core"
echo 'int main() {}' >"$checkout/core/main.cpp"
git -C "$checkout" init -q
git -C "$checkout" -c user.name=t -c user.email=t@t.invalid add core
git -C "$checkout" -c user.name=t -c user.email=t@t.invalid commit -qm one
builds=$scratch/builds.log
: >"$builds"
play_building() {  # log-name
  ansible-playbook -i tests/harness/build_copy/hosts.yml tests/harness/build_copy/build.yml \
    -e "dpushard_src_dir=$checkout build_copy_from=$scratch/built/board dpushard_build_dir=$scratch/node-build2" \
    -e "build_copy_build_command='$src/tests/harness/build_copy/stand_in_build.sh $scratch/built/board $builds'" \
    -e '{"build_copy_sources": ["core", "CMakeLists.txt"]}' \
    >"$scratch/$1.log" 2>&1 || { cat "$scratch/$1.log" >&2; fail "$1"; }
}
expect_builds() {  # count what
  [[ $(wc -l <"$builds") -eq $1 ]] || { cat "$scratch/$3.log" >&2; fail "$2: $(wc -l <"$builds") builds, not $1"; }
}
play_building missing-built
expect_builds 1 "a missing binary" missing-built
grep -Eq 'changed=[1-9].*failed=0' <(recap missing-built) || fail "missing: $(recap missing-built)"
cmp "$scratch/built/board/tools/dpushard" "$scratch/node-build2/tools/dpushard" || fail "the built binary was not copied"
[[ $(cat "$scratch/built/board/tools/dpushard.commit") == "$(git -C "$checkout" rev-parse HEAD)" ]] ||
  fail "the commit was not recorded"
grep -q "built in $checkout\$" "$builds" || fail "the build command did not run in the checkout"
play_building current
expect_builds 1 "a current binary" current
grep -Eq 'changed=0 .*failed=0' <(recap current) || fail "current: $(recap current)"
echo "build_copy: a missing binary is built on the controller, recorded and copied; when current, nothing runs"

touch -d '+2 seconds' "$checkout/core/main.cpp"
play_building newer-source
expect_builds 2 "a source newer than the binary" newer-source
grep -Eq 'changed=[1-9].*failed=0' <(recap newer-source) || fail "newer source: $(recap newer-source)"
git -C "$checkout" -c user.name=t -c user.email=t@t.invalid commit -q --allow-empty -m two
play_building new-commit
expect_builds 3 "another commit" new-commit
[[ $(cat "$scratch/built/board/tools/dpushard.commit") == "$(git -C "$checkout" rev-parse HEAD)" ]] ||
  fail "the new commit was not recorded"
cmp "$scratch/built/board/tools/dpushard" "$scratch/node-build2/tools/dpushard" || fail "the rebuilt binary was not copied"
play_building current-again
expect_builds 3 "a current binary" current-again
grep -Eq 'changed=0 .*failed=0' <(recap current-again) || fail "current again: $(recap current-again)"
echo "build_copy: a newer source and a new commit each rebuild it once; then nothing changes"
