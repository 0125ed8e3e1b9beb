#include "support/cpu_tail_model.hpp"

#include <vector>

#include "dpushard/graph/builder.hpp"

namespace dpushard::testing {

Graph cpu_tail_model(const std::string& kind, std::int64_t side, std::int64_t channels) {
  GraphBuilder b(kind + "_tail_" + std::to_string(side) + "x" + std::to_string(channels));
  const Value x = b.input("x", {1, side, side, channels}, 6);
  const Value w =
      b.constant("w", {channels, 1, 1, channels},
                 std::vector<std::int8_t>(static_cast<std::size_t>(channels * channels), 1), 7);
  Conv2dSpec spec;
  spec.kernel = {1, 1};
  spec.pad = {0, 0, 0, 0};
  const Value y = b.conv2d("conv", x, w, std::nullopt, spec, 5);
  if (kind == "softmax")
    b.softmax("softmax", y, -1, 7);
  else
    b.leaky_relu("leaky", y, 0.2, y.fix_point);
  return b.finish();
}

}  // namespace dpushard::testing
