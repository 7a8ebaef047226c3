// CUDA_CHECK: turns a failed CUDA runtime call into a tower::DeviceError naming the call,
// file:line and CUDA's message (OutOfMemoryError for cudaErrorMemoryAllocation).
#pragma once

#include <cuda_runtime.h>

#include "core/error.h"

namespace tower::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);

}  // namespace tower::cuda

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t tower_status_ = (call);                                                   \
    if (tower_status_ != cudaSuccess)                                                     \
      ::tower::cuda::throw_cuda_error(tower_status_, #call, __FILE__, __LINE__);          \
  } while (0)
