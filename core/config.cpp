// The process-wide switches of core/config.h.
#include "tower/core/config.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace tower::config {

namespace {

std::atomic<bool> tf32{false};
std::atomic<std::uint64_t> changes{0};

// TOWER_CUDA_GRAPHS=0 (or "false", "off") turns graphs off; anything else, or unset, leaves them on.
bool graphs_from_environment() {
  const char* value = std::getenv("TOWER_CUDA_GRAPHS");
  if (!value) return true;
  const std::string_view v(value);
  return !(v == "0" || v == "false" || v == "off" || v == "OFF" || v == "False");
}

std::atomic<bool>& graphs() {
  static std::atomic<bool> enabled{graphs_from_environment()};
  return enabled;
}

}  // namespace

void enable_tensor_float_32_execution(bool enabled) {
  if (tf32.exchange(enabled) != enabled) ++changes;
}

bool tensor_float_32_execution_enabled() { return tf32.load(std::memory_order_relaxed); }

void enable_cuda_graphs(bool enabled) {
  if (graphs().exchange(enabled) != enabled) ++changes;
}

bool cuda_graphs_enabled() { return graphs().load(std::memory_order_relaxed); }

std::uint64_t generation() { return changes.load(); }

}  // namespace tower::config
