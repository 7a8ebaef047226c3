// Mirrored variables on CPU devices (label unit): the in-process all-reduce (sums, buckets, the same
// bits on every replica), mirrors that the towers really read, that stay equal to the model's
// variables through training, that catch up after the variables are written outside the towers, and
// optimizer state saved once.
#include <doctest/doctest.h>

#include "tower/core/autodiff.h"
#include "tower/core/device.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/layers.h"
#include "tower/parallel/towers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/all_reduce.h"
#include "tower/parallel/multi_gpu_model.h"
#include "tests/parallel/tower_test_model.h"
#include "tests/support/grad_check.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::check_close;
using Devices = std::vector<std::string>;

namespace {

// Bit-for-bit equality of two tensors on host-accessible devices.
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

Sequential make_model(std::uint64_t seed) { return testing::tower_test_model(seed, /*batch_normalization=*/true); }
std::pair<Tensor, Tensor> data(std::int64_t n) { return testing::tower_test_data(n); }

// Every (primary, mirror) pair of a wrapper.
std::vector<std::pair<VariablePtr, VariablePtr>> mirror_pairs(const Model& wrapper) {
  std::vector<std::pair<VariablePtr, VariablePtr>> pairs;
  for (const auto& [device, copies] : parallel::mirrors(wrapper))
    for (const auto& [primary, mirror] : copies) pairs.emplace_back(mirror->primary(), mirror);
  return pairs;
}

}  // namespace

TEST_CASE("all_reduce_sum: every replica gets the same sum, in any bucket size, with gradients missing") {
  const Devices devices{"cpu:0", "cpu:1", "cpu:2"};
  const std::vector<Shape> shapes{Shape({2, 3}), Shape({4}), Shape({5}), Shape({1})};
  using parallel::CrossDeviceOps;
  for (const CrossDeviceOps how :
       {CrossDeviceOps::reduction_to_one_device, CrossDeviceOps::all_reduce, CrossDeviceOps::automatic})
  for (const std::size_t bucket_bytes : {std::size_t{1}, std::size_t{40}, parallel::kDefaultBucketBytes}) {
    CAPTURE(static_cast<int>(how));
    CAPTURE(bucket_bytes);
    Graph graph;
    // grads[r][i] = (r + 1) * (i + 1) * [1, 2, 3, ...] on device r; replica 1 has no gradient of
    // variable 1, and no replica has one of variable 3.
    std::vector<std::vector<SymbolicTensor>> grads(devices.size(), std::vector<SymbolicTensor>(shapes.size()));
    for (std::size_t r = 0; r < devices.size(); ++r) {
      Graph::DeviceScope on(graph, devices[r]);
      for (std::size_t i = 0; i + 1 < shapes.size(); ++i) {
        if (r == 1 && i == 1) continue;
        std::vector<float> v;
        for (std::int64_t k = 0; k < shapes[i].num_elements(); ++k)
          v.push_back(static_cast<float>((r + 1) * (i + 1) * (k + 1)));
        grads[r][i] = ops::identity(graph.constant(Tensor::from_vector<float>(shapes[i], v, device(devices[r]))));
      }
    }
    const auto sums = parallel::all_reduce_sum(graph, devices, grads, how, bucket_bytes);
    REQUIRE(sums.size() == devices.size());
    std::vector<SymbolicTensor> fetches;
    for (std::size_t r = 0; r < devices.size(); ++r) {
      CHECK_FALSE(sums[r][3].defined());
      for (std::size_t i = 0; i + 1 < shapes.size(); ++i) {
        REQUIRE(sums[r][i].defined());
        CHECK(sums[r][i].shape() == shapes[i]);
        CHECK(sums[r][i].node()->device() == devices[r]);  // each replica's sum is on its device
        fetches.push_back(sums[r][i]);
      }
    }
    // One all_reduce per replica and bucket (1 B: a bucket per variable), or none. On CPU devices
    // alone, automatic is all_reduce.
    int collectives = 0;
    for (int id = 0; id < graph.num_nodes(); ++id) collectives += graph.node(id).op() == "all_reduce" ? 1 : 0;
    const int buckets = bucket_bytes == 1 ? 3 : bucket_bytes == 40 ? 2 : 1;  // 24 + 16 + 20 bytes
    CHECK(collectives == (how == CrossDeviceOps::reduction_to_one_device ? 0 : 3 * buckets));
    Executor executor(cpu_device());
    const auto values = executor.run({}, fetches);
    for (std::size_t i = 0; i + 1 < shapes.size(); ++i) {
      const double replicas = i == 1 ? 1 + 3 : 1 + 2 + 3;  // the factor (r + 1) summed over who has it
      std::vector<double> expected;
      for (std::int64_t k = 0; k < shapes[i].num_elements(); ++k)
        expected.push_back(replicas * static_cast<double>((i + 1) * (k + 1)));
      check_close(values[i], expected, 0, 0);
      for (std::size_t r = 1; r < devices.size(); ++r) CHECK(same_bits(values[r * 3 + i], values[i]));
    }
  }
  CHECK(parallel::all_reduce_sum(*std::make_unique<Graph>(), Devices{"cpu:0"}, {{}}).size() == 1);  // one replica: as is
}

