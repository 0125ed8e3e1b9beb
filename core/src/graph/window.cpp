#include "dpushard/graph/window.hpp"

#include <algorithm>
#include <vector>

namespace dpushard {
namespace {

std::string window_owner(const Op& op) { return "op '" + op.name + "' (" + op.type + ")"; }

[[noreturn]] void window_error(const Op& op, const std::string& what) {
  throw Error(window_owner(op) + ": " + what);
}

// XIR's {width, height} pair, each at least 1.
std::pair<std::int64_t, std::int64_t> width_height(const Op& op, std::string_view key,
                                                   const std::vector<std::int64_t>& values) {
  if (values.size() != 2 || values[0] < 1 || values[1] < 1)
    window_error(op,
                 "attribute '" + std::string(key) + "' must be two integers >= 1 {width, height}");
  return {values[0], values[1]};
}

std::pair<std::int64_t, std::int64_t> required_pair(const Op& op, std::string_view key) {
  if (op.attrs.find(key) == op.attrs.end())
    window_error(op, "missing attribute '" + std::string(key) + "' (XIR requires it)");
  return width_height(op, key, ints_attr(op.attrs, key, window_owner(op)));
}

}  // namespace

Window window_of(const Op& op) {
  Window w;
  w.global = bool_attr(op.attrs, "global", false);
  // A global pool's kernel and stride are its input's extent; XIR still requires the
  // attributes, but nothing reads them, so a global pool without them is accepted.
  if (!w.global || op.attrs.count("kernel"))
    std::tie(w.kernel_w, w.kernel_h) = required_pair(op, "kernel");
  if (!w.global || op.attrs.count("stride"))
    std::tie(w.stride_w, w.stride_h) = required_pair(op, "stride");
  std::tie(w.dilation_w, w.dilation_h) =
      width_height(op, "dilation", ints_attr_or(op.attrs, "dilation", {1, 1}));
  const auto pad = ints_attr_or(op.attrs, "pad", {0, 0, 0, 0});
  if (pad.size() != 4 || std::any_of(pad.begin(), pad.end(), [](auto p) { return p < 0; }))
    window_error(op, "attribute 'pad' must be four integers >= 0 {left, right, top, bottom}");
  w.pad_left = pad[0];
  w.pad_right = pad[1];
  w.pad_top = pad[2];
  w.pad_bottom = pad[3];
  w.pad_mode = string_attr(op.attrs, "pad_mode", "FLOOR");
  if (w.pad_mode != "FLOOR" && w.pad_mode != "CEIL" && w.pad_mode != "SAME" &&
      w.pad_mode != "VALID")
    window_error(op, "pad_mode '" + w.pad_mode + "' is none of FLOOR, CEIL, SAME, VALID");
  return w;
}

Window Window::over(std::int64_t in_h, std::int64_t in_w) const {
  if (!global) return *this;
  Window w = *this;
  w.kernel_h = w.stride_h = in_h;
  w.kernel_w = w.stride_w = in_w;
  w.dilation_h = w.dilation_w = 1;
  w.pad_left = w.pad_right = w.pad_top = w.pad_bottom = 0;
  return w;
}

}  // namespace dpushard
