// The GPU suites' skip: when no CUDA device is visible, say why (CUDA's own reason: no device, an old
// driver, a missing library) and exit with 77, which CTest reports as skipped.
#pragma once

#include <cstdio>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "tower/core/device.h"

namespace tower::testing {

// The versions a GPU run depends on, printed at the start of every suite that runs: the device may load
// other cuDNN/cuBLAS builds than the headers tower was compiled with.
inline void print_gpu_versions() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::printf("GPU suite: CUDA runtime %d.%d, driver API %d.%d, cuDNN %zu (built with %d), cuBLASLt %zu (built with %d)\n",
              runtime / 1000, runtime % 1000 / 10, driver / 1000, driver % 1000 / 10, cudnnGetVersion(), CUDNN_VERSION,
              cublasLtGetVersion(), CUBLAS_VERSION);
}

// True (after printing the skip line) when the GPU suite cannot run here; else prints the versions.
inline bool skip_without_gpu() {
  if (device_count(DeviceKind::cuda) > 0) {
    print_gpu_versions();
    return false;
  }
  const std::string why = devices_unavailable_reason(DeviceKind::cuda);
  std::printf("SKIPPED: no CUDA device is visible (%s); GPU tests need one\n",
              why.empty() ? "CUDA_VISIBLE_DEVICES, driver" : why.c_str());
  return true;
}

}  // namespace tower::testing
