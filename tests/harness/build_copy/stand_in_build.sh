#!/usr/bin/env bash
# ctest Ansible.BuildCopyMode: a stand-in for `scripts/cross-aarch64.sh --board-only` (the
# build role's build_copy_build_command): writes BUILD_DIR/tools/dpushard, a new file each
# time, and appends a line to LOG, so the test can count the builds without cross-compiling.
#   stand_in_build.sh BUILD_DIR LOG
set -euo pipefail
build=${1:?usage: stand_in_build.sh BUILD_DIR LOG}
log=${2:?usage: stand_in_build.sh BUILD_DIR LOG}
echo "built in $(pwd)" >>"$log"
mkdir -p "$build/tools"
printf '#!/bin/sh\necho stand-in board binary, build %s\n' "$(wc -l <"$log")" >"$build/tools/dpushard"
chmod 0755 "$build/tools/dpushard"
