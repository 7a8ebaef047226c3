// CPU kernels of the array ops: reshape (a view), transpose, reverse, concat, split, slice, pad, one_hot,
// gather and their gradients. Copies move raw bytes, so every dtype works; fills and sums dispatch.
#include <algorithm>
#include <cstring>

#include "tower/backends/cpu/kernels.h"
#include "tower/core/hash.h"
#include "tower/core/op_names.h"
#include "tower/core/ops/shape_utils.h"

namespace tower::cpu {

namespace {

using Ints = std::vector<std::int64_t>;

// Copies the box `box` (dims) from src (shape src_dims, starting at src_begin) into dst (shape
// dst_dims, starting at dst_begin). Trailing axes that the box covers entirely in both tensors are
// merged first so that each memcpy moves one long contiguous run.
void copy_box(KernelContext& ctx, const void* src_ptr, Ints src_dims, Ints src_begin, void* dst_ptr, Ints dst_dims,
              Ints dst_begin, Ints box, std::size_t elem) {
  for (auto b : box)
    if (b == 0) return;
  const char* src = static_cast<const char*>(src_ptr);
  char* dst = static_cast<char*>(dst_ptr);
  if (box.empty()) {  // scalars
    std::memcpy(dst, src, elem);
    return;
  }
  // Merge axis i into axis i - 1 while axis i is whole in src, dst and the box.
  for (int i = static_cast<int>(box.size()) - 1; i > 0; --i) {
    auto u = static_cast<std::size_t>(i);
    if (box[u] != src_dims[u] || box[u] != dst_dims[u]) break;
    src_begin[u - 1] *= src_dims[u], dst_begin[u - 1] *= dst_dims[u];
    src_dims[u - 1] *= src_dims[u], dst_dims[u - 1] *= dst_dims[u], box[u - 1] *= box[u];
    src_dims.pop_back(), dst_dims.pop_back(), box.pop_back(), src_begin.pop_back(), dst_begin.pop_back();
  }
  const std::size_t rank = box.size();
  // Element strides of both tensors.
  Ints src_stride(rank, 1), dst_stride(rank, 1);
  for (std::size_t i = rank - 1; i > 0; --i) {
    src_stride[i - 1] = src_stride[i] * src_dims[i];
    dst_stride[i - 1] = dst_stride[i] * dst_dims[i];
  }
  std::int64_t src_base = 0, dst_base = 0;
  for (std::size_t i = 0; i < rank; ++i) src_base += src_begin[i] * src_stride[i], dst_base += dst_begin[i] * dst_stride[i];
  const std::int64_t run = box[rank - 1];
  const std::size_t run_bytes = static_cast<std::size_t>(run) * elem;
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < rank; ++i) rows *= box[i];
  const std::int64_t grain = std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(run, 1));
  parallel_for(ctx, rows, grain, [&](std::int64_t begin, std::int64_t end) {
    // The multi-index of row `begin` over the box's leading axes, then advanced like an odometer.
    Ints idx(rank, 0);
    std::int64_t r = begin;
    for (std::size_t i = rank - 1; i-- > 0;) idx[i] = r % box[i], r /= box[i];
    std::int64_t s = src_base, d = dst_base;
    for (std::size_t i = 0; i + 1 < rank; ++i) s += idx[i] * src_stride[i], d += idx[i] * dst_stride[i];
    for (std::int64_t row = begin; row < end; ++row) {
      std::memcpy(dst + static_cast<std::size_t>(d) * elem, src + static_cast<std::size_t>(s) * elem, run_bytes);
      for (std::size_t i = rank - 1; i-- > 0;) {
        ++idx[i], s += src_stride[i], d += dst_stride[i];
        if (idx[i] < box[i]) break;
        s -= idx[i] * src_stride[i], d -= idx[i] * dst_stride[i], idx[i] = 0;
      }
    }
  });
}

// Sets every element of t to value.
void fill(KernelContext& ctx, Tensor& t, double value, const char* op) {
  dispatch_any(t.dtype(), op, [&]<typename T>() {
    T* p = t.data<T>();
    const T v = static_cast<T>(value);
    parallel_for(ctx, t.num_elements(), kElementwiseGrain, [&](std::int64_t b, std::int64_t e) {
      std::fill(p + b, p + e, v);
    });
  });
}

