// CUDA_CHECK, CUBLAS_CHECK, CUDNN_CHECK: turn a failed CUDA runtime, cuBLAS or cuDNN call into a
// tower::DeviceError naming the call, file:line and the library's own message (OutOfMemoryError when
// the library ran out of memory).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "tower/core/error.h"

namespace tower::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line);

}  // namespace tower::cuda

#define TOWER_LIBRARY_CHECK(call, type, ok, thrower)                          \
  do {                                                                        \
    type tower_status_ = (call);                                              \
    if (tower_status_ != (ok)) thrower(tower_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define CUDA_CHECK(call) TOWER_LIBRARY_CHECK(call, cudaError_t, cudaSuccess, ::tower::cuda::throw_cuda_error)
#define CUBLAS_CHECK(call) \
  TOWER_LIBRARY_CHECK(call, cublasStatus_t, CUBLAS_STATUS_SUCCESS, ::tower::cuda::throw_cublas_error)
#define CUDNN_CHECK(call) \
  TOWER_LIBRARY_CHECK(call, cudnnStatus_t, CUDNN_STATUS_SUCCESS, ::tower::cuda::throw_cudnn_error)
