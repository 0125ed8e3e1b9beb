#pragma once
// DPU utilization per model and per fragment (docs/perf.md "DPU utilization"): the share of
// a model's MACs on the DPU and of one frame's time there, from the plans' timing model, and
// the DPU's busy share of the frame period at the rate a configuration ran.

#include <string>

#include "analysis.hpp"

namespace dpushard::report {

// The DPU's busy share of the frame period: the plan's modeled DPU ms per frame times the
// measured rate, the mean over the configuration's nodes and on its busiest node (0: the
// plan recorded no DPU time).
double dpu_busy_mean(const Measurement& m);
double dpu_busy_busiest(const Measurement& m);

// "### DPU utilization" of one family: a row per configuration with its figures and each
// fragment's shares.
std::string render_dpu_section(const FamilyAnalysis& fa, bool modeled);

// The published row's cells for one family: dpushard's figure on the published metric (the
// DPU busy share of the frame period, Offline, on more than one node) with the model's two
// shares beside it, and the reason for a difference named from the busiest node's frame
// interval. Empty `figure` when the family has no DPU figures.
struct PublishedDpu {
  std::string figure;
  std::string reason;
};
PublishedDpu published_dpu(const FamilyAnalysis& fa, bool modeled);

}  // namespace dpushard::report
