// Whole-step graphs, the device-independent half: what a device kind offers to record a plan's step
// once and replay it with one launch (CUDA: stream capture into a CUDA graph, backends/cuda/cuda_graph.h),
// what kernels tell the recording (random counters read from device memory, ops that cannot be
// recorded), and the one warning a plan gives when it runs eagerly instead. The Plan's rules (warm-up,
// capture, replay, feed slots) are in core/plan_graphs.cpp; docs/engine.md, "Whole-step CUDA graphs".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tower/core/device.h"

namespace tower {

class Node;

// One recorded step (CUDA: an instantiated graph, cudaGraphExec_t). replay() queues all of it on the
// device, as the step's kernels were queued when it was recorded; the host does not wait.
class StepGraph {
 public:
  virtual ~StepGraph() = default;
  virtual void replay() = 0;
};

// Records steps on one device for one plan, and orders the copies of the plan's feed blocks. The plan
// keeps two feed blocks (slots 0 and 1) on the device and two in page-locked host memory; a step reads
// one slot, the next step the other, so that a batch is copied while the step before it runs.
class StepRecorder {
 public:
  virtual ~StepRecorder() = default;
  // Work this thread queues on the device from now on is recorded, not run. What kernels allocate
  // while recording belongs to the recorder's graphs (their scratch memory) until the recorder goes.
  virtual void begin() = 0;
  // Ends the recording and returns the step. Throws (with the device's reason) when the recording
  // failed: the recorded work never runs, the caller runs the step again eagerly.
  virtual std::unique_ptr<StepGraph> end() = 0;
  // Ends a recording after an error thrown inside it, dropping what was recorded. Never throws.
  virtual void abort() noexcept = 0;
  // The host waits until host block `slot` may be written again: its last upload has read it.
  virtual void wait_host_slot(int slot) = 0;
  // Copies `bytes` from host block `slot` (src) into device block `slot` (dst): after the last step
  // that read that device block (step_queued), before any work queued on the device afterwards. The
  // host does not wait.
  virtual void upload(int slot, void* dst, const void* src, std::size_t bytes) = 0;
  // The work queued on the device so far is a step that reads device block `slot`.
  virtual void step_queued(int slot) = 0;
};

// A backend's recorder for `device`, or null when that device records no steps (the factory of a kind
// may decline some of its devices). CUDA registers one; CPU devices record nothing (their kernels run
// when called: there is no launch to save).
using StepRecorderFactory = std::function<std::unique_ptr<StepRecorder>(Device& device)>;
// Replaces the kind's factory (null removes it) and returns the previous one (tests put theirs back).
StepRecorderFactory register_step_recorder(DeviceKind kind, StepRecorderFactory factory);
std::unique_ptr<StepRecorder> make_step_recorder(Device& device);
// Whether a factory is registered for `kind` (without making a recorder, which may cost a stream).
bool step_recorder_registered(DeviceKind kind);

// An op whose kernel for `kind` cannot be recorded (it waits on the host, calls back into the host,
// or allocates what a replay would need anew): plans with it run eagerly, saying `reason` once.
void register_not_capturable(std::string_view op, DeviceKind kind, std::string reason);
// The reason, or "" when the op's kernel may be recorded.
std::string not_capturable_reason(std::string_view op, DeviceKind kind);

// For kernels that draw random numbers (dropout, random_uniform, random_normal) with `counter` =
// node.next_random_counter(): while this thread records a step, the device address where every replay
// of the step finds that node's counter for the replay (the plan writes node.next_random_counter() there
// before each replay, in the feed block: a replay never reuses a recorded counter); null when nothing
// is recorded, and the kernel passes `counter` by value as before.
const std::uint64_t* recorded_random_counter(const Node& node, std::uint64_t counter);

// The one warning a plan gives when a step that could be recorded runs eagerly, once per reason in the
// process: "tower: <device>: running the training step without a CUDA graph: <reason>". Goes to
// stderr, or to the handler set here (tests); returns the previous handler (null: stderr).
using StepGraphWarningHandler = std::function<void(const std::string& message)>;
StepGraphWarningHandler set_step_graph_warning_handler(StepGraphWarningHandler handler);
void warn_step_graph_fallback(const std::string& message);
// Forgets which reasons were said (tests: each case sees its own warning).
void reset_step_graph_warnings();

namespace detail {
// What recorded_random_counter writes into while a plan records a step on this thread: `capacity`
// counters at `host` (the host block the next upload copies) and `device` (the same place in the
// device block); each call takes the next one and remembers the node and its counter.
struct RandomCounterSlots {
  std::uint64_t* host = nullptr;
  const std::uint64_t* device = nullptr;
  std::size_t capacity = 0;
  std::vector<std::pair<const Node*, std::uint64_t>> taken;
};
// Sets (or with null clears) this thread's slots; returns the previous ones.
RandomCounterSlots* set_recording_random_counters(RandomCounterSlots* slots);
}  // namespace detail

}  // namespace tower
