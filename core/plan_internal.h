// What the Plan's phases share (core/executor.cpp, plan_placement.cpp, plan_lanes.cpp): its values,
// steps and lane threads. Private to core/: not part of the op or layer API.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tower/core/executor.h"
#include "tower/core/step_graph.h"

namespace tower {

struct Plan::Value {
  enum class Kind { arena, persistent, feed, alias };
  TensorSpec spec;
  Device* device = nullptr;
  Kind kind = Kind::arena;
  Tensor tensor;              // bound buffer: arena view, variable/constant, fed tensor or alias view
  Tensor slot;                // feeds: arena buffer used when the fed tensor lives on another device
  Value* alias_of = nullptr;  // alias: the value whose storage this one views
  int def_step = 0, last_use = -1;
  std::size_t bytes = 0, offset = 0;
  std::string name;
};

struct Plan::Step {
  const Node* node = nullptr;  // null for a cross-device copy
  KernelFn kernel = nullptr;   // null for copies and aliases
  // Runs `kernel` on the step's float16/bfloat16 tensors (find_half_kernel_adapter); null when the
  // step has none or the backend's kernels take them as they are.
  HalfKernelAdapter half_adapter = nullptr;
  // The first step of a run that one group kernel call does (group_size steps, this one first).
  GroupKernelFn group_kernel = nullptr;
  int group_size = 1;
  // Steps on other devices that must have finished first (their outputs are read here, or this step
  // overwrites memory they read); plan_lanes fills it for concurrent runs.
  std::vector<std::size_t> waits;
  // The lanes with a step that waits for this one: woken when it is done (plan_lanes).
  std::vector<std::size_t> waiters;
  // Recorded on this step's device after it runs when a step of another lane waits for it there
  // (plan_lanes; null where the device needs none: a CPU step is done when it returns).
  std::unique_ptr<DeviceEvent> mark;
  bool collective = false;  // an all_reduce: on a CPU device its time is mostly waiting for the others
  Device* device = nullptr;
  std::vector<Value*> inputs, outputs;
  bool mutates = false;
  bool alias = false;  // output 0 views an input's storage (OpDef::alias_input or alias_when_unchanged)
};

// The lanes' threads (lane 0 runs on the caller's) and what they share during a run. The threads are
// started with the first concurrent run and kept for the plan's life, so a step starts no thread.
struct Plan::LaneThreads {
  explicit LaneThreads(std::size_t lanes) : wake(lanes) {}
  std::mutex mutex;
  // Per lane: what it waits for may have changed (a step it waits for is done, a run starts, an error,
  // the end; for lane 0 also another lane finished). One per lane, so that a finished step wakes only
  // the lanes that wait for it: with one for all, every step woke every lane, quadratic in the lanes.
  std::vector<std::condition_variable> wake;
  std::vector<char> done;         // per step, in this run
  std::exception_ptr error;       // the first one of this run
  std::uint64_t generation = 0;   // runs started
  std::size_t finished = 0;       // lanes other than 0 done with this run
  bool stop = false;
  std::vector<std::thread> threads;
};

// Whole-step graphs (plan_graphs.cpp). The plan's feeds live in two feed blocks on its device (slots 0
// and 1, used by alternate runs) filled from two page-locked host blocks by one upload per run, so the
// step recorded for a slot always reads the same addresses, and a batch's upload into one slot can run
// while the step reading the other slot does. A block holds every feed at its offset, then the random
// counters of the recorded step (recorded_random_counter). The first run is eager (it chooses the
// algorithms, creates the plans and workspaces), the next two record one slot each, then every run
// replays its slot's step.
struct Plan::GraphState {
  // The graphs first (they wait for the device's stream), then the recorder (it waits for the uploads
  // and returns the graphs' scratch memory), and only then the blocks nothing reads any more.
  ~GraphState() {
    for (auto& g : graph) g.reset();
    recorder.reset();
  }
  std::unique_ptr<StepRecorder> recorder;  // null: this plan's device records nothing
  std::string fallback;                    // why the plan runs eagerly ("" while it records)
  std::uint64_t generation = 0;            // config::generation() its steps were recorded under
  std::uint64_t runs = 0;                  // runs through the feed blocks since the last (re)start
  std::uint64_t uploads = 0;               // runs through the feed blocks: the slot is uploads % 2
  std::vector<Value*> feeds;               // the feed values, in the blocks' order
  std::vector<std::size_t> offsets;        // their offsets in a block
  std::size_t counters_offset = 0, counters = 0, block_bytes = 0;
  std::shared_ptr<Storage> device_block[2], host_block[2];
  std::unique_ptr<StepGraph> graph[2];
  std::vector<const Node*> random_nodes[2];  // per slot's graph, whose counters its block carries
  bool replayed = false;                     // the last run launched a recorded step
  int captures = 0;
};

namespace detail {
// Rethrows a kernel's or shape function's error with the node that raised it, keeping its type.
[[noreturn]] void rethrow_with_node(const Error& e, const Node& node);
}  // namespace detail

}  // namespace tower
