// Launchers of the batch- and layer-normalization CUDA kernels over x (..., c) seen as (rows, c), with
// the CPU's formulas (backends/cpu/normalization_kernels.cpp). Own kernels rather than cuDNN's: cuDNN's
// batch norm wants epsilon >= 1e-5, returns no biased batch variance and accumulates float32 in float;
// these sum per channel in double, in a fixed order (deterministic). Layer normalization gives each row
// one warp. Plain pointers only; each returns the launch status for CUDA_CHECK.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

struct NormRows {
  std::int64_t rows = 0, c = 0;
};

// The scratch every launcher below needs (device memory, 8-byte aligned).
std::size_t batch_norm_workspace_bytes(NormRows v);

// (x, gamma, beta) -> y, mean, variance (biased), inv_std = 1 / sqrt(variance + eps).
template <typename T>
cudaError_t launch_batch_norm_training(const T* x, const T* gamma, const T* beta, double eps, T* y, T* mean,
                                       T* variance, T* inv_std, NormRows v, void* workspace, cudaStream_t stream);
// (dy, x, gamma, mean, inv_std) -> dx, dgamma, dbeta.
template <typename T>
cudaError_t launch_batch_norm_training_grad(const T* dy, const T* x, const T* gamma, const T* mean, const T* inv_std,
                                            T* dx, T* dgamma, T* dbeta, NormRows v, void* workspace,
                                            cudaStream_t stream);
// (dmean, dvariance, dinv_std, x, mean, inv_std) -> dx through the statistics outputs.
template <typename T>
cudaError_t launch_batch_norm_stats_grad(const T* dmean, const T* dvariance, const T* dinv_std, const T* x,
                                         const T* mean, const T* inv_std, T* dx, NormRows v, void* workspace,
                                         cudaStream_t stream);
// (x, gamma, beta, mean, variance) -> y = gamma (x - mean) / sqrt(variance + eps) + beta.
template <typename T>
cudaError_t launch_batch_norm_inference(const T* x, const T* gamma, const T* beta, const T* mean, const T* variance,
                                        double eps, T* y, NormRows v, void* workspace, cudaStream_t stream);
// (dy, x, gamma, mean, variance) -> dx, dgamma, dbeta, dmean, dvariance.
template <typename T>
cudaError_t launch_batch_norm_inference_grad(const T* dy, const T* x, const T* gamma, const T* mean,
                                             const T* variance, double eps, T* dx, T* dgamma, T* dbeta, T* dmean,
                                             T* dvariance, NormRows v, void* workspace, cudaStream_t stream);

// The scratch of launch_layer_norm_grad (device memory, 8-byte aligned).
std::size_t layer_norm_workspace_bytes(NormRows v);

// (x, gamma, beta) -> y, each row normalized: y = x * inv + (beta - mean * inv), inv = gamma * inv_std.
template <typename T>
cudaError_t launch_layer_norm(const T* x, const T* gamma, const T* beta, double eps, T* y, NormRows v,
                              cudaStream_t stream);
// (dy, x, gamma) -> dx, dgamma, dbeta; the row statistics computed again.
template <typename T>
cudaError_t launch_layer_norm_grad(const T* dy, const T* x, const T* gamma, double eps, T* dx, T* dgamma, T* dbeta,
                                   NormRows v, void* workspace, cudaStream_t stream);

}  // namespace tower::cuda
