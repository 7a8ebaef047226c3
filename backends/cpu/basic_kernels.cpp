// CPU kernels of the basic ops: identity, fill_like, cast (every dtype, half ones too), assign, assign_add.
#include <cstring>

#include "tower/backends/cpu/kernels.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

// identity and stop_gradient alias their input (OpDef::alias_input): the plan makes the output a
// view of the input, so there is nothing to do.
void alias_kernel(KernelContext&) {}

void fill_like_kernel(KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  double value = ctx.attrs().get_float("value");
  dispatch_any(y.dtype(), op_names::fill_like, [&]<typename T>() {
    T* p = y.data<T>();
    parallel_for(ctx, y.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) p[i] = static_cast<T>(value);
    });
  });
}

void cast_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  // Every pair of dtypes, the half ones included: a half value widens to float exactly and a float or
  // double rounds to half once, to nearest even (core/half.h), so this kernel handles them itself
  // rather than through half_kernels.cpp's widening (which would round a double twice).
  dispatch_every(x.dtype(), op_names::cast, [&]<typename S>() {
    dispatch_every(y.dtype(), op_names::cast, [&]<typename D>() {
      const S* src = x.data<S>();
      D* dst = y.data<D>();
      parallel_for(ctx, x.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
        for (auto i = b; i < e; ++i) dst[i] = static_cast<D>(src[i]);
      });
    });
  });
}

void assign_kernel(KernelContext& ctx) {
  std::memcpy(ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), ctx.inputs[0].nbytes());
}

void assign_add_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const Tensor& v = ctx.inputs[1];
  dispatch_any(var.dtype(), op_names::assign_add, [&]<typename T>() {
    T* p = var.data<T>();
    const T* q = v.data<T>();
    parallel_for(ctx, var.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) p[i] += q[i];
    });
  });
}

}  // namespace

void register_basic_kernels() {
  register_kernel(op_names::identity, DeviceKind::cpu, alias_kernel);
  register_kernel(op_names::stop_gradient, DeviceKind::cpu, alias_kernel);
  register_kernel(op_names::fill_like, DeviceKind::cpu, fill_like_kernel);
  register_kernel(op_names::cast, DeviceKind::cpu, cast_kernel);
  register_kernel(op_names::assign, DeviceKind::cpu, assign_kernel);
  register_kernel(op_names::assign_add, DeviceKind::cpu, assign_add_kernel);
}

}  // namespace tower::cpu
