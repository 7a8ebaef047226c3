// Which ops have a CUDA kernel (label unit: the kernel table, no GPU needed). The ops still without
// one are listed here; the test fails when an op gains a CPU kernel without a CUDA one, or a CUDA
// kernel arrives and the list is not updated, so the list always says what the GPU lacks. Also which
// of them take float16/bfloat16 operands natively (half_support.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "tower/backends/cuda/half_support.h"
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

TEST_CASE("CUDA half support: the adapter is registered; GEMMs and convolutions run in half, the rest widen") {
  using tower::cuda::runs_in_half;
  CHECK(static_cast<bool>(find_half_kernel_adapter(DeviceKind::cuda)));
  const DType f16 = DType::float16, bf16 = DType::bfloat16, f32 = DType::float32;
  const DType all_f16[] = {f16, f16, f16}, all_bf16[] = {bf16, bf16, bf16, bf16}, mixed[] = {f16, f32, f16},
              all_f32[] = {f32, f32, f32}, both_halves[] = {f16, bf16, f16};
  for (const char* op : {"matmul", "batch_matmul", "dense", "conv2d", "conv2d_bias", "conv2d_backward_data",
                         "conv2d_backward_filter", "conv2d_transpose", "conv3d", "conv3d_backward_filter"}) {
    CAPTURE(op);
    CHECK(has_kernel(op, DeviceKind::cuda));
    CHECK(runs_in_half(op, all_f16));
    CHECK(runs_in_half(op, all_bf16));
    CHECK_FALSE(runs_in_half(op, mixed));        // a float32 operand: widened
    CHECK_FALSE(runs_in_half(op, both_halves));  // two half dtypes: widened
    CHECK_FALSE(runs_in_half(op, all_f32));
  }
  // cast converts between any pair itself; elementwise ops, reductions and pooling widen.
  CHECK(runs_in_half("cast", mixed));
  for (const char* op : {"add", "relu", "softmax", "reduce_sum", "bias_add", "max_pool2d", "avg_pool2d"}) {
    CAPTURE(op);
    CHECK_FALSE(runs_in_half(op, all_f16));
  }
}
