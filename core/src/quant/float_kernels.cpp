#include "float_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dpushard::quant {
namespace {

std::int64_t count(const Shape& s) {
  std::int64_t c = 1;
  for (auto d : s) c *= d;
  return c;
}

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// Strides of `shape` aligned to a rank-`rank` broadcast, 0 along broadcast axes.
std::vector<std::int64_t> broadcast_strides(const Shape& shape, std::size_t rank) {
  std::vector<std::int64_t> stride(rank, 0);
  std::int64_t s = 1;
  const std::size_t offset = rank - shape.size();
  for (std::size_t i = rank; i-- > offset;) {
    const std::int64_t d = shape[i - offset];
    stride[i] = d == 1 ? 0 : s;
    s *= d;
  }
  return stride;
}

}  // namespace

std::vector<float> reorder_conv_weights(const std::vector<float>& ohwi, std::int64_t oc,
                                        std::int64_t kh, std::int64_t kw, std::int64_t icg,
                                        std::int64_t group) {
  const std::int64_t ocg = oc / group;
  std::vector<float> out(ohwi.size());
  for (std::int64_t o = 0; o < oc; ++o) {
    const std::int64_t g = o / ocg, og = o % ocg;
    for (std::int64_t y = 0; y < kh; ++y)
      for (std::int64_t x = 0; x < kw; ++x)
        for (std::int64_t i = 0; i < icg; ++i)
          out[at((((g * kh + y) * kw + x) * icg + i) * ocg + og)] =
              ohwi[at(((o * kh + y) * kw + x) * icg + i)];
  }
  return out;
}

void conv2d(const float* in, const Shape& is, const float* weights, const float* bias, float* out,
            const Shape& os, const Window& w, std::int64_t group) {
  const std::int64_t ih = is[1], iw = is[2], ic = is[3], oh = os[1], ow = os[2], oc = os[3];
  const std::int64_t icg = ic / group, ocg = oc / group;
  for (std::int64_t n = 0; n < os[0]; ++n)
    for (std::int64_t y = 0; y < oh; ++y)
      for (std::int64_t x = 0; x < ow; ++x) {
        float* o = out + ((n * oh + y) * ow + x) * oc;
        for (std::int64_t c = 0; c < oc; ++c) o[c] = bias ? bias[c] : 0.0f;
        for (std::int64_t g = 0; g < group; ++g) {
          float* og = o + g * ocg;
          for (std::int64_t ky = 0; ky < w.kh; ++ky) {
            const std::int64_t sy = y * w.sh - w.pt + ky * w.dh;
            if (sy < 0 || sy >= ih) continue;
            for (std::int64_t kx = 0; kx < w.kw; ++kx) {
              const std::int64_t sx = x * w.sw - w.pl + kx * w.dw;
              if (sx < 0 || sx >= iw) continue;
              const float* src = in + ((n * ih + sy) * iw + sx) * ic + g * icg;
              const float* wk = weights + (((g * w.kh + ky) * w.kw + kx) * icg) * ocg;
              for (std::int64_t i = 0; i < icg; ++i) {
                const float v = src[i];
                if (v == 0.0f) continue;
                const float* row = wk + i * ocg;
                for (std::int64_t c = 0; c < ocg; ++c) og[c] += v * row[c];
              }
            }
          }
        }
      }
}

void depthwise_conv2d(const float* in, const Shape& is, const float* weights, const float* bias,
                      float* out, const Shape& os, const Window& w) {
  const std::int64_t ih = is[1], iw = is[2], c = is[3], oh = os[1], ow = os[2];
  for (std::int64_t n = 0; n < os[0]; ++n)
    for (std::int64_t y = 0; y < oh; ++y)
      for (std::int64_t x = 0; x < ow; ++x) {
        float* o = out + ((n * oh + y) * ow + x) * c;
        for (std::int64_t k = 0; k < c; ++k) o[k] = bias ? bias[k] : 0.0f;
        for (std::int64_t ky = 0; ky < w.kh; ++ky) {
          const std::int64_t sy = y * w.sh - w.pt + ky * w.dh;
          if (sy < 0 || sy >= ih) continue;
          for (std::int64_t kx = 0; kx < w.kw; ++kx) {
            const std::int64_t sx = x * w.sw - w.pl + kx * w.dw;
            if (sx < 0 || sx >= iw) continue;
            const float* src = in + ((n * ih + sy) * iw + sx) * c;
            const float* wk = weights + (ky * w.kw + kx) * c;
            for (std::int64_t k = 0; k < c; ++k) o[k] += src[k] * wk[k];
          }
        }
      }
}

