// CPU scaled dot-product attention (core/ops.h's dot_product_attention) and its gradient. Each
// (batch item, head) pair is one task on the pool: its logits (T, S) stay in a per-thread buffer that
// fits in L2 while OpenBLAS multiplies straight out of the projections' (B, time, N, h) layout (no
// transposes) and the softmax runs row by row; only the probabilities p go to memory, once, for the
// gradient. Fewer than the pool's threads when batch·heads is smaller than it.
#include <algorithm>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/vector_math.h"
#include "tower/core/checked.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

// The sizes of q (B, T, N, H), k (B, S, N, H), v (B, S, N, Hv).
struct Dims {
  std::int64_t batch, t, s, heads, h, hv;
};

Dims dims_of(const Tensor& q, const Tensor& v) {
  const Shape &qs = q.shape(), &vs = v.shape();
  for (std::int64_t size : {qs[1], vs[1], qs[2] * qs[3], vs[2] * vs[3]})
    (void)checked_int(size, "dot_product_attention on the CPU: a dimension of its operands",
                      "OpenBLAS takes at most 2147483647: use fewer steps or heads");
  return {qs[0], qs[1], vs[1], qs[2], qs[3], vs[3]};
}

// c (m, n) = op(a) op(b) with leading dimensions; zeros when k is 0 (OpenBLAS leaves c as it was).
template <typename T>
void product(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda,
             const T* b, std::int64_t ldb, T* c, std::int64_t ldc) {
  if (k == 0) {
    for (std::int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, T(0));
    return;
  }
  gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a, static_cast<int>(lda), b,
       static_cast<int>(ldb), c, static_cast<int>(ldc));
}

// p = softmax(logits) along a row of n.
template <typename T>
void softmax_row(const T* logits, T* p, std::int64_t n) {
  if (n == 0) return;
  const T inv = T(1) / lane_exp(logits, p, n, UnitStride{});
  for (std::int64_t j = 0; j < n; ++j) p[j] *= inv;
}

// The mask of (b, n)'s rows, (T, S) with rows S apart, in a (B or 1, N or 1, T, S) mask; null without one.
template <typename T>
const T* mask_rows(const KernelContext& ctx, std::size_t input, const Dims& d, std::int64_t b, std::int64_t n) {
  if (ctx.inputs.size() <= input) return nullptr;
  const Tensor& mask = ctx.inputs[input];
  const std::int64_t per_b = mask.shape()[0] > 1 ? mask.shape()[1] * d.t * d.s : 0;
  const std::int64_t per_n = mask.shape()[1] > 1 ? d.t * d.s : 0;
  return mask.data<T>() + b * per_b + n * per_n;
}

// Runs fn(b, n, buffer) for every (batch item, head) on the pool, buffer a (T, S) scratch per thread.
template <typename T, typename F>
void for_each_head(KernelContext& ctx, const Dims& d, F fn) {
  parallel_for(ctx, d.batch * d.heads, 1, [&](std::int64_t lo, std::int64_t hi) {
    T* buffer = scratch<T>(d.t * d.s);
    for (std::int64_t i = lo; i < hi; ++i) fn(i / d.heads, i % d.heads, buffer);
  });
}

