// The CUDA kernel table entries of dot_product_attention and its gradient (core/ops.h): cuBLAS strided
// batched GEMMs straight out of the projections' (B, time, N, h) layout (no transposes), the scale in
// their alpha; the softmax launchers of activation_kernels.cu over rows of S; the mask through
// attention_kernels.cu. The CPU's formulas (backends/cpu/attention_kernels.cpp).
#include <type_traits>

#include "tower/backends/cuda/activation_launchers.h"
#include "tower/backends/cuda/attention_launchers.h"
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/checked.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

namespace {

// The sizes of q (B, T, N, H), k (B, S, N, H), v (B, S, N, Hv).
struct Dims {
  std::int64_t batch, t, s, heads, h, hv;
};

Dims dims_of(const Tensor& q, const Tensor& v) {
  const Shape &qs = q.shape(), &vs = v.shape();
  return {qs[0], qs[1], vs[1], qs[2], qs[3], vs[3]};
}

// Where an operand's (b, n) matrix starts (b * per_b + n * per_n elements in) and its row stride.
struct Layout {
  std::int64_t per_b, per_n, ld;
};

// A projection-like operand (B, time, N, width): (b, n)'s (time, width) matrix, rows N·width apart.
Layout projection(const Dims& d, std::int64_t time, std::int64_t width) {
  return {time * d.heads * width, width, d.heads * width};
}

// Scores (B, N, T, S): contiguous (T, S) matrices.
Layout scores(const Dims& d) { return {d.heads * d.t * d.s, d.t * d.s, d.s}; }

// The rows of S of scores (B, N, T, S), for the softmax launchers.
SoftmaxLanes score_rows(const Dims& d) { return {d.batch * d.heads * d.t, d.s, 1}; }

template <typename T>
void gemm_strided_batched(CudaDevice& gpu, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, T alpha,
                          const T* a, int lda, long long stride_a, const T* b, int ldb, long long stride_b, T* c,
                          int ldc, long long stride_c, int count) {
  const T zero = 0;
  if constexpr (std::is_same_v<T, float>)
    CUBLAS_CHECK(cublasSgemmStridedBatched(gpu.cublas(), op_a, op_b, m, n, k, &alpha, a, lda, stride_a, b, ldb,
                                           stride_b, &zero, c, ldc, stride_c, count));
  else
    CUBLAS_CHECK(cublasDgemmStridedBatched(gpu.cublas(), op_a, op_b, m, n, k, &alpha, a, lda, stride_a, b, ldb,
                                           stride_b, &zero, c, ldc, stride_c, count));
}

// c_bn (m, n) = alpha op(a_bn) op(b_bn) for every (b, n), row-major with the layouts' row strides: as
// batch_matmul (math_ops.cpp), column-major c^T = op(b)^T op(a)^T, b first. One strided batched GEMM
// over the larger of B and N (matrices of the other axis are a fixed stride apart along it), a loop
// over the smaller. c's matrices tile all of c: zeros when k is 0.
template <typename T>
void head_products(CudaDevice& gpu, const Dims& d, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                   T alpha, const T* a, Layout la, const T* b, Layout lb, Tensor& c, Layout lc) {
  if (c.num_elements() == 0) return;
  if (k == 0) {
    CUDA_CHECK(cudaMemsetAsync(c.raw_data(), 0, c.nbytes(), gpu.stream()));
    return;
  }
  const bool over_b = d.batch >= d.heads;
  const std::int64_t count = over_b ? d.batch : d.heads, loops = over_b ? d.heads : d.batch;
  const auto stride = [&](Layout l) { return static_cast<long long>(over_b ? l.per_b : l.per_n); };
  const auto step = [&](Layout l) { return over_b ? l.per_n : l.per_b; };
  for (std::int64_t size : {m, n, k, la.ld, lb.ld, lc.ld, count})
    (void)checked_int(size, "dot_product_attention on a GPU: a dimension of its operands",
                      "cuBLAS takes at most 2147483647: use fewer steps, heads or a smaller batch");
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  T* pc = c.data<T>();
  for (std::int64_t i = 0; i < loops; ++i)
    gemm_strided_batched<T>(gpu, op_b, op_a, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), alpha,
                            b + i * step(lb), static_cast<int>(lb.ld), stride(lb), a + i * step(la),
                            static_cast<int>(la.ld), stride(la), pc + i * step(lc), static_cast<int>(lc.ld), stride(lc),
                            static_cast<int>(count));
}

// The optional mask (B or 1, N or 1, T, S) at ctx.inputs[input]; null without one.
const Tensor* mask_input(const KernelContext& ctx, std::size_t input) {
  return ctx.inputs.size() > input ? &ctx.inputs[input] : nullptr;
}

