// The CPU kernel groups, one file each (backends/cpu/*_kernels.cpp), and small helpers they share.
#pragma once

#include <cstdint>
#include <vector>

#include "tower/backends/cpu/cpu_device.h"
#include "tower/core/tensor.h"

namespace tower::cpu {

void register_basic_kernels();       // basic_kernels.cpp
void register_math_kernels();        // math_kernels.cpp: elementwise binary, matmul, bias_add
void register_activation_kernels();  // activation_kernels.cpp: unary math, activations, softmax
void register_reduce_kernels();      // reduce_kernels.cpp
void register_nn_kernels();          // conv_kernels.cpp, pool_kernels.cpp, normalization_kernels.cpp, dropout_kernels.cpp
void register_array_kernels();       // array_kernels.cpp
void register_loss_kernels();        // loss_kernels.cpp
void register_optimizer_kernels();   // optimizer_kernels.cpp
void register_collective_kernels();  // collective_kernels.cpp: all_reduce
void register_recurrent_kernels();   // recurrent_kernels.cpp: simple_rnn, lstm, gru and their gradients
void register_attention_kernels();   // attention_kernels.cpp: dot_product_attention and its gradient
// half_kernels.cpp: registers the CPU's half adapter (op_registry.h), which runs the float32 kernels on
// float16/bfloat16 tensors by widening them.
void register_half_support();

// Row-major c (m, n) = op(a) op(b) + beta c, op(a) (m, k), op(b) (k, n), through oneDNN or OpenBLAS
// on the calling thread (math_kernels.cpp). Sizes are the caller's to check against int.
void gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc,
          float beta = 0.0f);
void gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb, double* c, int ldc,
          double beta = 0.0);
// The same with the 64-bit sizes of the conv kernels' geometry (checked against int where it is made)
// and beta before c.
template <typename T>
void gemm_conv(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda,
               const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a, static_cast<int>(lda), b,
       static_cast<int>(ldb), c, static_cast<int>(ldc), beta);
}

// y (..., c) = x + bias (c,), then max(y, 0) when relu (y may be x): bias_add's kernel, and conv2d_bias's
// after its convolution (math_kernels.cpp).
void add_bias(KernelContext& ctx, const Tensor& x, const Tensor& bias, bool relu, Tensor& y);

// Elements per parallel chunk for cheap elementwise loops: below this, threads cost more than they save.
constexpr std::int64_t kElementwiseGrain = 1 << 15;

// The calling thread's buffer of at least `elements` T, kept across calls (it only grows), so that a
// kernel's working memory (im2col blocks, attention logits, per-thread partial products) allocates
// nothing in a steady training step. One buffer per thread and T: a pointer holds until the thread's
// next scratch<T> call.
template <typename T>
T* scratch(std::int64_t elements) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < static_cast<std::size_t>(elements)) buffer.resize(static_cast<std::size_t>(elements));
  return buffer.data();
}

// Runs fn(begin, end) over [0, n) on the kernel's device pool in chunks of at least `grain`.
template <typename F>
void parallel_for(KernelContext& ctx, std::int64_t n, std::int64_t grain, F&& fn) {
  cpu_pool(ctx).parallel_for(n, grain, fn);
}

}  // namespace tower::cpu
