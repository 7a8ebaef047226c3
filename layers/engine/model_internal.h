// Model's private state, shared by the files of layers/engine (model.cpp: structure; model_functions.cpp:
// the engine graphs; training.cpp: the loops; summary.cpp). Not installed.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/core/executor.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/engine/replication.h"

namespace tower {

// One engine graph built from the model: prediction, evaluation or a training step.
struct Model::Function {
  Graph graph;
  std::vector<SymbolicTensor> x;        // placeholders (batch, ...) per model input
  std::vector<SymbolicTensor> y;        // placeholders per output (train/test only)
  std::vector<std::int64_t> classes;    // per output: the class count when y holds sparse class ids, else 0
  SymbolicTensor sample_weight;         // (batch,), or (batch, time): temporal sample weights
  SymbolicTensor learning_rate;         // scalar (train only)
  SymbolicTensor iteration;             // scalar, 1-based step number (train only)
  std::vector<SymbolicTensor> fetches;  // predict: the outputs; else batch means named by `names`
  std::vector<std::string> names;       // "loss", "dense_1_loss", "accuracy", ...
  // train/test: the fetches cast to float64 and concatenated, read in one copy per step (undefined
  // for predict, or when a fetch's shape is known only at run time), and each fetch's shape.
  SymbolicTensor packed;
  std::vector<Shape> packed_shapes;
  // Stateful metrics (AUC, Precision, ...) by position in fetches: their fetch is the batch's statistics
  // (float64 sums over the replicas), which run() moves to `statistics` (leaving 0 among the values).
  std::map<std::size_t, metrics::Metric> stateful;
  std::map<std::size_t, std::vector<double>> statistics;  // of the last run
  std::vector<Node*> targets;           // weight updates (train only)
  std::unique_ptr<ReplicatedCall> replicas;  // the model called per replica (its hooks run around each step)
  std::shared_ptr<const Replication> replication;  // what made `replicas` (null: the model as it is)
  std::unique_ptr<Executor> executor;
  // Weight constraints (train only): a graph assigning each constrained trainable weight its constrained
  // value, run after every step as Keras applies constraints after the optimizer's update. Empty: none.
  std::unique_ptr<Graph> constraint_graph;
  std::vector<Node*> constraint_targets;
  std::unique_ptr<Executor> constraint_executor;
  std::int64_t last_batch_size = 0;  // the global batch's rows, of the batch feeds() made last

  // Runs the graph once (fetches and targets) on the batch feeds() made, with the replication's hooks
  // around it; `step_targets` in place of targets when given (the optimizer's choice for this step).
  std::vector<Tensor> run(const FeedMap& feeds, const std::vector<Node*>* step_targets = nullptr);
  // The feeds of a batch (in a multi-worker job: this process's rows of it, and the step's scalars);
  // sparse class ids out of range are refused first. own_batches: the batch is this process's own part
  // of the global batch (DataAdapter::own_batches), not the global batch itself.
  FeedMap feeds(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const Tensor& sample_weight,
                bool own_batches);
  // One step on a batch: the loss and metric means (names order); train_step also feeds the learning
  // rate and the 1-based step number and counts the step. Random ops (Dropout) draw with counter =
  // the optimizer's step count, so step k's masks are the same in a run resumed from a checkpoint.
  std::vector<double> test_step(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const Tensor& sample_weight,
                                bool own_batches = false);
  std::vector<double> train_step(optimizers::Optimizer& optimizer, const std::vector<Tensor>& x,
                                 const std::vector<Tensor>& y, const Tensor& sample_weight, bool own_batches = false);
  // The outputs on the host.
  std::vector<Tensor> predict_step(const std::vector<Tensor>& x, bool own_batches = false);
};

struct Model::Data {
  std::vector<KerasTensor> inputs, outputs;
  std::vector<std::shared_ptr<KerasNode>> nodes;  // calls to run, in execution order (no input nodes)
  std::vector<LayerPtr> layers;                   // Keras's model.layers order, InputLayers included
  // Made by Sequential: layers() hides the InputLayer and the class name is "Sequential", also
  // through a plain Model copy (`Model m = sequential;`).
  bool sequential = false;
  // 1 for a model of plain layers; 1 + the deepest nested model's otherwise (at most kMaxModelNesting).
  int nesting = 1;

  bool compiled = false;
  CompileArgs compile_args;

  // parallel::multi_gpu_model: the model the towers run (what files hold).
  std::shared_ptr<const Model> wrapped;
  // How the engine graphs run (null: as the model is).
  std::shared_ptr<const Replication> replication;

  // The Keras masks of the outputs of the last call() (undefined: none), for compute_mask: what a
  // model nested in another passes on.
  std::vector<SymbolicTensor> output_masks;
  // The mask of every output call() made in the graph being built (each replica's), by the output
  // tensor (node, index): what the losses of fit honour. build_function clears it.
  std::map<std::pair<const Node*, int>, SymbolicTensor> masks_of_outputs;

  bool stop_training = false;
  // set_initial_position(): (epoch, batches to skip) for the next fit.
  std::optional<std::pair<int, std::int64_t>> initial_position;
  std::unique_ptr<Function> train_fn, test_fn, predict_fn;

  std::unique_ptr<Function>& slot(Mode mode) {
    return mode == Mode::train ? train_fn : mode == Mode::test ? test_fn : predict_fn;
  }
};

}  // namespace tower
