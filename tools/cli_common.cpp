#include "cli_common.hpp"
#include "read_model.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/graph/model_check.hpp"
#include "dpushard/graph/numerics.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard::cli {

Graph read_model(const std::string& path) {
  Graph graph = read_xmodel(path);
  try {
    validate_loaded(graph);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return graph;
}

void print_json(const nlohmann::json& object) { std::cout << object.dump(2) << std::endl; }

std::string human_count(long long value) {
  const char* suffix[] = {"", "K", "M", "G", "T"};
  double v = static_cast<double>(value);
  int i = 0;
  while (v >= 1000.0 && i < 4) {
    v /= 1000.0;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f%s" : "%.1f%s", v, suffix[i]);
  return buf;
}

nlohmann::json tensor_json(const QTensor& t, bool with_top5) {
  nlohmann::json j = {{"name", t.name},
                      {"shape", t.shape},
                      {"fix_point", t.fix_point},
                      {"sha256", sha256_hex(t.data)}};
  const bool classifier =
      !t.shape.empty() && t.shape.back() >= 2 && t.element_count() == t.shape.back();
  if (!with_top5 || !classifier) return j;
  std::vector<std::size_t> order(t.data.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return t.data[a] > t.data[b]; });
  nlohmann::json top = nlohmann::json::array();
  for (std::size_t i = 0; i < std::min<std::size_t>(5, order.size()); ++i)
    top.push_back({{"class", order[i]}, {"value", dequantize(t.data[order[i]], t.fix_point)}});
  j["top5"] = top;
  return j;
}

nlohmann::json preprocessing_json(const Preprocessing& p) {
  return {{"mean", p.mean},
          {"std", p.std},
          {"resize", p.resize},
          {"crop", {p.crop_height, p.crop_width}}};
}

}  // namespace dpushard::cli
