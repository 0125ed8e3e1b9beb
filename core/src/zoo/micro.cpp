// The micro-model suite (micro.hpp): one compiler-relevant pattern per model, each shaped
// as a fragment (data -> fix inputs, the pattern, an output with or without its fix).
#include "dpushard/zoo/micro.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "dpushard/graph/builder.hpp"
#include "weights.hpp"

namespace dpushard {
namespace {

constexpr int kInputFp = 6;   // inputs in [-2, 2)
constexpr int kWeightFp = 7;  // weights in [-0.5, 0.5)

// A GraphBuilder with seeded weights and fix points that keep the shifts legal.
class Micro {
 public:
  explicit Micro(const std::string& name) : b_(name), name_(name) {}

  Value input(const std::string& name, std::vector<std::int64_t> shape) {
    return b_.input(name, std::move(shape), kInputFp);
  }

  Value conv(const std::string& name, const Value& x, std::int64_t oc, std::int64_t kh,
             std::int64_t kw, std::int64_t stride, std::int64_t pad, std::int64_t group = 1,
             Nonlinear nl = Nonlinear::None) {
    const std::int64_t ic = x.shape.back();
    const std::int64_t fan_in = kh * kw * ic / group;
    const int out_fp = out_fix_point(x.fix_point, fan_in);
    const Value w = weights(name + "_w", {oc, kh, kw, ic / group});
    const Value bias = constant(name + "_b", {oc}, out_fp + 2);
    Conv2dSpec spec;
    spec.kernel = {kh, kw};
    spec.stride = {stride, stride};
    spec.pad = {pad, pad, pad, pad};
    spec.group = group;
    spec.nonlinear = nl;
    return b_.conv2d(name, x, w, bias, spec, out_fp);
  }

  Value depthwise(const std::string& name, const Value& x) {
    const std::int64_t c = x.shape.back();
    const int out_fp = out_fix_point(x.fix_point, 9);
    const Value w = weights(name + "_w", {1, 3, 3, c});
    const Value bias = constant(name + "_b", {c}, out_fp + 2);
    Conv2dSpec spec;
    return b_.depthwise_conv2d(name, x, w, bias, spec, out_fp);
  }

  Value linear(const std::string& name, const Value& x, std::int64_t n) {
    const std::int64_t k = x.shape.back();
    const int out_fp = out_fix_point(x.fix_point, k);
    const Value w = weights(name + "_w", {n, k});
    const Value bias = constant(name + "_b", {n}, out_fp + 2);
    return b_.matmul(name, x, w, bias, true, out_fp);
  }

  Value constant(const std::string& name, std::vector<std::int64_t> shape, int fp) {
    std::size_t n = 1;
    for (auto d : shape) n *= static_cast<std::size_t>(d);
    return b_.constant(name, std::move(shape),
                       zoo::uniform_int8(zoo::stream_key(1, name_ + "/" + name), n, -16, 16), fp);
  }

  GraphBuilder& builder() { return b_; }

  // Ends the fragment with the fix (as built) or at the op before it (the naive cut).
  Graph finish(bool output_fix) {
    Graph g = b_.finish();
    if (!output_fix) {
      for (const Op* out : g.outputs())
        if (out->type == "fix") {
          const std::string name = out->name;
          g.remove_op(name);
          break;
        }
    }
    return g;
  }

 private:
  Value weights(const std::string& name, std::vector<std::int64_t> shape) {
    std::size_t n = 1;
    for (auto d : shape) n *= static_cast<std::size_t>(d);
    return b_.constant(name, std::move(shape),
                       zoo::uniform_int8(zoo::stream_key(1, name_ + "/" + name), n, -127, 127),
                       kWeightFp);
  }

  // shift_cut = fp_in + fp_w - fp_out grows with log2(sqrt(fan_in)) as the sum does.
  static int out_fix_point(int fp_in, std::int64_t fan_in) {
    const int growth = static_cast<int>(std::lround(std::log2(std::sqrt(double(fan_in)))));
    const int shift = std::clamp(7 + growth, 2, 16);
    return fp_in + kWeightFp - shift;
  }

