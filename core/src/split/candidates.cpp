#include "candidates.hpp"

#include <algorithm>
#include <cstdio>

#include "dpushard/plan/strategy_table.hpp"
#include "extract.hpp"
#include "memory_fit.hpp"

namespace dpushard::split {
namespace {

// Prices `p` (or records why it is not possible, or does not fit) and adds it to `set`.
void consider(CandidateSet& set, const StrategyInput& input, const CandidatePricing& pricing,
              const std::string& name, Proposal proposal) {
  const SplitOptions& options = pricing.options;
  std::optional<Partition>& p = proposal.partition;
  PlanCandidate c;
  c.strategy = name;
  c.inner_strategy = proposal.inner_strategy;
  c.replicas = proposal.replicas;
  std::string misfit;
  if (p && (pricing.priced || pricing.budgeted)) {
    const auto ex = extract(input.graph, *p, options.output_fix, Weights::LeftOut);
    if (pricing.budgeted)
      misfit = partition_fit(ex, *p, options.frames_in_flight, options.memory_budget_bytes,
                             options.memory_board, options.node_memory_budget_bytes,
                             options.node_targets)
                   .misfit.value_or("");
    if (pricing.priced) {
      const auto prices = price_fragments(ex, *p, pricing.cost, &pricing.models);
      c.predicted =
          estimate(input.graph, *p, pricing.cost, options.output_fix, &prices, &pricing.models)
              .predicted;
    } else {
      c.predicted =
          estimate(input.graph, *p, pricing.cost, options.output_fix, nullptr, &pricing.models)
              .predicted;
    }
    if (!misfit.empty()) {  // proposed only when it fits
      c.predicted = {};
      c.note = "does not fit: " + misfit;
      p.reset();
    }
  } else if (p) {
    c.predicted =
        estimate(input.graph, *p, pricing.cost, options.output_fix, nullptr, &pricing.models)
            .predicted;
  } else {
    c.note = proposal.why_not;
  }
  set.candidates.push_back(c);
  set.partitions.push_back(std::move(p));
  set.misfits.push_back(misfit);
}

// The latency bound (--max-latency-ms): a candidate whose predicted latency exceeds it is
// out of the running; none left is an error naming the best latency reachable.
class LatencyBound {
 public:
  LatencyBound(const CandidateSet& set, const SplitOptions& options)
      : set_(set), options_(options), bound_(options.max_latency_ms) {}

  bool met_by(std::size_t i) const {
    return set_.partitions[i] && (bound_ <= 0 || set_.candidates[i].predicted.latency_ms <= bound_);
  }

  Error error(const std::string& what) const {
    const auto& best = set_.candidates[best_latency()];
    return Error("split: " + what + " --max-latency-ms " + format_ms(bound_) +
                 ": the best predicted latency reachable on " + std::to_string(options_.nodes) +
                 " node" + (options_.nodes == 1 ? "" : "s") + " is " +
                 format_ms(best.predicted.latency_ms) + " ms (" + best.label() + ")");
  }

  double ms() const { return bound_; }

 private:
  std::size_t best_latency() const {
    std::optional<std::size_t> best;
    const auto& c = set_.candidates;
    for (std::size_t i = 0; i < c.size(); ++i)
      if (set_.partitions[i] &&
          (!best || c[i].predicted.latency_ms < c[*best].predicted.latency_ms))
        best = i;
    return *best;  // replicate is always possible
  }

  const CandidateSet& set_;
  const SplitOptions& options_;
  double bound_;
};

// The requested strategy's best candidate for the objective (a composite has several):
// among those meeting the bound if any do; none: none is possible.
std::optional<std::size_t> best_of(const CandidateSet& set, const std::string& requested,
                                   const LatencyBound& bound, Objective objective) {
  std::optional<std::size_t> best;
  const auto& c = set.candidates;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c[i].strategy != requested || !set.partitions[i]) continue;
    if (!best || (bound.met_by(i) && !bound.met_by(*best)) ||
        (bound.met_by(i) == bound.met_by(*best) &&
         better_prediction(c[i].predicted, c[*best].predicted, objective)))
      best = i;
  }
  return best;
}