// reshape and reshape_like alias their input (OpDef::alias_input): the plan makes the output a
// view of the input's storage, so there is nothing to do.
void alias_kernel(KernelContext&) {}

// ---- transpose ---------------------------------------------------------------------------------

template <typename T>
void transpose_typed(KernelContext& ctx, const T* x, T* y, const Ints& x_dims, const Ints& perm) {
  const std::size_t rank = perm.size();
  Ints x_stride(rank, 1);
  for (std::size_t i = rank; i-- > 1;) x_stride[i - 1] = x_stride[i] * x_dims[i];
  Ints y_dims(rank), stride(rank);  // stride[i]: step in x for a step along y's axis i
  for (std::size_t i = 0; i < rank; ++i) {
    y_dims[i] = x_dims[static_cast<std::size_t>(perm[i])];
    stride[i] = x_stride[static_cast<std::size_t>(perm[i])];
  }
  std::int64_t n = 1;
  for (auto d : y_dims) n *= d;
  if (n == 0) return;
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  parallel_for(ctx, n, kElementwiseGrain, [&](std::int64_t begin, std::int64_t end) {
    Ints idx(rank, 0);
    std::int64_t r = begin, off = 0;
    for (std::size_t i = rank; i-- > 0;) idx[i] = r % y_dims[i], r /= y_dims[i];
    for (std::size_t i = 0; i < rank; ++i) off += idx[i] * stride[i];
    const std::size_t last = rank - 1;
    const std::int64_t inner = y_dims[last], inner_stride = stride[last];
    std::int64_t i = begin;
    while (i < end) {
      // Run along y's last axis, then carry into the outer axes.
      std::int64_t count = std::min(end - i, inner - idx[last]);
      const T* src = x + off;
      for (std::int64_t k = 0; k < count; ++k) y[i + k] = src[k * inner_stride];
      i += count, off += count * inner_stride, idx[last] += count;
      for (std::size_t a = last; a > 0 && idx[a] == y_dims[a]; --a) {
        off -= idx[a] * stride[a], idx[a] = 0;
        ++idx[a - 1], off += stride[a - 1];
      }
    }
  });
}

void transpose_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  Ints perm = resolve_perm(ctx.attrs().get_ints("perm"), x.shape().rank());
  // Moves bytes: pick the unsigned type of the element's size.
  switch (dtype_size(x.dtype())) {
    case 1: transpose_typed(ctx, static_cast<const std::uint8_t*>(x.raw_data()), static_cast<std::uint8_t*>(y.raw_data()), x.shape().dims(), perm); break;
    case 2: transpose_typed(ctx, static_cast<const std::uint16_t*>(x.raw_data()), static_cast<std::uint16_t*>(y.raw_data()), x.shape().dims(), perm); break;
    case 4: transpose_typed(ctx, static_cast<const std::uint32_t*>(x.raw_data()), static_cast<std::uint32_t*>(y.raw_data()), x.shape().dims(), perm); break;
    case 8: transpose_typed(ctx, static_cast<const std::uint64_t*>(x.raw_data()), static_cast<std::uint64_t*>(y.raw_data()), x.shape().dims(), perm); break;
    default: raise<DTypeError>("transpose: dtype {} is not supported", dtype_name(x.dtype()));
  }
}

// ---- concat, concat_grad, split ----------------------------------------------------------------

// Copies each part into (or out of, when scatter is false) `whole` at its offset along `axis`.
void concat_parts(KernelContext& ctx, const std::vector<Tensor*>& parts, Tensor& whole, int axis, bool into_whole) {
  const std::size_t elem = dtype_size(whole.dtype());
  const Ints& w = whole.shape().dims();
  std::int64_t offset = 0;
  for (Tensor* p : parts) {
    Ints at(w.size(), 0);
    at[static_cast<std::size_t>(axis)] = offset;
    const Ints& pd = p->shape().dims();
    if (into_whole)
      copy_box(ctx, p->raw_data(), pd, Ints(pd.size(), 0), whole.raw_data(), w, at, pd, elem);
    else
      copy_box(ctx, whole.raw_data(), w, at, p->raw_data(), pd, Ints(pd.size(), 0), pd, elem);
    offset += pd[static_cast<std::size_t>(axis)];
  }
}

