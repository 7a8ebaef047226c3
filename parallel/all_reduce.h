// The all-reduce of the towers' gradients, built from graph ops that the executor runs with the rest
// of the step, each device's part on that device's lane: a reduction to one device (device copies plus
// an add kernel: CPU devices and logical GPUs) or one all_reduce op per replica (NCCL across physical
// GPUs).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tower/core/graph.h"

namespace tower::parallel {

// 4 MiB: a bucket per few layers of a small convnet, and the copies stay few and large.
inline constexpr std::size_t kDefaultBucketBytes = std::size_t{4} << 20;

// How the replicas' gradients are summed (tf.distribute's cross_device_ops).
enum class CrossDeviceOps {
  // all_reduce across the replicas on GPUs when they are two or more physical GPUs and NCCL loads
  // (the others' sums are copies), or across all replicas when they are all CPU devices;
  // reduction_to_one_device otherwise (logical GPUs of one GPU, no NCCL, one GPU beside CPU devices).
  automatic,
  // The replicas' buckets are copied to the first replica, added there in replica order, and the sum
  // copied back.
  reduction_to_one_device,
  // One all_reduce op per replica of the first replica's kind (NCCL on GPUs; on CPU devices the lanes
  // meet on the host); the replicas of another kind give their buckets to the first replica before
  // and take a copy of its sum after. ValueError when these replicas cannot (all_reduce_unsupported).
  all_reduce,
};

// The sum of a bucket (n,) across the worker processes of a job, given this process's sum and the
// bucket's index (parallel/worker_ops.h); empty: one process.
using AcrossWorkers = std::function<SymbolicTensor(const SymbolicTensor& bucket, int index)>;

// grads[r][i]: replica r's gradient of variable i, computed on devices[r] (undefined: replica r has
// none). Returns sums[r][i] on devices[r]: the sum over the replicas of variable i's gradient
// (undefined where no replica has one).
//
// Gradients are fused into buckets of at most `bucket_bytes` (one dtype each) in a fixed order: the
// variables from last to first, the order backprop makes them. Each bucket is flattened on its replica,
// the buckets are summed as `how` says (a replica without any of a bucket's gradients adds nothing),
// and each replica splits its sum back into gradients: every replica gets the same bits, and the
// result does not depend on timing. With `across`, the first replica's sum of each bucket is summed
// across the workers (hierarchically: this process's replicas first) and every replica takes that.
std::vector<std::vector<SymbolicTensor>> all_reduce_sum(Graph& graph, const std::vector<std::string>& devices,
                                                        const std::vector<std::vector<SymbolicTensor>>& grads,
                                                        CrossDeviceOps how = CrossDeviceOps::automatic,
                                                        std::size_t bucket_bytes = kDefaultBucketBytes,
                                                        const AcrossWorkers& across = {});

}  // namespace tower::parallel
