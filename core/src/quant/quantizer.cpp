// Float IR graph -> `_int` graph. Calibration runs the float interpreter twice: once for
// the range of every tensor, once for the squared error of each candidate fix point
// around the range-based one (the Vitis AI quantizer's "diffs" method). The graph is then
// rebuilt with GraphBuilder, weights quantized half away from zero, activations with
// DPU_ROUND, and the DPU's shift limits enforced by moving fix points.
#include <array>
#include <cmath>
#include <set>
#include <unordered_map>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/graph/window.hpp"
#include "dpushard/quant/quantize.hpp"

namespace dpushard {
namespace {

constexpr int kCandidates = 4;  // fix points base .. base+3 (base = no clipping)
constexpr int kMaxShift = 16;   // shift_cut and shift_bias upper limit (VITIS_AI.md 2)

struct Stats {
  double max_abs = 0.0;
  int base = 0;
  std::array<double, kCandidates> err{};
  int chosen = 0;
};

[[noreturn]] void fail(const Op& op, const std::string& what) {
  throw Error("quantize: op '" + op.name + "' (" + op.type + "): " + what);
}

std::vector<std::int8_t> quantize_values(const std::vector<float>& v, int fp, RoundMode mode) {
  std::vector<std::int8_t> q(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) q[i] = quantize(v[i], fp, mode);
  return q;
}

int weight_fix_point(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  const int base = max_fix_point(m);
  return best_fix_point(v, RoundMode::Std, base, base + kCandidates - 1);
}

// A one-hot [n, k] matrix: the importer's exact Slice/Gather/Split.
bool is_selection(const std::vector<float>& v, const std::vector<std::int64_t>& shape) {
  if (shape.size() != 2) return false;
  for (std::int64_t r = 0; r < shape[0]; ++r) {
    int ones = 0;
    for (std::int64_t c = 0; c < shape[1]; ++c) {
      const float x = v[static_cast<std::size_t>(r * shape[1] + c)];
      if (x == 1.0f)
        ++ones;
      else if (x != 0.0f)
        return false;
    }
    if (ones != 1) return false;
  }
  return true;
}

class Quantizer {
 public:
  Quantizer(const Graph& g, const CalibrationSet& calibration, QuantizeReport& report)
      : g_(g), calibration_(calibration), report_(report), b_(g.name()) {}

  Graph run() {
    calibrate();
    for (std::size_t i : g_.topological_order()) {
      const Op& op = g_.ops()[i];
      if (op.type == "const" || fused_.count(op.name)) continue;
      emit(op);
    }
    Graph out = b_.finish();
    for (const Op& op : out.ops())
      if (op.type == "fix") ++report_.fix_ops;
    return out;
  }

 private:
  void calibrate() {
    if (calibration_.empty()) throw Error("quantize: no calibration samples");
    FloatInterpreter interp(g_);
    for (const auto& sample : calibration_)
      interp.run(sample, [&](const Op& op, const FloatTensor& t) {
        Stats& s = stats_[op.name];
        for (float v : t.data) s.max_abs = std::max(s.max_abs, static_cast<double>(std::fabs(v)));
      });
    for (auto& [name, s] : stats_) s.base = max_fix_point(s.max_abs);
    for (const auto& sample : calibration_)
      interp.run(sample, [&](const Op& op, const FloatTensor& t) {
        Stats& s = stats_[op.name];
        const RoundMode mode = op.type == "data" ? RoundMode::Std : RoundMode::Dpu;
        for (int c = 0; c < kCandidates; ++c) {
          const double scale = std::ldexp(1.0, s.base + c), inv = std::ldexp(1.0, -(s.base + c));
          double err = 0.0;
          for (float f : t.data) {
            const double v = f;
            const double q = std::fmax(-128.0, std::fmin(127.0, round_with(mode, v * scale)));
            err += (v - q * inv) * (v - q * inv);
          }
          s.err[static_cast<std::size_t>(c)] += err;
        }
      });
    for (auto& [name, s] : stats_) {
      int best = 0;
      for (int c = 1; c < kCandidates; ++c)
        if (s.err[static_cast<std::size_t>(c)] < s.err[static_cast<std::size_t>(best)]) best = c;
      s.chosen = s.base + best;
    }
    report_.calibration_samples = static_cast<int>(calibration_.size());
  }

