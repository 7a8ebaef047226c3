// parallel::MirroredStrategy: tf.distribute.MirroredStrategy's front door to the same towers as
// multi_gpu_model (parallel::Towers). Models made or compiled under its scope keep their weights on
// the first device and train, evaluate and predict as towers on all of them, with mirrored variables;
// the model itself is what fit, save and summary see. A model made under the scope keeps the strategy
// when compiled outside it, as in TensorFlow (Model::set_replication(nullptr) runs it on one device).
//
//   parallel::MirroredStrategy strategy;                  // every GPU (cpu:0 when there is none)
//   parallel::MirroredStrategy strategy({"cpu:0", "cpu:1"});
//   Sequential model;
//   {
//     auto scope = strategy.scope();
//     model = make_model();
//     model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
//   }
//   model.fit(x, y, {.batch_size = 64 * strategy.num_replicas_in_sync()});   // the global batch
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/core/device.h"
#include "tower/layers/engine/model.h"
#include "tower/parallel/multi_gpu_model.h"
#include "tower/parallel/towers.h"

namespace tower::parallel {

// Every visible GPU (logical GPUs count), or cpu:0 when there is none, as TensorFlow does: a strategy's
// devices when none are given.
std::vector<std::string> all_gpus_or_cpu();

// A strategy's scope (MirroredStrategy, MultiWorkerMirroredStrategy): while it lives, models made or
// compiled on this thread train through `replication`, and new layer weights are created on `device`.
// Scopes nest; the innermost wins.
class StrategyScope {
 public:
  StrategyScope(std::shared_ptr<const Replication> replication, const std::string& device);
  ~StrategyScope();
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;

 private:
  std::shared_ptr<const Replication> previous_;
  DefaultDeviceScope weights_;
};

class MirroredStrategy {
 public:
  // Every visible GPU (logical GPUs count), or cpu:0 when there is none, as TensorFlow does.
  MirroredStrategy();
  // These devices ({"cuda:0", "cuda:1"}; {"cpu:0", "cpu:1"}), each once. `options`: ratios (or auto)
  // for devices of different speed, and the merge device, as multi_gpu_model takes them.
  explicit MirroredStrategy(const std::vector<std::string>& devices, const MultiGpuOptions& options = {});

  // How many towers share each batch.
  int num_replicas_in_sync() const;
  const std::vector<std::string>& devices() const;

  // While the scope lives, models made or compiled on this thread train through this strategy, and new
  // layer weights are created on the first device.
  using Scope = StrategyScope;
  Scope scope() const { return Scope(towers_, devices().front()); }

 private:
  std::shared_ptr<const Towers> towers_;  // the Replication the models hold
};

}  // namespace tower::parallel
