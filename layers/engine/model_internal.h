// Model's private state, shared by model.cpp (structure), training.cpp (compile/fit/...) and summary.cpp.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/core/executor.h"
#include "tower/layers/engine/model.h"

namespace tower {

// One engine graph built from the model: prediction, evaluation or a training step.
struct Model::Function {
  Graph graph;
  std::vector<SymbolicTensor> x;        // placeholders (batch, ...) per model input
  std::vector<SymbolicTensor> y;        // placeholders per output (train/test only)
  std::vector<std::int64_t> classes;    // per output: the class count when y holds sparse class ids, else 0
  SymbolicTensor sample_weight;         // (batch,)
  SymbolicTensor learning_rate;         // scalar (train only)
  SymbolicTensor iteration;             // scalar, 1-based step number (train only)
  std::vector<SymbolicTensor> fetches;  // predict: the outputs; else batch means named by `names`
  std::vector<std::string> names;       // "loss", "dense_1_loss", "accuracy", ...
  std::vector<Node*> targets;           // weight updates (train only)
  std::vector<VariablePtr> mirrors;     // the mirrored variables the graph reads (parallel towers)
  std::unique_ptr<Executor> executor;

  // Runs the graph once (fetches and targets). Mirrors written to since the last run (load_weights,
  // set_weights, training without the towers) are brought up to date first.
  std::vector<Tensor> run(const FeedMap& feeds);
};

struct Model::Data {
  std::vector<KerasTensor> inputs, outputs;
  std::vector<std::shared_ptr<KerasNode>> nodes;  // calls to run, in execution order (no input nodes)
  std::vector<LayerPtr> layers;                   // Keras's model.layers order, InputLayers included
  // Made by Sequential: layers() hides the InputLayer and the class name is "Sequential", also
  // through a plain Model copy (`Model m = sequential;`).
  bool sequential = false;

  // compile()
  bool compiled = false;
  optimizers::OptimizerPtr optimizer;
  std::vector<losses::Loss> losses;  // one per output
  std::vector<double> loss_weights;  // one per output
  std::vector<metrics::Metric> metrics;

  // parallel::multi_gpu_model: the model the towers run (its variables are the towers' variables).
  std::shared_ptr<const Model> wrapped;
  // Its devices and their shares of a batch; for a model compiled under a strategy, the layout of the
  // towers it runs as.
  TowerLayout towers;
  // Set by compile() under a strategy's scope: the engine graphs run the model as its towers.
  std::shared_ptr<const DistributionStrategy> strategy;

  bool stop_training = false;
  // set_initial_position(): (epoch, batches to skip) for the next fit.
  std::optional<std::pair<int, std::int64_t>> initial_position;
  std::unique_ptr<Function> train_fn, test_fn, predict_fn;
};

}  // namespace tower
