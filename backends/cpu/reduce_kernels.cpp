// CPU kernels of the reductions: sum, mean, max, max's gradient, argmax, broadcast_reduced.
#include <algorithm>
#include <limits>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/strided.h"
#include "tower/core/op_names.h"
#include "tower/core/ops/shape_utils.h"

namespace tower::cpu {

namespace {

std::vector<int> axes_of(const KernelContext& ctx, const Tensor& x) {
  return normalize_axes(ctx.attrs().get_ints("axes"), x.shape().rank());
}

// out[o, j] = combine over r of x[o, r, j], for x seen as (outer, reduced, inner) or, when the
// reduced axes are not consecutive, through reduced_strides.
template <typename T, typename Combine>
void reduce(KernelContext& ctx, const Tensor& x, const std::vector<int>& axes, Tensor& out, T init, Combine combine) {
  const T* px = x.data<T>();
  T* py = out.data<T>();
  const std::int64_t n_out = out.num_elements();
  std::fill(py, py + n_out, init);
  const ReduceLayout l = reduce_layout(x.shape(), axes);
  if (!l.contiguous) {
    const Dims dims = x.shape().dims();
    const Dims so = reduced_strides(x.shape(), axes);
    std::int64_t in = 0;
    for_each_row<1>(dims, {&so}, 0, num_rows(dims), [&](const std::array<std::int64_t, 1>& off, std::int64_t len) {
      const std::int64_t step = so.back();
      for (std::int64_t k = 0; k < len; ++k) py[off[0] + k * step] = combine(py[off[0] + k * step], px[in + k]);
      in += len;
    });
    return;
  }
  if (l.reduced == 1) {  // axes of length 1 (a broadcast's gradient): each value stays as it is
    parallel_for(ctx, n_out, kElementwiseGrain, [&](std::int64_t lo, std::int64_t hi) {
      for (auto i = lo; i < hi; ++i) py[i] = combine(init, px[i]);
    });
    return;
  }
  constexpr std::int64_t kLanes = 16;
  if (l.inner == 1 && l.reduced >= 4 * kLanes) {
    // Long rows to one value each (softmax-like sums over the last axis): 16 partial results across
    // the row, so that the loop vectorizes (one running value would chain every add), then the
    // partials combined in order.
    parallel_for(ctx, l.outer, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(1, l.reduced)),
                 [&](std::int64_t lo, std::int64_t hi) {
                   for (auto o = lo; o < hi; ++o) {
                     const T* row = px + o * l.reduced;
                     T lanes[kLanes];
                     std::fill_n(lanes, kLanes, init);
                     std::int64_t r = 0;
                     for (; r + kLanes <= l.reduced; r += kLanes)
                       for (std::int64_t j = 0; j < kLanes; ++j) lanes[j] = combine(lanes[j], row[r + j]);
                     T acc = init;
                     for (std::int64_t j = 0; j < kLanes; ++j) acc = combine(acc, lanes[j]);
                     for (; r < l.reduced; ++r) acc = combine(acc, row[r]);
                     py[o] = acc;
                   }
                 });
    return;
  }
  if (l.outer >= cpu_pool(ctx).size() || l.reduced * l.inner < kElementwiseGrain) {
    parallel_for(ctx, l.outer, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(1, l.reduced * l.inner)),
                 [&](std::int64_t lo, std::int64_t hi) {
                   for (auto o = lo; o < hi; ++o)
                     for (std::int64_t r = 0; r < l.reduced; ++r) {
                       const T* row = px + (o * l.reduced + r) * l.inner;
                       T* acc = py + o * l.inner;
                       for (std::int64_t j = 0; j < l.inner; ++j) acc[j] = combine(acc[j], row[j]);
                     }
                 });
    return;
  }
  // Few outputs, long reductions (bias gradients): each thread reduces a slice of r into its own
  // partial result, then the partials are combined.
  const int threads = cpu_pool(ctx).size();
  std::vector<T> partial(static_cast<std::size_t>(threads * l.outer * l.inner), init);
  const std::int64_t chunk = (l.reduced + threads - 1) / threads;
  parallel_for(ctx, threads, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (auto t = lo; t < hi; ++t) {
      T* acc0 = partial.data() + t * l.outer * l.inner;
      for (std::int64_t o = 0; o < l.outer; ++o)
        for (std::int64_t r = t * chunk; r < std::min(l.reduced, (t + 1) * chunk); ++r) {
          const T* row = px + (o * l.reduced + r) * l.inner;
          T* acc = acc0 + o * l.inner;
          for (std::int64_t j = 0; j < l.inner; ++j) acc[j] = combine(acc[j], row[j]);
        }
    }
  });
  for (int t = 0; t < threads; ++t)
    for (std::int64_t i = 0; i < n_out; ++i) py[i] = combine(py[i], partial[static_cast<std::size_t>(t * n_out + i)]);
}

void reduce_sum_kernel(KernelContext& ctx) {
  sum_over_axes(ctx, ctx.inputs[0], axes_of(ctx, ctx.inputs[0]), ctx.outputs[0]);
}

void reduce_mean_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  sum_over_axes(ctx, x, axes_of(ctx, x), y);
  dispatch_floating(x.dtype(), op_names::reduce_mean, [&]<typename T>() {
    const T inv = static_cast<T>(static_cast<double>(y.num_elements()) / static_cast<double>(std::max<std::int64_t>(1, x.num_elements())));
    T* py = y.data<T>();
    for (std::int64_t i = 0; i < y.num_elements(); ++i) py[i] *= inv;
  });
}

