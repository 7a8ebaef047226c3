// The device-side copies of the array ops (array_ops.cpp), for other CUDA kernels too (convolution's
// padding and kernel layouts). Any dtype: bytes are moved.
#pragma once

#include <cstdint>
#include <vector>

#include "tower/backends/cuda/cuda_device.h"
#include "tower/core/tensor.h"

namespace tower::cuda {

// Copies the `box` of elements at src_begin in src to dst_begin in dst (same rank, up to 8 axes),
// on gpu's stream. `op` names the caller in errors.
void copy_box(CudaDevice& gpu, const char* op, const Tensor& src, const std::vector<std::int64_t>& src_begin,
              Tensor& dst, const std::vector<std::int64_t>& dst_begin, const std::vector<std::int64_t>& box);

// y = x with its axes permuted: y's axis d is x's axis perm[d] (y has the permuted shape).
void transpose(CudaDevice& gpu, const char* op, const Tensor& x, Tensor& y, const std::vector<std::int64_t>& perm);

}  // namespace tower::cuda
