#include "pool_geometry.hpp"

#include "dpushard/graph/shape.hpp"
#include "dpushard/graph/window.hpp"

namespace dpushard::lowering {

PoolGeometry pool_geometry(const Op& pool, const QTensor& x, const QTensor& y) {
  if (x.shape.size() != 4 || y.shape.size() != 4)
    fail(pool, "input and output must be NHWC, got " + shape_text(x.shape) + " -> " +
                   shape_text(y.shape));
  PoolGeometry g;
  g.batch = x.shape[0];
  g.in_h = x.shape[1];
  g.in_w = x.shape[2];
  g.channels = x.shape[3];
  g.out_h = y.shape[1];
  g.out_w = y.shape[2];
  if (y.shape[0] != g.batch || y.shape[3] != g.channels)
    fail(pool, "output " + shape_text(y.shape) + " does not fit input " + shape_text(x.shape));
  const Window w = window_of(pool).over(g.in_h, g.in_w);
  g.kernel_h = w.kernel_h;
  g.kernel_w = w.kernel_w;
  g.stride_h = w.stride_h;
  g.stride_w = w.stride_w;
  if (w.global) {
    if (g.out_h != 1 || g.out_w != 1) fail(pool, "a global pool must output 1x1");
    return g;
  }
  g.pad_left = w.pad_left;
  g.pad_top = w.pad_top;
  g.padded = w.pad_left > 0 || w.pad_right > 0 || w.pad_top > 0 || w.pad_bottom > 0;
  if ((g.out_h - 1) * g.stride_h - g.pad_top > g.in_h - 1 + w.pad_bottom ||
      (g.out_w - 1) * g.stride_w - g.pad_left > g.in_w - 1 + w.pad_right || g.out_h < 1 ||
      g.out_w < 1)
    fail(pool, "output " + shape_text(y.shape) + " does not fit input " + shape_text(x.shape));
  return g;
}

}  // namespace dpushard::lowering
