// Reading `xdputil query`'s JSON (dpu_query.hpp): plain dpushard, tested everywhere.

#include "dpu_query.hpp"

#include <nlohmann/json.hpp>

#include "dpushard/base/error.hpp"

namespace dpushard::vart_detail {

DeviceInfo parse_xdputil_query(const std::string& text) {
  const std::string what = "xdputil query";
  const std::size_t brace = text.find('{');
  if (brace == std::string::npos) throw Error(what + ": no JSON in its output");
  const nlohmann::json json = nlohmann::json::parse(text.substr(brace), nullptr, false);
  if (json.is_discarded() || !json.is_object()) throw Error(what + ": its output is not JSON");
  const auto kernels = json.find("kernels");
  if (kernels == json.end() || !kernels->is_array() || kernels->empty())
    throw Error(what + ": no DPU core listed (is the DPU firmware loaded? xmutil loadapp)");
  DeviceInfo info;
  for (const nlohmann::json& kernel : *kernels) {
    const auto fingerprint = kernel.find("fingerprint");
    if (!kernel.is_object() || fingerprint == kernel.end() || !fingerprint->is_string())
      throw Error(what + ": a DPU core without a fingerprint");
    const std::uint64_t value = parse_fingerprint(fingerprint->get<std::string>(), what);
    if (info.dpu_fingerprint != 0 && value != info.dpu_fingerprint)
      throw Error(what + ": DPU cores with different fingerprints (" +
                  fingerprint_text(info.dpu_fingerprint) + ", " + fingerprint_text(value) + ")");
    info.dpu_fingerprint = value;
    const auto batch = kernel.find("DPU Batch");
    if (batch != kernel.end() && batch->is_number_unsigned())
      info.dpu_batch = batch->get<std::uint32_t>();
  }
  if (info.dpu_fingerprint == 0) throw Error(what + ": the DPU's fingerprint is 0");
  return info;
}

}  // namespace dpushard::vart_detail
