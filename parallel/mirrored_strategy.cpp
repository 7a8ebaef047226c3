// MirroredStrategy: a scope that makes compiled models run as multi_gpu_model towers.
#include "tower/parallel/mirrored_strategy.h"

#include <fmt/format.h>

#include <algorithm>

#include "tower/layers/engine/model_internal.h"
#include "tower/parallel/mirrored_variables.h"

namespace tower::parallel {

class MirroredStrategy::Towers : public DistributionStrategy {
 public:
  Towers(std::vector<std::string> devices, MultiGpuOptions options)
      : devices(std::move(devices)), options(std::move(options)) {}

  Model distribute(const Model& model, const TowerLayout& previous) const override {
    MultiGpuOptions o = options;
    if (previous.ratios) o.ratios = *previous.ratios;  // as fit may have rebalanced them (auto ratios)
    o.mirrored = false;  // the mirrors are made below, or kept from the model's earlier towers
    Model wrapper = multi_gpu_model(model, devices, o);
    TowerLayout layout = wrapper.internal().towers;
    layout.mirrors = previous.devices.empty() ? make_mirrors(model, devices) : previous.mirrors;
    layout.apply_gradients = mirrored_gradients(options.cross_device_ops);
    wrapper.set_wrapped_model(wrapper.wrapped_model(), std::move(layout));
    return wrapper;
  }

  std::vector<std::string> devices;
  MultiGpuOptions options;
};

namespace {

std::vector<std::string> all_gpus_or_cpu() {
  std::vector<std::string> names;
  for (int i = 0; i < device_count(DeviceKind::cuda); ++i) names.push_back(fmt::format("cuda:{}", i));
  if (names.empty()) names.push_back("cpu:0");
  return names;
}

}  // namespace

MirroredStrategy::MirroredStrategy() : MirroredStrategy(all_gpus_or_cpu()) {}

MirroredStrategy::MirroredStrategy(const std::vector<std::string>& devices, const MultiGpuOptions& options) {
  if (devices.empty()) raise<ValueError>("MirroredStrategy: give at least one device, e.g. {{\"cuda:0\", \"cuda:1\"}}");
  std::vector<std::string> names;
  for (const auto& d : devices) {
    names.push_back(device(d).name());  // unknown devices: NotFoundError listing them
    if (std::count(names.begin(), names.end(), names.back()) > 1)
      raise<ValueError>("MirroredStrategy: device {} is listed twice; give each device once", names.back());
  }
  towers_ = std::make_shared<const Towers>(std::move(names), options);
}

int MirroredStrategy::num_replicas_in_sync() const { return static_cast<int>(towers_->devices.size()); }
const std::vector<std::string>& MirroredStrategy::devices() const { return towers_->devices; }

MirroredStrategy::Scope::Scope(const MirroredStrategy& strategy)
    : previous_(set_current_strategy(strategy.towers_)), weights_(strategy.towers_->devices.front()) {}

MirroredStrategy::Scope::~Scope() { set_current_strategy(std::move(previous_)); }

}  // namespace tower::parallel
