// The graph ops of a cross-worker all-reduce (parallel/process_group.h): a start, which hands a
// gradient bucket to the communication thread and returns at once, and a finish, which waits for its
// sum. The start is an early op (OpDef::early): the plan runs it as soon as the bucket is computed, so
// the sum crosses the workers while the lanes go on with the backward pass.
#pragma once

#include <string>

#include "tower/core/graph.h"

namespace tower::parallel {

// The sum over every worker of the job of `bucket` (n,) (float32 or float64): finish(start(bucket)).
// With `mpi` both are placed on cpu:0 (a bucket on a GPU is copied over and back) and the sum is added
// in rank order; with `nccl` on the bucket's GPU, NCCL's sum (the same bits on every worker). The sum
// is made in the bucket's memory, so nothing else may read the bucket (all_reduce_sum's flat buckets).
// `what` and `index` name the bucket in the collective's description and in errors.
// How a worker's buckets cross the workers: through host memory and MPI (any devices), or with NCCL
// between the workers' GPUs, device to device (every worker's first device a physical GPU, NCCL loading
// on every worker).
enum class WorkerTransport { mpi, nccl };
SymbolicTensor worker_all_reduce(const SymbolicTensor& bucket, int index, WorkerTransport transport = WorkerTransport::mpi,
                                 const std::string& what = "gradients");

// Why a worker whose first device is `device` cannot join NCCL across the workers ("" when it can).
std::string nccl_across_workers_unsupported(const std::string& device);
// Makes the workers' NCCL communicator, this worker on `device` (worker 0 makes NCCL's unique id and
// broadcasts it over `group`): every worker calls it at the same point, once.
class ProcessGroup;
void join_nccl_workers(ProcessGroup& group, const std::string& device);

}  // namespace tower::parallel
