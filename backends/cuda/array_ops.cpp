// The CUDA kernel table entries of the array ops: transpose, reverse (a strided copy), concat,
// concat_grad, split, slice, slice_grad, pad, pad_grad, one_hot, gather, gather_grad, and reshape
// and reshape_like (views: the plan aliases them). Same contracts as backends/cpu/array_kernels.cpp.
#include "tower/backends/cuda/array_copies.h"
#include "tower/backends/cuda/array_launchers.h"
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/elementwise_launchers.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/op_names.h"
#include "tower/core/ops/shape_utils.h"

namespace tower::cuda {

namespace {

using Ints = std::vector<std::int64_t>;

// Calls f.template operator()<U>() with U the unsigned integer of dtype's element size.
template <typename F>
void by_element_size(DType dtype, const char* op, F&& f) {
  switch (dtype_size(dtype)) {
    case 1: f.template operator()<std::uint8_t>(); break;
    case 2: f.template operator()<std::uint16_t>(); break;
    case 4: f.template operator()<std::uint32_t>(); break;
    case 8: f.template operator()<std::uint64_t>(); break;
    default: raise<DTypeError>("{}: dtype {} is not supported", op, dtype_name(dtype));
  }
}

// A contiguous tensor's element strides (broadcast_strides of a shape onto itself).
Ints row_major(const Shape& shape) { return broadcast_strides(shape, shape); }

// copy_box (array_copies.h) on the kernel's GPU, named after its op.
void copy_box(KernelContext& ctx, const Tensor& src, const Ints& src_begin, Tensor& dst, const Ints& dst_begin,
              const Ints& box) {
  cuda::copy_box(gpu_of(ctx), ctx.node.op().c_str(), src, src_begin, dst, dst_begin, box);
}

// Sets every element of t to value (any dtype).
void fill(KernelContext& ctx, Tensor& t, double value) {
  const cudaStream_t stream = gpu_of(ctx).stream();
  dispatch_any(t.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_fill<T>(t.data<T>(), t.num_elements(), static_cast<T>(value), stream));
  });
}

void transpose_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  transpose(gpu_of(ctx), op_names::transpose, x, ctx.outputs[0],
            resolve_perm(ctx.attrs().get_ints("perm"), x.shape().rank()));
}

// Copies each part into (or out of, when into_whole is false) `whole` at its offset along `axis`.
void concat_parts(KernelContext& ctx, std::vector<Tensor>& parts, Tensor& whole, int axis, bool into_whole) {
  const Ints zeros(static_cast<std::size_t>(whole.shape().rank()), 0);
  Ints at = zeros;
  for (Tensor& part : parts) {
    const Ints& box = part.shape().dims();
    if (into_whole)
      copy_box(ctx, part, zeros, whole, at, box);
    else
      copy_box(ctx, whole, at, part, zeros, box);
    at[static_cast<std::size_t>(axis)] += box[static_cast<std::size_t>(axis)];
  }
}

void concat_kernel(KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  const int axis = y.shape().normalize_axis(static_cast<int>(ctx.attrs().get_int("axis")), op_names::concat);
  concat_parts(ctx, ctx.inputs, y, axis, true);
}

void concat_grad_kernel(KernelContext& ctx) {
  Tensor& dy = ctx.inputs[0];
  concat_parts(ctx, ctx.outputs, dy, static_cast<int>(ctx.attrs().get_int("axis")), false);
}

void split_kernel(KernelContext& ctx) {
  Tensor& x = ctx.inputs[0];
  const int axis = x.shape().normalize_axis(static_cast<int>(ctx.attrs().get_int("axis")), op_names::split);
  concat_parts(ctx, ctx.outputs, x, axis, false);
}

void slice_kernel(KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  const Ints& box = y.shape().dims();
  copy_box(ctx, ctx.inputs[0], ctx.attrs().get_ints("begin"), y, Ints(box.size(), 0), box);
}

void slice_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];  // (slice's output shape)
  Tensor& dx = ctx.outputs[0];       // (x's shape)
  fill(ctx, dx, 0.0);
  const Ints& box = dy.shape().dims();
  copy_box(ctx, dy, Ints(box.size(), 0), dx, ctx.attrs().get_ints("begin"), box);
}

void pad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  fill(ctx, y, ctx.attrs().get_float("value"));
  const Ints& box = x.shape().dims();
  copy_box(ctx, x, Ints(box.size(), 0), y, pad_befores(ctx.attrs().get_ints("paddings")), box);
}

void pad_grad_kernel(KernelContext& ctx) {
  Tensor& dx = ctx.outputs[0];  // (x's shape)
  const Ints& box = dx.shape().dims();
  copy_box(ctx, ctx.inputs[0], pad_befores(ctx.attrs().get_ints("paddings")), dx, Ints(box.size(), 0), box);
}

// The first row of the node's share of n rows (batch_share's largest-remainder split).
std::int64_t share_begin(const KernelContext& ctx, std::int64_t n) {
  return share_range(n, ctx.attrs().get_ints("ratios"), static_cast<int>(ctx.attrs().get_int("share"))).first;
}

