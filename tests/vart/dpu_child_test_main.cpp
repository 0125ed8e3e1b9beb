// main() of the test programs that run the vart backend supervised: the DPU process is the
// program's own executable run as `dpu-child` (core/src/exec/vart/dpu_child.hpp), so the
// test binary must be one too, before GoogleTest sees the arguments.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string_view>

#include "dpushard/exec/vart_backend.hpp"

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "dpu-child")
    return dpushard::run_dpu_child(argc, argv);
  testing::InitGoogleMock(&argc, argv);
  return RUN_ALL_TESTS();
}
