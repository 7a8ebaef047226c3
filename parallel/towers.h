// parallel::Towers: the Replication (layers/engine/replication.h) of a model run as Keras's towers on
// the devices of one process. Each device gets its share of every batch (the ratios' largest
// remainder), cut where the batch arrives, and calls the model there; with mirrored variables each
// device reads its own copy of the weights, the towers' gradients are summed by an all-reduce and
// every copy gets the same update. Losses and metrics are summed per tower and only scalars meet, so a
// batch mean is exact over the global batch whatever the ratios. BatchNormalization's moving
// statistics become the towers' values averaged by their rows. parallel::multi_gpu_model and
// parallel::MirroredStrategy give models their Towers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/layers/engine/replication.h"
#include "tower/parallel/mirrored_variables.h"
#include "tower/parallel/multi_gpu_model.h"
#include "tower/parallel/worker_ops.h"

namespace tower::parallel {

// A worker's part in a multi-worker job (parallel::MultiWorkerMirroredStrategy): its towers compute
// only its share of each global batch, so their first rows start at the worker's first row and the
// batch means divide by the global batch (both fed per step), each gradient bucket's sum is summed
// across the workers too (worker_all_reduce), and the step's values are made whole across them.
struct WorkerPart {
  int rank = 0, size = 1;
  WorkerTransport transport = WorkerTransport::mpi;  // how the buckets cross (parallel/worker_ops.h)
};

class Towers : public Replication {
 public:
  // `devices`: each once, by any name device() knows ("gpu:1" is cuda:1); `options`: the ratios (one
  // per device, >= 0, not all 0; empty: equal) and the rest of MultiGpuOptions. `who` names the caller
  // in errors ("multi_gpu_model", "MirroredStrategy").
  Towers(const std::vector<std::string>& devices, const MultiGpuOptions& options, const std::string& who,
         std::optional<WorkerPart> worker = std::nullopt);

  std::unique_ptr<ReplicatedCall> call(Model& model, CallContext& ctx,
                                       const std::vector<SymbolicTensor>& inputs) const override;
  int num_replicas_in_sync() const override { return static_cast<int>(devices_.size()); }
  // With several devices: parallel::TowerMeter (each device's throughput; automatic ratios).
  std::vector<CallbackPtr> fit_callbacks() const override;

  const std::vector<std::string>& devices() const { return devices_; }  // canonical names
  const std::vector<std::int64_t>& ratios() const { return ratios_; }
  const MultiGpuOptions& options() const { return options_; }
  // The same towers with other ratios (fit's automatic balancing), reading the same mirrors.
  std::shared_ptr<const Towers> with_ratios(std::vector<std::int64_t> ratios) const;
  // Makes the mirrors of `variables` on every device now (they are otherwise made when a graph first
  // reads them). No-op without mirrored variables.
  void mirror(const std::vector<VariablePtr>& variables) const;
  // Per device, the mirror of each of `variables` made so far (empty without mirrored variables).
  std::map<std::string, std::map<const Variable*, VariablePtr>> mirrors_of(const std::vector<VariablePtr>& variables) const;

 private:
  class Call;
  std::vector<std::string> devices_;
  std::vector<std::int64_t> ratios_;
  MultiGpuOptions options_;
  std::shared_ptr<MirrorSet> mirrors_;  // null: the towers read the variables where they live
  std::optional<WorkerPart> worker_;     // set: a worker of a multi-worker job
};

// The towers `model` runs on (its Replication, when that is parallel::Towers), or null.
std::shared_ptr<const Towers> towers_of(const Model& model);
// Towers run a whole copy of a model on each device, from one mirror set per variable: a model placed
// on several devices (DefaultDeviceScope around some of its layers) is a ValueError starting with `who`
// and naming two of its variables and their devices.
void check_not_placed(const Model& model, const std::string& who);
// Their devices (empty: the model is not run as towers), and the mirrors of its weights per device.
std::vector<std::string> tower_devices(const Model& model);
std::map<std::string, std::map<const Variable*, VariablePtr>> mirrors(const Model& model);

}  // namespace tower::parallel
