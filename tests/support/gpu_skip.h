// The GPU suites' skip: when no CUDA device is visible, say why (CUDA's own reason: no device, an old
// driver, a missing library) and exit with 77, which CTest reports as skipped.
#pragma once

#include <cstdio>
#include <string>

#include "tower/core/device.h"

namespace tower::testing {

// True (after printing the skip line) when the GPU suite cannot run here.
inline bool skip_without_gpu() {
  if (device_count(DeviceKind::cuda) > 0) return false;
  const std::string why = devices_unavailable_reason(DeviceKind::cuda);
  std::printf("SKIPPED: no CUDA device is visible (%s); GPU tests need one\n",
              why.empty() ? "CUDA_VISIBLE_DEVICES, driver" : why.c_str());
  return true;
}

}  // namespace tower::testing