  int act_fp(const Op& op) {
    auto it = stats_.find(op.name);
    if (it == stats_.end()) fail(op, "was not reached by calibration");
    return it->second.chosen;
  }

  void note_activation(int fp) { ++report_.activation_fix_points[fp]; }

  void set_round_mode(const std::string& fix_name, RoundMode mode) {
    if (Op* f = b_.graph().find(fix_name))
      f->attrs["round_mode"] = std::string(round_mode_name(mode));
  }

  // A constant as a fixed value (weights rounding), at `fp` or its best fix point.
  Value constant(const Op& c, std::optional<int> fp = std::nullopt) {
    auto it = consts_.find(c.name);
    if (it != consts_.end() && (!fp || it->second.fix_point == *fp)) return it->second;
    const std::vector<float> v = const_values(c);
    const int f = fp ? *fp : weight_fix_point(v);
    std::string name = c.name;
    if (it != consts_.end()) name += "_fp" + std::to_string(f);
    Value out = b_.constant(name, c.output.shape, quantize_values(v, f, RoundMode::Std), f);
    set_round_mode(out.op, RoundMode::Std);
    ++report_.weight_fix_points[f];
    report_.parameters += c.output.element_count();
    if (it == consts_.end()) consts_[c.name] = out;
    return out;
  }

  Value input(const Op& consumer, const std::string& producer) {
    auto it = values_.find(producer);
    if (it != values_.end()) return it->second;
    const Op* p = g_.find(producer);
    if (p != nullptr && p->type == "const") return constant(*p);
    fail(consumer, "input '" + producer + "' has no quantized value");
  }

  // The relu / relu6 / leaky-relu(0.1) that alone consumes `op`, fused into its chain.
  const Op* fusable_nonlinear(const Op& op, Nonlinear& nl) {
    nl = Nonlinear::None;
    const auto users = g_.consumers(op.name);
    if (users.size() != 1) return nullptr;
    const Op* u = users[0];
    if (u->type == "relu")
      nl = Nonlinear::Relu;
    else if (u->type == "relu6")
      nl = Nonlinear::Relu6;
    else if (u->type == "leaky-relu" && std::fabs(float_attr(u->attrs, "alpha", 0.0) - 0.1) < 1e-6)
      nl = Nonlinear::LeakyRelu;
    else
      return nullptr;
    fused_.insert(u->name);
    return u;
  }

  // Keeps shift_cut = fp_in + fp_w - fp_out in [0, 16] and shift_bias = fp_in + fp_w - fp_b
  // in [min(0, shift_cut - 16), 16] (VITIS_AI.md section 2).
  void enforce_shifts(int fp_in, int& fp_w, int& fp_out, int* fp_b) {
    if (fp_in + fp_w - fp_out < 0) {  // an output finer than the products gains nothing
      fp_out = fp_in + fp_w;
      ++report_.shift_adjustments;
    }
    if (fp_in + fp_w - fp_out > kMaxShift) {  // weights finer than the output can use
      fp_w = fp_out + kMaxShift - fp_in;
      ++report_.shift_adjustments;
    }
    if (fp_b == nullptr) return;
    const int cut = fp_in + fp_w - fp_out;
    const int lower = std::min(0, cut - kMaxShift);
    const int shift_bias = fp_in + fp_w - *fp_b;
    if (shift_bias > kMaxShift) {
      *fp_b = fp_in + fp_w - kMaxShift;
      ++report_.shift_adjustments;
    } else if (shift_bias < lower) {
      *fp_b = fp_in + fp_w - lower;
      ++report_.shift_adjustments;
    }
  }

