// Broadcast strides and reduction layouts.
#include "tower/backends/cpu/strided.h"

#include <algorithm>

namespace tower::cpu {

ReduceLayout reduce_layout(const Shape& in, const std::vector<int>& axes) {
  ReduceLayout layout;
  auto is_reduced = [&](int d) { return std::find(axes.begin(), axes.end(), d) != axes.end(); };
  int phase = 0;  // 0: outer kept axes, 1: reduced axes, 2: inner kept axes
  for (int d = 0; d < in.rank(); ++d) {
    if (in[d] == 1) continue;
    bool red = is_reduced(d);
    if (phase == 0 && red) phase = 1;
    else if (phase == 1 && !red) phase = 2;
    else if (phase == 2 && red) layout.contiguous = false;
    (phase == 0 ? layout.outer : phase == 1 ? layout.reduced : layout.inner) *= in[d];
  }
  return layout;
}

Dims reduced_strides(const Shape& in, const std::vector<int>& axes) {
  Dims strides(static_cast<std::size_t>(in.rank()), 0);
  std::int64_t stride = 1;
  for (int d = in.rank() - 1; d >= 0; --d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) continue;
    strides[static_cast<std::size_t>(d)] = stride;
    stride *= in[d];
  }
  return strides;
}

}  // namespace tower::cpu
