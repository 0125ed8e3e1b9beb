#pragma once
// Plain float loops for the reference interpreter, in NHWC with the output channel
// innermost so the compiler vectorises the multiply-adds.

#include <cstdint>
#include <vector>

namespace dpushard::quant {

using Shape = std::vector<std::int64_t>;

struct Window {
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  std::int64_t pt = 0, pb = 0, pl = 0, pr = 0;
};

// Conv weights OHWI [oc, kh, kw, ic/g] reordered to [g][kh][kw][ic/g][oc/g].
std::vector<float> reorder_conv_weights(const std::vector<float>& ohwi, std::int64_t oc,
                                        std::int64_t kh, std::int64_t kw, std::int64_t icg,
                                        std::int64_t group);

// in [n, ih, iw, ic], out [n, oh, ow, oc]; weights from reorder_conv_weights; bias or null.
void conv2d(const float* in, const Shape& in_shape, const float* weights, const float* bias,
            float* out, const Shape& out_shape, const Window& w, std::int64_t group);
// Depthwise (multiplier 1): weights [kh, kw, c].
void depthwise_conv2d(const float* in, const Shape& in_shape, const float* weights,
                      const float* bias, float* out, const Shape& out_shape, const Window& w);
// Max ignores padding; average divides by the window size (count_pad) or by the taps
// inside the input.
void pool2d(const float* in, const Shape& in_shape, float* out, const Shape& out_shape,
            const Window& w, bool max, bool count_pad);

// out[b] = a[b] x B[b] with numpy batch broadcasting; a is [.., m, k]; B is [.., k, n], or
// [.., n, k] when transpose_b. bias [n] or null.
void matmul(const float* a, const Shape& a_shape, const float* b, const Shape& b_shape,
            bool transpose_b, const float* bias, float* out, const Shape& out_shape);

// out = f(a, b) with numpy broadcasting into out_shape.
enum class Binary { Add, Mul };
void broadcast_binary(const float* a, const Shape& a_shape, const float* b, const Shape& b_shape,
                      float* out, const Shape& out_shape, Binary op);

void softmax(float* data, const Shape& shape, std::int64_t axis);
void layernorm(const float* in, const Shape& shape, const float* gamma, const float* beta,
               double epsilon, float* out);
// out = in with axes permuted: out axis i = in axis order[i].
void transpose(const float* in, const Shape& in_shape, const std::vector<std::int64_t>& order,
               float* out);
void concat(const std::vector<const float*>& ins, const std::vector<Shape>& shapes,
            std::int64_t axis, float* out);

}  // namespace dpushard::quant
