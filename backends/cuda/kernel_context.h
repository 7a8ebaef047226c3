// For the CUDA kernels' glue (*_ops.cpp): the CudaDevice a kernel runs on, made the current GPU.
#pragma once

#include "tower/backends/cuda/cuda_device.h"
#include "tower/core/op_registry.h"

namespace tower::cuda {

inline CudaDevice& gpu_of(KernelContext& ctx) {
  auto& gpu = static_cast<CudaDevice&>(ctx.device);
  gpu.make_current();
  return gpu;
}

}  // namespace tower::cuda
