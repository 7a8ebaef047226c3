// The all_reduce op on CPU devices: replicas that meet on the host, each on its device's lane (the
// schedule NCCL's ranks follow on GPUs), repeated rounds, a failed replica, and clear errors.
#include <doctest/doctest.h>

#include <thread>

#include "tower/core/collective.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;

namespace {

using Devices = std::vector<std::string>;

// x_r = (r + 1) * [1, 2, 3, 4] + offset, made on device r.
std::vector<SymbolicTensor> replica_inputs(Graph& g, const Devices& devices, const SymbolicTensor& offset) {
  std::vector<SymbolicTensor> xs;
  for (std::size_t r = 0; r < devices.size(); ++r) {
    Graph::DeviceScope on(g, devices[r]);
    const float f = static_cast<float>(r + 1);
    xs.push_back(ops::add(g.constant(Tensor::from_vector<float>({4}, {f, 2 * f, 3 * f, 4 * f}, device(devices[r]))),
                          offset));
  }
  return xs;
}

std::vector<SymbolicTensor> all_reduce_each(Graph& g, const Devices& devices, const std::vector<SymbolicTensor>& xs,
                                            const std::string& group) {
  std::vector<SymbolicTensor> sums;
  for (std::size_t r = 0; r < devices.size(); ++r) {
    Graph::DeviceScope on(g, devices[r]);
    sums.push_back(ops::all_reduce(xs[r], group, devices, static_cast<int>(r)));
  }
  return sums;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("all_reduce: every replica gets the sum on its device, the same bits, run after run") {
  const Devices devices{"cpu:0", "cpu:1", "cpu:2"};
  Graph g;
  auto offset = g.placeholder({}, DType::float32, "offset");
  const auto xs = replica_inputs(g, devices, offset);
  // Two collectives in a row, the second on the first's sums: the lanes meet in both, in order.
  const auto once = all_reduce_each(g, devices, xs, "test sum");
  const auto twice = all_reduce_each(g, devices, once, "test sum of sums");
  std::vector<SymbolicTensor> fetches = once;
  fetches.insert(fetches.end(), twice.begin(), twice.end());
  Executor executor(cpu_device());
  for (const float o : {0.0f, 0.5f, -1.0f}) {
    CAPTURE(o);
    const auto values = executor.run({{offset, Tensor::scalar(o)}}, fetches);
    check_close(values[0], std::vector<double>{6 + 3 * o, 12 + 3 * o, 18 + 3 * o, 24 + 3 * o}, 0, 0);
    check_close(values[3], std::vector<double>{18 + 9 * o, 36 + 9 * o, 54 + 9 * o, 72 + 9 * o}, 0, 0);
    for (std::size_t r = 0; r < devices.size(); ++r) {
      CHECK(&values[r].device() == &device(devices[r]));
      CHECK(same_bits(values[r], values[0]));
      CHECK(same_bits(values[3 + r], values[3]));
    }
  }
  CHECK(executor.last_plan()->num_lanes() == 3);
}

TEST_CASE("all_reduce: a replica that fails stops the others instead of leaving them waiting") {
  const Devices devices{"cpu:0", "cpu:1"};
  Graph g;
  auto index = g.placeholder({1}, DType::int32, "index");
  std::vector<SymbolicTensor> xs;
  {
    // Replica 0's input is a row gathered by a fed index: an index out of range fails on its lane.
    Graph::DeviceScope on(g, "cpu:0");
    auto table = g.constant(Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}));
    xs.push_back(ops::reshape(ops::gather(table, index), {2}));
  }
  {
    Graph::DeviceScope on(g, "cpu:1");
    xs.push_back(g.constant(Tensor::from_vector<float>({2}, {10, 20}, device("cpu:1"))));
  }
  const auto sums = all_reduce_each(g, devices, xs, "test failing replica");
  Executor executor(cpu_device());
  const auto run = [&](std::int32_t i) { return executor.run({{index, Tensor::from_vector<std::int32_t>({1}, {i})}}, sums); };
  CHECK_THROWS_WITH_AS(run(7), doctest::Contains("gather"), ValueError);  // the failure, not a hang
  const auto values = run(1);  // the group meets again
  check_close(values[1], std::vector<double>{13, 24}, 0, 0);
  CHECK_THROWS_AS(run(-3), ValueError);
  check_close(run(0)[0], std::vector<double>{11, 22}, 0, 0);
}