void concat_kernel(KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  int axis = y.shape().normalize_axis(static_cast<int>(ctx.attrs().get_int("axis")), op_names::concat);
  std::vector<Tensor*> parts;
  for (auto& x : ctx.inputs) parts.push_back(&x);
  concat_parts(ctx, parts, y, axis, true);
}

void concat_grad_kernel(KernelContext& ctx) {
  Tensor& dy = ctx.inputs[0];
  int axis = static_cast<int>(ctx.attrs().get_int("axis"));
  std::vector<Tensor*> parts;
  for (auto& g : ctx.outputs) parts.push_back(&g);
  concat_parts(ctx, parts, dy, axis, false);
}

void split_kernel(KernelContext& ctx) {
  Tensor& x = ctx.inputs[0];
  int axis = x.shape().normalize_axis(static_cast<int>(ctx.attrs().get_int("axis")), op_names::split);
  std::vector<Tensor*> parts;
  for (auto& y : ctx.outputs) parts.push_back(&y);
  concat_parts(ctx, parts, x, axis, false);
}

// ---- slice, slice_grad, pad, pad_grad ----------------------------------------------------------

void slice_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const Ints& yd = y.shape().dims();
  copy_box(ctx, x.raw_data(), x.shape().dims(), ctx.attrs().get_ints("begin"), y.raw_data(), yd, Ints(yd.size(), 0),
           yd, dtype_size(x.dtype()));
}

void slice_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];  // (slice's output shape)
  Tensor& dx = ctx.outputs[0];       // (x's shape)
  fill(ctx, dx, 0.0, op_names::slice_grad);
  const Ints& dd = dy.shape().dims();
  copy_box(ctx, dy.raw_data(), dd, Ints(dd.size(), 0), dx.raw_data(), dx.shape().dims(), ctx.attrs().get_ints("begin"),
           dd, dtype_size(dy.dtype()));
}

void pad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  fill(ctx, y, ctx.attrs().get_float("value"), op_names::pad);
  const Ints& xd = x.shape().dims();
  copy_box(ctx, x.raw_data(), xd, Ints(xd.size(), 0), y.raw_data(), y.shape().dims(),
           pad_befores(ctx.attrs().get_ints("paddings")), xd, dtype_size(x.dtype()));
}

void pad_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];  // (padded shape)
  Tensor& dx = ctx.outputs[0];       // (x's shape)
  const Ints& xd = dx.shape().dims();
  copy_box(ctx, dy.raw_data(), dy.shape().dims(), pad_befores(ctx.attrs().get_ints("paddings")), dx.raw_data(), xd,
           Ints(xd.size(), 0), xd, dtype_size(dy.dtype()));
}

// ---- batch_share, batch_share_grad ---------------------------------------------------------------

// The first row of the node's share of x's n rows, and the share's rows.
std::pair<std::int64_t, std::int64_t> share_of(const KernelContext& ctx, std::int64_t n) {
  return share_range(n, ctx.attrs().get_ints("ratios"), static_cast<int>(ctx.attrs().get_int("share")));
}

void batch_share_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const Ints& yd = y.shape().dims();
  Ints begin(yd.size(), 0);
  begin[0] = share_of(ctx, x.shape()[0]).first;
  copy_box(ctx, x.raw_data(), x.shape().dims(), begin, y.raw_data(), yd, Ints(yd.size(), 0), yd, dtype_size(x.dtype()));
}

void batch_share_start_kernel(KernelContext& ctx) {
  ctx.outputs[0].data<std::int64_t>()[0] = share_of(ctx, ctx.inputs[0].shape()[0]).first;
}

void batch_share_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];  // (share's rows, ...)
  Tensor& dx = ctx.outputs[0];       // (x's shape)
  fill(ctx, dx, 0.0, op_names::batch_share_grad);
  const Ints& dd = dy.shape().dims();
  Ints begin(dd.size(), 0);
  begin[0] = share_of(ctx, dx.shape()[0]).first;
  copy_box(ctx, dy.raw_data(), dd, Ints(dd.size(), 0), dx.raw_data(), dx.shape().dims(), begin, dd,
           dtype_size(dy.dtype()));
}