// A named strategy that does not fit, or (auto) no plan that fits: one line.
void refuse_misfits(const CandidateSet& set, const SplitOptions& options,
                    const std::string& requested) {
  const std::string nodes =
      std::to_string(options.nodes) + " node" + (options.nodes == 1 ? "" : "s");
  if (options.nodes == 1 || !strategy_chooses(options.strategy)) {
    const std::string asked = options.nodes == 1 ? baseline_strategy() : requested;
    if (const std::string misfit = set.misfit_of(asked); !misfit.empty())
      throw Error("split: " + misfit + " (the " + requested + " plan on " + nodes + ")");
  } else if (std::none_of(set.partitions.begin(), set.partitions.end(),
                          [](const auto& p) { return p.has_value(); })) {
    std::string all;
    for (std::size_t i = 0; i < set.candidates.size(); ++i)
      all += (all.empty() ? "" : "; ") + set.candidates[i].strategy + ": " +
             (set.misfits[i].empty() ? set.candidates[i].note : set.misfits[i]);
    throw Error("split: no plan on " + nodes + " fits: " + all);
  }
}

// auto: the objective's best among the plans that meet the bound.
std::size_t choose_auto(const CandidateSet& set, const SplitOptions& options,
                        const LatencyBound& bound, std::vector<PlanAdjustment>& adjustments) {
  const auto& c = set.candidates;
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (bound.met_by(i) &&
        (!best || better_prediction(c[i].predicted, c[*best].predicted, options.objective)))
      best = i;
  if (!best) throw bound.error("no plan meets");
  for (std::size_t i = 0; i < c.size(); ++i)
    if (set.partitions[i] && !bound.met_by(i))
      adjustments.push_back({"latency_bound", c[i].label(), c[*best].label(),
                             c[i].label() + " left out: predicted latency " +
                                 format_ms(c[i].predicted.latency_ms) +
                                 " ms exceeds --max-latency-ms " + format_ms(bound.ms())});
  return *best;
}

// A requested strategy that is not possible falls back, saying why: to its row's
// falls_back_to (experts: pipeline), else to the baseline (replicate).
std::size_t fall_back(const CandidateSet& set, const std::string& requested,
                      std::vector<PlanAdjustment>& adjustments) {
  std::string why;
  for (const auto& c : set.candidates)
    if (c.strategy == requested && why.empty()) why = c.note;
  std::optional<std::size_t> fallback;
  const StrategyInfo* row = find_strategy(requested);
  if (row != nullptr && !row->falls_back_to.empty()) fallback = set.index_of(row->falls_back_to);
  const std::string& baseline = baseline_strategy();
  if (!fallback) fallback = set.index_of(baseline);
  if (!fallback)
    throw Error("split: " + requested + " is not possible: " + why + "; and " +
                set.misfit_of(baseline) + " (" + baseline + ")");
  const std::string& to = set.candidates[*fallback].strategy;
  adjustments.push_back(
      {"fallback", requested, to, requested + " is not possible: " + why + "; using " + to});
  return *fallback;
}

}  // namespace

std::string format_ms(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

std::optional<std::size_t> CandidateSet::index_of(const std::string& strategy) const {
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].strategy == strategy && partitions[i]) return i;
  return std::nullopt;
}

std::string CandidateSet::misfit_of(const std::string& strategy) const {
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].strategy == strategy && !misfits[i].empty()) return misfits[i];
  return {};
}

CandidateSet gather_candidates(const StrategyInput& input, const CandidatePricing& pricing) {
  CandidateSet set;
  const std::string& baseline = baseline_strategy();
  if (input.nodes == 1) {
    Partition p = whole_model(input.graph, baseline, {0});
    p.structure = "one node: the whole model is one fragment";
    consider(set, input, pricing, baseline, one_proposal(std::move(p)).front());
    return set;
  }
  // Each strategy's planner (strategy_<name>.cpp), in the table's candidate order.
  for (const std::string& name : candidate_strategies())
    for (Proposal& proposal : planner_for(name).propose(input))
      consider(set, input, pricing, name, std::move(proposal));
  return set;
}

