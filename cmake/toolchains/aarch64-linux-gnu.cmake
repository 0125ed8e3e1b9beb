# Cross build for the Kria KV260's Cortex-A53 (64-bit Arm, Ubuntu 22.04) with Debian's cross
# compiler (g++-aarch64-linux-gnu) and the arm64 libraries installed beside the host's
# (dpkg --add-architecture arm64; scripts/cross-aarch64.sh installs both). docs/aarch64.md.
#
#   cmake -S . -B build/aarch64 -G Ninja \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#
# Options whose dependency has no arm64 package here switch off in cmake/cross.cmake, one
# line each at configure time. protoc stays the host's (protobuf-compiler): it runs here.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

# GCC 11, the compiler of Ubuntu 22.04 (the Kria image): what builds here builds on the
# board, and the binary needs no libstdc++ newer than the board's. DPUSHARD_CROSS_GCC_SUFFIX=""
# takes Debian's default cross compiler (GCC 12) instead.
set(DPUSHARD_CROSS_GCC_SUFFIX "-11" CACHE STRING "Suffix of the aarch64 cross compiler's name (-11: GCC 11)")
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc${DPUSHARD_CROSS_GCC_SUFFIX})
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++${DPUSHARD_CROSS_GCC_SUFFIX})
# Debian's multiarch layout: arm64 libraries and their CMake configs live in
# /usr/lib/aarch64-linux-gnu, headers in /usr/include (shared) and /usr/include/aarch64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# With it, find_library and find_package search /usr/lib/aarch64-linux-gnu and never the
# amd64 /usr/lib/x86_64-linux-gnu; find_program finds the host's programs (protoc).
# pkg-config (FindOpenSSL asks it first) must read the target's .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)

# Test binaries (and gtest_discover_tests at build time) run under qemu-user, with the
# multiarch arm64 libc (libc6:arm64, /lib/ld-linux-aarch64.so.1) that the -dev packages bring.
# Not `-L /usr/aarch64-linux-gnu`: that mixes the cross libc with the multiarch libraries,
# and there the first thread a test starts (Boost.Asio's pool) hangs.
find_program(DPUSHARD_QEMU_AARCH64 qemu-aarch64)
if(DPUSHARD_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${DPUSHARD_QEMU_AARCH64})
endif()
