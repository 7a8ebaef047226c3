// parallel::multi_gpu_model: Keras 2's multi_gpu_model as a real functional model. An Input per model
// input; on each device a Lambda that takes that device's share of the batch (batch_share: largest
// remainder of the ratios, decided per batch, so the last partial batch and batches smaller than the
// device count work; an empty share sits the step out) and a call of the *same* inner model placed on
// that device; a Concatenate along the batch axis per output on the merge device, named after the
// inner model's output so losses and logs keep their names.
//
//   Model parallel = parallel::multi_gpu_model(model, 3);                    // cuda:0, cuda:1, cuda:2
//   Model parallel = parallel::multi_gpu_model(model, {0, 2, 3}, {.ratios = {3, 2, 2}});
//   Model parallel = parallel::multi_gpu_model(model, {"cpu:0", "cpu:1"});
//   parallel.compile(...); parallel.fit(...);   // the inner model's weights train
//   parallel.save("m.h5");                       // the file `model` would write
// A compiled model's wrapper starts compiled the same way, with the same optimizer.
//
// The wrapper runs through parallel::Towers (parallel/towers.h), its Replication, which builds this
// pattern in each engine graph. Each device keeps a mirror of the inner model's variables
// (parallel/mirrored_variables.h): the
// towers' gradients are summed by an all-reduce and every copy gets the same update, so training is
// synchronous and gives the single-device result on the same global batch (the loss is the mean over
// the whole batch, whatever the ratios). The inner model's own variables are the primary copies: they
// are updated too, and are what is saved and read. With `.mirrored = false` the towers instead read
// one shared copy where it lives (Keras 2's multi_gpu_model, a parameter server).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "tower/layers/engine/model.h"
#include "tower/parallel/all_reduce.h"

namespace tower::parallel {

struct MultiGpuOptions {
  // Each device's relative share of every batch, as integers ({3, 2}: 60 % and 40 %); empty: equal.
  std::vector<std::int64_t> ratios;
  // ratios = "auto": fit measures each device's samples per second in its first epoch and sets the
  // ratios from them (starting from `ratios`, or equal shares), for devices of different speed.
  bool auto_ratios = false;
  // Where the towers' outputs are concatenated and the loss and metrics computed (Keras: the CPU).
  std::string merge_device = "cpu:0";
  // A copy of the variables per device (true), or one copy the towers read from where it lives.
  bool mirrored = true;
  // How the mirrored towers' gradients are summed: automatic is NCCL across several physical GPUs,
  // the lanes adding together on CPU devices, else a reduction on the first device
  // (parallel/all_reduce.h).
  CrossDeviceOps cross_device_ops = CrossDeviceOps::automatic;
};

// `gpus` GPUs: cuda:0 .. cuda:gpus-1 (logical GPUs count: see set_logical_device_configuration).
Model multi_gpu_model(const Model& model, int gpus, const MultiGpuOptions& options = {});
// The GPUs with these ids, in this order: {0, 2, 3}, or a std::vector<int>. (Not a std::vector<int>
// parameter: its iterator-pair constructor would make {"cpu:0", "cpu:1"} ambiguous.)
Model multi_gpu_model(const Model& model, std::initializer_list<int> gpu_ids, const MultiGpuOptions& options = {});
Model multi_gpu_model(const Model& model, std::span<const int> gpu_ids, const MultiGpuOptions& options = {});
// Any devices by name: {"cpu:0", "cpu:1"} (CPU towers), {"cuda:0", "cuda:1"}, or a mix.
Model multi_gpu_model(const Model& model, const std::vector<std::string>& devices, const MultiGpuOptions& options = {});

}  // namespace tower::parallel