std::size_t choose_candidate(const CandidateSet& set, const SplitOptions& options,
                             std::vector<PlanAdjustment>& adjustments) {
  const std::string& requested = options.strategy;
  const LatencyBound bound(set, options);
  refuse_misfits(set, options, requested);
  std::size_t chosen = 0;
  if (options.nodes == 1) {
    chosen = 0;
  } else if (strategy_chooses(requested)) {
    chosen = choose_auto(set, options, bound, adjustments);
  } else if (auto best = best_of(set, requested, bound, options.objective)) {
    chosen = *best;
  } else {
    chosen = fall_back(set, requested, adjustments);
  }
  const PlanCandidate& c = set.candidates[chosen];
  if (!bound.met_by(chosen))
    throw bound.error("the " + c.label() + " plan's predicted latency " +
                      format_ms(c.predicted.latency_ms) + " ms exceeds");
  // Plans left out for memory, and the one line a model too large for one board gets.
  for (std::size_t i = 0; i < set.candidates.size(); ++i) {
    if (set.misfits[i].empty()) continue;
    const std::string& to = c.strategy;
    const std::string& from = set.candidates[i].strategy;
    adjustments.push_back({"memory", from, to,
                           strategy_is_baseline(from)
                               ? "the whole model fits no single " + options.memory_board + " (" +
                                     set.misfits[i] + "): only model-parallel plans; using " + to
                               : from + " left out: " + set.misfits[i]});
  }
  return chosen;
}

namespace {

constexpr std::size_t kListEveryHybridUpTo = 12;

// a at least as good as b on latency, throughput and bytes between nodes, and better on
// one; of equal ones, the first listed (the fewest replicas) stands for the rest.
bool beats(const PlanPrediction& a, std::size_t a_index, const PlanPrediction& b,
           std::size_t b_index) {
  if (a.latency_ms > b.latency_ms || a.throughput_fps < b.throughput_fps ||
      a.wire_bytes_per_frame > b.wire_bytes_per_frame)
    return false;
  const bool equal = a.latency_ms == b.latency_ms && a.throughput_fps == b.throughput_fps &&
                     a.wire_bytes_per_frame == b.wire_bytes_per_frame;
  return !equal || a_index < b_index;
}

}  // namespace

std::vector<PlanCandidate> listed_candidates(const CandidateSet& set, std::size_t chosen,
                                             std::vector<PlanAdjustment>& adjustments) {
  const auto& all = set.candidates;
  const auto is_hybrid = [&](std::size_t i) { return strategy_is_composite(all[i].strategy); };
  const auto possible = [&](std::size_t i) { return set.partitions[i] && all[i].note.empty(); };
  std::size_t hybrids = 0, impossible = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (is_hybrid(i)) {
      ++hybrids;
      if (!possible(i)) ++impossible;
    }
  if (hybrids <= kListEveryHybridUpTo) return all;
  std::vector<PlanCandidate> listed;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    bool keep = !is_hybrid(i) || i == chosen;
    if (!keep && possible(i)) {
      keep = true;
      for (std::size_t j = 0; j < all.size() && keep; ++j)
        if (j != i && is_hybrid(j) && possible(j) &&
            beats(all[j].predicted, j, all[i].predicted, i))
          keep = false;
    }
    if (!keep) continue;
    if (is_hybrid(i)) ++kept;
    listed.push_back(all[i]);
  }
  adjustments.push_back(
      {"candidates", "", "",
       std::to_string(hybrids) + " hybrid candidates priced (" + std::to_string(impossible) +
           " not possible); listed: the " + std::to_string(kept) +
           " no other hybrid beats on latency, throughput and bytes between nodes, and the "
           "chosen plan"});
  return listed;
}

}  // namespace dpushard::split
