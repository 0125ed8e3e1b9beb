// bench_convvit_scaling: ConvViT zoo models (convolutional patch stem, transformer-block
// experts, tail) of increasing size on 1..N nodes of a running dpushard cluster, per split
// strategy. Flags: --help and docs/benchmarking.md.

#include "scaling/suite.hpp"

int main(int argc, char** argv) {
  return dpushard::bench::run_scaling_suite("convvit", argc, argv);
}