void pool2d(const float* in, const Shape& is, float* out, const Shape& os, const Window& w,
            bool max, bool count_pad) {
  const std::int64_t ih = is[1], iw = is[2], c = is[3], oh = os[1], ow = os[2];
  std::vector<float> acc(at(c));
  for (std::int64_t n = 0; n < os[0]; ++n)
    for (std::int64_t y = 0; y < oh; ++y)
      for (std::int64_t x = 0; x < ow; ++x) {
        std::fill(acc.begin(), acc.end(), max ? -std::numeric_limits<float>::infinity() : 0.0f);
        std::int64_t taps = 0;
        for (std::int64_t ky = 0; ky < w.kh; ++ky) {
          const std::int64_t sy = y * w.sh - w.pt + ky;
          if (sy < 0 || sy >= ih) continue;
          for (std::int64_t kx = 0; kx < w.kw; ++kx) {
            const std::int64_t sx = x * w.sw - w.pl + kx;
            if (sx < 0 || sx >= iw) continue;
            ++taps;
            const float* src = in + ((n * ih + sy) * iw + sx) * c;
            if (max)
              for (std::int64_t k = 0; k < c; ++k) acc[at(k)] = std::max(acc[at(k)], src[k]);
            else
              for (std::int64_t k = 0; k < c; ++k) acc[at(k)] += src[k];
          }
        }
        float* o = out + ((n * oh + y) * ow + x) * c;
        const float div =
            static_cast<float>(count_pad ? w.kh * w.kw : std::max<std::int64_t>(taps, 1));
        for (std::int64_t k = 0; k < c; ++k) o[k] = max ? acc[at(k)] : acc[at(k)] / div;
      }
}

void matmul(const float* a, const Shape& as, const float* b, const Shape& bs, bool transpose_b,
            const float* bias, float* out, const Shape& os) {
  const std::int64_t m = as[as.size() - 2], k = as.back();
  const std::int64_t n = os.back();
  const std::size_t batch_rank = os.size() - 2;
  const Shape batch(os.begin(), os.end() - 2);
  const auto sa = broadcast_strides(Shape(as.begin(), as.end() - 2), batch_rank);
  const auto sb = broadcast_strides(Shape(bs.begin(), bs.end() - 2), batch_rank);
  const std::int64_t batches = count(batch);
  std::vector<std::int64_t> index(batch_rank, 0);
  for (std::int64_t bi = 0; bi < batches; ++bi) {
    std::int64_t oa = 0, ob = 0;
    for (std::size_t i = 0; i < batch_rank; ++i) {
      oa += index[i] * sa[i];
      ob += index[i] * sb[i];
    }
    const float* pa = a + oa * m * k;
    const float* pb = b + ob * k * n;
    float* po = out + bi * m * n;
    for (std::int64_t r = 0; r < m; ++r) {
      float* row = po + r * n;
      for (std::int64_t j = 0; j < n; ++j) row[j] = bias ? bias[j] : 0.0f;
      const float* ar = pa + r * k;
      if (transpose_b) {
        for (std::int64_t j = 0; j < n; ++j) {
          const float* br = pb + j * k;
          float s = 0.0f;
          for (std::int64_t q = 0; q < k; ++q) s += ar[q] * br[q];
          row[j] += s;
        }
      } else {
        for (std::int64_t q = 0; q < k; ++q) {
          const float v = ar[q];
          const float* br = pb + q * n;
          for (std::int64_t j = 0; j < n; ++j) row[j] += v * br[j];
        }
      }
    }
    for (std::size_t i = batch_rank; i-- > 0;) {
      if (++index[i] < batch[i]) break;
      index[i] = 0;
    }
  }
}

