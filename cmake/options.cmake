# dpushard build options. Every option is prefixed DPUSHARD_ and documented here,
# where it is defined (the oneDNN convention). Set them with -D on the cmake line
# or in CMakePresets.json.

# Treat compiler warnings as errors. On in the dev and CI presets so that a new
# warning fails the build instead of scrolling past.
option(DPUSHARD_WERROR "Treat compiler warnings as errors" OFF)

# Build the GoogleTest suites under tests/ and register them with ctest.
option(DPUSHARD_BUILD_TESTS "Build the unit and integration tests" ON)

# Also compile the slow opt-in tests (torchvision models at their native sizes, the timing
# model's calibration point through the real ONNX import): minutes each, so they exist only
# when asked for, and a normal run never reports them as skipped.
option(DPUSHARD_SLOW_TESTS "Build the slow opt-in tests" OFF)

# Build the Google Benchmark suites under bench/.
option(DPUSHARD_BUILD_BENCH "Build the Google Benchmark suites" ON)

# Instrument everything with AddressSanitizer and UndefinedBehaviorSanitizer.
# Used by the asan preset; slows execution about 2x.
option(DPUSHARD_SANITIZE "Build with -fsanitize=address,undefined" OFF)

# Build the `vart` backend, which runs fragments on a real DPU through Xilinx's
# VART runtime. Needs Vitis AI's runtime (vart, xir) installed: it exists on the
# KV260 board image and in the Vitis AI docker, never on a plain Debian host.
option(DPUSHARD_WITH_VART "Build the vart backend (needs Vitis AI's VART and XIR)" OFF)

# A cross build for the boards (cmake/toolchains/) also makes the board's command line with
# the vart backend, <build>/board/tools/dpushard: compiled against the Vitis AI 3.5 headers
# in DPUSHARD_VART_RUNTIME_DIR and linked against link-only stand-ins of libxir.so.3 and
# libvart-runner.so.3 (tools/board/), so that on the board it uses the board's own runtime.
# The playbooks ship it to the boards (inventories/kria). Off, or without the headers (then
# one line says so): only the plain <build>/tools/dpushard. A native build ignores it.
option(DPUSHARD_BOARD_VART "Cross builds: also build the board's dpushard with the vart backend" ON)

# Where the test suite finds the Vitis AI runtime's public headers (v3.5/include,
# v3.0/include) and XIR/UniLog/VART-runner 3.5 sources (v3.5/src), never committed here
# (../shared/vitis-ai-runtime/SOURCES.md). The tests compile the vart backend against both
# header releases, build the real XIR, and run the backend on a runtime double of VART
# (tests/vart/README.md). A clone without the folder skips those tests with one line each.
set(DPUSHARD_VART_RUNTIME_DIR "${CMAKE_SOURCE_DIR}/../shared/vitis-ai-runtime"
    CACHE PATH "Folder with the Vitis AI runtime headers (v3.x/include) and 3.5 sources")

# DPUSHARD_VART_HEADERS is the option of the compile-only project tests/vart/headers (not of
# this build): one folder holding vart/, xir/ and UniLog/ headers, against which every source
# that includes VART/XIR is compiled with -Werror. ctest runs it for 3.5 and 3.0
# (VartHeaders.*); for another release, e.g. a board image's:
#   cmake -S tests/vart/headers -B build/vart-headers -DDPUSHARD_VART_HEADERS=/usr/include
#   cmake --build build/vart-headers

# Build the `cpu` backend on oneDNN (libdnnl-dev). Off only for minimal builds.
option(DPUSHARD_WITH_ONEDNN "Build the oneDNN-based cpu backend" ON)

# Build ONNX import (core/src/onnx, `dpushard import`; libonnx-dev). Off only where the
# target has no ONNX package (the aarch64 cross build, cmake/cross.cmake): `dpushard import`
# then says it was not built, and the import runs on the host.
option(DPUSHARD_WITH_ONNX "Build ONNX import (dpushard import)" ON)

# Decode JPEG and PNG images as model inputs (`exec`/`run --input` with images or folders
# of them: core/src/frames, docs/inference.md) with libjpeg-turbo's TurboJPEG API
# (libturbojpeg0-dev) and libpng (libpng-dev). Off: .npy inputs only, and an image given
# as input is a one-line error saying this build has no image support.
option(DPUSHARD_WITH_IMAGES "Decode JPEG/PNG inputs (libturbojpeg0-dev, libpng-dev)" ON)

# Compile the libraries, the command line and the benchmarks as unity sources (CMake's
# UNITY_BUILD: a few files per compiler run) instead of one object per file. Halves a
# cold build on two cores, at the cost of slower incremental rebuilds. On in the release and
# asan presets, the aarch64 cross build (scripts/cross-aarch64.sh) and the playbooks' build;
# off in the dev preset, so every file still compiles on its own there (a developer's
# check: CI builds no dev preset, to stay within its time). Tests and fuzzers always
# compile file by file.
option(DPUSHARD_UNITY_BUILD "Compile the libraries and tools as unity sources" OFF)

# Build libFuzzer targets (needs clang) for the xmodel reader and the frame decoder.
option(DPUSHARD_BUILD_FUZZERS "Build libFuzzer targets (clang only)" OFF)
