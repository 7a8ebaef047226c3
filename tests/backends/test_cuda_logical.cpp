// Logical GPUs on a real GPU (label gpu): GPU 0 split in two, the same ops on both give identical
// results, copies go between them, and each keeps to its memory limit. Its own process, because the
// split must come before any GPU is used. Without a GPU it exits with 77 (skipped).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tests/support/errors.h"
#include "tests/support/gpu_skip.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

int main(int argc, char** argv) {
  if (tower::testing::skip_without_gpu()) return 77;
  set_logical_device_configuration(0, {{.memory_limit = std::size_t{256} << 20}, {.memory_limit = std::size_t{256} << 20}});
  doctest::Context context(argc, argv);
  return context.run();
}

TEST_CASE("logical GPUs: the same ops on cuda:0 and cuda:1 (one GPU) give identical results") {
  REQUIRE(device_count(DeviceKind::cuda) >= 2);
  Graph g;
  auto x = g.placeholder({-1, 33}, DType::float32, "x");
  std::vector<SymbolicTensor> outs;
  for (const char* name : {"cuda:0", "cuda:1"}) {
    Graph::DeviceScope scope(g, name);
    outs.push_back(ops::add(ops::scale(x, 0.5), ops::ones_like(x)));
  }
  Executor executor;
  FeedMap feeds{{x, testing::random_tensor({64, 33}, 3, 0.1, 1, false, DType::float32)}};
  auto r = executor.run(feeds, outs);
  CHECK(&r[0].device() == &device("cuda:0"));
  CHECK(&r[1].device() == &device("cuda:1"));
  testing::check_close(r[0].to(cpu_device()), r[1].to(cpu_device()), 0, 0);
  // A copy from one logical GPU to the other, device to device.
  testing::check_close(r[0].to(device("cuda:1")).to(cpu_device()), r[0].to(cpu_device()), 0, 0);
}

TEST_CASE("logical GPUs: each keeps to its memory limit, and says so") {
  Device& gpu1 = device("cuda:1");
  const auto msg = message_of<OutOfMemoryError>([&] { Tensor big(Shape{300, 1024, 1024}, DType::uint8, gpu1); });
  CHECK(contains(msg, "cuda:1 (a logical GPU on GPU 0): out of memory allocating 300.00 MiB"));
  CHECK(contains(msg, "budget 256.00 MiB"));
  Tensor fits(Shape{200, 1024, 1024}, DType::uint8, gpu1);  // within the limit
  CHECK(gpu1.memory_stats().reserved >= std::size_t{200} << 20);
}
