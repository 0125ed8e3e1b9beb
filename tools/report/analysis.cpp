#include "analysis.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace dpushard::report {
namespace {

const std::vector<std::string> kStrategyOrder = {"experts", "pipeline", "replicate"};

int strategy_rank(const std::string& s) {
  const auto it = std::find(kStrategyOrder.begin(), kStrategyOrder.end(), s);
  return it == kStrategyOrder.end() ? static_cast<int>(kStrategyOrder.size())
                                    : static_cast<int>(it - kStrategyOrder.begin());
}

std::string suites_backend(const RunResults& results) {
  std::set<std::string> backends;
  for (const auto& suite : results.suites) {
    const std::string b = suite.get("backend");
    if (!b.empty()) backends.insert(b);
  }
  if (backends.empty() && results.env.is_object() && results.env.contains("backend") &&
      results.env["backend"].is_string())
    backends.insert(results.env["backend"].get<std::string>());
  if (backends.empty()) return "unknown";
  if (backends.size() > 1) return "mixed";
  return *backends.begin();
}

// "10M" -> 1e7: orders sizes whose measurement failed (and so has no parameter count).
double size_from_label(const std::string& label) {
  if (label.empty()) return 0;
  double scale = 1;
  switch (label.back()) {
    case 'K':
    case 'k':
      scale = 1e3;
      break;
    case 'M':
    case 'm':
      scale = 1e6;
      break;
    case 'G':
    case 'g':
      scale = 1e9;
      break;
    default:
      break;
  }
  try {
    return std::stod(scale == 1 ? label : label.substr(0, label.size() - 1)) * scale;
  } catch (const std::exception&) {
    return 0;
  }
}

FamilyAnalysis analyze_family(const std::string& family, const std::vector<Measurement>& ms) {
  FamilyAnalysis fa;
  fa.family = family;

  std::map<std::string, double> size_params;  // label -> params (first seen)
  std::set<int> nodes;
  std::set<std::string> strategies;
  for (const auto& m : ms) {
    const auto it = size_params.emplace(m.size, m.failed ? 0.0 : m.params).first;
    if (!m.failed && !(it->second > 0)) it->second = m.params;
    nodes.insert(m.nodes);
    if (m.nodes > 1) strategies.insert(m.strategy);
  }
  for (const auto& [label, params] : size_params)
    fa.sizes.push_back({label, params > 0 ? params : size_from_label(label)});
  std::sort(fa.sizes.begin(), fa.sizes.end(),
            [](const Size& a, const Size& b) { return a.params < b.params; });
  fa.node_counts.assign(nodes.begin(), nodes.end());
  fa.strategies.assign(strategies.begin(), strategies.end());
  std::stable_sort(fa.strategies.begin(), fa.strategies.end(),
                   [](const std::string& a, const std::string& b) {
                     return strategy_rank(a) < strategy_rank(b);
                   });

  auto size_rank = [&](const std::string& label) {
    for (std::size_t i = 0; i < fa.sizes.size(); ++i)
      if (fa.sizes[i].label == label) return i;
    return fa.sizes.size();
  };
  std::map<std::string, const Measurement*> baselines;  // size -> 1-node measurement
  for (const auto& m : ms)
    if (m.nodes == 1 && !m.failed) baselines.emplace(m.size, &m);

  for (const auto& m : ms) {
    Row row;
    row.m = m;
    const auto base = baselines.find(m.size);
    if (!m.failed && base != baselines.end()) {
      const Measurement& b = *base->second;
      row.has_baseline = true;
      row.speedup = m.fps / b.fps;
      row.latency_speedup = (m.p50_ms > 0 && b.p50_ms > 0) ? b.p50_ms / m.p50_ms : 0;
      row.efficiency = row.speedup / m.nodes;
    }
    fa.rows.push_back(std::move(row));
  }
  std::stable_sort(fa.rows.begin(), fa.rows.end(), [&](const Row& a, const Row& b) {
    const auto ka = std::make_tuple(size_rank(a.m.size), a.m.nodes, strategy_rank(a.m.strategy));
    const auto kb = std::make_tuple(size_rank(b.m.size), b.m.nodes, strategy_rank(b.m.strategy));
    return ka < kb;
  });

  for (int n : fa.node_counts) {
    if (n == 1) continue;
    for (const auto& s : fa.strategies) {
      std::vector<const Row*> series;
      for (const auto& size : fa.sizes)
        if (const Row* r = fa.find(size.label, n, s)) series.push_back(r);
      BreakEven t = break_even(series, &Row::speedup);
      BreakEven l = break_even(series, &Row::latency_speedup);
      t.nodes = l.nodes = n;
      t.strategy = l.strategy = s;
      fa.throughput_break_even.push_back(t);
      fa.latency_break_even.push_back(l);
    }
  }
  return fa;
}

}  // namespace

const Row* FamilyAnalysis::find(const std::string& size, int nodes,
                                const std::string& strategy) const {
  for (const auto& r : rows)
    if (r.m.size == size && r.m.nodes == nodes && (nodes == 1 || r.m.strategy == strategy))
      return &r;
  return nullptr;
}

bool backend_is_modeled(const std::string& backend) { return backend == "sim"; }

std::string timing_label(const std::string& backend) {
  if (backend == "sim")
    return "sim backend: each node takes the KV260 timing model's time per fragment; the "
           "tensors really travel between the worker processes";
  if (backend == "vart") return "vart backend: the KV260 DPU";
  if (backend == "cpu" || backend == "ref") return backend + " backend on the host CPU, not a DPU";
  return "backend " + backend;
}

BreakEven break_even(const std::vector<const Row*>& rows_by_size, double Row::*metric) {
  BreakEven be;
  std::vector<const Row*> usable;
  for (const Row* r : rows_by_size)
    if (r && !r->m.failed && r->has_baseline && r->*metric > 0) usable.push_back(r);
  if (usable.empty()) return be;  // NoData

  // Walk down from the largest size while N nodes still beat one.
  std::size_t first = usable.size();
  while (first > 0 && usable[first - 1]->*metric > 1.0) --first;
  if (first == usable.size()) {
    be.kind = BreakEven::Kind::Never;
    first = usable.size() - 1;
  } else {
    be.kind = first == 0 ? BreakEven::Kind::Always : BreakEven::Kind::From;
  }
  be.size = {usable[first]->m.size, usable[first]->m.params};
  be.at = usable[first]->*metric;
  return be;
}

Analysis analyze(const RunResults& results) {
  Analysis a;
  a.backend = suites_backend(results);
  a.modeled = backend_is_modeled(a.backend);
  a.timing_label = timing_label(a.backend);

  std::vector<std::string> order;
  std::map<std::string, std::vector<Measurement>> by_family;
  for (const auto& m : results.measurements) {
    if (m.failed) a.failed.push_back(m);
    if (!by_family.contains(m.family)) order.push_back(m.family);
    by_family[m.family].push_back(m);
  }
  for (const auto& family : order) a.families.push_back(analyze_family(family, by_family[family]));
  return a;
}

}  // namespace dpushard::report
