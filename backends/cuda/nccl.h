// NCCL for the all_reduce op across physical GPUs. The library is loaded on first use (dlopen of
// libnccl.so.2): a GPU build runs without it, and only a collective across GPUs needs it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "tower/core/device.h"
#include "tower/core/dtype.h"

namespace tower::cuda {

// Empty when NCCL is there; otherwise why not, and what to do about it.
const std::string& nccl_unavailable();

// Why NCCL cannot all-reduce with one rank on each of these GPUs (CudaDevices), or "" when it can:
// NCCL loads, and they are different physical GPUs (NCCL refuses two ranks on one GPU).
std::string nccl_all_reduce_unsupported(const std::vector<Device*>& gpus);

// out = the sum over the ranks of their `in` (count elements of dtype), queued on `stream`, for rank
// `rank` of the physical GPUs `ordinals` (one per rank, all different). The communicators of one list of
// GPUs are made together on first use (ncclCommInitAll) and kept for the process's life. Every rank
// calls this from a thread of its own (its lane), for the same collectives in the same order.
void nccl_all_reduce_sum(const std::vector<int>& ordinals, int rank, const void* in, void* out, std::size_t count,
                         DType dtype, cudaStream_t stream);

}  // namespace tower::cuda