void reduce_max_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  if (x.num_elements() == 0) raise<ValueError>("reduce_max of an empty tensor of shape {}", x.shape().to_string());
  dispatch_any(x.dtype(), op_names::reduce_max, [&]<typename T>() {
    // The identity of max: -inf for floats (a row of -inf reduces to -inf, not -FLT_MAX), else lowest().
    constexpr T identity = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                                : std::numeric_limits<T>::lowest();
    reduce<T>(ctx, x, axes_of(ctx, x), ctx.outputs[0], identity,
              [](T a, T b) { return b > a ? b : a; });
  });
}

// Walks x (and a same-shaped output) contiguously with the matching offset in the reduced tensor.
template <typename F>
void walk_reduced(const Shape& x_shape, const std::vector<int>& axes, F&& fn) {
  const Dims dims = x_shape.dims();
  const Dims so = reduced_strides(x_shape, axes);
  std::int64_t in = 0;
  for_each_row<1>(dims, {&so}, 0, num_rows(dims), [&](const std::array<std::int64_t, 1>& off, std::int64_t len) {
    const std::int64_t step = dims.empty() ? 0 : so.back();
    for (std::int64_t k = 0; k < len; ++k) fn(in + k, off[0] + k * step);
    in += len;
  });
}

void reduce_max_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& x = ctx.inputs[1];
  const Tensor& y = ctx.inputs[2];
  Tensor& dx = ctx.outputs[0];
  const auto axes = axes_of(ctx, x);
  dispatch_floating(x.dtype(), op_names::reduce_max_grad, [&]<typename T>() {
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    std::vector<T> ties(static_cast<std::size_t>(y.num_elements()), T(0));
    walk_reduced(x.shape(), axes, [&](std::int64_t i, std::int64_t o) {
      if (px[i] == py[o]) ties[static_cast<std::size_t>(o)] += T(1);
    });
    walk_reduced(x.shape(), axes, [&](std::int64_t i, std::int64_t o) {
      pdx[i] = px[i] == py[o] ? pdy[o] / ties[static_cast<std::size_t>(o)] : T(0);
    });
  });
}

void broadcast_reduced_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& out = ctx.outputs[0];
  const auto axes = normalize_axes(ctx.attrs().get_ints("axes"), out.shape().rank());
  const bool mean = ctx.attrs().get_bool("mean");
  dispatch_floating(dy.dtype(), op_names::broadcast_reduced, [&]<typename T>() {
    const T* pdy = dy.data<T>();
    T* po = out.data<T>();
    const T f = mean ? static_cast<T>(static_cast<double>(dy.num_elements()) / static_cast<double>(std::max<std::int64_t>(1, out.num_elements())))
                     : T(1);
    const ReduceLayout l = reduce_layout(out.shape(), axes);
    if (l.contiguous && l.inner == 1) {  // one value across each row (a mean's or a row sum's gradient)
      parallel_for(ctx, l.outer, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(1, l.reduced)),
                   [&](std::int64_t lo, std::int64_t hi) {
                     for (auto o = lo; o < hi; ++o) std::fill_n(po + o * l.reduced, l.reduced, pdy[o] * f);
                   });
      return;
    }
    if (l.contiguous) {
      parallel_for(ctx, l.outer * l.reduced, std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(1, l.inner)),
                   [&](std::int64_t lo, std::int64_t hi) {
                     for (auto row = lo; row < hi; ++row) {
                       const T* src = pdy + (row / l.reduced) * l.inner;
                       T* dst = po + row * l.inner;
                       for (std::int64_t j = 0; j < l.inner; ++j) dst[j] = src[j] * f;
                     }
                   });
      return;
    }
    walk_reduced(out.shape(), axes, [&](std::int64_t i, std::int64_t o) { po[i] = pdy[o] * f; });
  });
}

void argmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const int axis = x.shape().normalize_axis(static_cast<int>(ctx.attrs().get_int("axis")), op_names::argmax);
  const std::int64_t n = x.shape()[axis];
  if (n == 0) raise<ValueError>("argmax over an empty axis of shape {}", x.shape().to_string());
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int d = axis + 1; d < x.shape().rank(); ++d) inner *= x.shape()[d];
  dispatch_any(x.dtype(), op_names::argmax, [&]<typename T>() {
    const T* px = x.data<T>();
    std::int64_t* py = y.data<std::int64_t>();
    parallel_for(ctx, outer, 64, [&](std::int64_t lo, std::int64_t hi) {
      for (auto o = lo; o < hi; ++o)
        for (std::int64_t j = 0; j < inner; ++j) {
          std::int64_t best = 0;
          T best_v = px[o * n * inner + j];
          for (std::int64_t r = 1; r < n; ++r) {
            T v = px[(o * n + r) * inner + j];
            if (v > best_v) best_v = v, best = r;
          }
          py[o * inner + j] = best;
        }
    });
  });
}

}  // namespace

void sum_over_axes(KernelContext& ctx, const Tensor& x, const std::vector<int>& axes, Tensor& out) {
  dispatch_any(x.dtype(), op_names::reduce_sum,
               [&]<typename T>() { reduce<T>(ctx, x, axes, out, T(0), [](T a, T b) { return a + b; }); });
}

void register_reduce_kernels() {
  register_kernel(op_names::reduce_sum, DeviceKind::cpu, reduce_sum_kernel);
  register_kernel(op_names::reduce_mean, DeviceKind::cpu, reduce_mean_kernel);
  register_kernel(op_names::reduce_max, DeviceKind::cpu, reduce_max_kernel);
  register_kernel(op_names::reduce_max_grad, DeviceKind::cpu, reduce_max_grad_kernel);
  register_kernel(op_names::broadcast_reduced, DeviceKind::cpu, broadcast_reduced_kernel);
  register_kernel(op_names::argmax, DeviceKind::cpu, argmax_kernel);
}

}  // namespace tower::cpu
