// The device-independent half of whole-step graphs (core/step_graph.h): the recorder factories, the
// ops that cannot be recorded, the random counters of a recording, and the warning said once.
#include "tower/core/step_graph.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <set>

#include "tower/core/error.h"
#include "tower/core/graph.h"

namespace tower {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<DeviceKind, StepRecorderFactory> factories;
  std::map<std::pair<std::string, DeviceKind>, std::string> not_capturable;
  StepGraphWarningHandler warning_handler;
  std::set<std::string> warned;
};

Registry& registry() {
  static Registry r;
  return r;
}

thread_local detail::RandomCounterSlots* recording_counters = nullptr;

}  // namespace

StepRecorderFactory register_step_recorder(DeviceKind kind, StepRecorderFactory factory) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  StepRecorderFactory previous = std::move(r.factories[kind]);
  if (factory)
    r.factories[kind] = std::move(factory);
  else
    r.factories.erase(kind);
  return previous;
}

std::unique_ptr<StepRecorder> make_step_recorder(Device& device) {
  StepRecorderFactory factory;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.factories.find(device.kind());
    if (it == r.factories.end()) return nullptr;
    factory = it->second;  // called outside the lock: a backend's factory may take its own locks
  }
  return factory(device);
}

bool step_recorder_registered(DeviceKind kind) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  return r.factories.count(kind) > 0;
}

void register_not_capturable(std::string_view op, DeviceKind kind, std::string reason) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.not_capturable[{std::string(op), kind}] = std::move(reason);
}

std::string not_capturable_reason(std::string_view op, DeviceKind kind) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.not_capturable.find({std::string(op), kind});
  return it == r.not_capturable.end() ? std::string() : it->second;
}

const std::uint64_t* recorded_random_counter(const Node& node, std::uint64_t counter) {
  detail::RandomCounterSlots* slots = recording_counters;
  if (!slots) return nullptr;
  const std::size_t k = slots->taken.size();
  if (k >= slots->capacity)  // the plan sizes the slots by its steps: a node drawing twice in a step
    raise<Error>("{}: draws random numbers more often in one step than the recorded step has room for ({}); "
                 "run it without CUDA graphs (TOWER_CUDA_GRAPHS=0) and report this",
                 node.describe(), slots->capacity);
  slots->host[k] = counter;
  slots->taken.emplace_back(&node, counter);
  return slots->device + k;
}

StepGraphWarningHandler set_step_graph_warning_handler(StepGraphWarningHandler handler) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  std::swap(r.warning_handler, handler);
  return handler;
}

void warn_step_graph_fallback(const std::string& message) {
  StepGraphWarningHandler handler;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    if (!r.warned.insert(message).second) return;
    handler = r.warning_handler;
  }
  if (handler)
    handler(message);
  else
    std::fprintf(stderr, "tower: %s (said once)\n", message.c_str());
}

void reset_step_graph_warnings() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.warned.clear();
}

namespace detail {
RandomCounterSlots* set_recording_random_counters(RandomCounterSlots* slots) {
  RandomCounterSlots* previous = recording_counters;
  recording_counters = slots;
  return previous;
}
}  // namespace detail

}  // namespace tower
