// CPU kernels of the unary math ops, activations (and their *_grad ops), softmax and log_softmax.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/strided.h"
#include "tower/backends/cpu/vector_math.h"
#include "tower/core/op_names.h"
#include "tower/core/ops/shape_utils.h"

namespace tower::cpu {

namespace {

// y = f(x) elementwise for float inputs; f is a generic lambda called with T.
template <typename F>
void map_float(KernelContext& ctx, const char* op, F f) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  dispatch_floating(x.dtype(), op, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(ctx, x.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) py[i] = f(px[i]);
    });
  });
}

// As map_float, for the ops that also take integer inputs.
template <typename F>
void map_any(KernelContext& ctx, const char* op, F f) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  dispatch_any(x.dtype(), op, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(ctx, x.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) py[i] = static_cast<T>(f(px[i]));
    });
  });
}

// out = f(dy, v) elementwise: the activation gradients, v being the forward output or input.
template <typename F>
void map_grad(KernelContext& ctx, const char* op, F f) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& v = ctx.inputs[1];
  Tensor& out = ctx.outputs[0];
  dispatch_floating(dy.dtype(), op, [&]<typename T>() {
    const T* pd = dy.data<T>();
    const T* pv = v.data<T>();
    T* po = out.data<T>();
    parallel_for(ctx, out.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) po[i] = f(pd[i], pv[i]);
    });
  });
}

template <typename T>
T sigmoid_of(T x) {
  // Two branches so that exp never overflows.
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

template <typename T>
T sign_of(T x) {
  if constexpr (std::is_unsigned_v<T>) return static_cast<T>(x != 0);
  else return static_cast<T>((T(0) < x) - (x < T(0)));
}

// Integer negation and squaring wrap around as in NumPy; unsigned arithmetic keeps that defined.
template <typename T>
T negative_of(T x) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(0u - static_cast<std::make_unsigned_t<T>>(x));
  else return -x;
}
template <typename T>
T square_of(T x) {
  if constexpr (std::is_integral_v<T>) {
    auto u = static_cast<std::make_unsigned_t<T>>(x);
    return static_cast<T>(static_cast<std::uint64_t>(u) * static_cast<std::uint64_t>(u));
  } else {
    return x * x;
  }
}
template <typename T>
T abs_of(T x) {
  if constexpr (std::is_unsigned_v<T>) return x;
  else return x < T(0) ? negative_of(x) : x;
}

void negative_kernel(KernelContext& ctx) {
  map_any(ctx, op_names::negative, [](auto x) { return negative_of(x); });
}
void exp_kernel(KernelContext& ctx) {
  map_float(ctx, op_names::exp, [](auto x) { return std::exp(x); });
}
void log_kernel(KernelContext& ctx) {
  map_float(ctx, op_names::log, [](auto x) { return std::log(x); });
}
void erf_kernel(KernelContext& ctx) {
  map_float(ctx, op_names::erf, [](auto x) { return std::erf(x); });
}
void sqrt_kernel(KernelContext& ctx) {
  map_float(ctx, op_names::sqrt, [](auto x) { return std::sqrt(x); });
}
void square_kernel(KernelContext& ctx) {
  map_any(ctx, op_names::square, [](auto x) { return square_of(x); });
}
void abs_kernel(KernelContext& ctx) {
  map_any(ctx, op_names::abs, [](auto x) { return abs_of(x); });
}
void sign_kernel(KernelContext& ctx) {
  map_any(ctx, op_names::sign, [](auto x) { return sign_of(x); });
}
void relu_kernel(KernelContext& ctx) {
  // NaN passes through (NaN < 0 is false), so a diverging model shows NaN instead of hiding it.
  map_float(ctx, op_names::relu, [](auto x) { return x < 0 ? decltype(x)(0) : x; });
}
void leaky_relu_kernel(KernelContext& ctx) {
  double alpha = ctx.attrs().get_float("alpha");
  map_float(ctx, op_names::leaky_relu, [alpha](auto x) {
    using T = decltype(x);
    return x > 0 ? x : static_cast<T>(alpha) * x;
  });
}
void elu_kernel(KernelContext& ctx) {
  double alpha = ctx.attrs().get_float("alpha");
  map_float(ctx, op_names::elu, [alpha](auto x) {
    using T = decltype(x);
    return x > 0 ? x : static_cast<T>(alpha) * std::expm1(x);  // expm1: exact near 0
  });
}
void sigmoid_kernel(KernelContext& ctx) {
  map_float(ctx, op_names::sigmoid, [](auto x) { return sigmoid_of(x); });
}
void tanh_kernel(KernelContext& ctx) {
  map_float(ctx, op_names::tanh, [](auto x) { return std::tanh(x); });
}

