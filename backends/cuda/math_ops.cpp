// The CUDA kernel table entries of matmul (cuBLAS GEMM), bias_add and bias_add_grad.
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_context.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/math_launchers.h"

namespace tower::cuda {

namespace {

// Row-major y (m, n) = op(a) op(b) is column-major y^T (n, m) = op(b)^T op(a)^T: cuBLAS gets b
// first. a is (m, k) or, transposed, (k, m); b is (k, n) or (n, k); their row lengths are the
// leading dimensions.
void matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const bool ta = ctx.attrs().get_bool("transpose_a"), tb = ctx.attrs().get_bool("transpose_b");
  const int m = static_cast<int>(y.shape()[0]), n = static_cast<int>(y.shape()[1]);
  const int k = static_cast<int>(a.shape()[ta ? 0 : 1]);
  const int lda = static_cast<int>(a.shape()[1]), ldb = static_cast<int>(b.shape()[1]);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    CUDA_CHECK(cudaMemsetAsync(y.raw_data(), 0, y.nbytes(), gpu.stream()));
    return;
  }
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  dispatch_floating(y.dtype(), "matmul", [&]<typename T>() {
    const T one = 1, zero = 0;
    if constexpr (std::is_same_v<T, float>)
      CUBLAS_CHECK(cublasSgemm(gpu.cublas(), op_b, op_a, n, m, k, &one, b.data<T>(), ldb, a.data<T>(), lda, &zero,
                               y.data<T>(), n));
    else
      CUBLAS_CHECK(cublasDgemm(gpu.cublas(), op_b, op_a, n, m, k, &one, b.data<T>(), ldb, a.data<T>(), lda, &zero,
                               y.data<T>(), n));
  });
}

void bias_add_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& bias = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const std::int64_t c = bias.num_elements(), rows = c == 0 ? 0 : x.num_elements() / c;
  dispatch_floating(x.dtype(), "bias_add", [&]<typename T>() {
    CUDA_CHECK(launch_bias_add<T>(x.data<T>(), bias.data<T>(), y.data<T>(), rows, c, gpu.stream()));
  });
}

void bias_add_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& db = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const std::int64_t c = db.num_elements(), rows = c == 0 ? 0 : dy.num_elements() / c;
  dispatch_floating(dy.dtype(), "bias_add_grad", [&]<typename T>() {
    CUDA_CHECK(launch_bias_add_grad<T>(dy.data<T>(), db.data<T>(), rows, c, gpu.stream()));
  });
}

}  // namespace

void register_math_kernels() {
  register_kernel("matmul", DeviceKind::cuda, matmul_kernel);
  register_kernel("bias_add", DeviceKind::cuda, bias_add_kernel);
  register_kernel("bias_add_grad", DeviceKind::cuda, bias_add_grad_kernel);
}

}  // namespace tower::cuda
