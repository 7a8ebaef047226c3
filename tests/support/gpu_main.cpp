// The doctest main of the GPU suites (label gpu): with no visible GPU it says why and exits with 77,
// which CTest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "tower/core/device.h"

int main(int argc, char** argv) {
  if (tower::device_count(tower::DeviceKind::cuda) == 0) {
    std::printf("SKIPPED: no CUDA device is visible (CUDA_VISIBLE_DEVICES, driver); GPU tests need one\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