void batch_share_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const Ints& box = y.shape().dims();
  Ints begin(box.size(), 0);
  begin[0] = share_begin(ctx, x.shape()[0]);
  copy_box(ctx, x, begin, y, Ints(box.size(), 0), box);
}

void batch_share_start_kernel(KernelContext& ctx) {
  auto launch = launch_fill<std::int64_t>;
  CUDA_CHECK(launch(ctx.outputs[0].data<std::int64_t>(), 1, share_begin(ctx, ctx.inputs[0].shape()[0]),
                    gpu_of(ctx).stream()));
}

void batch_share_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];  // (share's rows, ...)
  Tensor& dx = ctx.outputs[0];       // (x's shape)
  fill(ctx, dx, 0.0);
  const Ints& box = dy.shape().dims();
  Ints begin(box.size(), 0);
  begin[0] = share_begin(ctx, dx.shape()[0]);
  copy_box(ctx, dy, Ints(box.size(), 0), dx, begin, box);
}

void one_hot_kernel(KernelContext& ctx) {
  const Tensor& indices = ctx.inputs[0];  // (...)
  Tensor& y = ctx.outputs[0];             // (..., depth)
  const std::int64_t depth = ctx.attrs().get_int("depth");
  const double on = ctx.attrs().get_float("on_value"), off = ctx.attrs().get_float("off_value");
  const cudaStream_t stream = gpu_of(ctx).stream();
  dispatch_integer(indices.dtype(), op_names::one_hot, [&]<typename I>() {
    dispatch_any(y.dtype(), op_names::one_hot, [&]<typename T>() {
      const auto launch = launch_one_hot<I, T>;  // (the comma would split CUDA_CHECK's argument)
      CUDA_CHECK(launch(indices.data<I>(), y.data<T>(), indices.num_elements(), depth, static_cast<T>(on),
                        static_cast<T>(off), stream));
    });
  });
}

void hashing_bins_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];  // (...)
  Tensor& y = ctx.outputs[0];       // (...) int64
  const Attrs& a = ctx.attrs();
  const std::int64_t num_bins = a.get_int("num_bins"), mask_value = a.get_int("mask_value");
  const bool has_mask = a.get_bool("has_mask"), salted = a.get_bool("salted");
  const auto key0 = static_cast<std::uint64_t>(a.get_int("key0")), key1 = static_cast<std::uint64_t>(a.get_int("key1"));
  const cudaStream_t stream = gpu_of(ctx).stream();
  dispatch_any(x.dtype(), op_names::hashing_bins, [&]<typename T>() {
    CUDA_CHECK(launch_hashing_bins<T>(x.data<T>(), y.data<std::int64_t>(), x.num_elements(), num_bins, has_mask,
                                      mask_value, salted, key0, key1, stream));
  });
}

// Rows of params (n, ...) and the elements of one row.
std::pair<std::int64_t, std::int64_t> rows_of(const Tensor& params) {
  const std::int64_t rows = params.shape()[0];
  return {rows, rows == 0 ? 0 : params.num_elements() / rows};
}

void gather_kernel(KernelContext& ctx) {
  const Tensor& params = ctx.inputs[0];   // (n, ...)
  const Tensor& indices = ctx.inputs[1];  // (m...)
  Tensor& y = ctx.outputs[0];             // (m..., ...)
  const auto [rows, row] = rows_of(params);
  const cudaStream_t stream = gpu_of(ctx).stream();
  dispatch_integer(indices.dtype(), op_names::gather, [&]<typename I>() {
    by_element_size(params.dtype(), op_names::gather, [&]<typename U>() {
      const auto launch = launch_gather<I, U>;
      CUDA_CHECK(launch(static_cast<const U*>(params.raw_data()), indices.data<I>(), static_cast<U*>(y.raw_data()),
                        indices.num_elements(), rows, row, stream));
    });
  });
}

void gather_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];       // (m..., ...)
  const Tensor& indices = ctx.inputs[1];  // (m...)
  Tensor& dparams = ctx.outputs[0];       // (n, ...)
  const auto [rows, row] = rows_of(dparams);
  const std::int64_t m = indices.num_elements();
  CudaDevice& gpu = gpu_of(ctx);
  // Freed at the end of this call: later work on the same stream runs after the sort that uses it.
  Tensor workspace(Shape{static_cast<std::int64_t>(gather_grad_workspace_bytes(m, rows))}, DType::uint8, gpu);
  dispatch_integer(indices.dtype(), op_names::gather_grad, [&]<typename I>() {
    dispatch_floating(dy.dtype(), op_names::gather_grad, [&]<typename T>() {
      const auto launch = launch_gather_grad<I, T>;
      CUDA_CHECK(launch(dy.data<T>(), indices.data<I>(), dparams.data<T>(), m, rows, row, workspace.raw_data(),
                        workspace.nbytes(), gpu.stream()));
    });
  });
}

void check_rank(CudaDevice& gpu, const char* op, std::size_t rank) {
  if (rank > static_cast<std::size_t>(CopyLayout::kMaxRank))
    raise<ShapeError>("{} on {}: the GPU kernels handle up to {} axes, got {}", op, gpu.name(), CopyLayout::kMaxRank,
                      rank);
}

