#include "family.hpp"

#include "dpushard/base/error.hpp"

namespace dpushard::zoo {
namespace {

constexpr int kMaxExperts = 64;
constexpr int kMaxClasses = 100'000;

}  // namespace

void check_spec(const ZooSpec& spec, std::string_view family) {
  const std::string who(family);
  const std::int64_t max_params = spec.weights ? kMaxParams : kMaxParamsWithoutWeights;
  if (spec.params <= 0 || spec.params > max_params)
    throw Error(who + ": params must be in [1, " + std::to_string(max_params) + "] (got " +
                std::to_string(spec.params) + ")" +
                (spec.weights && spec.params <= kMaxParamsWithoutWeights
                     ? "; larger models only with --no-weights"
                     : ""));
  if (spec.experts < 1 || spec.experts > kMaxExperts)
    throw Error(who + ": experts must be in [1, " + std::to_string(kMaxExperts) + "] (got " +
                std::to_string(spec.experts) + ")");
  if (spec.classes < 1 || spec.classes > kMaxClasses)
    throw Error(who + ": classes must be in [1, " + std::to_string(kMaxClasses) + "] (got " +
                std::to_string(spec.classes) + ")");
  if (spec.input[0] < kMinInputSide || spec.input[1] < kMinInputSide || spec.input[2] < 1)
    throw Error(who + ": input " + std::to_string(spec.input[0]) + "x" +
                std::to_string(spec.input[1]) + "x" + std::to_string(spec.input[2]) +
                " too small (height and width >= " + std::to_string(kMinInputSide) +
                ", channels >= 1)");
}

std::string expert_prefix(int index) { return "expert" + std::to_string(index) + "/"; }

Act join_experts(ModelBuilder& builder, const std::vector<Act>& experts, ZooJoin join,
                 std::int64_t channel_axis) {
  if (experts.size() == 1) return experts.front();
  if (join == ZooJoin::Concat) return builder.concat("join", experts, channel_axis);
  return builder.add("join", experts, /*relu=*/false);
}

std::int64_t joined_channels(const ZooSpec& spec, std::int64_t width) {
  return spec.join == ZooJoin::Concat ? spec.experts * width : width;
}

}  // namespace dpushard::zoo
