// CUDA kernels of dot_product_attention besides cuBLAS and the softmax launchers: the broadcast mask
// written over the logits (forward) or their gradient (backward), one thread per score.
#include "tower/backends/cuda/attention_launchers.h"
#include "tower/backends/cuda/launch.cuh"

namespace tower::cuda {

namespace {

template <typename T>
__global__ void masked_fill_kernel(const T* mask, T* x, T value, AttentionMask m) {
  const std::int64_t plane = m.t * m.s, mask_heads = m.per_head ? m.heads : 1;
  TOWER_GRID_STRIDE(i, m.batch * m.heads * plane) {
    const std::int64_t bn = i / plane, n = bn % m.heads, b = bn / m.heads;
    const std::int64_t at = ((m.per_batch ? b : 0) * mask_heads + (m.per_head ? n : 0)) * plane + i % plane;
    if (mask[at] == T(0)) x[i] = value;
  }
}

}  // namespace

template <typename T>
cudaError_t launch_attention_masked_fill(const T* mask, T* x, T value, AttentionMask m, cudaStream_t stream) {
  const std::int64_t n = m.batch * m.heads * m.t * m.s;
  if (n == 0) return cudaSuccess;
  masked_fill_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(mask, x, value, m);
  return cudaGetLastError();
}

template cudaError_t launch_attention_masked_fill<float>(const float*, float*, float, AttentionMask, cudaStream_t);
template cudaError_t launch_attention_masked_fill<double>(const double*, double*, double, AttentionMask, cudaStream_t);

}  // namespace tower::cuda
