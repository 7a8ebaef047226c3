// Which ops have a CUDA kernel (label unit: the kernel table, no GPU needed). The ops still without
// one are listed here; the test fails when an op gains a CPU kernel without a CUDA one, or a CUDA
// kernel arrives and the list is not updated, so the list always says what the GPU lacks.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "tower/core/op_registry.h"

using namespace tower;

namespace {

// Ops still without a CUDA kernel: none since issue 5. Keep the list for the next CPU-only op.
const std::set<std::string> kNotYetOnGpu = {};

}  // namespace

TEST_CASE("CUDA kernel table: every CPU op has a CUDA kernel, except the listed ones still to come") {
  const auto cpu = ops_with_kernel(DeviceKind::cpu);
  const auto cuda = ops_with_kernel(DeviceKind::cuda);
  REQUIRE(cpu.size() > 50);
  for (const auto& op : cpu) {
    CAPTURE(op);
    const bool on_gpu = std::binary_search(cuda.begin(), cuda.end(), op);
    if (kNotYetOnGpu.count(op))
      CHECK_MESSAGE(!on_gpu, op << " has a CUDA kernel now: remove it from kNotYetOnGpu");
    else
      CHECK_MESSAGE(on_gpu, op << " has a CPU kernel but no CUDA kernel");
  }
  for (const auto& op : cuda) CHECK_MESSAGE(std::binary_search(cpu.begin(), cpu.end(), op), op << ": CUDA only");
  MESSAGE(cuda.size() << " of " << cpu.size() << " ops have a CUDA kernel");
}
