// multi_gpu_model: the towers as a functional model around the same inner model.
#include "tower/parallel/multi_gpu_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "tower/core/device.h"
#include "tower/core/ops.h"
#include "tower/layers/merging/concatenate.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/core/lambda.h"
#include "tower/layers/engine/model_internal.h"
#include "tower/parallel/mirrored_variables.h"

namespace tower::parallel {

namespace {

// The devices' canonical names ("gpu:1" -> "cuda:1"); device() throws NotFoundError listing what is
// visible for one that does not exist.
std::vector<std::string> checked_devices(const std::vector<std::string>& devices) {
  if (devices.empty()) raise<ValueError>("multi_gpu_model: give at least one device");
  std::vector<std::string> names;
  for (const auto& d : devices) {
    const std::string name = device(d).name();
    if (std::find(names.begin(), names.end(), name) != names.end())
      raise<ValueError>("multi_gpu_model: device {} is listed twice; give each device once", name);
    names.push_back(name);
  }
  return names;
}

std::vector<std::int64_t> checked_ratios(const std::vector<std::int64_t>& ratios, std::size_t devices) {
  if (ratios.empty()) return std::vector<std::int64_t>(devices, 1);
  if (ratios.size() != devices)
    raise<ValueError>("multi_gpu_model: {} ratios for {} devices; give one ratio per device", ratios.size(), devices);
  std::int64_t total = 0;
  for (auto r : ratios) {
    if (r < 0) raise<ValueError>("multi_gpu_model: ratios must be >= 0, got {}", fmt::join(ratios, ":"));
    total += r;
  }
  if (total == 0) raise<ValueError>("multi_gpu_model: at least one ratio must be above 0");
  return ratios;
}

}  // namespace

Model multi_gpu_model(const Model& model, const std::vector<std::string>& devices, const MultiGpuOptions& options) {
  // A wrapper of a wrapper wraps the same inner model.
  auto inner = model.wrapped_model() ? model.wrapped_model() : std::make_shared<const Model>(model);
  if (!inner->has_graph())
    raise<ValueError>(
        "multi_gpu_model: model \"{}\" has no input shape yet; build it (an Input first) before "
        "wrapping it",
        inner->name());
  const auto names = checked_devices(devices);
  // Shared with the wrapper: fit may rebalance them (auto_ratios), and the Lambdas read them whenever
  // an engine graph is built.
  const auto ratios = std::make_shared<std::vector<std::int64_t>>(checked_ratios(options.ratios, names.size()));
  const std::string merge = device(options.merge_device).name();

  std::vector<KerasTensor> inputs;
  for (const auto& x : inner->inputs()) {
    auto dims = x.shape().dims();
    dims.erase(dims.begin());  // Input's shape leaves out the batch
    inputs.push_back(layers::Input(Shape(dims), {.dtype = x.dtype(), .name = x.layer().name()}));
  }
  // towers[i][k]: output k of device i's call of the inner model.
  std::vector<std::vector<KerasTensor>> towers;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::vector<KerasTensor> shares;
    for (const auto& x : inputs) {
      const int share = static_cast<int>(i);
      const layers::Lambda slice(
          [ratios, share](const SymbolicTensor& t) { return ops::batch_share(t, *ratios, share); });
      shares.push_back(slice(x));
      shares.back().node()->device = merge;  // sliced where the batch arrives: only the share is copied over
    }
    towers.push_back(inner->call_multi(shares));
    towers.back().front().node()->device = names[i];  // the inner model's ops on device i
  }
  // Each output concatenated along the batch, named after the inner model's output (loss and log names).
  const auto output_names = inner->output_names();
  std::vector<KerasTensor> outputs;
  for (std::size_t k = 0; k < output_names.size(); ++k) {
    std::vector<KerasTensor> parts;
    for (const auto& tower : towers) parts.push_back(tower[k]);
    outputs.push_back(layers::Concatenate({.axis = 0, .name = output_names[k]})(parts));
    outputs.back().node()->device = merge;
  }
  Model wrapper(inputs, outputs);
  TowerLayout layout{.devices = names, .ratios = ratios, .auto_ratios = options.auto_ratios};
  if (options.mirrored) {
    layout.mirrors = make_mirrors(*inner, names);
    layout.apply_gradients = mirrored_gradients(options.cross_device_ops);
  }
  wrapper.set_wrapped_model(inner, std::move(layout));
  // A compiled model's wrapper starts compiled the same way, with the same optimizer object (its slots
  // and step count belong to the shared variables, so a loaded model continues where it was).
  if (const Model::Data& d = inner->internal(); d.compiled)
    wrapper.compile(d.optimizer, d.losses, d.metrics, {.loss_weights = d.loss_weights});
  return wrapper;
}

Model multi_gpu_model(const Model& model, const std::vector<int>& gpu_ids, const MultiGpuOptions& options) {
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

Model multi_gpu_model(const Model& model, int gpus, const MultiGpuOptions& options) {
  if (gpus < 1) raise<ValueError>("multi_gpu_model: gpus must be at least 1, got {}", gpus);
  std::vector<int> ids(static_cast<std::size_t>(gpus));
  for (int i = 0; i < gpus; ++i) ids[static_cast<std::size_t>(i)] = i;
  return multi_gpu_model(model, ids, options);
}

}  // namespace tower::parallel
