#!/usr/bin/env bash
# Installs every Debian package dpushard needs to build, test, benchmark and run its
# playbooks. Idempotent: when everything is present it only checks and returns.
set -euo pipefail

# ocl-icd-opencl-dev: oneDNN's CMake config (dnnl-config.cmake) requires OpenCL, which
# libdnnl-dev only recommends, and recommends are not installed here.
packages=(
  cmake ninja-build g++ clang libclang-rt-dev clang-format pkg-config git
  libboost-dev libyaml-cpp-dev libbenchmark-dev libbenchmark-tools libgtest-dev libgmock-dev
  libdnnl-dev ocl-icd-opencl-dev libprotobuf-dev protobuf-compiler nlohmann-json3-dev libspdlog-dev
  libcli11-dev libssl-dev libonnx-dev
  python3-numpy python3-torch python3-torchvision python3-onnx python3-matplotlib python3-sklearn
  ansible-core ansible-lint
)

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
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