// (q, k, v[, mask]) -> {o, p}.
void dot_product_attention_kernel(KernelContext& ctx) {
  const Tensor &q = ctx.inputs[0], &k = ctx.inputs[1], &v = ctx.inputs[2];
  const Dims d = dims_of(q, v);
  const double scale = ctx.attrs().get_float("scale");
  dispatch_floating(q.dtype(), op_names::dot_product_attention, [&]<typename T>() {
    const T *pq = q.data<T>(), *pk = k.data<T>(), *pv = v.data<T>();
    T* po = ctx.outputs[0].data<T>();
    T* pp = ctx.outputs[1].data<T>();
    const T factor = static_cast<T>(scale);
    for_each_head<T>(ctx, d, [&](std::int64_t b, std::int64_t n, T* logits) {
      const T* q_bn = pq + (b * d.t * d.heads + n) * d.h;   // (T, H), rows N·H apart
      const T* k_bn = pk + (b * d.s * d.heads + n) * d.h;   // (S, H)
      const T* v_bn = pv + (b * d.s * d.heads + n) * d.hv;  // (S, Hv)
      T* p_bn = pp + (b * d.heads + n) * d.t * d.s;          // (T, S)
      const T* mask_bn = mask_rows<T>(ctx, 3, d, b, n);
      product(false, true, d.t, d.s, d.h, q_bn, d.heads * d.h, k_bn, d.heads * d.h, logits, d.s);
      for (std::int64_t t = 0; t < d.t; ++t) {
        T* row = logits + t * d.s;
        if (mask_bn) {  // Keras: logits * mask + (mask - 1) * 1e9, that is -1e9 where the mask is 0
          const T* m = mask_bn + t * d.s;
          for (std::int64_t j = 0; j < d.s; ++j) row[j] = m[j] != T(0) ? row[j] * factor : T(-1e9);
        } else {
          for (std::int64_t j = 0; j < d.s; ++j) row[j] *= factor;
        }
        softmax_row(row, p_bn + t * d.s, d.s);
      }
      product(false, false, d.t, d.hv, d.s, p_bn, d.s, v_bn, d.heads * d.hv, po + (b * d.t * d.heads + n) * d.hv,
              d.heads * d.hv);
    });
  });
}

// (do, q, k, v, p[, mask]) -> {dq, dk, dv}: dP = do v^T, dlogits = p (dP - sum(dP p)) per row (0
// where the mask is 0), then the three products, the scale folded into dlogits.
void dot_product_attention_grad_kernel(KernelContext& ctx) {
  const Tensor &d_out = ctx.inputs[0], &q = ctx.inputs[1], &k = ctx.inputs[2], &v = ctx.inputs[3], &p = ctx.inputs[4];
  const Dims d = dims_of(q, v);
  const double scale = ctx.attrs().get_float("scale");
  dispatch_floating(q.dtype(), op_names::dot_product_attention_grad, [&]<typename T>() {
    const T *pdo = d_out.data<T>(), *pq = q.data<T>(), *pk = k.data<T>(), *pv = v.data<T>(), *pp = p.data<T>();
    T *dq = ctx.outputs[0].data<T>(), *dk = ctx.outputs[1].data<T>(), *dv = ctx.outputs[2].data<T>();
    const T factor = static_cast<T>(scale);
    const std::int64_t ldh = d.heads * d.h, ldv = d.heads * d.hv;
    for_each_head<T>(ctx, d, [&](std::int64_t b, std::int64_t n, T* dlogits) {
      const std::int64_t q_at = (b * d.t * d.heads + n) * d.h, k_at = (b * d.s * d.heads + n) * d.h;
      const std::int64_t o_at = (b * d.t * d.heads + n) * d.hv, v_at = (b * d.s * d.heads + n) * d.hv;
      const T* p_bn = pp + (b * d.heads + n) * d.t * d.s;  // (T, S)
      const T* mask_bn = mask_rows<T>(ctx, 5, d, b, n);
      product(false, true, d.t, d.s, d.hv, pdo + o_at, ldv, pv + v_at, ldv, dlogits, d.s);  // dP
      for (std::int64_t t = 0; t < d.t; ++t) {
        T* row = dlogits + t * d.s;
        const T* p_row = p_bn + t * d.s;
        const T sum = lane_dot(row, p_row, d.s, UnitStride{});
        for (std::int64_t j = 0; j < d.s; ++j) row[j] = p_row[j] * (row[j] - sum) * factor;
        if (mask_bn)
          for (std::int64_t j = 0; j < d.s; ++j) row[j] = mask_bn[t * d.s + j] != T(0) ? row[j] : T(0);
      }
      product(true, false, d.s, d.hv, d.t, p_bn, d.s, pdo + o_at, ldv, dv + v_at, ldv);
      product(false, false, d.t, d.h, d.s, dlogits, d.s, pk + k_at, ldh, dq + q_at, ldh);
      product(true, false, d.s, d.h, d.t, dlogits, d.s, pq + q_at, ldh, dk + k_at, ldh);
    });
  });
}

}  // namespace

void register_attention_kernels() {
  register_kernel(op_names::dot_product_attention, DeviceKind::cpu, dot_product_attention_kernel);
  register_kernel(op_names::dot_product_attention_grad, DeviceKind::cpu, dot_product_attention_grad_kernel);
}

}  // namespace tower::cpu
