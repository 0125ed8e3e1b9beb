#pragma once
// What the zoo's families share: checking a ZooSpec, expert names, the join.

#include <string>
#include <string_view>
#include <vector>

#include "dpushard/zoo/zoo.hpp"
#include "model_builder.hpp"

namespace dpushard::zoo {

// Fix point of the model input: int8 values uniform over [-128, 127] read as [-2, 2),
// about the range of a normalised image.
inline constexpr int kInputFixPoint = 6;
// Smallest input height / width: both families downsample by 16 before the tail.
inline constexpr std::int64_t kMinInputSide = 16;
// Above this the float32 weights would not fit an xmodel (protobuf's 2 GB limit).
inline constexpr std::int64_t kMaxParams = 500'000'000;
// Without weights (ZooSpec::weights false) nothing is generated or written per parameter, so
// only the solvable widths limit the size.
inline constexpr std::int64_t kMaxParamsWithoutWeights = 100'000'000'000;

// Throws dpushard::Error naming the field when `spec` is out of range.
void check_spec(const ZooSpec& spec, std::string_view family);

// "expert0/", "expert1/", ...
std::string expert_prefix(int index);

// Joins the experts' outputs: concat along `channel_axis`, or sum. One expert is
// returned as is.
Act join_experts(ModelBuilder& builder, const std::vector<Act>& experts, ZooJoin join,
                 std::int64_t channel_axis);

// Channels after the join of `experts` branches of `width` channels each.
std::int64_t joined_channels(const ZooSpec& spec, std::int64_t width);

}  // namespace dpushard::zoo
