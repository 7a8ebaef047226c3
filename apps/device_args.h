// Command-line device options shared by train_mnist, bench_mnist and bench_gpus: --gpus (a count or a
// list of ids), --virtual-gpus (split GPU 0), --slowdown (a test throttle), --cross-device-ops.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "apps/command_line.h"
#include "tower/core/device.h"
#include "tower/parallel/all_reduce.h"

namespace tower::apps {

// --virtual-gpus N: GPU 0 split into N logical GPUs (towers on one GPU, for testing). 0: leave it.
inline void split_gpu0(int virtual_gpus) {
  if (virtual_gpus < 0) throw UsageError(fmt::format("--virtual-gpus must be >= 0, got {}", virtual_gpus));
  if (virtual_gpus == 0) return;
  if (device_count(DeviceKind::cuda) == 0)
    throw UsageError("--virtual-gpus splits GPU 0, but no GPU is visible (no CUDA device, or tower was built "
                     "without CUDA)");
  set_logical_device_configuration(0, std::vector<LogicalDeviceConfiguration>(static_cast<std::size_t>(virtual_gpus)));
}

// --gpus: one value N is a count (GPUs 0 .. N-1), several are ids ("0 2 3"). Returns "cuda:<id>" names;
// a GPU that does not exist is an error that says which are visible.
inline std::vector<std::string> gpu_devices(const std::vector<std::string>& values) {
  std::vector<int> ids;
  for (const auto& v : values) {
    std::size_t used = 0;
    int n = -1;
    try {
      n = std::stoi(v, &used);
    } catch (const std::exception&) {
    }
    if (used != v.size() || n < 0) throw UsageError("--gpus takes a count or a list of GPU ids, got \"" + v + "\"");
    ids.push_back(n);
  }
  const int visible = device_count(DeviceKind::cuda);
  const std::size_t asked = ids.size() == 1 ? static_cast<std::size_t>(ids[0]) : ids.size();
  if (ids.size() == 1) {
    if (ids[0] == 0) throw UsageError("--gpus 0 is a count of zero GPUs; leave --gpus out to run on the CPU");
    // A count beyond the visible GPUs is refused below by its first missing id, so the list stops there
    // (--gpus 2147483647 made 8 GB of ids first).
    const int count = std::min(ids[0], std::max(visible, 0) + 1);
    ids.clear();
    for (int i = 0; i < count; ++i) ids.push_back(i);
  }
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (std::size_t j = i + 1; j < ids.size(); ++j)
      if (ids[i] == ids[j]) throw UsageError(fmt::format("--gpus lists GPU {} twice", ids[i]));
  if (visible == 0)
    throw UsageError(fmt::format("--gpus asks for {} GPU(s) but none is visible (no CUDA device, or tower was built "
                                 "without CUDA); leave --gpus out to run on the CPU",
                                 asked));
  std::vector<std::string> devices;
  for (int id : ids) {
    if (id >= visible)
      throw UsageError(
          fmt::format("--gpus: GPU {} does not exist; {} GPU(s) are visible (ids 0 to {})", id, visible, visible - 1));
    devices.push_back(fmt::format("cuda:{}", id));
  }
  return devices;
}

// --slowdown DEVICE=FACTOR ...: each DEVICE runs FACTOR times slower (Device::set_slowdown).
inline void apply_slowdowns(const std::vector<std::string>& values) {
  for (const auto& s : values) {
    const auto eq = s.find('=');
    if (eq == std::string::npos) throw UsageError("--slowdown takes DEVICE=FACTOR, e.g. cpu:1=2; got " + s);
    device(s.substr(0, eq)).set_slowdown(std::stod(s.substr(eq + 1)));
  }
}

// --cross-device-ops: how mirrored towers sum their gradients (MultiGpuOptions::cross_device_ops).
inline constexpr const char* kCrossDeviceOpsHelp =
    "how towers sum gradients: auto (NCCL across physical GPUs, all_reduce on CPU devices, else one_device), "
    "all_reduce (NCCL on GPUs; threads that meet and add together on CPU devices) or one_device (on the first device)";
inline parallel::CrossDeviceOps cross_device_ops(const std::string& value) {
  if (value == "auto") return parallel::CrossDeviceOps::automatic;
  if (value == "all_reduce") return parallel::CrossDeviceOps::all_reduce;
  if (value == "one_device") return parallel::CrossDeviceOps::reduction_to_one_device;
  throw UsageError("--cross-device-ops takes auto, all_reduce or one_device, got \"" + value + "\"");
}

}  // namespace tower::apps
