// Launchers of the elementwise CUDA kernels. Plain pointers only: .cu files stay free of tower's
// C++ headers (nvcc cannot compile fmt's compile-time checks), and the KernelContext glue lives
// in elementwise_ops.cpp. Each returns the launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

template <typename T>
cudaError_t launch_fill(T* y, std::int64_t n, T value, cudaStream_t stream);
template <typename T>
cudaError_t launch_scale(const T* x, T* y, std::int64_t n, T factor, cudaStream_t stream);
template <typename T>
cudaError_t launch_add(const T* a, const T* b, T* y, std::int64_t n, cudaStream_t stream);

}  // namespace tower::cuda
