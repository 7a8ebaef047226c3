// The doctest main of the GPU suites (label gpu): with no visible GPU it says why and exits with 77,
// which CTest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tests/support/gpu_skip.h"

int main(int argc, char** argv) {
  if (tower::testing::skip_without_gpu()) return 77;
  doctest::Context context(argc, argv);
  return context.run();
}