TEST_CASE("mirrored variables: the towers read their mirrors, which train with the variables to the same bits") {
  clear_session();
  auto inner = make_model(5);
  Model parallel = parallel::multi_gpu_model(inner, Devices{"cpu:1", "cpu:2"}, {.ratios = {2, 1}});
  // The model's variables live on cpu:0, where no tower runs: both towers read mirrors.
  const auto pairs = mirror_pairs(parallel);
  REQUIRE(pairs.size() == 2 * inner.weights().size());
  for (const auto& [primary, mirror] : pairs) {
    CHECK(mirror->name() == primary->name());
    CHECK(mirror->device().name() != primary->device().name());
    CHECK(same_bits(mirror->value(), primary->value()));  // initialised identically
  }
  parallel.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy");
  auto [x, y] = data(30);
  const auto before = inner.get_weights();
  parallel.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
  for (const auto& [primary, mirror] : pairs) {
    CAPTURE(primary->name());
    CHECK(same_bits(mirror->value(), primary->value()));  // the same update everywhere
  }
  CHECK_FALSE(same_bits(inner.get_weights()[2], before[2]));  // and it did train (the first Dense kernel)
  // One set of optimizer slots is saved: the mirrors' slots are not the optimizer's variables.
  auto single = make_model(5);
  single.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy");
  single.fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  CHECK(parallel.optimizer().variables().size() == single.optimizer().variables().size());

  // The towers read the mirrors: spoil cpu:2's copy of the output kernel (its primary unchanged, so
  // nothing re-syncs it) and only the rows of cpu:2's share change.
  const auto reference = parallel.predict(x, {.batch_size = 6, .verbose = 0});
  const auto kernel = inner.layers().back()->weights()[0];  // the output layer's
  const auto spoiled = parallel::mirrors(parallel).at("cpu:2").at(kernel.get());
  spoiled->assign(Tensor::zeros(spoiled->shape(), spoiled->dtype(), spoiled->device()));
  const auto changed = parallel.predict(x, {.batch_size = 6, .verbose = 0});
  const auto a = reference.to_vector<float>(), b = changed.to_vector<float>();
  for (std::int64_t row = 0; row < 30; ++row) {
    const bool on_cpu2 = row % 6 >= 4;  // 2:1 of 6 rows: rows 0-3 on cpu:1, 4-5 on cpu:2
    const bool differs = a[static_cast<std::size_t>(row * 3)] != b[static_cast<std::size_t>(row * 3)];
    CHECK_MESSAGE(differs == on_cpu2, "row ", row);
  }
}

TEST_CASE("mirrored variables: writing the variables outside the towers brings the mirrors up to date") {
  clear_session();
  testing::TempDir dir("mirrors");
  auto inner = make_model(6);
  Model parallel = parallel::multi_gpu_model(inner, Devices{"cpu:0", "cpu:1"});
  parallel.compile("sgd", "sparse_categorical_crossentropy");
  inner.compile("sgd", "sparse_categorical_crossentropy");
  auto [x, y] = data(12);
  parallel.fit(x, y, {.batch_size = 4, .verbose = 0});
  const auto predict_both = [&] {
    check_close(parallel.predict(x, {.verbose = 0}), inner.predict(x, {.verbose = 0}), 1e-6, 1e-6);
  };
  SUBCASE("set_weights") {
    auto other = make_model(77);
    inner.set_weights(other.get_weights());
    predict_both();
  }
  SUBCASE("load_weights through the wrapper") {
    auto other = make_model(78);
    other.save_weights(dir / "other.h5");
    parallel.load_weights(dir / "other.h5");
    predict_both();
  }
  SUBCASE("training the inner model alone") {
    inner.fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0});
    predict_both();
    parallel.fit(x, y, {.batch_size = 4, .verbose = 0});  // and the towers go on from there
    for (const auto& [primary, mirror] : mirror_pairs(parallel)) CHECK(same_bits(mirror->value(), primary->value()));
  }
}
