// The single replica (a model that runs as it is), the thread's strategy scope and the global one.
#include "tower/layers/engine/replication.h"

#include <mutex>
#include <utility>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/engine/model.h"
#include "tower/optimizers/optimizer.h"

namespace tower {

namespace {

class SingleCall : public ReplicatedCall {
 public:
  explicit SingleCall(std::vector<SymbolicTensor> outputs) : outputs_(std::move(outputs)) {}

  const std::vector<SymbolicTensor>& outputs() const override { return outputs_; }

  SymbolicTensor batch_mean(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                            const PerSample& per_sample) override {
    return ops::reduce_mean(per_sample(y, outputs_.at(output), sample_weight));
  }

  SymbolicTensor batch_sum(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                           const PerSample& per_batch) override {
    return per_batch(y, outputs_.at(output), sample_weight);
  }

 private:
  std::vector<SymbolicTensor> outputs_;
};

class SingleReplica : public Replication {
 public:
  std::unique_ptr<ReplicatedCall> call(Model& model, CallContext& ctx,
                                       const std::vector<SymbolicTensor>& inputs) const override {
    return std::make_unique<SingleCall>(model.call(ctx, inputs));
  }
  int num_replicas_in_sync() const override { return 1; }
};

thread_local std::shared_ptr<const Replication> this_thread_strategy;

}  // namespace

std::vector<Node*> ReplicatedCall::apply_gradients(const SymbolicTensor& loss, const std::vector<VariablePtr>& variables,
                                                   optimizers::Optimizer& optimizer, const SymbolicTensor& learning_rate,
                                                   const SymbolicTensor& iteration) {
  return optimizer.minimize(loss.graph(), loss, variables, learning_rate, iteration);
}

SymbolicTensor ReplicatedCall::batch_sum(std::size_t, const SymbolicTensor&, const SymbolicTensor&, const PerSample&) {
  raise<ValueError>("this replication cannot compute stateful metrics (AUC, Precision, ...): its ReplicatedCall has "
                    "no batch_sum; compile with per-sample metrics (\"accuracy\", \"mse\") instead");
}

const Replication& single_replica() {
  static const SingleReplica single;
  return single;
}

namespace {
std::mutex global_strategy_mutex;
std::shared_ptr<const Replication> global_strategy;  // tower::distribution::set_distribution
}  // namespace

std::shared_ptr<const Replication> current_strategy() {
  if (this_thread_strategy) return this_thread_strategy;
  std::lock_guard lock(global_strategy_mutex);
  return global_strategy;
}

std::shared_ptr<const Replication> set_global_strategy(std::shared_ptr<const Replication> strategy) {
  std::lock_guard lock(global_strategy_mutex);
  return std::exchange(global_strategy, std::move(strategy));
}

std::shared_ptr<const Replication> set_current_strategy(std::shared_ptr<const Replication> strategy) {
  return std::exchange(this_thread_strategy, std::move(strategy));
}

bool writes_files(const Model& model) {
  const auto& replication = model.replication();
  return !replication || replication->is_chief();
}

}  // namespace tower