  void emit_conv(const Op& op) {
    const Value x = input(op, op.producers("input").at(0));
    const Op& w = g_.op(op.producers("weights").at(0));
    const Op* bias_op = op.producers("bias").empty() ? nullptr : &g_.op(op.producers("bias")[0]);
    Nonlinear nl;
    const Op* last = fusable_nonlinear(op, nl);
    int fp_w = weight_fix_point(const_values(w));
    int fp_b = bias_op ? weight_fix_point(const_values(*bias_op)) : 0;
    int fp_out = act_fp(last ? *last : op);
    enforce_shifts(x.fix_point, fp_w, fp_out, bias_op ? &fp_b : nullptr);
    const Value wv = constant(w, fp_w);
    std::optional<Value> bv;
    if (bias_op) bv = constant(*bias_op, fp_b);
    Conv2dSpec spec;
    const Window win = window_of(op);
    spec.kernel = {win.kernel_h, win.kernel_w};
    spec.stride = {win.stride_h, win.stride_w};
    spec.dilation = {win.dilation_h, win.dilation_w};
    spec.pad = {win.pad_left, win.pad_right, win.pad_top, win.pad_bottom};
    spec.group = int_attr(op.attrs, "group", 1);
    spec.nonlinear = nl;
    const Value y = op.type == "conv2d" ? b_.conv2d(op.name, x, wv, bv, spec, fp_out)
                                        : b_.depthwise_conv2d(op.name, x, wv, bv, spec, fp_out);
    note_activation(fp_out);
    values_[(last ? *last : op).name] = y;
  }

  void emit_matmul(const Op& op) {
    const auto& in = op.producers("input");
    if (in.size() != 2) fail(op, "needs 2 inputs");
    const Value a = input(op, in[0]);
    const bool transpose_b = bool_attr(op.attrs, "transpose_b", false);
    const Op& bop = g_.op(in[1]);
    const Op* bias_op = op.producers("bias").empty() ? nullptr : &g_.op(op.producers("bias")[0]);
    if (bop.type == "const") {
      const std::vector<float> wv = const_values(bop);
      if (!bias_op && transpose_b && is_selection(wv, bop.output.shape)) {
        // Exact element selection: weights 1 at fix point 0, output keeps the input's.
        const Value w = constant(bop, 0);
        values_[op.name] = b_.matmul(op.name, a, w, std::nullopt, true, a.fix_point);
        note_activation(a.fix_point);
        return;
      }
      Nonlinear nl;
      const Op* last = fusable_nonlinear(op, nl);
      int fp_w = weight_fix_point(wv);
      int fp_b = bias_op ? weight_fix_point(const_values(*bias_op)) : 0;
      int fp_out = act_fp(last ? *last : op);
      enforce_shifts(a.fix_point, fp_w, fp_out, bias_op ? &fp_b : nullptr);
      const Value w = constant(bop, fp_w);
      std::optional<Value> bv;
      if (bias_op) bv = constant(*bias_op, fp_b);
      values_[(last ? *last : op).name] = b_.matmul(op.name, a, w, bv, transpose_b, fp_out, nl);
      note_activation(fp_out);
      return;
    }
    if (bias_op) fail(op, "a bias with two activation operands is not supported");
    const Value bv = input(op, in[1]);
    Nonlinear nl;
    const Op* last = fusable_nonlinear(op, nl);
    int fp_out = act_fp(last ? *last : op);
    int fp_b = bv.fix_point;
    enforce_shifts(a.fix_point, fp_b, fp_out, nullptr);
    if (fp_b != bv.fix_point) {  // cannot requantize an activation operand: move the output
      fp_out = a.fix_point + bv.fix_point - kMaxShift;
    }
    values_[(last ? *last : op).name] =
        b_.matmul(op.name, a, bv, std::nullopt, transpose_b, fp_out, nl);
    note_activation(fp_out);
  }

  void emit_add(const Op& op) {
    std::vector<Value> xs;
    for (const auto& p : op.producers("input")) xs.push_back(input(op, p));
    Nonlinear nl;
    const Op* last = fusable_nonlinear(op, nl);
    const int fp_out = act_fp(last ? *last : op);
    values_[(last ? *last : op).name] = b_.add(op.name, xs, fp_out, nl);
    note_activation(fp_out);
  }

  void emit_mul(const Op& op) {
    const auto& in = op.producers("input");
    if (in.size() != 2) fail(op, "needs 2 inputs");
    const Value a = input(op, in[0]), b = input(op, in[1]);
    int fp_out = act_fp(op);
    if (fp_out > a.fix_point + b.fix_point) {
      fp_out = a.fix_point + b.fix_point;
      ++report_.shift_adjustments;
    }
    values_[op.name] = b_.mul(op.name, a, b, fp_out);
    note_activation(fp_out);
  }