void broadcast_binary(const float* a, const Shape& as, const float* b, const Shape& bs, float* out,
                      const Shape& os, Binary op) {
  const std::int64_t total = count(os);
  auto apply = [op](float x, float y) { return op == Binary::Add ? x + y : x * y; };
  if (as == os && bs == os) {
    for (std::int64_t i = 0; i < total; ++i) out[i] = apply(a[i], b[i]);
    return;
  }
  if (as == os && count(bs) == 1) {
    for (std::int64_t i = 0; i < total; ++i) out[i] = apply(a[i], b[0]);
    return;
  }
  if (as == os && !bs.empty() && count(bs) == bs.back() && bs.back() == os.back()) {
    const std::int64_t c = os.back();
    for (std::int64_t i = 0; i < total; ++i) out[i] = apply(a[i], b[i % c]);
    return;
  }
  const std::size_t rank = os.size();
  const auto sa = broadcast_strides(as, rank), sb = broadcast_strides(bs, rank);
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t i = 0; i < total; ++i) {
    std::int64_t oa = 0, ob = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      oa += index[d] * sa[d];
      ob += index[d] * sb[d];
    }
    out[i] = apply(a[oa], b[ob]);
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < os[d]) break;
      index[d] = 0;
    }
  }
}

void softmax(float* data, const Shape& shape, std::int64_t axis) {
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < at(axis); ++i) outer *= shape[i];
  for (std::size_t i = at(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  const std::int64_t dim = shape[at(axis)];
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t in = 0; in < inner; ++in) {
      float* base = data + o * dim * inner + in;
      float mx = -std::numeric_limits<float>::infinity();
      for (std::int64_t d = 0; d < dim; ++d) mx = std::max(mx, base[d * inner]);
      double sum = 0.0;
      std::vector<double> e(at(dim));
      for (std::int64_t d = 0; d < dim; ++d) {
        e[at(d)] = std::exp(static_cast<double>(base[d * inner] - mx));
        sum += e[at(d)];
      }
      for (std::int64_t d = 0; d < dim; ++d) base[d * inner] = static_cast<float>(e[at(d)] / sum);
    }
}

void layernorm(const float* in, const Shape& shape, const float* gamma, const float* beta,
               double epsilon, float* out) {
  const std::int64_t d = shape.back(), rows = count(shape) / std::max<std::int64_t>(d, 1);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* x = in + r * d;
    float* y = out + r * d;
    double mean = 0.0, var = 0.0;
    for (std::int64_t i = 0; i < d; ++i) mean += static_cast<double>(x[i]);
    mean /= static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) {
      const double c = static_cast<double>(x[i]) - mean;
      var += c * c;
    }
    var /= static_cast<double>(d);
    const double inv = 1.0 / std::sqrt(var + epsilon);
    for (std::int64_t i = 0; i < d; ++i)
      y[i] = static_cast<float>((static_cast<double>(x[i]) - mean) * inv *
                                    static_cast<double>(gamma[i]) +
                                static_cast<double>(beta[i]));
  }
}

void transpose(const float* in, const Shape& is, const std::vector<std::int64_t>& order,
               float* out) {
  const std::size_t rank = is.size();
  std::vector<std::int64_t> in_stride(rank, 1);
  for (std::size_t i = rank; i-- > 1;) in_stride[i - 1] = in_stride[i] * is[i];
  Shape os(rank);
  std::vector<std::int64_t> stride(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    os[i] = is[at(order[i])];
    stride[i] = in_stride[at(order[i])];
  }
  const std::int64_t total = count(is);
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t src = 0;
  for (std::int64_t i = 0; i < total; ++i) {
    out[i] = in[src];
    for (std::size_t d = rank; d-- > 0;) {
      src += stride[d];
      if (++index[d] < os[d]) break;
      src -= stride[d] * os[d];
      index[d] = 0;
    }
  }
}

void concat(const std::vector<const float*>& ins, const std::vector<Shape>& shapes,
            std::int64_t axis, float* out) {
  std::int64_t outer = 1;
  for (std::size_t i = 0; i < at(axis); ++i) outer *= shapes[0][i];
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::size_t k = 0; k < ins.size(); ++k) {
      const std::int64_t block = count(shapes[k]) / outer;
      out = std::copy(ins[k] + o * block, ins[k] + (o + 1) * block, out);
    }
}

}  // namespace dpushard::quant