void relu_grad_kernel(KernelContext& ctx) {
  map_grad(ctx, op_names::relu_grad, [](auto dy, auto y) { return y > 0 ? dy : decltype(dy)(0); });
}
// Rows [r0, r1) of bias_add_relu_grad: dz = dy where y > 0 else 0, and acc (c,) += each row of dz in
// row order (sum_over_axes's order for a bias gradient).
template <typename T>
TOWER_CPU_CLONES void relu_grad_rows(const T* __restrict dy, const T* __restrict y, T* __restrict dz, T* __restrict acc,
                    std::int64_t c, std::int64_t r0, std::int64_t r1) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t o = r * c;
    for (std::int64_t j = 0; j < c; ++j) {
      const T v = y[o + j] > 0 ? dy[o + j] : T(0);
      dz[o + j] = v;
      acc[j] += v;
    }
  }
}

// (dy, y) (..., c) -> {dz = relu_grad(dy, y), db (c,) = dz summed over rows}: one pass over dy and y
// where sum_over_axes would split the rows over the pool (a partial sum per thread, then the partials
// in thread order), in its order, so db has bias_add_grad(dz)'s bits; otherwise the two kernels' loops.
void bias_add_relu_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& y = ctx.inputs[1];
  Tensor& dz = ctx.outputs[0];
  Tensor& db = ctx.outputs[1];
  const std::int64_t c = db.num_elements(), rows = c > 0 ? dy.num_elements() / c : 0;
  const int threads = cpu_pool(ctx).size();
  if (c < 2 || rows < 2 || threads < 2 || rows * c < kElementwiseGrain) {  // sum_over_axes's other paths
    relu_grad_kernel(ctx);
    std::vector<int> axes;
    for (int d = 0; d + 1 < dy.shape().rank(); ++d) axes.push_back(d);
    sum_over_axes(ctx, dz, axes, db);
    return;
  }
  dispatch_floating(dy.dtype(), op_names::bias_add_relu_grad, [&]<typename T>() {
    const T* pdy = dy.data<T>();
    const T* py = y.data<T>();
    T* pdz = dz.data<T>();
    std::vector<T> partial(static_cast<std::size_t>(threads * c), T(0));
    T* pp = partial.data();
    const std::int64_t chunk = (rows + threads - 1) / threads;
    parallel_for(ctx, threads, 1, [=](std::int64_t lo, std::int64_t hi) {
      for (auto t = lo; t < hi; ++t)
        relu_grad_rows(pdy, py, pdz, pp + t * c, c, t * chunk, std::min(rows, (t + 1) * chunk));
    });
    T* pdb = db.data<T>();
    std::fill(pdb, pdb + c, T(0));
    for (int t = 0; t < threads; ++t)
      for (std::int64_t j = 0; j < c; ++j) pdb[j] = pdb[j] + pp[t * c + j];
  });
}

void leaky_relu_grad_kernel(KernelContext& ctx) {
  double alpha = ctx.attrs().get_float("alpha");
  map_grad(ctx, op_names::leaky_relu_grad, [alpha](auto dy, auto x) {
    using T = decltype(dy);
    return x > 0 ? dy : static_cast<T>(alpha) * dy;
  });
}
void elu_grad_kernel(KernelContext& ctx) {
  double alpha = ctx.attrs().get_float("alpha");
  map_grad(ctx, op_names::elu_grad, [alpha](auto dy, auto x) {
    using T = decltype(dy);
    return x > 0 ? dy : dy * static_cast<T>(alpha) * std::exp(x);
  });
}
void sigmoid_grad_kernel(KernelContext& ctx) {
  map_grad(ctx, op_names::sigmoid_grad, [](auto dy, auto y) { return dy * y * (decltype(y)(1) - y); });
}
void tanh_grad_kernel(KernelContext& ctx) {
  map_grad(ctx, op_names::tanh_grad, [](auto dy, auto y) { return dy * (decltype(y)(1) - y * y); });
}

// ---- softmax family ----------------------------------------------------------------------------
// Each kernel walks the lanes around the softmax axis (lanes_around, core/ops/shape_utils.h).

// Calls lane(offset, stride) for every lane, lanes split over the pool. Lanes are numbered
// outer-major so that neighbouring lanes of a non-last axis touch neighbouring memory. For the last
// axis the stride is the compile-time constant 1, so the lane loops are contiguous.
template <typename F>
void for_each_lane(KernelContext& ctx, const AxisLanes& l, F lane) {
  std::int64_t lanes = l.outer * l.inner;
  if (lanes == 0 || l.n == 0) return;
  std::int64_t grain = std::max<std::int64_t>(1, kElementwiseGrain / (4 * l.n));  // ~4 passes per element
  if (l.inner == 1) {
    parallel_for(ctx, lanes, grain, [&](std::int64_t b, std::int64_t e) {
      for (auto k = b; k < e; ++k) lane(k * l.n, UnitStride{});
    });
    return;
  }
  parallel_for(ctx, lanes, grain, [&](std::int64_t b, std::int64_t e) {
    for (auto k = b; k < e; ++k) {
      std::int64_t o = k / l.inner, i = k % l.inner;
      lane(o * l.n * l.inner + i, l.inner);
    }
  });
}

void softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];  // (..., n, ...)
  Tensor& y = ctx.outputs[0];       // x's shape
  AxisLanes l = lanes_around(x.shape(), static_cast<int>(ctx.attrs().get_int("axis")), op_names::softmax);
  dispatch_floating(x.dtype(), op_names::softmax, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for_each_lane(ctx, l, [&](std::int64_t off, auto s) {
      const T* a = px + off;
      T* b = py + off;
      const T sum = lane_exp(a, b, l.n, s);
      T inv = T(1) / sum;
      for (std::int64_t j = 0; j < l.n; ++j) b[j * s] *= inv;
    });
  });
}

void log_softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];  // (..., n, ...)
  Tensor& y = ctx.outputs[0];       // x's shape
  AxisLanes l = lanes_around(x.shape(), static_cast<int>(ctx.attrs().get_int("axis")), op_names::log_softmax);
  dispatch_floating(x.dtype(), op_names::log_softmax, [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for_each_lane(ctx, l, [&](std::int64_t off, auto s) {
      const T* a = px + off;
      T* b = py + off;
      T m = lane_max(a, l.n, s);
      T sum = 0;
      for (std::int64_t j = 0; j < l.n; ++j) sum += std::exp(a[j * s] - m);
      T shift = m + std::log(sum);  // log-sum-exp
      for (std::int64_t j = 0; j < l.n; ++j) b[j * s] = a[j * s] - shift;
    });
  });
}

// dx = y (dy - sum(dy y)) along the axis.
void softmax_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& y = ctx.inputs[1];  // softmax output
  Tensor& dx = ctx.outputs[0];
  AxisLanes l = lanes_around(dy.shape(), static_cast<int>(ctx.attrs().get_int("axis")), op_names::softmax_grad);
  dispatch_floating(dy.dtype(), op_names::softmax_grad, [&]<typename T>() {
    const T* pd = dy.data<T>();
    const T* py = y.data<T>();
    T* po = dx.data<T>();
    for_each_lane(ctx, l, [&](std::int64_t off, auto s) {
      const T dot = lane_dot(pd + off, py + off, l.n, s);
      for (std::int64_t j = 0; j < l.n; ++j) {
        std::int64_t k = off + j * s;
        po[k] = py[k] * (pd[k] - dot);
      }
    });
  });
}

// dx = dy - exp(y) sum(dy) along the axis.
void log_softmax_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& y = ctx.inputs[1];  // log_softmax output
  Tensor& dx = ctx.outputs[0];
  AxisLanes l = lanes_around(dy.shape(), static_cast<int>(ctx.attrs().get_int("axis")), op_names::log_softmax_grad);
  dispatch_floating(dy.dtype(), op_names::log_softmax_grad, [&]<typename T>() {
    const T* pd = dy.data<T>();
    const T* py = y.data<T>();
    T* po = dx.data<T>();
    for_each_lane(ctx, l, [&](std::int64_t off, auto s) {
      T sum = 0;
      for (std::int64_t j = 0; j < l.n; ++j) sum += pd[off + j * s];
      for (std::int64_t j = 0; j < l.n; ++j) {
        std::int64_t k = off + j * s;
        po[k] = pd[k] - std::exp(py[k]) * sum;
      }
    });
  });
}

}  // namespace

void register_activation_kernels() {
  const DeviceKind cpu = DeviceKind::cpu;
  register_kernel(op_names::negative, cpu, negative_kernel);
  register_kernel(op_names::exp, cpu, exp_kernel);
  register_kernel(op_names::log, cpu, log_kernel);
  register_kernel(op_names::erf, cpu, erf_kernel);
  register_kernel(op_names::sqrt, cpu, sqrt_kernel);
  register_kernel(op_names::square, cpu, square_kernel);
  register_kernel(op_names::abs, cpu, abs_kernel);
  register_kernel(op_names::sign, cpu, sign_kernel);
  register_kernel(op_names::relu, cpu, relu_kernel);
  register_kernel(op_names::leaky_relu, cpu, leaky_relu_kernel);
  register_kernel(op_names::elu, cpu, elu_kernel);
  register_kernel(op_names::sigmoid, cpu, sigmoid_kernel);
  register_kernel(op_names::tanh, cpu, tanh_kernel);
  register_kernel(op_names::relu_grad, cpu, relu_grad_kernel);
  register_kernel(op_names::bias_add_relu_grad, cpu, bias_add_relu_grad_kernel);
  register_kernel(op_names::leaky_relu_grad, cpu, leaky_relu_grad_kernel);
  register_kernel(op_names::elu_grad, cpu, elu_grad_kernel);
  register_kernel(op_names::sigmoid_grad, cpu, sigmoid_grad_kernel);
  register_kernel(op_names::tanh_grad, cpu, tanh_grad_kernel);
  register_kernel(op_names::softmax, cpu, softmax_kernel);
  register_kernel(op_names::log_softmax, cpu, log_softmax_kernel);
  register_kernel(op_names::softmax_grad, cpu, softmax_grad_kernel);
  register_kernel(op_names::log_softmax_grad, cpu, log_softmax_grad_kernel);
}

}  // namespace tower::cpu