  GraphBuilder b_;
  std::string name_;
};

using Build = std::function<Graph(const std::string&)>;

struct Entry {
  MicroModelInfo info;
  Build build;
};

Build conv_nl(Nonlinear nl, bool fix) {
  return [=](const std::string& n) {
    Micro m(n);
    m.conv("conv", m.input("x", {1, 8, 8, 16}), 16, 3, 3, 1, 1, 1, nl);
    return m.finish(fix);
  };
}

Build conv_shape(std::vector<std::int64_t> in, std::int64_t oc, std::int64_t k, std::int64_t stride,
                 std::int64_t pad, std::int64_t group = 1) {
  return [=](const std::string& n) {
    Micro m(n);
    m.conv("conv", m.input("x", in), oc, k, k, stride, pad, group);
    return m.finish(true);
  };
}

Build two_inputs(bool concat, bool fix) {
  return [=](const std::string& n) {
    Micro m(n);
    const Value a = m.input("a", {1, 8, 8, 16});
    const Value b = m.input("b", {1, 8, 8, 16});
    if (concat) {
      m.builder().concat("concat", {a, b}, 3, kInputFp);
    } else {
      m.builder().add("add", {a, b}, kInputFp - 1);
    }
    return m.finish(fix);
  };
}

Build pool(bool max, std::vector<std::int64_t> in, std::int64_t kh, std::int64_t kw, bool fix,
           bool global = false) {
  return [=](const std::string& n) {
    Micro m(n);
    const Value x = m.input("x", in);
    Pool2dSpec spec;
    spec.kernel = {kh, kw};
    spec.stride = {kh, kw};
    spec.global = global;
    if (max) {
      m.builder().maxpool2d("pool", x, spec);
    } else {
      m.builder().avgpool2d("pool", x, spec, kInputFp);
    }
    return m.finish(fix);
  };
}

// conv -> fix -> layout op, with or without an explicit fix after the layout op.
Build layout(bool flatten, bool fix) {
  return [=](const std::string& n) {
    Micro m(n);
    const Value y = m.conv("conv", m.input("x", {1, 8, 8, 16}), 16, 3, 3, 1, 1);
    const Value z = flatten ? m.builder().flatten("flatten", y, 1, 3)
                            : m.builder().reshape("reshape", y, {1, 64, 16});
    if (fix) m.builder().fix(z.op + "_fix", z, z.fix_point);
    return m.finish(true);
  };
}

// conv -> fix -> float op -> fix: the float op ends the fragment.
Build float_tail(const std::string& kind) {
  return [=](const std::string& n) {
    Micro m(n);
    const Value y = m.conv("conv", m.input("x", {1, 8, 8, 16}), 16, 1, 1, 1, 0);
    GraphBuilder& b = m.builder();
    if (kind == "softmax") {
      b.softmax("softmax", y, -1, 7);
    } else if (kind == "layernorm") {
      const Value gamma = m.constant("gamma", {16}, 4);
      const Value beta = m.constant("beta", {16}, 6);
      b.layernorm("layernorm", y, gamma, beta, 1e-5, 5);
    } else if (kind == "gelu") {
      b.gelu("gelu", y, y.fix_point);
    } else {
      b.leaky_relu("leaky", y, 0.2, y.fix_point);
    }
    return m.finish(true);
  };
}

const std::vector<Entry>& catalog() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> e;
    auto add = [&](std::string name, std::string what, Build build) {
      e.push_back({{std::move(name), std::move(what)}, std::move(build)});
    };
    add("conv3x3_fix", "3x3 conv 16->16, the fragment ends with its output fix",
        conv_nl(Nonlinear::None, true));
    add("conv3x3_nofix", "3x3 conv 16->16, the fragment ends at the conv (no output fix)",
        conv_nl(Nonlinear::None, false));
    add("conv_relu_fix", "conv + relu, output fix", conv_nl(Nonlinear::Relu, true));
    add("conv_relu_nofix", "conv + relu, the fragment ends at the relu",
        conv_nl(Nonlinear::Relu, false));
    add("conv_relu6_fix", "conv + relu6, output fix", conv_nl(Nonlinear::Relu6, true));
    add("conv_relu6_nofix", "conv + relu6, the fragment ends at the relu6",
        conv_nl(Nonlinear::Relu6, false));
    add("conv_leaky01_fix", "conv + leaky-relu 0.1 (26/256 on the DPU), output fix",
        conv_nl(Nonlinear::LeakyRelu, true));
    add("conv_leaky01_nofix", "conv + leaky-relu 0.1, the fragment ends at the leaky-relu",
        conv_nl(Nonlinear::LeakyRelu, false));
    add("conv_hsigmoid_fix", "conv + hard-sigmoid (a DPU conv activation), output fix",
        conv_nl(Nonlinear::HardSigmoid, true));
    add("conv_hswish_fix", "conv + hard-swish (a DPU conv activation), output fix",
        conv_nl(Nonlinear::HardSwish, true));
    add("conv_leaky02_fix", "conv, then leaky-relu 0.2 (a slope the DPU lacks) ending the fragment",
        float_tail("leaky02"));
    add("add_fix", "eltwise add of two fragment inputs, output fix", two_inputs(false, true));
    add("add_nofix", "eltwise add of two fragment inputs, no output fix", two_inputs(false, false));
    add("concat_fix", "channel concat of two fragment inputs, output fix", two_inputs(true, true));
    add("concat_nofix", "channel concat of two fragment inputs, no output fix",
        two_inputs(true, false));
    add("maxpool2x2_fix", "max pool 2x2 stride 2, output fix",
        pool(true, {1, 8, 8, 16}, 2, 2, true));
    add("maxpool2x2_nofix", "max pool 2x2, no output fix", pool(true, {1, 8, 8, 16}, 2, 2, false));
    add("maxpool9x9_fix", "max pool 9x9 stride 9 (kernel beyond 8)",
        pool(true, {1, 18, 18, 16}, 9, 9, true));
    add("avgpool2x2_fix", "avg pool 2x2 stride 2", pool(false, {1, 8, 8, 16}, 2, 2, true));
    add("avgpool3x3_fix", "avg pool 3x3 stride 3 (DPU factor 7/64)",
        pool(false, {1, 9, 9, 16}, 3, 3, true));
    add("avgpool9x9_fix", "avg pool 9x9 stride 9 (kernel beyond 8)",
        pool(false, {1, 18, 18, 16}, 9, 9, true));
    add("avgpool2x3_fix", "avg pool 2x3 (not square)", pool(false, {1, 8, 9, 16}, 2, 3, true));
    add("global_avgpool_fix", "global avg pool over 8x8",
        pool(false, {1, 8, 8, 16}, 8, 8, true, true));
    add("global_avgpool14_fix", "global avg pool over 14x14 (a 224 input's last stage; beyond 8)",
        pool(false, {1, 14, 14, 16}, 14, 14, true, true));
    add("reshape_fix", "conv, then reshape to tokens with an explicit output fix",
        layout(false, true));
    add("reshape_nofix", "conv, then reshape to tokens ending the fragment (no fix after it)",
        layout(false, false));
    add("flatten_fix", "conv, then flatten with an explicit output fix", layout(true, true));
    add("flatten_nofix", "conv, then flatten ending the fragment (no fix after it)",
        layout(true, false));
    add("depthwise3x3_fix", "depthwise 3x3 conv, output fix", [](const std::string& n) {
      Micro m(n);
      m.depthwise("dw", m.input("x", {1, 8, 8, 16}));
      return m.finish(true);
    });
    add("depthwise3x3_nofix", "depthwise 3x3 conv, no output fix", [](const std::string& n) {
      Micro m(n);
      m.depthwise("dw", m.input("x", {1, 8, 8, 16}));
      return m.finish(false);
    });
    add("mul_channel_scale_fix",
        "feature map x a per-channel scale [1,1,1,16] (squeeze-excitation, gated attention)",
        [](const std::string& n) {
          Micro m(n);
          const Value x = m.input("x", {1, 8, 8, 16});
          const Value scale = m.input("scale", {1, 1, 1, 16});
          m.builder().mul("mul", x, scale, kInputFp);
          return m.finish(true);
        });
    add("grouped_conv_g2_fix", "3x3 conv with group 2 (neither 1 nor depthwise)",
        conv_shape({1, 8, 8, 16}, 16, 3, 1, 1, 2));
    add("matmul_const_fix", "tokens x constant weights (becomes a conv), output fix",
        [](const std::string& n) {
          Micro m(n);
          m.linear("fc", m.input("x", {1, 8, 16}), 32);
          return m.finish(true);
        });
    add("matmul_const_nofix", "tokens x constant weights, no output fix", [](const std::string& n) {
      Micro m(n);
      m.linear("fc", m.input("x", {1, 8, 16}), 32);
      return m.finish(false);
    });
    add("matmul_act_act_fix", "product of two activations (attention scores), output fix",
        [](const std::string& n) {
          Micro m(n);
          const Value a = m.input("q", {1, 8, 16});
          const Value b = m.input("k", {1, 8, 16});
          m.builder().matmul("scores", a, b, std::nullopt, true, 4);
          return m.finish(true);
        });
    add("softmax_fix", "conv, then softmax over channels ending the fragment",
        float_tail("softmax"));
    add("layernorm_fix", "conv, then layernorm ending the fragment", float_tail("layernorm"));
    add("gelu_fix", "conv, then gelu ending the fragment", float_tail("gelu"));
    add("conv_ch16_fix", "3x3 conv 16->32 (channels multiples of 16)",
        conv_shape({1, 8, 8, 16}, 32, 3, 1, 1));
    add("conv_ch3_to_10_fix", "3x3 conv 3->10 (channels not multiples of 16)",
        conv_shape({1, 8, 8, 3}, 10, 3, 1, 1));
    add("conv_k16_fix", "16x16 conv (the largest DPU kernel)",
        conv_shape({1, 16, 16, 4}, 8, 16, 1, 0));
    add("conv_k17_fix", "17x17 conv (kernel beyond 16)", conv_shape({1, 17, 17, 4}, 8, 17, 1, 0));
    add("conv_stride8_fix", "8x8 conv stride 8 (the largest DPU stride)",
        conv_shape({1, 16, 16, 4}, 8, 8, 8, 0));
    add("conv_stride9_fix", "9x9 conv stride 9 (stride beyond 8)",
        conv_shape({1, 18, 18, 4}, 8, 9, 9, 0));
    add("conv_budget2048_fix",
        "16x16 conv over 128 channels: kw*kh*ceil(ic/16) = 2048, at the limit",
        conv_shape({1, 16, 16, 128}, 1, 16, 1, 0));
    add("conv_budget2304_fix",
        "16x16 conv over 144 channels: kw*kh*ceil(ic/16) = 2304, beyond 2048",
        conv_shape({1, 16, 16, 144}, 1, 16, 1, 0));
    add("conv_oc4096_fix", "1x1 conv to 4096 channels (the DPU's maximum)",
        conv_shape({1, 2, 2, 1}, 4096, 1, 1, 0));
    add("conv_oc4097_fix", "1x1 conv to 4097 channels (beyond 4096)",
        conv_shape({1, 2, 2, 1}, 4097, 1, 1, 0));
    add("fork_output_fix",
        "conv whose fixed output leaves the fragment and also feeds a second conv inside it",
        [](const std::string& n) {
          Micro m(n);
          const Value y = m.conv("conv1", m.input("x", {1, 8, 8, 16}), 16, 3, 3, 1, 1);
          // conv1's fixed value, used inside by conv2 and re-stated by a second fix (same
          // fix_point) as the fragment's output: how the splitter keeps such an output.
          m.builder().fix("conv1_out", y, y.fix_point);
          m.conv("conv2", y, 16, 3, 3, 1, 1);
          return m.finish(true);
        });
    return e;
  }();
  return entries;
}

}  // namespace

const std::vector<MicroModelInfo>& micro_models() {
  static const std::vector<MicroModelInfo> infos = [] {
    std::vector<MicroModelInfo> out;
    for (const auto& e : catalog()) out.push_back(e.info);
    return out;
  }();
  return infos;
}

Graph make_micro_model(std::string_view name) {
  for (const auto& e : catalog())
    if (e.info.name == name) return e.build(e.info.name);
  throw Error("zoo micro: unknown micro-model '" + std::string(name) +
              "' (see `dpushard zoo micro --list`)");
}

}  // namespace dpushard
