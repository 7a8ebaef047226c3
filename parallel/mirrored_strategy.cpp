// MirroredStrategy: a scope whose models run as parallel::Towers.
#include "tower/parallel/mirrored_strategy.h"

#include <fmt/format.h>

namespace tower::parallel {

std::vector<std::string> all_gpus_or_cpu() {
  std::vector<std::string> names;
  for (int i = 0; i < device_count(DeviceKind::cuda); ++i) names.push_back(fmt::format("cuda:{}", i));
  if (names.empty()) names.push_back("cpu:0");
  return names;
}

StrategyScope::StrategyScope(std::shared_ptr<const Replication> replication, const std::string& device)
    : previous_(set_current_strategy(std::move(replication))), weights_(device) {}

StrategyScope::~StrategyScope() { set_current_strategy(std::move(previous_)); }

namespace {

// A strategy's variables are always mirrored (its name says so).
MultiGpuOptions mirrored(MultiGpuOptions options) {
  options.mirrored = true;
  return options;
}

}  // namespace

MirroredStrategy::MirroredStrategy() : MirroredStrategy(all_gpus_or_cpu()) {}

MirroredStrategy::MirroredStrategy(const std::vector<std::string>& devices, const MultiGpuOptions& options)
    : towers_(std::make_shared<const Towers>(devices, mirrored(options), "MirroredStrategy")) {}

int MirroredStrategy::num_replicas_in_sync() const { return towers_->num_replicas_in_sync(); }
const std::vector<std::string>& MirroredStrategy::devices() const { return towers_->devices(); }

}  // namespace tower::parallel
