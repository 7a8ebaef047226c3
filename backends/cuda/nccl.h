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
// `rank` of the physical GPUs `ordinals` (one per rank, all different), in all_reduce group `group`. The
// communicators of one list of GPUs are made together on first use (ncclCommInitAll) and kept (never
// destroyed, not even at exit) until a failed replica aborts them. Every rank calls this from a thread of
// its own (its lane), for the same collectives in the same order. Error when the group was aborted.
void nccl_all_reduce_sum(const std::string& group, const std::vector<int>& ordinals, int rank, const void* in,
                         void* out, std::size_t count, DType dtype, cudaStream_t stream);
// A replica of `group` failed (core/collective.h's abort_collective): its communicators are aborted
// (ncclCommAbort), so kernels the other ranks queued end rather than spin forever, and evicted; the group
// refuses collectives until nccl_reset_group (the next run).
void nccl_abort_group(const std::string& group);
void nccl_reset_group(const std::string& group);

// ---- one rank per worker process (parallel::MultiWorkerMirroredStrategy) ----------------------------
// A new communicator's id (ncclGetUniqueId), made by one process and sent to the others.
std::string nccl_unique_id();
// Joins this process to the communicator `id` names as rank `rank` of `size`, on physical GPU
// `ordinal` (ncclCommInitRank; every rank calls it at the same time). One per process, kept for its
// life; a second join is a ValueError.
void nccl_join_workers(const std::string& id, int size, int rank, int ordinal);
// buffer (count elements of dtype, on the joined GPU) becomes the sum over the workers, in place, queued
// on `stream`.
void nccl_workers_all_reduce_in_place(void* buffer, std::size_t count, DType dtype, cudaStream_t stream);
// The workers' communicator's asynchronous error ("" when none: NCCL's own watchdog found nothing).
std::string nccl_workers_error();
// Aborts the workers' communicator (a deadline passed): its queued collectives end, the job cannot go on.
void nccl_workers_abort();

}  // namespace tower::cuda