// x viewed as (outer, n, inner), copied with a negative stride along n: y[o, i, r] = x[o, n - 1 - i, r].
void reverse_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const AxisLanes l = lanes_around(x.shape(), static_cast<int>(ctx.attrs().get_int("axis")), op_names::reverse);
  const std::int64_t outer = l.outer, n = l.n, inner = l.inner;
  if (outer * n * inner == 0) return;
  CopyLayout layout;
  layout.rank = 3;
  const std::int64_t box[3] = {outer, n, inner}, dst_strides[3] = {n * inner, inner, 1},
                     src_strides[3] = {n * inner, -inner, 1};
  for (int d = 0; d < 3; ++d) {
    layout.dims[d] = box[d];
    layout.src_strides[d] = src_strides[d];
    layout.dst_strides[d] = dst_strides[d];
  }
  by_element_size(x.dtype(), op_names::reverse, [&]<typename U>() {
    CUDA_CHECK(launch_strided_copy<U>(static_cast<const U*>(x.raw_data()) + (n - 1) * inner,
                                      static_cast<U*>(y.raw_data()), outer * n * inner, layout, gpu_of(ctx).stream()));
  });
}

// reshape and reshape_like are views: the plan aliases the input, the kernel has nothing to do.
void view_kernel(KernelContext&) {}

}  // namespace

void copy_box(CudaDevice& gpu, const char* op, const Tensor& src, const Ints& src_begin, Tensor& dst,
              const Ints& dst_begin, const Ints& box) {
  check_rank(gpu, op, box.size());
  const Ints src_strides = row_major(src.shape()), dst_strides = row_major(dst.shape());
  CopyLayout layout;
  layout.rank = static_cast<int>(box.size());
  std::int64_t n = 1, src_base = 0, dst_base = 0;
  for (std::size_t d = 0; d < box.size(); ++d) {
    layout.dims[d] = box[d];
    layout.src_strides[d] = src_strides[d];
    layout.dst_strides[d] = dst_strides[d];
    n *= box[d];
    src_base += src_begin[d] * src_strides[d];
    dst_base += dst_begin[d] * dst_strides[d];
  }
  by_element_size(src.dtype(), op, [&]<typename U>() {
    CUDA_CHECK(launch_strided_copy<U>(static_cast<const U*>(src.raw_data()) + src_base,
                                      static_cast<U*>(dst.raw_data()) + dst_base, n, layout, gpu.stream()));
  });
}

// A box over y's dims whose source strides are x's, permuted.
void transpose(CudaDevice& gpu, const char* op, const Tensor& x, Tensor& y, const Ints& perm) {
  check_rank(gpu, op, perm.size());
  const Ints x_strides = row_major(x.shape()), y_strides = row_major(y.shape());
  CopyLayout layout;
  layout.rank = static_cast<int>(perm.size());
  for (std::size_t d = 0; d < perm.size(); ++d) {
    layout.dims[d] = y.shape()[static_cast<int>(d)];
    layout.src_strides[d] = x_strides[static_cast<std::size_t>(perm[d])];
    layout.dst_strides[d] = y_strides[d];
  }
  by_element_size(x.dtype(), op, [&]<typename U>() {
    CUDA_CHECK(launch_strided_copy<U>(static_cast<const U*>(x.raw_data()), static_cast<U*>(y.raw_data()),
                                      y.num_elements(), layout, gpu.stream()));
  });
}

void register_array_kernels() {
  register_kernel(op_names::transpose, DeviceKind::cuda, transpose_kernel);
  register_kernel(op_names::reverse, DeviceKind::cuda, reverse_kernel);
  register_kernel(op_names::concat, DeviceKind::cuda, concat_kernel);
  register_kernel(op_names::concat_grad, DeviceKind::cuda, concat_grad_kernel);
  register_kernel(op_names::split, DeviceKind::cuda, split_kernel);
  register_kernel(op_names::slice, DeviceKind::cuda, slice_kernel);
  register_kernel(op_names::slice_grad, DeviceKind::cuda, slice_grad_kernel);
  register_kernel(op_names::batch_share, DeviceKind::cuda, batch_share_kernel);
  register_kernel(op_names::batch_share_start, DeviceKind::cuda, batch_share_start_kernel);
  register_kernel(op_names::batch_share_grad, DeviceKind::cuda, batch_share_grad_kernel);
  register_kernel(op_names::pad, DeviceKind::cuda, pad_kernel);
  register_kernel(op_names::pad_grad, DeviceKind::cuda, pad_grad_kernel);
  register_kernel(op_names::one_hot, DeviceKind::cuda, one_hot_kernel);
  register_kernel(op_names::hashing_bins, DeviceKind::cuda, hashing_bins_kernel);
  register_kernel(op_names::gather, DeviceKind::cuda, gather_kernel);
  register_kernel(op_names::gather_grad, DeviceKind::cuda, gather_grad_kernel);
  register_kernel(op_names::reshape, DeviceKind::cuda, view_kernel);
  register_kernel(op_names::reshape_like, DeviceKind::cuda, view_kernel);
}

}  // namespace tower::cuda
