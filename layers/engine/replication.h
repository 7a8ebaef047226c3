// Replication: the one seam between the model machinery (layers/engine) and parallel/.
//
// A Model holds at most one (Model::replication(); none: the model runs as it is). Through it the
// model's engine graphs (fit, evaluate, predict) call the model once per replica, form batch means,
// apply gradients, and run hooks around every step. layers/ knows replicas only through this header:
// devices, mirrored variables and all-reduces belong to the implementations in parallel/ (towers on
// the devices of one process, parallel/towers.h; a group of worker processes plugs in the same way).
//
// One training step, as the engine graph is built (layers/engine/model_functions.cpp):
//   auto call = replication.call(model, ctx, x);             // forward, once per replica
//   loss = call->batch_mean(k, y, sample_weight, per_sample);  // per replica, then combined
//   targets = call->apply_gradients(loss, variables, ...);     // gradients, their sum, the updates
// and as it runs: call->before_step(); plan.run(...); call->after_step().
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tower/core/executor.h"
#include "tower/core/graph.h"
#include "tower/core/variable.h"
#include "tower/layers/callbacks/callback.h"

namespace tower {

class Model;
struct CallContext;
namespace optimizers {
class Optimizer;
}

// What a layer sees of the replica it is called for (CallContext::replica; null: no replication).
struct ReplicaContext {
  // The variables this replica reads in place of the model's own (its copies on its device); a
  // variable not listed is read itself.
  const std::map<const Variable*, VariablePtr>* local_variables = nullptr;
  // This replica's first row in the global batch (int64 scalar; undefined: row 0), so that random
  // layers (Dropout) draw for its rows what one device would draw for the whole batch.
  SymbolicTensor first_row;
  // The global batch's rows (float32 scalar; undefined: the rows of the tensors the replica sees), by
  // which layers divide their activity penalties (Layer::add_activity_losses).
  SymbolicTensor global_rows;
  // The pieces this replica reads, joined, in place of a variable split into pieces (tower::distribution
  // on a mesh with a batch axis: each row of the mesh has its own); a variable not listed is read as
  // Layer::read reads it.
  const std::map<const Variable*, std::vector<VariablePtr>>* local_pieces = nullptr;
};

// The model called once per replica in one engine graph (Replication::call).
class ReplicatedCall {
 public:
  virtual ~ReplicatedCall() = default;

  // The model's outputs for the whole batch (predict), in output order.
  virtual const std::vector<SymbolicTensor>& outputs() const = 0;

  // (batch,) values of a loss or metric from labels (batch, ...), output (batch, ...) and sample
  // weights (batch,).
  using PerSample = std::function<SymbolicTensor(const SymbolicTensor& y, const SymbolicTensor& output,
                                                 const SymbolicTensor& sample_weight)>;
  // The mean over the global batch of per_sample(y, output `output`, sample_weight); y (batch, ...)
  // and sample_weight (batch,) are the whole batch's placeholders. A scalar.
  virtual SymbolicTensor batch_mean(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                                    const PerSample& per_sample) = 0;
  // The sum over the replicas of per_batch(y, output `output`, sample_weight) on each replica's rows:
  // statistics that add up over rows (a stateful metric's confusion counts), any shape, the same on
  // every replica. The default refuses: a replication that computes stateful metrics overrides it.
  virtual SymbolicTensor batch_sum(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                                   const PerSample& per_batch);

  // A training step's updates: the gradients of `loss` for `variables` (the model's trainable
  // weights), applied by `optimizer` to every copy the replicas read. The default is one copy of each:
  // optimizer.minimize in loss's graph (each variable updated where it lives).
  virtual std::vector<Node*> apply_gradients(const SymbolicTensor& loss, const std::vector<VariablePtr>& variables,
                                             optimizers::Optimizer& optimizer, const SymbolicTensor& learning_rate,
                                             const SymbolicTensor& iteration);

  // Around every run of the graph. before_step: what was written outside the graph (set_weights,
  // load_weights) reaches every replica's copies. after_step: the step has run.
  virtual void before_step() {}
  virtual void after_step() {}