// ---- one_hot -----------------------------------------------------------------------------------

void one_hot_kernel(KernelContext& ctx) {
  const Tensor& indices = ctx.inputs[0];  // (...)
  Tensor& y = ctx.outputs[0];             // (..., depth)
  const std::int64_t depth = ctx.attrs().get_int("depth");
  const double on = ctx.attrs().get_float("on_value"), off = ctx.attrs().get_float("off_value");
  const std::int64_t n = indices.num_elements();
  dispatch_integer(indices.dtype(), op_names::one_hot, [&]<typename I>() {
    dispatch_any(y.dtype(), op_names::one_hot, [&]<typename T>() {
      const I* idx = indices.data<I>();
      T* out = y.data<T>();
      const T on_v = static_cast<T>(on), off_v = static_cast<T>(off);
      const std::int64_t grain = std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(depth, 1));
      parallel_for(ctx, n, grain, [&](std::int64_t b, std::int64_t e) {
        for (auto i = b; i < e; ++i) {
          T* row = out + i * depth;
          std::fill(row, row + depth, off_v);
          auto k = static_cast<std::int64_t>(idx[i]);
          if (k >= 0 && k < depth) row[k] = on_v;  // out of range: all off_value, as tf.one_hot
        }
      });
    });
  });
}

// ---- hashing_bins ----------------------------------------------------------------------------------

void hashing_bins_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];  // (...)
  Tensor& y = ctx.outputs[0];       // (...) int64
  const Attrs& a = ctx.attrs();
  const std::int64_t num_bins = a.get_int("num_bins"), mask_value = a.get_int("mask_value");
  const bool has_mask = a.get_bool("has_mask"), salted = a.get_bool("salted");
  const auto key0 = static_cast<std::uint64_t>(a.get_int("key0")), key1 = static_cast<std::uint64_t>(a.get_int("key1"));
  dispatch_any(x.dtype(), op_names::hashing_bins, [&]<typename T>() {
    const T* in = x.data<T>();
    std::int64_t* out = y.data<std::int64_t>();
    parallel_for(ctx, x.num_elements(), kElementwiseGrain / 16, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i)
        out[i] = hash::hashing_bin(static_cast<std::int64_t>(in[i]), num_bins, has_mask, mask_value, salted, key0, key1);
    });
  });
}

// ---- reverse -------------------------------------------------------------------------------------

// y[o, i, r] = x[o, n - 1 - i, r] over x viewed as (outer, n, inner): one memcpy of inner elements each.
void reverse_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const AxisLanes l = lanes_around(x.shape(), static_cast<int>(ctx.attrs().get_int("axis")), op_names::reverse);
  const std::int64_t outer = l.outer, n = l.n, inner = l.inner;
  if (outer * n * inner == 0) return;
  const std::size_t run = static_cast<std::size_t>(inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  const std::int64_t grain = std::max<std::int64_t>(1, kElementwiseGrain / inner);
  parallel_for(ctx, outer * n, grain, [&](std::int64_t b, std::int64_t e) {
    for (auto r = b; r < e; ++r) {
      const std::int64_t o = r / n, i = r % n;
      std::memcpy(dst + static_cast<std::size_t>(r) * run, src + static_cast<std::size_t>(o * n + (n - 1 - i)) * run,
                  run);
    }
  });
}

// ---- gather, gather_grad -----------------------------------------------------------------------

// Indices as int64, checked against the row count before any parallel work (workers must not throw).
std::vector<std::int64_t> checked_indices(const Tensor& indices, std::int64_t rows, const char* op) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(indices.num_elements()));
  dispatch_integer(indices.dtype(), op, [&]<typename I>() {
    const I* p = indices.data<I>();
    for (std::size_t i = 0; i < out.size(); ++i) {
      auto k = static_cast<std::int64_t>(p[i]);
      if (k < 0 || k >= rows)
        raise<ValueError>("{}: index {} (at position {} of indices {}) is out of range for params with {} rows; "
                          "valid indices are 0..{}",
                          op, k, i, indices.shape().to_string(), rows, rows - 1);
      out[i] = k;
    }
  });
  return out;
}

