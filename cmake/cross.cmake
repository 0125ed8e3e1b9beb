# A cross build (cmake/toolchains/) switches off the options whose dependency the target has
# no package for here, one line each, instead of failing in find_package. A native build is
# left alone: there a missing dependency is an error.
if(NOT CMAKE_CROSSCOMPILING)
  return()
endif()
set(_cross "dpushard: cross build for ${CMAKE_SYSTEM_PROCESSOR}:")

if(DPUSHARD_WITH_ONEDNN)
  find_package(dnnl QUIET)
  if(NOT dnnl_FOUND)
    set(DPUSHARD_WITH_ONEDNN OFF CACHE BOOL "Build the oneDNN-based cpu backend" FORCE)
    message(STATUS "${_cross} DPUSHARD_WITH_ONEDNN=OFF (no oneDNN for the target: Debian's "
                   "libdnnl-dev:arm64 cannot be installed beside libdnnl-dev:amd64)")
  endif()
endif()

if(DPUSHARD_WITH_ONNX)
  find_package(ONNX QUIET CONFIG)
  if(NOT ONNX_FOUND)
    set(DPUSHARD_WITH_ONNX OFF CACHE BOOL "Build ONNX import (dpushard import)" FORCE)
    message(STATUS "${_cross} DPUSHARD_WITH_ONNX=OFF (no ONNX for the target: Debian's "
                   "libonnx-dev:arm64 cannot be installed beside libonnx-dev:amd64; "
                   "`dpushard import` runs on the host)")
  endif()
endif()

if(DPUSHARD_WITH_IMAGES)
  find_package(PkgConfig QUIET)
  find_package(PNG QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(TurboJPEG QUIET IMPORTED_TARGET libturbojpeg)
  endif()
  if(NOT TurboJPEG_FOUND OR NOT PNG_FOUND)
    set(DPUSHARD_WITH_IMAGES OFF CACHE BOOL "Decode JPEG/PNG inputs (libturbojpeg0-dev, libpng-dev)" FORCE)
    message(STATUS "${_cross} DPUSHARD_WITH_IMAGES=OFF (libturbojpeg0-dev:arm64 or "
                   "libpng-dev:arm64 not installed: .npy inputs only)")
  endif()
endif()

if(DPUSHARD_BUILD_BENCH)
  find_package(benchmark QUIET)
  if(NOT benchmark_FOUND)
    set(DPUSHARD_BUILD_BENCH OFF CACHE BOOL "Build the Google Benchmark suites" FORCE)
    message(STATUS "${_cross} DPUSHARD_BUILD_BENCH=OFF (libbenchmark-dev:arm64 is not "
                   "installed: the benchmarks are not cross-built)")
  endif()
endif()

# The board's dpushard with vart (tools/board/) compiles against the Vitis AI 3.5 headers of
# ../shared; UniLog's header includes glog's, which the host's libgoogle-glog-dev provides
# (headers only: nothing of glog is linked, tools/board/vart_link_stubs.py fails if it were).
if(DPUSHARD_BOARD_VART)
  find_path(DPUSHARD_CROSS_GLOG_INCLUDE glog/logging.h)
  if(NOT EXISTS ${DPUSHARD_VART_RUNTIME_DIR}/v3.5/include/vart/runner.hpp)
    set(DPUSHARD_BOARD_VART OFF CACHE BOOL "Cross builds: also build the board's dpushard with the vart backend" FORCE)
    message(STATUS "${_cross} DPUSHARD_BOARD_VART=OFF (no Vitis AI 3.5 headers in "
                   "${DPUSHARD_VART_RUNTIME_DIR}/v3.5/include: no board binary with vart)")
  elseif(NOT DPUSHARD_CROSS_GLOG_INCLUDE)
    set(DPUSHARD_BOARD_VART OFF CACHE BOOL "Cross builds: also build the board's dpushard with the vart backend" FORCE)
    message(STATUS "${_cross} DPUSHARD_BOARD_VART=OFF (no glog/logging.h, which UniLog's header "
                   "includes: install libgoogle-glog-dev)")
  endif()
endif()

if(NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(STATUS "${_cross} no emulator (qemu-aarch64): the tests build but ctest cannot run them")
endif()

# yaml-cpp: Debian 12's libyaml-cpp-dev is not multiarch (its :arm64 and :amd64 conflict),
# so the target's CMake config is missing. The headers are the host's (arch-independent, same
# version) and the library is libyaml-cpp0.7:arm64, which installs beside the host's.
find_package(yaml-cpp QUIET)
if(NOT yaml-cpp_FOUND)
  find_library(DPUSHARD_CROSS_YAML_CPP NAMES yaml-cpp libyaml-cpp.so.0.7 REQUIRED)
  find_path(DPUSHARD_CROSS_YAML_CPP_INCLUDE yaml-cpp/yaml.h REQUIRED)
  add_library(yaml-cpp SHARED IMPORTED)
  set_target_properties(yaml-cpp PROPERTIES IMPORTED_LOCATION ${DPUSHARD_CROSS_YAML_CPP}
    INTERFACE_INCLUDE_DIRECTORIES ${DPUSHARD_CROSS_YAML_CPP_INCLUDE})
  set(yaml-cpp_FOUND TRUE)
  message(STATUS "${_cross} yaml-cpp from ${DPUSHARD_CROSS_YAML_CPP} with the host's headers "
                 "(libyaml-cpp-dev:arm64 conflicts with libyaml-cpp-dev)")
endif()

# The binary goes to an Ubuntu 22.04 board, whose protobuf (libprotobuf.so.23), spdlog (1.9)
# and fmt (8) are other releases than Debian 12's (libprotobuf.so.32, libspdlog.so.1.10,
# libfmt.so.9): link protobuf statically and use spdlog and fmt header-only, so that dpushard
# needs only libraries with the board's sonames (yaml-cpp 0.7, OpenSSL 3, libstdc++, glibc).
# scripts/cross-aarch64.sh checks the binary's needed libraries and symbol versions.
set(Protobuf_USE_STATIC_LIBS ON)
find_package(fmt REQUIRED)
add_library(spdlog::spdlog_header_only INTERFACE IMPORTED)
set_target_properties(spdlog::spdlog_header_only PROPERTIES
  INTERFACE_COMPILE_DEFINITIONS SPDLOG_FMT_EXTERNAL
  INTERFACE_LINK_LIBRARIES "Threads::Threads;fmt::fmt-header-only")
add_library(spdlog::spdlog INTERFACE IMPORTED)  # spdlog's config then defines nothing more
set_target_properties(spdlog::spdlog PROPERTIES INTERFACE_LINK_LIBRARIES spdlog::spdlog_header_only)
message(STATUS "${_cross} protobuf linked statically, spdlog and fmt header-only "
               "(the board's Ubuntu 22.04 has other releases of them)")
