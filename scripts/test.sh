#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what it needs, builds the
# release preset (warnings as errors) and runs every test with ctest. Then rebuilds the
# tests that read untrusted input (xmodel files, frames) under ASan + UBSan and runs them.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

jobs=$(nproc)
cmake --preset release
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"

# Readers of untrusted bytes (xmodel files), again under AddressSanitizer + UBSan.
if [[ "${DPUSHARD_SKIP_ASAN:-0}" != "1" ]]; then
  asan_tests=(xmodel/xmodel_fixture_test xmodel/xmodel_schema_test
              xmodel/xmodel_roundtrip_test xmodel/xmodel_corruption_test)
  cmake --preset asan
  cmake --build --preset asan -j "$jobs" --target "${asan_tests[@]##*/}"
  for t in "${asan_tests[@]}"; do
    echo "asan: $t"
    "build/asan/tests/$t" --gtest_brief=1
  done
fi
