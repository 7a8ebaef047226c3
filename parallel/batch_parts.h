// A batch cut into parts with a call of the model on each, in one engine graph: parallel::Towers (a
// part per device) and parallel::Pipeline (a part per micro-batch). What they share: the batch's rows
// as a tensor, the losses and metrics summed part by part (only scalars meet), and the updates the
// calls make to the same variable (BatchNormalization's moving statistics) merged into one.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <optional>
#include <vector>

#include "tower/layers/layer.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/engine/replication.h"
#include "tower/parallel/worker_ops.h"

namespace tower::parallel {

// The rows of x (batch, ...) as a float32 scalar, from the elements it has at run time.
SymbolicTensor rows_of(const SymbolicTensor& x);

// An update one call made (an assign in CallContext::updates): its index there and the rows of the
// batch part that call saw (scalar, float).
struct CallUpdate {
  std::size_t index;
  SymbolicTensor rows;
};

// The calls' assigns of the same variable (one per call; the last would win) become one assign of their
// new values averaged by their rows, given to every copy of the variable (`copies_of(primary)`: the
// variable itself first, then its mirrors): the moving mean then follows the whole batch's mean, and a
// call with no rows counts for nothing. With `across_workers`, the weighted values and rows are also
// summed across the workers of a job (one all-reduce per dtype), so that every worker's moving
// statistics follow the global batch. A variable assigned once, with one copy, outside a job, keeps
// its assign as it is.
void merge_updates(CallContext& ctx, const std::vector<CallUpdate>& updates,
                   const std::function<std::vector<VariablePtr>(const VariablePtr&)>& copies_of,
                   std::optional<WorkerTransport> across_workers);

// The model's outputs on each part of a batch cut by `ratios` (ops::batch_share), and the losses and
// metrics over them: each part's values are computed and summed where its outputs are (`device`), and
// only those sums meet.
class BatchParts {
 public:
  explicit BatchParts(std::vector<std::int64_t> ratios) : ratios_(std::move(ratios)) {}
  const std::vector<std::int64_t>& ratios() const { return ratios_; }

  // The next part's outputs (one per model output), and the device its losses are computed on ("":
  // where its first output is).
  void add(const std::vector<SymbolicTensor>& outputs, const std::string& device);
  std::size_t size() const { return devices_.size(); }
  // Output k of the whole batch: the parts concatenated (on the current device scope).
  SymbolicTensor concatenated(std::size_t output) const;

  // Σ per_sample over the batch (each part's sum on its device, then added) and how many values that
  // is (scalars); per_row: the values per sample.
  struct Sums {
    SymbolicTensor sum, count;
    std::int64_t per_row = 1;
  };
  Sums sums(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
            const ReplicatedCall::PerSample& per_sample);
  // Σ per_batch(part) over the parts (ReplicatedCall::batch_sum).
  SymbolicTensor batch_sum(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                           const ReplicatedCall::PerSample& per_batch);

 private:
  // Labels and sample weights cut as the inputs were (once per output, where they are fed).
  const std::vector<SymbolicTensor>& y_parts(std::size_t output, const SymbolicTensor& y);
  const std::vector<SymbolicTensor>& weight_parts(const SymbolicTensor& sample_weight);

  std::vector<std::int64_t> ratios_;
  std::vector<std::string> devices_;                        // [part]
  std::vector<std::vector<SymbolicTensor>> outputs_;        // [output][part]
  std::vector<SymbolicTensor> weight_parts_;                // [part]
  std::map<std::size_t, std::vector<SymbolicTensor>> y_parts_;  // [output][part]
};

// A ReplicatedCall over a BatchParts: the whole batch's outputs (the parts concatenated), each batch
// mean and sum formed part by part; updates as ReplicatedCall's default (Towers and workers override).
class PartsCall : public ReplicatedCall {
 public:
  explicit PartsCall(std::vector<std::int64_t> ratios) : parts_(std::move(ratios)) {}
  const std::vector<SymbolicTensor>& outputs() const override { return outputs_; }
  SymbolicTensor batch_mean(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                            const PerSample& per_sample) override;
  SymbolicTensor batch_sum(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                           const PerSample& per_batch) override {
    return parts_.batch_sum(output, y, sample_weight, per_batch);
  }

 protected:
  // The model called once per part of the batch: every part is cut where the batch is, first (so that
  // no part's steps wait behind another part's calls in a device's lane), then part p is called under
  // the device scope devices[p] ("": each layer where its weights are) with `replica(p)`, whose first
  // row and global rows this fills in. The calls' updates of one variable are merged (merge_updates,
  // over `copies_of`), and the outputs concatenated.
  void call_parts(Model& model, CallContext& ctx, const std::vector<SymbolicTensor>& inputs,
                  const std::vector<std::string>& devices, const std::function<ReplicaContext(std::size_t)>& replica,
                  const std::function<std::vector<VariablePtr>(const VariablePtr&)>& copies_of);
  // After the parts are added: the model's `count` outputs over the whole batch (on the current device
  // scope; only predict runs them).
  void concatenate_outputs(std::size_t count);
  BatchParts parts_;
  std::vector<SymbolicTensor> outputs_;
};

}  // namespace tower::parallel
