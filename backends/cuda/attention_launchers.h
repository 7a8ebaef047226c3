// Launchers of the CUDA kernels of dot_product_attention that neither cuBLAS nor the softmax
// launchers (activation_launchers.h) cover: the broadcast mask over the logits and over their
// gradient. Plain pointers only; each returns the launch status for CUDA_CHECK.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tower::cuda {

// Scores x (batch, heads, t, s) under a mask (batch or 1, heads or 1, t, s): per_batch / per_head
// false where the mask's axis is 1 and broadcasts.
struct AttentionMask {
  std::int64_t batch = 0, heads = 0, t = 0, s = 0;
  bool per_batch = false, per_head = false;
};

// x[b, n, i, j] = value wherever mask[b or 0, n or 0, i, j] == 0, in place; the rest unchanged.
// The forward pass gives masked logits -1e9 (Keras's logits * mask + (mask - 1) * 1e9), the
// gradient gives them 0 (a fully masked row's p is uniform, yet its logits were constants).
template <typename T>
cudaError_t launch_attention_masked_fill(const T* mask, T* x, T value, AttentionMask m, cudaStream_t stream);

}  // namespace tower::cuda