TEST_CASE("all_reduce: clear errors") {
  const Devices devices{"cpu:0", "cpu:1"};
  SUBCASE("a plan that runs every device on one thread") {
    Graph g;
    auto offset = g.placeholder({}, DType::float32, "offset");
    const auto sums = all_reduce_each(g, devices, replica_inputs(g, devices, offset), "test one thread");
    Executor executor(cpu_device(), PlanOptions{.concurrent_devices = false});
    CHECK_THROWS_WITH_AS(executor.run({{offset, Tensor::scalar(0.0f)}}, sums), doctest::Contains("concurrent_devices"),
                         ValueError);
  }
  SUBCASE("replicas of different shapes: every replica says so") {
    Graph g;
    std::vector<SymbolicTensor> xs;
    for (std::size_t r = 0; r < 2; ++r) {
      Graph::DeviceScope on(g, devices[r]);
      xs.push_back(ops::identity(g.constant(Tensor::zeros(Shape({static_cast<std::int64_t>(r + 2)}), DType::float32,
                                                          device(devices[r])))));
    }
    Executor executor(cpu_device());
    CHECK_THROWS_WITH_AS(executor.run({}, all_reduce_each(g, devices, xs, "test shapes")),
                         doctest::Contains("disagree"), ValueError);
  }
  SUBCASE("integers, and a rank that is not a replica") {
    Graph g;
    auto i = g.placeholder({2}, DType::int32, "i");
    CHECK_THROWS_WITH_AS(ops::all_reduce(i, "test ints", devices, 0), doctest::Contains("float32 or float64"),
                         DTypeError);
    auto f = g.placeholder({2}, DType::float32, "f");
    CHECK_THROWS_WITH_AS(ops::all_reduce(f, "test rank", devices, 2), doctest::Contains("rank 2"), ValueError);
  }
  SUBCASE("a plan that runs some of the replicas only") {
    Graph g;
    auto offset = g.placeholder({}, DType::float32, "offset");
    const auto sums = all_reduce_each(g, devices, replica_inputs(g, devices, offset), "test some");
    Executor executor(cpu_device());
    CHECK_THROWS_WITH_AS(executor.run({{offset, Tensor::scalar(0.0f)}}, {sums[0]}),
                         doctest::Contains("runs 1 of them"), ValueError);
  }
  SUBCASE("two replicas on one device") {
    Graph g;
    auto offset = g.placeholder({}, DType::float32, "offset");
    const Devices twice{"cpu:0", "cpu:0"};
    const auto sums = all_reduce_each(g, twice, replica_inputs(g, twice, offset), "test twice");
    Executor executor(cpu_device());
    CHECK_THROWS_WITH_AS(executor.run({{offset, Tensor::scalar(0.0f)}}, sums), doctest::Contains("two of its replicas"),
                         ValueError);
  }
  SUBCASE("a replica that needs what another lane computes after its own replica") {
    // Replica 1's input needs replica 0's sum: run as planned, lane 1 would wait for lane 0's step
    // after the collective while lane 0 waits in the collective for lane 1.
    Graph g;
    auto offset = g.placeholder({}, DType::float32, "offset");
    const auto xs = replica_inputs(g, devices, offset);
    SymbolicTensor s0, s1;
    {
      Graph::DeviceScope on(g, devices[0]);
      s0 = ops::all_reduce(xs[0], "test order", devices, 0);
    }
    {
      Graph::DeviceScope on(g, devices[1]);
      s1 = ops::all_reduce(ops::add(xs[1], s0), "test order", devices, 1);
    }
    Executor executor(cpu_device());
    CHECK_THROWS_WITH_AS(executor.run({{offset, Tensor::scalar(0.0f)}}, {s0, s1}),
                         doctest::Contains("between its replicas"), ValueError);
  }
  SUBCASE("which devices can hold the replicas") {
    CHECK(all_reduce_unsupported({&device("cpu:0"), &device("cpu:1")}).empty());
    CHECK(all_reduce_unsupported({&device("cpu:0")}).find("two replicas") != std::string::npos);
    CHECK(all_reduce_unsupported({&device("cpu:0"), &device("cpu:0")}).find("one device") != std::string::npos);
  }
}

TEST_CASE("host_all_reduce: threads meet, abort wakes the waiting, reset lets the group meet again") {
  Tensor in0 = Tensor::from_vector<double>({2}, {1, 2}), in1 = Tensor::from_vector<double>({2}, {0.25, 0.5});
  Tensor out0 = Tensor::zeros({2}, DType::float64), out1 = Tensor::zeros({2}, DType::float64);
  std::thread other([&] { host_all_reduce("test threads", 1, 2, in1, out1); });
  host_all_reduce("test threads", 0, 2, in0, out0);
  other.join();
  check_close(out0, std::vector<double>{1.25, 2.5}, 0, 0);
  CHECK(same_bits(out0, out1));

  std::thread waiting([&] {
    CHECK_THROWS_WITH_AS(host_all_reduce("test abort", 0, 2, in0, out0), doctest::Contains("another replica failed"),
                         Error);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // most likely waiting by now; either way it throws
  abort_collective("test abort");
  waiting.join();
  CHECK_THROWS_AS(host_all_reduce("test abort", 1, 2, in1, out1), Error);  // stays stopped until reset
  reset_collective("test abort");
  std::thread again([&] { host_all_reduce("test abort", 1, 2, in1, out1); });
  host_all_reduce("test abort", 0, 2, in0, out0);
  again.join();
  check_close(out1, std::vector<double>{1.25, 2.5}, 0, 0);
}
