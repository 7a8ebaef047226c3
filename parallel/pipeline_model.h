// parallel::pipeline_model: a model cut into consecutive stages on several devices, each batch cut into
// micro-batches that flow through the stages (GPipe: every micro-batch forward, then every one
// backward, the gradients summed, one update per batch).
//
//   Model piped = parallel::pipeline_model(model, {"cpu:0", "cpu:1"}, {.micro_batches = 4});
//   Model piped = parallel::pipeline_model(model, {"cuda:0", "cuda:1", "cuda:2"},
//                                          {.micro_batches = 8, .cuts = {"dense_2", "dense_4"}});
//   piped.compile(...); piped.fit(x, y, {.batch_size = 128});   // the model's weights train
//   piped.save("m.h5");                                          // the file `model` would write
//
// Each stage's weights (and their optimizer slots) move to its device (Model::move_weights): a stage
// keeps only its own layers' weights, gradients and slots, which is what lets a model too large for one
// device train. Layers run where their weights are (Model::call's placement), layers without weights
// where their first input is, and the engine plan copies activations forward and gradients backward
// between the devices. The micro-batches are one engine graph: each device runs its steps in graph
// order on a lane of its own, so stage k works on micro-batch m while stage k + 1 works on m - 1.
//
// The loss is the mean over the whole batch (each micro-batch's sum, then added), so a step equals one
// device's step on the same batch up to float rounding. BatchNormalization computes its statistics per
// micro-batch (as it does per tower), and its moving statistics take the micro-batches' new values
// averaged by their rows: docs/parallel.md, "Pipeline stages".
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tower/layers/callbacks/callback.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/engine/replication.h"

namespace tower::parallel {

struct PipelineOptions {
  // Micro-batches per batch (GPipe's M): each batch is cut into M parts of equal rows (largest
  // remainder: a batch of fewer than M rows leaves parts empty). The idle ("bubble") fraction of a
  // device is about (K - 1) / (M + K - 1) for K stages.
  int micro_batches = 1;
  // The layers that start stages 2..K, by name in the model's layer order (K - 1 names); empty: the
  // cuts that balance the stages' parameter counts (the largest stage as small as it can be).
  std::vector<std::string> cuts;
};

// A stage: its device, its layers (names, in model order) and their parameter count.
struct PipelineStage {
  std::string device;
  std::vector<std::string> layers;
  std::int64_t params = 0;
};

// Where the cuts of `model` fall on `devices` (one stage per device, each device once) with `options`,
// without moving anything. ValueError for cuts that are unknown, out of order or at the first layer, a
// count of cuts other than K - 1, fewer layers with weights than stages, micro_batches < 1.
std::vector<PipelineStage> pipeline_stages(const Model& model, const std::vector<std::string>& devices,
                                           const PipelineOptions& options = {});

// The pipeline of `model` (a built Sequential or functional model) on `devices`: a model over the same
// layers whose engine graphs run as stages and micro-batches, compiled as `model` is. `model`'s weights
// move to their stages' devices (so `model` itself then runs placed, without micro-batches).
Model pipeline_model(const Model& model, const std::vector<std::string>& devices, const PipelineOptions& options = {});

// The Replication of a pipeline_model: the model called once per micro-batch in one engine graph.
class Pipeline : public Replication {
 public:
  Pipeline(std::vector<PipelineStage> stages, int micro_batches);

  std::unique_ptr<ReplicatedCall> call(Model& model, CallContext& ctx,
                                       const std::vector<SymbolicTensor>& inputs) const override;
  // One replica: the micro-batches are parts of one model's batch, not replicas of the model.
  int num_replicas_in_sync() const override { return 1; }
  // parallel::StageMeter: each stage's idle fraction, printed after each epoch.
  std::vector<CallbackPtr> fit_callbacks() const override;

  const std::vector<PipelineStage>& stages() const { return stages_; }
  int micro_batches() const { return micro_batches_; }

 private:
  class Call;
  std::vector<PipelineStage> stages_;
  int micro_batches_;
};

// The callback through which fit reports how a pipeline's stages spend a step. After each epoch it
// prints "stages: cpu:1 idle 34 %  cpu:2 idle 14 %  (GPipe: 20 %)  total 3111 sps": per stage device,
// the share of the steps' wall time its lane did not compute (1 - Plan::busy_seconds / step time), and
// GPipe's (K - 1) / (M + K - 1) beside it, so that the micro-batch count can be tuned. pipeline_model
// adds one to every fit.
class StageMeter : public Callback {
 public:
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  // The line printed after an epoch ("" before a step), and each stage's idle fraction so far.
  std::string line() const;
  std::vector<double> idle() const;

 private:
  std::shared_ptr<const Pipeline> pipeline_;
  std::vector<const Device*> devices_;  // its stages' devices, looked up once
  std::vector<double> busy_;
  double wall_ = 0;
  std::int64_t samples_ = 0;
  std::chrono::steady_clock::time_point step_start_;
};

// The pipeline `model` runs as (its Replication, when that is a Pipeline), or null.
std::shared_ptr<const Pipeline> pipeline_of(const Model& model);

}  // namespace tower::parallel
