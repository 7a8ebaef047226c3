// Plan and Executor: compile (graph, fetches, targets, placement, input shapes) into a schedule of
// kernel calls with cross-device copies and liveness-reused buffers, cache it per input shapes, run it.
#pragma once

#include <map>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tower/core/graph.h"
#include "tower/core/op_registry.h"

namespace tower {

// Values for placeholders, in any order.
using FeedMap = std::vector<std::pair<SymbolicTensor, Tensor>>;

struct PlanOptions {
  bool reuse_buffers = true;  // liveness-based buffer sharing (off only to measure what it saves)
  // With steps on several devices, each device's steps run on a thread of their own (the towers of
  // parallel/ at the same time), ordered by their cross-device dependencies; off: one thread.
  bool concurrent_devices = true;
};

class Plan {
 public:
  // Compiles the nodes that `fetches` and `targets` need. Nodes without a device run on
  // `default_device`. Throws ValueError when a needed placeholder is not fed.
  Plan(const std::vector<SymbolicTensor>& fetches, const std::vector<Node*>& targets, const FeedMap& feeds,
       Device& default_device, PlanOptions options = {});
  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  // Runs one step. Feeds must have the shapes the plan was compiled for. Returns fresh tensors
  // (copies of the fetched values, on the devices that computed them).
  std::vector<Tensor> run(const FeedMap& feeds);

  // Bytes of intermediate buffers per device (the arenas), and their total.
  std::size_t peak_bytes() const;
  std::size_t peak_bytes(const Device& device) const;
  // What the intermediates would take without reuse (the sum of their sizes).
  std::size_t unshared_bytes() const { return unshared_bytes_; }
  int num_steps() const;
  int num_copies() const { return num_copies_; }
  // Runs of steps that a group kernel does in one call (see GroupKernelFn).
  int num_groups() const;
  // Devices whose steps run at the same time (1: everything on one device, or not concurrent).
  int num_lanes() const { return static_cast<int>(lanes_.size()); }
  // Seconds `device`'s lane spent running its steps in the last run (not waiting for other lanes, nor
  // in all_reduce steps, where the replicas wait for each other); 0 for a device without a lane.
  double busy_seconds(const Device& device) const;
  std::string to_string() const;  // the schedule, one step a line

  // Whole-step graphs (docs/engine.md, "Whole-step CUDA graphs"): on a device that records steps (a
  // GPU), the plan's steps after the first are recorded once per feed slot and then replayed with one
  // launch. True when the last run launched a recorded step.
  bool replays_graph() const;
  // Why the plan runs its steps eagerly on a device that could record them (a step that cannot be
  // recorded, steps on several devices, a failed recording), or "" (it records, or its devices record
  // nothing: CPU devices, or graphs switched off by config::enable_cuda_graphs / TOWER_CUDA_GRAPHS=0).
  std::string graph_fallback_reason() const;
  int graph_captures() const;  // steps recorded so far (2 in steady state: one per feed slot)

 private:
  struct Value;
  struct Step;
  static bool alias_step(const Step& step);
  // The compilation's phases, in order: placement (plan_placement.cpp), groups, buffers (liveness and
  // the memory plan), lanes (plan_lanes.cpp).
  void place(const std::vector<SymbolicTensor>& fetches, const std::vector<Node*>& targets, const FeedMap& feeds,
             Device& default_device);
  void group_steps();
  void assign_buffers();
  void plan_lanes();
  // Runs step i (a whole group when it starts one); returns how many steps it ran.
  std::size_t run_step(std::size_t i);
  // The same on a throttled device (Device::set_slowdown), which computes slower.
  std::size_t run_step_throttled(std::size_t i);
  bool throttled() const;  // any of the plan's devices
  void run_lanes();
  void run_lane(std::size_t lane);
  void order_after_waits(std::size_t i);
  // One run's parts: the fed tensors bound (or copied into their slots), and the steps run eagerly.
  void bind_feeds(const FeedMap& feeds);
  void run_steps();
  // Whole-step graphs (plan_graphs.cpp): runs the step through a feed block, recorded or replayed;
  // false when this run is eager (nothing recorded on this plan's device, or it fell back).
  bool run_graph_step(const FeedMap& feeds);
  bool graphs_wanted();
  void rebind_aliases();
  // Marks the all_reduce steps and refuses a plan whose lanes could not all reach their replicas.
  void check_collectives();
  // Stops the collectives of this plan whose replicas wait on the host for a lane that failed.
  void abort_collectives();
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Step> steps_;
  std::vector<Value*> fetch_values_;
  std::map<int, Value*> feed_values_;  // placeholder node id -> value
  std::vector<VariablePtr> written_;    // variables the run updates (their version counts the runs)
  std::vector<std::string> collective_groups_;  // the `group` of each all_reduce step
  std::map<const Device*, std::shared_ptr<Storage>> arenas_;
  std::vector<Device*> devices_;  // where the steps run
  std::size_t unshared_bytes_ = 0;
  int num_copies_ = 0;
  PlanOptions options_;
  // Per device, the indices of its steps in schedule order (concurrent runs only).
  std::vector<std::vector<std::size_t>> lanes_;
  std::vector<double> lane_busy_;  // seconds per lane in the last run
  struct LaneThreads;
  std::unique_ptr<LaneThreads> lane_threads_;
  // Last: destroyed first, while the arenas its recorded steps use still exist.
  struct GraphState;
  std::unique_ptr<GraphState> graphs_;
};

// Runs graphs, keeping one Plan per (fetches, targets, feed shapes and dtypes).
class Executor {
 public:
  explicit Executor(Device& default_device = cpu_device(), PlanOptions options = {});

  std::vector<Tensor> run(const FeedMap& feeds, const std::vector<SymbolicTensor>& fetches,
                          const std::vector<Node*>& targets = {});
  // The plan run() would use, compiled now if it is not cached.
  Plan& plan(const FeedMap& feeds, const std::vector<SymbolicTensor>& fetches, const std::vector<Node*>& targets = {});
  int plans_compiled() const { return plans_compiled_; }
  // The plan the last run() used (null before any).
  const Plan* last_plan() const { return last_plan_; }
  Device& default_device() const { return *default_device_; }

 private:
  Device* default_device_;
  PlanOptions options_;
  std::map<std::string, std::unique_ptr<Plan>> plans_;
  int plans_compiled_ = 0;
  const Plan* last_plan_ = nullptr;
};

}  // namespace tower