  // ---- a job of several worker processes (parallel::MultiWorkerMirroredStrategy); the defaults are
  // those of one process, which computes the whole batch ----
  // The step's scalars besides this process's rows: the global batch has `global_rows`, of which this
  // process computes those from `first_row` on (Replication::local_rows).
  virtual void add_feeds(FeedMap& feeds, std::int64_t global_rows, std::int64_t first_row) {}
  // The step's fetched values made whole across the processes: the loss and metric means summed
  // (each process's part is its rows' sum over the global count; a stateful metric's statistics,
  // vectors, are summed alike), or, with `outputs` (predict), every process's rows gathered in process
  // order.
  virtual void combine(std::vector<Tensor>& values, bool outputs) {}
  // Whether the weights' regularization losses join this process's loss: in a job, only the chief's,
  // or the sum of the gradients across the processes would count them once per process.
  virtual bool adds_weight_losses() const { return true; }
};

class Replication {
 public:
  virtual ~Replication() = default;

  // Adds `model` called on `inputs` (the global batch, one placeholder per model input) once per
  // replica to ctx.graph.
  virtual std::unique_ptr<ReplicatedCall> call(Model& model, CallContext& ctx,
                                               const std::vector<SymbolicTensor>& inputs) const = 0;

  // How many replicas share each batch (Keras's strategy.num_replicas_in_sync).
  virtual int num_replicas_in_sync() const = 0;

  // Callbacks that fit runs after the user's (e.g. each device's throughput, load balancing). Made
  // anew for every fit.
  virtual std::vector<CallbackPtr> fit_callbacks() const { return {}; }

  // ---- a job of several worker processes (parallel::MultiWorkerMirroredStrategy) ----
  // This process's rows of a batch of `rows` that every process read: [first, first + count) of the
  // `global` rows. With `own` the batch is this process's own part of the global batch (a sharded
  // pipeline): all its rows, placed after the lower ranks' parts.
  struct Rows {
    std::int64_t first = 0, count = 0, global = 0;
  };
  virtual Rows local_rows(std::int64_t rows, bool own) const { return {0, rows, rows}; }
  // Whether this process shows progress bars and writes checkpoints and model files (the chief).
  virtual bool is_chief() const { return true; }
  // The shuffle seed of fit on arrays, the same in every process (the chief's).
  virtual std::uint64_t common_seed(std::uint64_t seed) const { return seed; }
  // fit's start, after the callbacks' on_train_begin (which may restore a backup) and before the first
  // step: the processes check that they train the same model on the same data (steps_per_epoch, -1
  // when unknown) and take the chief's weights, optimizer state and position (epoch, step).
  virtual void begin_fit(Model& model, std::int64_t steps_per_epoch, int& epoch, std::int64_t& step) const {}

  // What the processes of a job must train with alike, as (what, value) pairs in a fixed order: the
  // compile configuration, the data (its samples, a fingerprint), fit's options, the callbacks that
  // write files (Model::run_fit makes them: fit_agreement in layers/engine/training.cpp).
  using Agreement = std::vector<std::pair<std::string, std::string>>;
  // fit's start, before the callbacks' on_train_begin: in a job, the processes compare `agreement()`
  // (made only then) with the chief's, and every one raises the same ValueError naming the first
  // worker and field that differ, with both values.
  virtual void check_agreement(const std::function<Agreement()>& agreement) const {}
  // fit (or what it called) raised `error` on this process. In a job, the others are told (unless
  // the error is a collective's, which they see themselves), so that they end at their next
  // collective with an error naming this worker instead of waiting for its deadline. Never throws.
  virtual void fit_failed(const std::exception& error) const noexcept {}
};

// Whether `model` writes files from this process: false on a worker other than the chief of a
// multi-worker job (its ModelCheckpoint, BackupAndRestore, save and save_weights write nothing).
bool writes_files(const Model& model);

// The replication of a model that runs as it is: one replica, the plain batch means and updates.
const Replication& single_replica();

// ---- strategy scopes (parallel::MirroredStrategy::scope()) -----------------------------------------
// The replication whose scope is open on this thread, else the global one (below), or null. A Model
// made while one is current keeps it (as TensorFlow remembers the strategy a model was created under),
// and so does a model compiled while one is current.
std::shared_ptr<const Replication> current_strategy();
// Makes `strategy` this thread's current one; returns the one it replaces (for scope guards).
std::shared_ptr<const Replication> set_current_strategy(std::shared_ptr<const Replication> strategy);
// The replication of every thread that has no scope open (Keras 3's global distribution:
// tower::distribution::set_distribution); returns the one it replaces.
std::shared_ptr<const Replication> set_global_strategy(std::shared_ptr<const Replication> strategy);

}  // namespace tower
