// bench_cnn_scaling: CNN zoo models (conv stem, residual conv experts, tail) of increasing
// size on 1..N nodes of a running dpushard cluster, per split strategy. Flags: --help and
// docs/benchmarking.md.

#include "scaling/suite.hpp"

int main(int argc, char** argv) { return dpushard::bench::run_scaling_suite("cnn", argc, argv); }
