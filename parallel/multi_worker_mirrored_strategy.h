// parallel::MultiWorkerMirroredStrategy: tf.distribute's multi-worker strategy. The same program runs
// as several worker processes (mpirun, or srun under Slurm), each with its own devices (one or several
// CPU devices, GPUs or logical GPUs, reduced locally as towers are); every worker keeps a mirror of
// the variables and computes its share of each global batch, and the gradients are summed across all
// replicas of all workers (parallel/process_group.h) in fixed-order buckets, while the backward pass
// still runs. Worker 0 is the chief: it alone shows the progress bar and writes files.
//
//   parallel::MultiWorkerMirroredStrategy strategy({"cpu:0"});   // this worker's devices
//   Sequential model;
//   {
//     auto scope = strategy.scope();
//     model = make_model();
//     model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
//   }
//   model.fit(x, y, {.batch_size = 64 * strategy.num_replicas_in_sync()});   // the global batch
//
//   mpirun -np 2 ./train        (each worker reads the same x and y and computes its share)
//
// fit's batch_size is the global batch, as under a Keras strategy: worker w computes rows
// [first_w, first_w + n_w) of every batch, split as towers split it (each worker's device ratios),
// so W workers train on exactly the batches one device would. At fit's start the workers compare
// their models (every variable's name, shape and dtype) and their data (batches per epoch), and take
// the chief's weights, optimizer state and resume position.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tower/core/device.h"
#include "tower/layers/engine/model.h"
#include "tower/parallel/mirrored_strategy.h"
#include "tower/parallel/multi_gpu_model.h"
#include "tower/parallel/process_group.h"

namespace tower::parallel {

class MultiWorkerMirroredStrategy {
 public:
  // This worker's devices: every visible GPU (logical GPUs count), or cpu:0 when there is none.
  MultiWorkerMirroredStrategy();
  // This worker's devices ({"cpu:0"}, {"cuda:0", "cuda:1"}), each once; `options`: their ratios, as
  // multi_gpu_model takes them; `communication`: the collectives' deadline. Every worker constructs
  // its strategy at the same point of the program (the workers exchange their device counts).
  // TF_CONFIG or KERAS_DISTRIBUTION_NUM_PROCESSES / KERAS_DISTRIBUTION_PROCESS_ID, when set, must say
  // what MPI says (this process's rank, the number of processes): ValueError naming both otherwise.
  explicit MultiWorkerMirroredStrategy(const std::vector<std::string>& devices, const MultiGpuOptions& options = {},
                                       const CommunicationOptions& communication = {});

  // Replicas of every worker.
  int num_replicas_in_sync() const;
  int worker_index() const;
  int num_workers() const;
  bool is_chief() const { return worker_index() == 0; }
  // This worker's devices.
  const std::vector<std::string>& devices() const;
  // Whether the gradient buckets cross the workers by NCCL, GPU to GPU (every worker's first device a
  // physical GPU, and NCCL loads on every worker); otherwise through host memory and MPI.
  bool uses_nccl() const;

  // While the scope lives, models made or compiled on this thread train through this strategy, and new
  // layer weights are created on this worker's first device.
  using Scope = StrategyScope;
  Scope scope() const;

  class Workers;  // the Replication the models hold

 private:
  std::shared_ptr<const Workers> workers_;
};

// What TF_CONFIG and Keras 3's KERAS_DISTRIBUTION_* variables say about this process, checked against
// `rank` of `size`: "" when they agree (or are not set), else the error's text. Exposed for tests.
std::string check_cluster_environment(int rank, int size);

}  // namespace tower::parallel