  Pool2dSpec pool_spec(const Op& op) {
    Pool2dSpec spec;
    const Window win = window_of(op);
    spec.global = win.global;  // the builder gives a global pool its input's extent
    if (!win.global) {
      spec.kernel = {win.kernel_h, win.kernel_w};
      spec.stride = {win.stride_h, win.stride_w};
      spec.pad = {win.pad_left, win.pad_right, win.pad_top, win.pad_bottom};
    }
    if (win.pad_mode != "FLOOR") fail(op, "only FLOOR pad_mode is supported");
    return spec;
  }

  // A float op the builder has no method for: op -> fix.
  Value emit_plain(const Op& op, const Value& x, int fp) {
    Op copy = op;
    copy.args = {{"input", {x.op}}};
    copy.output.shape = x.shape;
    b_.graph().add_op(std::move(copy));
    return b_.fix(op.name + "_fix", {op.name, x.shape, fp}, fp);
  }

  void emit(const Op& op) {
    const std::string& t = op.type;
    if (t == "data") {
      const int fp = act_fp(op);
      const Value v = b_.input(op.name, op.output.shape, fp);
      set_round_mode(v.op, RoundMode::Std);
      values_[op.name] = v;
      note_activation(fp);
      return;
    }
    if (t == "conv2d" || t == "depthwise-conv2d") return emit_conv(op);
    if (t == "matmul") return emit_matmul(op);
    if (t == "add") return emit_add(op);
    if (t == "mul") return emit_mul(op);
    const auto& in = op.producers("input");
    if (in.empty()) fail(op, "has no input");
    const Value x = input(op, in[0]);
    Value y;
    if (t == "maxpool2d") {
      y = b_.maxpool2d(op.name, x, pool_spec(op));
    } else if (t == "avgpool2d") {
      y = b_.avgpool2d(op.name, x, pool_spec(op), act_fp(op));
      if (!bool_attr(op.attrs, "count_include_pad", true))
        b_.graph().find(op.name)->attrs["count_include_pad"] = false;
      note_activation(y.fix_point);
    } else if (t == "concat") {
      std::vector<Value> xs;
      for (const auto& p : in) xs.push_back(input(op, p));
      y = b_.concat(op.name, xs, int_attr(op.attrs, "axis", -1), act_fp(op));
      note_activation(y.fix_point);
    } else if (t == "reshape" || t == "flatten" || t == "identity" || t == "squeeze") {
      y = b_.reshape(op.name, x, op.output.shape);
    } else if (t == "transpose") {
      y = b_.transpose(op.name, x, ints_attr(op.attrs, "order", op.name));
    } else {
      const int fp = act_fp(op);
      if (t == "relu")
        y = b_.relu(op.name, x, fp);
      else if (t == "relu6")
        y = b_.relu6(op.name, x, fp);
      else if (t == "leaky-relu")
        y = b_.leaky_relu(op.name, x, float_attr(op.attrs, "alpha", 0.01), fp);
      else if (t == "sigmoid")
        y = b_.sigmoid(op.name, x, fp);
      else if (t == "gelu")
        y = b_.gelu(op.name, x, fp);
      else if (t == "softmax")
        y = b_.softmax(op.name, x, int_attr(op.attrs, "axis", -1), fp);
      else if (t == "layernorm") {
        const Value gamma = input(op, op.producers("gamma").at(0));
        const Value beta = input(op, op.producers("beta").at(0));
        y = b_.layernorm(op.name, x, gamma, beta, float_attr(op.attrs, "epsilon", 1e-5), fp);
      } else if (t == "hard-swish" || t == "hard-sigmoid" || t == "tanh") {
        y = emit_plain(op, x, fp);
      } else {
        fail(op, "cannot be quantized");
      }
      note_activation(fp);
    }
    values_[op.name] = y;
  }

  const Graph& g_;
  const CalibrationSet& calibration_;
  QuantizeReport& report_;
  GraphBuilder b_;
  std::unordered_map<std::string, Stats> stats_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, Value> consts_;
  std::set<std::string> fused_;
};

}  // namespace

Graph quantize(const Graph& float_graph, const CalibrationSet& calibration,
               QuantizeReport* report) {
  for (const Op& op : float_graph.ops())
    if (op.type == "fix")
      throw Error("quantize: op '" + op.name + "' is a fix: the graph is already quantized");
  QuantizeReport local;
  Quantizer q(float_graph, calibration, report ? *report : local);
  return q.run();
}

}  // namespace dpushard
