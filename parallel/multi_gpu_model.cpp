// multi_gpu_model: the towers as a functional model around the same inner model.
#include "tower/parallel/multi_gpu_model.h"

#include <fmt/format.h>

#include <memory>

#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/core/lambda.h"
#include "tower/layers/merging/concatenate.h"
#include "tower/parallel/towers.h"

namespace tower::parallel {

Model multi_gpu_model(const Model& model, const std::vector<std::string>& devices, const MultiGpuOptions& options) {
  // A wrapper of a wrapper wraps the same inner model.
  auto inner = model.wrapped_model() ? model.wrapped_model() : std::make_shared<const Model>(model);
  if (!inner->has_graph())
    raise<ValueError>(
        "multi_gpu_model: model \"{}\" has no input shape yet; build it (an Input first) before "
        "wrapping it",
        inner->name());
  check_not_placed(*inner, "multi_gpu_model");  // a tower is a whole copy of the model on one device
  const auto towers = std::make_shared<const Towers>(devices, options, "multi_gpu_model");  // checks the arguments
  const auto& names = towers->devices();
  const std::string& merge = towers->options().merge_device;

  // The wrapper's functional graph shows the pattern (summary, layers()); its engine graphs are built
  // by `towers`, which cuts the shares with the ratios of the moment (fit's auto ratios change them).
  std::vector<KerasTensor> inputs;
  for (const auto& x : inner->inputs()) {
    auto dims = x.shape().dims();
    dims.erase(dims.begin());  // Input's shape leaves out the batch
    inputs.push_back(layers::Input(Shape(dims), {.dtype = x.dtype(), .name = x.layer().name()}));
  }
  // per_device[i][k]: output k of device i's call of the inner model.
  std::vector<std::vector<KerasTensor>> per_device;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::vector<KerasTensor> shares;
    for (const auto& x : inputs) {
      const layers::Lambda slice([ratios = towers->ratios(), share = static_cast<int>(i)](const SymbolicTensor& t) {
        return ops::batch_share(t, ratios, share);
      });
      shares.push_back(slice(x));
      shares.back().node()->device = merge;  // sliced where the batch arrives: only the share is copied over
    }
    per_device.push_back(inner->call_multi(shares));
    per_device.back().front().node()->device = names[i];  // the inner model's ops on device i
  }
  // Each output concatenated along the batch, named after the inner model's output (loss and log names).
  const auto output_names = inner->output_names();
  std::vector<KerasTensor> outputs;
  for (std::size_t k = 0; k < output_names.size(); ++k) {
    std::vector<KerasTensor> parts;
    for (const auto& tower : per_device) parts.push_back(tower[k]);
    outputs.push_back(layers::Concatenate({.axis = 0, .name = output_names[k]})(parts));
    outputs.back().node()->device = merge;
  }
  Model wrapper(inputs, outputs);
  wrapper.set_wrapped_model(inner);
  // A compiled model's wrapper starts compiled the same way, with the same optimizer object (its slots
  // and step count belong to the shared variables, so a loaded model continues where it was).
  if (inner->compiled()) {
    const auto& args = inner->compile_args();
    wrapper.compile(args.optimizer, args.losses, args.metrics_arg, {.loss_weights = args.loss_weights, .weighted_metrics = args.weighted_metrics_arg});
  }
  towers->mirror(inner->weights());
  wrapper.set_replication(towers);  // last: made or compiled under a strategy's scope, it would take that
  return wrapper;
}

Model multi_gpu_model(const Model& model, std::span<const int> gpu_ids, const MultiGpuOptions& options) {
  std::vector<std::string> names;
  for (int id : gpu_ids) {
    if (id < 0 || id >= device_count(DeviceKind::cuda))
      raise<NotFoundError>(
          "multi_gpu_model: GPU {} does not exist; {} GPU(s) are visible{}", id, device_count(DeviceKind::cuda),
          device_count(DeviceKind::cuda) > 0 ? fmt::format(" (ids 0 to {})", device_count(DeviceKind::cuda) - 1)
                                             : " (no CUDA device, or tower was built without CUDA)");
    names.push_back(fmt::format("cuda:{}", id));
  }
  return multi_gpu_model(model, names, options);
}

Model multi_gpu_model(const Model& model, std::initializer_list<int> gpu_ids, const MultiGpuOptions& options) {
  return multi_gpu_model(model, std::span<const int>(gpu_ids.begin(), gpu_ids.size()), options);
}

Model multi_gpu_model(const Model& model, int gpus, const MultiGpuOptions& options) {
  if (gpus < 1) raise<ValueError>("multi_gpu_model: gpus must be at least 1, got {}", gpus);
  std::vector<int> ids(static_cast<std::size_t>(gpus));
  for (int i = 0; i < gpus; ++i) ids[static_cast<std::size_t>(i)] = i;
  return multi_gpu_model(model, std::span<const int>(ids), options);
}

}  // namespace tower::parallel