void gather_kernel(KernelContext& ctx) {
  const Tensor& params = ctx.inputs[0];   // (n, ...)
  const Tensor& indices = ctx.inputs[1];  // (m...)
  Tensor& y = ctx.outputs[0];             // (m..., ...)
  const std::int64_t rows = params.shape()[0];
  const auto idx = checked_indices(indices, rows, op_names::gather);
  const std::size_t row_bytes = rows == 0 ? 0 : params.nbytes() / static_cast<std::size_t>(rows);
  const char* src = static_cast<const char*>(params.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  const std::int64_t row_elems = rows == 0 ? 0 : params.num_elements() / rows;
  const std::int64_t grain = std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(row_elems, 1));
  parallel_for(ctx, static_cast<std::int64_t>(idx.size()), grain, [&](std::int64_t b, std::int64_t e) {
    for (auto i = b; i < e; ++i)
      std::memcpy(dst + static_cast<std::size_t>(i) * row_bytes,
                  src + static_cast<std::size_t>(idx[static_cast<std::size_t>(i)]) * row_bytes, row_bytes);
  });
}

void gather_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];       // (m..., ...)
  const Tensor& indices = ctx.inputs[1];  // (m...)
  Tensor& dparams = ctx.outputs[0];       // (n, ...)
  const std::int64_t rows = dparams.shape()[0];
  const auto idx = checked_indices(indices, rows, op_names::gather_grad);
  const std::int64_t row_elems = rows == 0 ? 0 : dparams.num_elements() / rows;
  const auto m = static_cast<std::int64_t>(idx.size());
  fill(ctx, dparams, 0.0, op_names::gather_grad);
  dispatch_any(dy.dtype(), op_names::gather_grad, [&]<typename T>() {
    const T* g = dy.data<T>();
    T* out = dparams.data<T>();
    // Repeated indices add into the same row: split the work by column so threads never collide.
    const std::int64_t grain = std::max<std::int64_t>(1, kElementwiseGrain / std::max<std::int64_t>(m, 1));
    parallel_for(ctx, row_elems, grain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = 0; i < m; ++i) {
        T* dst = out + idx[static_cast<std::size_t>(i)] * row_elems;
        const T* src = g + i * row_elems;
        for (auto c = b; c < e; ++c) dst[c] += src[c];
      }
    });
  });
}

}  // namespace

void register_array_kernels() {
  register_kernel(op_names::reshape, DeviceKind::cpu, alias_kernel);
  register_kernel(op_names::reshape_like, DeviceKind::cpu, alias_kernel);
  register_kernel(op_names::transpose, DeviceKind::cpu, transpose_kernel);
  register_kernel(op_names::reverse, DeviceKind::cpu, reverse_kernel);
  register_kernel(op_names::concat, DeviceKind::cpu, concat_kernel);
  register_kernel(op_names::concat_grad, DeviceKind::cpu, concat_grad_kernel);
  register_kernel(op_names::split, DeviceKind::cpu, split_kernel);
  register_kernel(op_names::slice, DeviceKind::cpu, slice_kernel);
  register_kernel(op_names::slice_grad, DeviceKind::cpu, slice_grad_kernel);
  register_kernel(op_names::batch_share, DeviceKind::cpu, batch_share_kernel);
  register_kernel(op_names::batch_share_grad, DeviceKind::cpu, batch_share_grad_kernel);
  register_kernel(op_names::batch_share_start, DeviceKind::cpu, batch_share_start_kernel);
  register_kernel(op_names::pad, DeviceKind::cpu, pad_kernel);
  register_kernel(op_names::pad_grad, DeviceKind::cpu, pad_grad_kernel);
  register_kernel(op_names::one_hot, DeviceKind::cpu, one_hot_kernel);
  register_kernel(op_names::hashing_bins, DeviceKind::cpu, hashing_bins_kernel);
  register_kernel(op_names::gather, DeviceKind::cpu, gather_kernel);
  register_kernel(op_names::gather_grad, DeviceKind::cpu, gather_grad_kernel);
}

}  // namespace tower::cpu
