#!/usr/bin/env bash
# Installs the Debian packages dpushard needs. Idempotent: when everything is present it
# only checks and returns.
#
#   scripts/install-deps.sh          everything: build, tests, sanitizers, fuzzers, benchmarks
#                                    against PyTorch, playbooks and their lint (the test suite)
#   scripts/install-deps.sh --run    what the main job needs: build dpushard and the suites,
#                                    run the playbooks, plot the report (scripts/run-local.sh)
#   scripts/install-deps.sh --aarch64  only the aarch64 cross build and qemu-user
#                                    (scripts/cross-aarch64.sh; adds the arm64 architecture)
#
# --run leaves out PyTorch, clang and the test libraries, which take most of the install time
# on a fresh machine.
set -euo pipefail

# ocl-icd-opencl-dev: oneDNN's CMake config (dnnl-config.cmake) requires OpenCL, which
# libdnnl-dev only recommends, and recommends are not installed here.
# python3-apt: Ansible's package_facts (the deps role) reads dpkg through it; a minimal
# Debian root lacks it and the role stops with "Could not detect a supported package manager".
run_packages=(
  cmake ninja-build g++ pkg-config git
  libboost-dev libyaml-cpp-dev libbenchmark-dev libbenchmark-tools
  libdnnl-dev ocl-icd-opencl-dev libprotobuf-dev protobuf-compiler nlohmann-json3-dev
  libspdlog-dev libcli11-dev libssl-dev libonnx-dev
  libturbojpeg0-dev libpng-dev
  python3-matplotlib python3-apt ansible-core
)
# glog, gflags, boost-filesystem: the real XIR/UniLog 3.5 built at test time (tests/vart).
test_packages=(
  clang libclang-rt-dev clang-format libgtest-dev libgmock-dev
  libgoogle-glog-dev libgflags-dev libboost-filesystem-dev
  python3-numpy python3-torch python3-torchvision python3-onnx python3-sklearn
  ansible-lint
  # Ansible.SlurmSweep: the single-host SLURM cluster of inventories/slurm-local, with
  # accounting (sacct) through slurmdbd and MariaDB.
  slurm-wlm munge slurmdbd mariadb-server
  # NetFaults.*: workers in network namespaces joined by veth pairs (ip), loss and
  # partitions with nftables, 100 Mbit/s links with tc tbf (tests/faults/net_faults.py).
  iproute2 nftables
)

# The aarch64 cross build for the KV260 (scripts/cross-aarch64.sh, docs/aarch64.md): Debian's
# GCC 11 cross compiler (Ubuntu 22.04's GCC, so what builds here builds on the board), qemu-user to run its tests, and arm64 libraries installed beside the host's.
# Debian 12 cannot install libdnnl-dev, libonnx-dev or libyaml-cpp-dev for arm64 beside the
# amd64 ones: the cpu backend and ONNX import are off there, and yaml-cpp is its runtime
# library with the host's headers (cmake/cross.cmake).
# libgoogle-glog-dev (the host's): only its headers, which the Vitis AI headers include, for
# the board's binary with vart (tools/board/); nothing of glog is linked into it.
aarch64_packages=(
  g++-11-aarch64-linux-gnu qemu-user
  libyaml-cpp0.7:arm64 libprotobuf-dev:arm64 libboost-dev:arm64 libspdlog-dev:arm64
  libfmt-dev:arm64 libssl-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
  libgoogle-glog-dev
)

case "${1:-}" in
  --run) packages=("${run_packages[@]}") ;;
  --aarch64) packages=("${aarch64_packages[@]}") ;;
  "") packages=("${run_packages[@]}" "${test_packages[@]}" "${aarch64_packages[@]}") ;;
  *)
    echo "install-deps: unknown argument '$1' (usage: scripts/install-deps.sh [--run|--aarch64])" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
# arm64 packages need the architecture added once (idempotent: only when it is not there).
if [[ " ${missing[*]}" == *:arm64* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  "${sudo_cmd[@]}" dpkg --add-architecture arm64
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
