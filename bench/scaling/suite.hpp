#pragma once
// A scaling suite: one Google Benchmark per (model size, node count, strategy) of a zoo
// family, each streaming frames through a running dpushard cluster in-process
// (cluster::run_on_cluster). Plans are made or read once, before any benchmark runs; the
// manual time of an iteration is the distributed span alone (first input sent to last
// output received). See docs/benchmarking.md for the counters and the context.

#include <string>

namespace dpushard::bench {

// The whole program of bench_<family>_scaling: flags, plans, registration, run. Returns
// the process exit status.
int run_scaling_suite(const std::string& family, int argc, char** argv);

}  // namespace dpushard::bench
