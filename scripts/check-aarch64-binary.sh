#!/usr/bin/env bash
# Checks that an aarch64 dpushard runs on the KV260's Ubuntu 22.04 (docs/aarch64.md): it needs
# only shared libraries whose sonames Ubuntu 22.04 has (with the Vitis AI 3.5 runtime, for
# the board's binary with vart), no GLIBC_ symbol version newer than 2.35 (glibc 2.35), no
# GLIBCXX_ newer than 3.4.30 and no CXXABI_ newer than 1.3.13 (libstdc++ of GCC 12); and that
# the board's own libraries are what it binds to: no RPATH/RUNPATH, no copy relocation (it
# would fix the size of a library's data object at link time, here a link stand-in's) and no
# exported protobuf symbol (the binary's static protobuf would take the place of the board's
# libprotobuf.so.23 in XIR). Prints what it found; exits 1 naming each fault.
#   scripts/check-aarch64-binary.sh [--needs SONAME]... AARCH64_BINARY
# --needs SONAME: fail unless the binary needs that library (the board binary: libxir.so.3).
set -euo pipefail

required=()
while [[ ${1:-} == --needs ]]; do
  required+=("${2:?--needs takes a soname}")
  shift 2
done
binary=${1:?usage: scripts/check-aarch64-binary.sh [--needs SONAME]... AARCH64_BINARY}
max_glibc=2.35
max_glibcxx=3.4.30
max_cxxabi=1.3.13
# Ubuntu 22.04 (jammy) sonames of what dpushard links dynamically: libc6 2.35, libstdc++6 and
# libgcc-s1 from GCC 12, libssl3 3.0.2, libyaml-cpp0.7 0.7.0; and the Vitis AI 3.5 runtime's
# libraries on a Kria board (SOVERSION 3, the major version of its CMake projects: xir,
# unilog and vart 3.5.0, whose runner and util components are libvart-runner/-util).
board_libs=(libc.so.6 libm.so.6 libgcc_s.so.1 libstdc++.so.6 ld-linux-aarch64.so.1
            libssl.so.3 libcrypto.so.3 libyaml-cpp.so.0.7
            libxir.so.3 libunilog.so.3 libvart-runner.so.3 libvart-util.so.3)

objdump=aarch64-linux-gnu-objdump
readelf=aarch64-linux-gnu-readelf
if ! $readelf -h "$binary" 2>/dev/null | grep -q 'Machine: *AArch64'; then
  echo "check-aarch64-binary: error: $binary is not an aarch64 ELF file" >&2
  exit 1
fi

failed=0
# newer A B: is version A newer than B?
newer() { [[ $1 != "$2" && $(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n 1) == "$1" ]]; }

needed=$($readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in $needed; do
  if [[ " ${board_libs[*]} " != *" $lib "* ]]; then
    echo "check-aarch64-binary: $binary needs $lib, which Ubuntu 22.04 does not have" >&2
    failed=1
  fi
done
echo "check-aarch64-binary: needed libraries: ${needed//$'\n'/ }"
for lib in "${required[@]}"; do
  if [[ $'\n'$needed$'\n' != *$'\n'$lib$'\n'* ]]; then
    echo "check-aarch64-binary: $binary does not need $lib (--needs)" >&2
    failed=1
  fi
done

# Nothing that steers the loader away from the board's libraries.
search_path=$($readelf -d "$binary" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
copies=$($readelf -rW "$binary" | awk '$3 == "R_AARCH64_COPY" {print $5}' | tr '\n' ' ')
exported_protobuf=$($objdump -T "$binary" | awk '!/\*UND\*/ && $NF ~ /^_ZN6google8protobuf/' | wc -l)
echo "check-aarch64-binary: library search path: ${search_path:-none}; copy relocations:" \
  "${copies:-none}; exported protobuf symbols: $exported_protobuf"
if [[ -n $search_path ]]; then
  echo "check-aarch64-binary: $binary has a library search path (RPATH/RUNPATH): $search_path" >&2
  failed=1
fi
if [[ -n $copies ]]; then
  echo "check-aarch64-binary: $binary has copy relocations (data bound by its link-time size): $copies" >&2
  failed=1
fi
if ((exported_protobuf > 0)); then
  echo "check-aarch64-binary: $binary exports $exported_protobuf protobuf symbols, which would" \
    "take the place of the board's libprotobuf.so.23 in its Vitis AI libraries" >&2
  failed=1
fi

# Undefined dynamic symbols with their versions: "... *UND* ... (GLIBC_2.34) name" or
# "... *UND* ... GLIBC_2.17 name".
symbols=$($objdump -T "$binary" | awk '/\*UND\*/ {v=$(NF-1); gsub(/[()]/, "", v); print v, $NF}')
for family in GLIBC GLIBCXX CXXABI; do
  case $family in
    GLIBC) max=$max_glibc ;;
    GLIBCXX) max=$max_glibcxx ;;
    CXXABI) max=$max_cxxabi ;;
  esac
  versions=$(awk -v f="${family}_" 'index($1, f) == 1 {sub(f, "", $1); print $1}' <<<"$symbols" | sort -uV)
  highest=$(tail -n 1 <<<"$versions")
  echo "check-aarch64-binary: highest ${family}_ version needed: ${highest:-none} (board: $max)"
  for v in $versions; do
    if newer "$v" "$max"; then
      names=$(awk -v want="${family}_$v" '$1 == want {print $2}' <<<"$symbols" | tr '\n' ' ')
      echo "check-aarch64-binary: $binary needs ${family}_$v (newer than $max) for: $names" >&2
      failed=1
    fi
  done
done
exit "$failed"
