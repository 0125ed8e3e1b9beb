// Convolutions, batch norm, padding, pooling and mean reductions.
#include <cmath>

#include "converter.hpp"
#include "dpushard/base/error.hpp"

namespace dpushard::onnximport {
namespace {

struct Window2d {
  std::int64_t kh, kw, sh, sw, dh, dw;
  std::vector<std::int64_t> pads;  // ONNX order: top, left, bottom, right
};

// Kernel, strides, dilations and explicit pads of a 2-D Conv or pool over an input of
// spatial size in_h x in_w, with auto_pad resolved.
Window2d window_of(const Node& n, std::int64_t kh, std::int64_t kw, std::int64_t in_h,
                   std::int64_t in_w) {
  Window2d w{kh, kw, 1, 1, 1, 1, {0, 0, 0, 0}};
  const auto strides = n.attr_ints("strides", {1, 1});
  const auto dilations = n.attr_ints("dilations", {1, 1});
  if (strides.size() != 2 || dilations.size() != 2)
    throw Error(n.who() + ": only 2-D windows are supported");
  w.sh = strides[0];
  w.sw = strides[1];
  w.dh = dilations[0];
  w.dw = dilations[1];
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    w.pads = n.attr_ints("pads", {0, 0, 0, 0});
    if (w.pads.size() != 4) throw Error(n.who() + ": pads must have 4 values");
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const std::int64_t in[2] = {in_h, in_w}, k[2] = {kh, kw}, s[2] = {w.sh, w.sw},
                       d[2] = {w.dh, w.dw};
    for (int i = 0; i < 2; ++i) {
      const std::int64_t out = (in[i] + s[i] - 1) / s[i];
      const std::int64_t total =
          std::max<std::int64_t>(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in[i]);
      const std::int64_t small = total / 2, big = total - small;
      w.pads[static_cast<std::size_t>(i)] = auto_pad == "SAME_UPPER" ? small : big;
      w.pads[static_cast<std::size_t>(i + 2)] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "VALID") {
    throw Error(n.who() + ": unknown auto_pad '" + auto_pad + "'");
  }
  for (auto p : w.pads)
    if (p < 0) throw Error(n.who() + ": negative pads are not supported");
  return w;
}

AttrMap window_attrs(const Window2d& w) {
  return {{"kernel", to_i32({w.kw, w.kh})},
          {"stride", to_i32({w.sw, w.sh})},
          {"pad", to_i32({w.pads[1], w.pads[3], w.pads[0], w.pads[2]})},
          {"pad_mode", std::string("FLOOR")}};
}

}  // namespace

void Converter::pad(const Node& n) {
  const Act x = act_input(n, 0);
  const std::string mode = n.attr_string("mode", "constant");
  std::vector<std::int64_t> pads =
      opset_ >= 11 ? const_input(n, 1).ints() : n.attr_ints("pads", {});
  double value = opset_ >= 11 ? (n.input(2).empty() ? 0.0 : const_input(n, 2).scalar(n.who()))
                              : n.attr_float("value", 0.0);
  if (opset_ >= 18 && !n.input(3).empty()) throw Error(n.who() + ": Pad axes are not supported");
  if (mode != "constant" || value != 0.0 || x.shape.size() != 4 || pads.size() != 8 || pads[0] ||
      pads[1] || pads[4] || pads[5])
    throw Error(n.who() + ": only zero padding of H and W of an NCHW map is supported");
  for (const Node* c : consumers(n.outputs[0]))
    if (c->type != "Conv" && c->type != "AveragePool")
      throw Error(n.who() +
                  ": zero padding is supported only in front of Conv or AveragePool, not " +
                  c->type);
  if (graph_outputs_.count(n.outputs[0]))
    throw Error(n.who() + ": a padded map cannot be an output");
  pending_pads_[n.outputs[0]] = {x, {pads[2], pads[3], pads[6], pads[7]}};
}

std::string Converter::emit_conv(const Node& n, const Act& x_in, const ConstTensor& w,
                                 std::optional<std::vector<double>> bias, std::int64_t group,
                                 std::vector<std::int64_t> extra_pads, const Node* bn) {
  const Act x = to_nhwc(x_in, n.name);
  if (w.shape.size() != 4)
    throw Error(n.who() + ": only 2-D convolutions are supported (weights " + shape_text(w.shape) +
                ")");
  const std::int64_t oc = w.shape[0], icg = w.shape[1], kh = w.shape[2], kw = w.shape[3];
  const std::int64_t ic = x.shape[1];
  if (group <= 0 || icg * group != ic || oc % group != 0)
    throw Error(n.who() + ": weights " + shape_text(w.shape) + " do not match " +
                std::to_string(ic) + " input channels with group " + std::to_string(group));
  const auto ks = n.attr_ints("kernel_shape", {kh, kw});
  if (ks.size() != 2 || ks[0] != kh || ks[1] != kw)
    throw Error(n.who() + ": kernel_shape does not match the weights");
  Window2d win = window_of(n, kh, kw, x.shape[2], x.shape[3]);
  for (std::size_t i = 0; i < 4; ++i) win.pads[i] += extra_pads[i];

  std::vector<double> wv = w.values;
  std::vector<double> b = bias ? *bias : std::vector<double>(static_cast<std::size_t>(oc), 0.0);
  if (static_cast<std::int64_t>(b.size()) != oc)
    throw Error(n.who() + ": bias has " + std::to_string(b.size()) + " values for " +
                std::to_string(oc) + " channels");
  bool has_bias = bias.has_value();
  if (bn != nullptr) {
    const auto scale = const_input(*bn, 1).values, beta = const_input(*bn, 2).values,
               mean = const_input(*bn, 3).values, var = const_input(*bn, 4).values;
    const double eps = bn->attr_float("epsilon", 1e-5);
    const auto c = static_cast<std::size_t>(oc);
    if (scale.size() != c || beta.size() != c || mean.size() != c || var.size() != c)
      throw Error(bn->who() + ": parameters do not have " + std::to_string(oc) + " values");
    const std::size_t per_oc = wv.size() / c;
    for (std::size_t o = 0; o < c; ++o) {
      const double s = scale[o] / std::sqrt(var[o] + eps);
      for (std::size_t k = 0; k < per_oc; ++k) wv[o * per_oc + k] *= s;
      b[o] = (b[o] - mean[o]) * s + beta[o];
    }
    has_bias = true;
  }
  ConstTensor folded{w.shape, wv, false};
  const bool depthwise = group == ic && oc == ic && ic > 1;
  ConstTensor wt = depthwise ? transpose(folded, {1, 2, 3, 0}) : transpose(folded, {0, 2, 3, 1});

  AttrMap attrs = window_attrs(win);
  attrs["dilation"] = to_i32({win.dw, win.dh});
  if (!depthwise) attrs["group"] = static_cast<std::int32_t>(group);
  attrs["bias_term"] = has_bias;
  attrs["in_dim"] = static_cast<std::int32_t>(ic);
  attrs["out_dim"] = static_cast<std::int32_t>(oc);
  std::vector<OpArg> args = {
      {"input", {x.op}}, {"weights", {w_.constant(n.name + "_weights", wt.shape, wt.floats())}}};
  if (has_bias) {
    std::vector<float> bf(b.begin(), b.end());
    args.push_back({"bias", {w_.constant(n.name + "_bias", {oc}, bf)}});
  }
  return w_.op(n.name, depthwise ? "depthwise-conv2d" : "conv2d", std::move(args),
               std::move(attrs));
}

// The BatchNormalization (inference mode, constant parameters) that alone consumes the
// output of `conv`, or null.
const Node* Converter::foldable_batch_norm(const Node& conv) const {
  const Node* bn = sole_consumer(conv.outputs.at(0));
  if (bn == nullptr || bn->type != "BatchNormalization" || bn->inputs.size() < 5) return nullptr;
  for (std::size_t i = 1; i <= 4; ++i)
    if (!is_const(*bn, i)) return nullptr;
  if (bn->attr_int("training_mode", 0) != 0) return nullptr;
  for (std::size_t i = 1; i < bn->outputs.size(); ++i)
    if (!bn->outputs[i].empty() && !consumers(bn->outputs[i]).empty()) return nullptr;
  return bn;
}

void Converter::conv(const Node& n) {
  Act x;
  std::vector<std::int64_t> extra(4, 0);
  if (auto it = pending_pads_.find(n.input(0)); it != pending_pads_.end()) {
    x = it->second.first;
    extra = it->second.second;
  } else {
    x = act_input(n, 0);
  }
  const ConstTensor& w = const_input(n, 1);
  std::optional<std::vector<double>> bias;
  if (auto b = optional_const(n, 2)) bias = b->values;
  const Node* bn = foldable_batch_norm(n);
  const std::string op = emit_conv(n, x, w, bias, n.attr_int("group", 1), extra, bn);
  const Shape& ir = w_.shape(op);
  Node out = n;
  if (bn != nullptr) {
    absorb(bn);
    ++mapped_["BatchNormalization"];
    out.outputs = {bn->outputs[0]};
  }
  set_act(out, op, {ir[0], ir[3], ir[1], ir[2]}, nhwc_perm());
}

void Converter::batch_norm(const Node& n) {
  // Not after a conv: a depthwise 1x1 convolution with the folded scale and shift.
  const Act x = act_input(n, 0);
  if (n.attr_int("training_mode", 0) != 0)
    throw Error(n.who() + ": training mode is not supported");
  if (x.shape.size() != 4)
    throw Error(n.who() + ": only BatchNormalization over NCHW maps is supported");
  const std::int64_t c = x.shape[1];
  ConstTensor w{{c, 1, 1, 1}, std::vector<double>(static_cast<std::size_t>(c), 1.0), false};
  Node conv_node = n;
  conv_node.attrs.clear();
  conv_node.attrs["group"] = c;
  const std::string op = emit_conv(conv_node, x, w, std::nullopt, c, {0, 0, 0, 0}, &n);
  const Shape& ir = w_.shape(op);
  set_act(n, op, {ir[0], ir[3], ir[1], ir[2]}, nhwc_perm());
}

void Converter::pool(const Node& n) {
  const bool avg = n.type == "AveragePool";
  Act x;
  std::vector<std::int64_t> extra(4, 0);
  bool padded_by_node = false;
  if (auto it = pending_pads_.find(n.input(0)); avg && it != pending_pads_.end()) {
    x = it->second.first;
    extra = it->second.second;
    padded_by_node = true;
  } else {
    x = act_input(n, 0);
  }
  x = to_nhwc(x, n.name);
  for (std::size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty() && !consumers(n.outputs[i]).empty())
      throw Error(n.who() + ": the Indices output is not supported");
  const auto ks = n.attr_ints("kernel_shape", {});
  if (ks.size() != 2) throw Error(n.who() + ": only 2-D pooling is supported");
  Window2d win = window_of(n, ks[0], ks[1], x.shape[2], x.shape[3]);
  if (win.dh != 1 || win.dw != 1) throw Error(n.who() + ": dilated pooling is not supported");
  bool count_pad = n.attr_int("count_include_pad", 0) != 0;
  const bool own_pads = win.pads[0] || win.pads[1] || win.pads[2] || win.pads[3];
  if (padded_by_node) {
    if (own_pads && !count_pad)
      throw Error(n.who() + ": padding from a Pad node and count_include_pad=0 cannot be merged");
    count_pad = true;
  }
  if (avg && own_pads && !count_pad)
    throw Error(n.who() + ": count_include_pad=0 with padding has no DPU form");
  for (std::size_t i = 0; i < 4; ++i) win.pads[i] += extra[i];
  if (n.attr_int("ceil_mode", 0) != 0) {
    // PyTorch's ceil mode: one more window when the last one still starts inside the
    // input or its leading padding, realised as extra trailing padding.
    const std::int64_t in[2] = {x.shape[2], x.shape[3]}, k[2] = {win.kh, win.kw},
                       s[2] = {win.sh, win.sw};
    for (std::size_t i = 0; i < 2; ++i) {
      const std::int64_t padded = in[i] + win.pads[i] + win.pads[i + 2];
      std::int64_t out = (padded - k[i] + s[i] - 1) / s[i] + 1;
      if ((out - 1) * s[i] >= in[i] + win.pads[i]) --out;
      const std::int64_t more = std::max<std::int64_t>(0, (out - 1) * s[i] + k[i] - padded);
      if (more > 0 && avg)
        throw Error(n.who() +
                    ": ceil_mode average pooling with a partial last window is not supported");
      win.pads[i + 2] += more;
    }
  }
  AttrMap attrs = window_attrs(win);
  attrs["global"] = false;
  if (avg) attrs["count_include_pad"] = true;
  const std::string op = w_.op(n.name, avg ? "avgpool2d" : "maxpool2d", {{"input", {x.op}}}, attrs);
  const Shape& ir = w_.shape(op);
  set_act(n, op, {ir[0], ir[3], ir[1], ir[2]}, nhwc_perm());
}

void Converter::global_pool(const Node& n) {
  const Act x = to_nhwc(act_input(n, 0), n.name);
  const bool avg = n.type == "GlobalAveragePool";
  const std::int64_t h = x.shape[2], w = x.shape[3];
  AttrMap attrs = {{"kernel", to_i32({w, h})},
                   {"stride", to_i32({w, h})},
                   {"pad", to_i32({0, 0, 0, 0})},
                   {"pad_mode", std::string("FLOOR")},
                   {"global", true}};
  if (avg) attrs["count_include_pad"] = true;
  const std::string op = w_.op(n.name, avg ? "avgpool2d" : "maxpool2d", {{"input", {x.op}}}, attrs);
  set_act(n, op, {x.shape[0], x.shape[1], 1, 1}, nhwc_perm());
}

void Converter::reduce_mean(const Node& n) {
  const Act x = act_input(n, 0);
  std::vector<std::int64_t> axes =
      n.input(1).empty() ? n.attr_ints("axes", {}) : const_input(n, 1).ints();
  const bool keep = n.attr_int("keepdims", 1) != 0;
  const std::size_t rank = x.shape.size();
  if (axes.empty())
    for (std::size_t i = 0; i < rank; ++i) axes.push_back(static_cast<std::int64_t>(i));
  for (auto& a : axes) a = normalize_axis(a, rank, n.who());
  std::sort(axes.begin(), axes.end());
  for (std::size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1)
      throw Error(n.who() + ": ReduceMean over non-adjacent axes is not supported");
  Shape out_shape;
  for (std::size_t i = 0; i < rank; ++i) {
    const bool reduced =
        std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) != axes.end();
    if (!reduced)
      out_shape.push_back(x.shape[i]);
    else if (keep)
      out_shape.push_back(1);
  }
  if (rank == 4 && axes == std::vector<std::int64_t>{2, 3}) {
    // Spatial mean of an NCHW map: global average pooling.
    Node g = n;
    g.type = "GlobalAveragePool";
    Node tmp = g;
    global_pool(tmp);
    Act pooled = std::get<Act>(values_.at(n.outputs[0]));
    if (!keep) set(n.outputs[0], reshape(pooled, out_shape, n.name + "_squeeze"));
    return;
  }
  // Any other run of axes: a [outer, reduced, 1, inner] view pooled over its H axis.
  std::int64_t outer = 1, red = 1, inner = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    const auto a = static_cast<std::int64_t>(i);
    if (a < axes.front())
      outer *= x.shape[i];
    else if (a <= axes.back())
      red *= x.shape[i];
    else
      inner *= x.shape[i];
  }
  const Act view = reshape(x, {outer, red, 1, inner}, n.name + "_view");
  const Act v = to_identity(view, n.name + "_view");
  AttrMap attrs = {{"kernel", to_i32({1, red})},
                   {"stride", to_i32({1, red})},
                   {"pad", to_i32({0, 0, 0, 0})},
                   {"pad_mode", std::string("FLOOR")},
                   {"global", false},
                   {"count_include_pad", true}};
  Act pooled;
  pooled.op = w_.op(n.name, "avgpool2d", {{"input", {v.op}}}, attrs);
  pooled.shape = {outer, 1, 1, inner};
  pooled.perm = identity_perm(4);
  set(n.outputs[0], reshape(pooled, out_shape, n.name + "_out"));
}

}  // namespace dpushard::onnximport