AttentionMask mask_dims(const Tensor& mask, const Dims& d) {
  return {d.batch, d.heads, d.t, d.s, mask.shape()[0] != 1, mask.shape()[1] != 1};
}

// (q, k, v[, mask]) -> {o, p}: logits = scale q k^T into p's buffer, -1e9 where the mask is 0, the
// softmax in place, o = p v.
void dot_product_attention_kernel(KernelContext& ctx) {
  const Tensor &q = ctx.inputs[0], &k = ctx.inputs[1], &v = ctx.inputs[2];
  Tensor &o = ctx.outputs[0], &p = ctx.outputs[1];
  const Tensor* mask = mask_input(ctx, 3);
  const Dims d = dims_of(q, v);
  const double scale = ctx.attrs().get_float("scale");
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_floating(q.dtype(), op_names::dot_product_attention, [&]<typename T>() {
    head_products<T>(gpu, d, false, true, d.t, d.s, d.h, static_cast<T>(scale), q.data<T>(), projection(d, d.t, d.h),
                     k.data<T>(), projection(d, d.s, d.h), p, scores(d));
    if (mask)
      CUDA_CHECK(
          launch_attention_masked_fill<T>(mask->data<T>(), p.data<T>(), T(-1e9), mask_dims(*mask, d), gpu.stream()));
    CUDA_CHECK(launch_softmax<T>(SoftmaxOp::softmax, p.data<T>(), p.data<T>(), score_rows(d), gpu.stream()));
    head_products<T>(gpu, d, false, false, d.t, d.hv, d.s, T(1), p.data<T>(), scores(d), v.data<T>(),
                     projection(d, d.s, d.hv), o, projection(d, d.t, d.hv));
  });
}

// (do, q, k, v, p[, mask]) -> {dq, dk, dv}: dP = do v^T (B, N, T, S) in scratch, dlogits = p (dP -
// sum(dP p)) per row in place (0 where the mask is 0), then dv = p^T do, dq = scale dlogits k,
// dk = scale dlogits^T q.
void dot_product_attention_grad_kernel(KernelContext& ctx) {
  const Tensor &d_out = ctx.inputs[0], &q = ctx.inputs[1], &k = ctx.inputs[2], &v = ctx.inputs[3], &p = ctx.inputs[4];
  Tensor &dq = ctx.outputs[0], &dk = ctx.outputs[1], &dv = ctx.outputs[2];
  const Tensor* mask = mask_input(ctx, 5);
  const Dims d = dims_of(q, v);
  const double scale = ctx.attrs().get_float("scale");
  CudaDevice& gpu = gpu_of(ctx);
  // dP, then dlogits (B, N, T, S), through the device's caching allocator (freed on return: the work
  // that reads it is queued on the device's one stream before anything that could reuse it).
  Tensor dlogits(Shape{d.batch, d.heads, d.t, d.s}, q.dtype(), gpu);
  dispatch_floating(q.dtype(), op_names::dot_product_attention_grad, [&]<typename T>() {
    const Layout in_q = projection(d, d.t, d.h), in_k = projection(d, d.s, d.h);
    const Layout in_v = projection(d, d.s, d.hv), in_o = projection(d, d.t, d.hv);
    const T factor = static_cast<T>(scale);
    head_products<T>(gpu, d, false, true, d.t, d.s, d.hv, T(1), d_out.data<T>(), in_o, v.data<T>(), in_v, dlogits,
                     scores(d));
    CUDA_CHECK(launch_softmax_grad<T>(SoftmaxOp::softmax, dlogits.data<T>(), p.data<T>(), dlogits.data<T>(),
                                      score_rows(d), gpu.stream()));
    if (mask)
      CUDA_CHECK(
          launch_attention_masked_fill<T>(mask->data<T>(), dlogits.data<T>(), T(0), mask_dims(*mask, d), gpu.stream()));
    head_products<T>(gpu, d, true, false, d.s, d.hv, d.t, T(1), p.data<T>(), scores(d), d_out.data<T>(), in_o, dv,
                     in_v);
    head_products<T>(gpu, d, false, false, d.t, d.h, d.s, factor, dlogits.data<T>(), scores(d), k.data<T>(), in_k, dq,
                     in_q);
    head_products<T>(gpu, d, true, false, d.s, d.h, d.t, factor, dlogits.data<T>(), scores(d), q.data<T>(), in_q, dk,
                     in_k);
  });
}

}  // namespace

void register_attention_kernels() {
  register_kernel(op_names::dot_product_attention, DeviceKind::cuda, dot_product_attention_kernel);
  register_kernel(op_names::dot_product_attention_grad, DeviceKind::cuda, dot_product_attention_grad_kernel);
}

}  // namespace tower::cuda
