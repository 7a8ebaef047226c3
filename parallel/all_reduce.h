// The in-process all-reduce of the towers' gradients, built from graph ops: the collective for CPU
// devices and logical GPUs (device copies plus an add kernel), with no thread of its own: the executor
// runs it with the rest of the step, each device's part on that device's lane.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/graph.h"

namespace tower::parallel {

// 4 MiB: a bucket per few layers of a small convnet, and the copies stay few and large.
inline constexpr std::size_t kDefaultBucketBytes = std::size_t{4} << 20;

// grads[r][i]: replica r's gradient of variable i, computed on devices[r] (undefined: replica r has
// none). Returns sums[r][i] on devices[r]: the sum over the replicas of variable i's gradient
// (undefined where no replica has one).
//
// Gradients are fused into buckets of at most `bucket_bytes` (one dtype each) in a fixed order: the
// variables from last to first, the order backprop makes them. Each bucket is flattened on its replica,
// the replicas' buckets are added in replica order on devices[0], and that one sum is copied back to
// every replica and split: every replica gets the same bits, and the result does not depend on timing.
std::vector<std::vector<SymbolicTensor>> all_reduce_sum(Graph& graph, const std::vector<std::string>& devices,
                                                        const std::vector<std::vector<SymbolicTensor>>& grads,
                                                        std::size_t bucket_bytes = kDefaultBucketBytes);

}  // namespace tower::parallel
