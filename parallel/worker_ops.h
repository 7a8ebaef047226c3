// The graph ops of a cross-worker all-reduce (parallel/process_group.h): a start, which hands a
// gradient bucket to the communication thread and returns at once, and a finish, which waits for its
// sum. The start is an early op (OpDef::early): the plan runs it as soon as the bucket is computed, so
// the sum crosses the workers while the lanes go on with the backward pass.
#pragma once

#include "tower/core/graph.h"

namespace tower::parallel {

// The sum over every worker of the job of `bucket` (n,) (float32 or float64), added in rank order:
// finish(start(bucket)), both placed on cpu:0 (a bucket on a GPU is copied over and back). The sum is
// made in the bucket's memory, so nothing else may read the bucket (all_reduce_sum's flat buckets).
// `index` names the bucket in the collective's description and in errors.
SymbolicTensor worker_all_reduce(const SymbolicTensor& bucket, int index);

}  // namespace tower::parallel
