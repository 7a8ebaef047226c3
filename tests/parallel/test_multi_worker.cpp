// parallel::MultiWorkerMirroredStrategy (label mpi): run by CTest under `mpirun -np 2`, every rank runs
// every case (and the 2-device case once more under `mpirun -np 1`). Each worker trains through the strategy and, on its own, the one-device (or one-worker)
// reference from the same initial weights, and compares: the workers must give one device's losses and
// weights on the same global batch.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "tower/core/device.h"
#include "tower/core/executor.h"
#include "tower/core/random.h"
#include "tower/io/dataset.h"
#include "tower/layers/engine/batches.h"
#include "tower/layers/callbacks/callbacks.h"
#include "tower/io/model_checkpoint.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/mirrored_strategy.h"
#include "tower/parallel/multi_worker_mirrored_strategy.h"
#include "tower/parallel/process_group.h"
#include "tower/parallel/worker_ops.h"
#include "tests/parallel/tower_test_model.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

Sequential make_model(std::uint64_t seed) { return testing::tower_test_model(seed); }

// A model made and compiled under `strategy` (any strategy with a scope()).
template <typename Strategy, typename Optimizer>
Sequential under(const Strategy& strategy, std::uint64_t seed, const Optimizer& optimizer) {
  auto scope = strategy.scope();
  auto m = make_model(seed);
  m.compile(optimizer, "sparse_categorical_crossentropy", {"accuracy"});
  return m;
}

void check_same_training(const History& got, const History& want, const Model& model, const Model& reference,
                         double tolerance) {
  const auto& a = got.history.at("loss");
  const auto& b = want.history.at("loss");
  REQUIRE(a.size() == b.size());
  for (std::size_t e = 0; e < a.size(); ++e) CHECK(a[e] == doctest::Approx(b[e]).epsilon(tolerance));
  const auto w1 = model.get_weights(), w2 = reference.get_weights();
  for (std::size_t i = 0; i < w1.size(); ++i) check_close(w1[i].to(cpu_device()), w2[i], tolerance, tolerance);
}

// Trains the model of `seed` under `strategy` and on one device alone, from the same initial weights,
// and compares their losses and weights.
template <typename Optimizer>
void check_like_one_device(const parallel::MultiWorkerMirroredStrategy& strategy, std::uint64_t seed,
                           const Optimizer& optimizer, const Tensor& x, const Tensor& y, const FitOptions& fit,
                           double tolerance) {
  auto reference = make_model(seed);
  reference.compile(optimizer, "sparse_categorical_crossentropy", {"accuracy"});
  auto model = under(strategy, seed, optimizer);
  check_same_training(model.fit(x, y, fit), reference.fit(x, y, fit), model, reference, tolerance);
}

}  // namespace

TEST_CASE("ProcessGroup: sums in rank order, broadcasts, gathers, and every rank gets the same bits") {
  auto& group = parallel::ProcessGroup::world();
  REQUIRE(group.size() >= 2);
  const int r = group.rank();
  Tensor t = Tensor::from_vector<float>({5}, {1.0f + static_cast<float>(r), 0.1f, 1e8f * static_cast<float>(r == 0),
                                              -1e8f * static_cast<float>(r == 1), 0.3f});
  group.all_reduce_sum(t, {.what = "test"});
  // Rank order: ((x0 + x1) + x2) ..., the order host_all_reduce adds CPU towers in.
  float want[5] = {0, 0, 0, 0, 0};
  for (int k = 0; k < group.size(); ++k) {
    const float xk[5] = {1.0f + static_cast<float>(k), 0.1f, 1e8f * static_cast<float>(k == 0),
                         -1e8f * static_cast<float>(k == 1), 0.3f};
    for (int e = 0; e < 5; ++e) want[e] = k == 0 ? xk[e] : want[e] + xk[e];
  }
  for (int e = 0; e < 5; ++e) CHECK(std::memcmp(&t.data<float>()[e], &want[e], sizeof(float)) == 0);

  Tensor b = Tensor::from_vector<std::int32_t>({2}, {r, 7 * r});
  group.broadcast(b, group.size() - 1, {.what = "test"});
  CHECK(b.data<std::int32_t>()[0] == group.size() - 1);
  const auto all = group.all_gather(std::string(static_cast<std::size_t>(r + 1), 'a' + static_cast<char>(r)), {.what = "test"});
  REQUIRE(all.size() == static_cast<std::size_t>(group.size()));
  CHECK(all[1] == "bb");
  group.barrier({.what = "test"});
}

TEST_CASE("MultiWorkerMirroredStrategy: 2 workers x 1 CPU device give one device's losses and weights") {
  clear_session();
  parallel::MultiWorkerMirroredStrategy strategy({"cpu:0"});
  CHECK(strategy.num_workers() == parallel::ProcessGroup::world().size());
  CHECK(strategy.num_replicas_in_sync() == strategy.num_workers());
  CHECK(strategy.is_chief() == (strategy.worker_index() == 0));
  // CPU devices: the buckets cross through host memory and MPI, not NCCL.
  CHECK_FALSE(strategy.uses_nccl());
  CHECK(contains(parallel::nccl_across_workers_unsupported("cpu:0"), "cpu:0"));
  auto [x, y] = testing::tower_test_data(26);

  SUBCASE("a last partial batch (26 = 3 x 8 + 2), SGD, Dropout") {
    const FitOptions fit{.batch_size = 8, .epochs = 3, .verbose = 0, .shuffle = true, .seed = 5};
    auto reference = make_model(4);
    reference.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
    auto model = under(strategy, 4, optimizers::SGD(0.1));
    check_same_training(model.fit(x, y, fit), reference.fit(x, y, fit), model, reference, 1e-5);
    CHECK(model.evaluate(x, y, {.verbose = 0})[0] ==
          doctest::Approx(reference.evaluate(x, y, {.verbose = 0})[0]).epsilon(1e-5));
    check_close(model.predict(x, {.batch_size = 7, .verbose = 0}), reference.predict(x, {.verbose = 0}), 1e-5, 1e-6);
  }
  SUBCASE("a global batch smaller than the replica count: batches of 1, a worker without rows each step") {
    const FitOptions fit{.batch_size = 1, .epochs = 2, .verbose = 0, .shuffle = false};
    auto [x5, y5] = testing::tower_test_data(5);
    check_like_one_device(strategy, 6, optimizers::SGD(0.05), x5, y5, fit, 1e-5);
  }
  SUBCASE("Adam, within a looser bound: it magnifies the rounding of a differently ordered sum") {
    const FitOptions fit{.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false};
    check_like_one_device(strategy, 8, optimizers::Adam(0.01), x, y, fit, 1e-4);
  }
}

TEST_CASE("MultiWorkerMirroredStrategy: W workers of one device give the bits of one worker of W devices") {
  clear_session();
  const int workers = parallel::ProcessGroup::world().size();
  std::vector<std::string> devices;
  for (int k = 0; k < workers; ++k) devices.push_back(fmt::format("cpu:{}", k));
  parallel::MirroredStrategy one_worker(devices);  // this process alone, W CPU devices
  parallel::MultiWorkerMirroredStrategy strategy({"cpu:0"});
  auto [x, y] = testing::tower_test_data(30);
  const FitOptions fit{.batch_size = 10, .epochs = 2, .verbose = 0, .shuffle = true, .seed = 11};
  auto reference = under(one_worker, 3, optimizers::SGD(0.1));
  auto model = under(strategy, 3, optimizers::SGD(0.1));
  const auto h1 = model.fit(x, y, fit), h2 = reference.fit(x, y, fit);
  const auto w1 = model.get_weights(), w2 = reference.get_weights();
  for (std::size_t i = 0; i < w1.size(); ++i) {
    const Tensor a = w1[i].to(cpu_device()), b = w2[i].to(cpu_device());
    CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
  }
}

// Also run alone (CTest's test_multi_worker_one: mpirun -np 1), as 1 worker of 2 devices.
TEST_CASE("MultiWorkerMirroredStrategy: workers of 2 CPU devices with 3:1 ratios give one device's result") {
  clear_session();
  parallel::MultiWorkerMirroredStrategy strategy({"cpu:0", "cpu:1"}, {.ratios = {3, 1}});
  CHECK(strategy.num_replicas_in_sync() == 2 * strategy.num_workers());
  auto [x, y] = testing::tower_test_data(29);
  const FitOptions fit{.batch_size = 12, .epochs = 3, .verbose = 0, .shuffle = true, .seed = 2};
  check_like_one_device(strategy, 5, optimizers::SGD(0.1), x, y, fit, 1e-5);
}

TEST_CASE("MultiWorkerMirroredStrategy: the chief's initial weights reach every worker, and only it writes files") {
  clear_session();
  parallel::MultiWorkerMirroredStrategy strategy({"cpu:0"});
  const int rank = strategy.worker_index();
  // Each worker starts from other weights: fit starts from the chief's. (The same seed keeps the
  // Dropout layers' seeds, which are not weights, the same on every worker.)
  auto model = under(strategy, 100, optimizers::SGD(0.1));
  if (rank != 0)
    for (const auto& w : model.weights()) w->assign(random_normal(w->value().shape(), 0.0, 1.0, 7));
  auto reference = make_model(100);
  reference.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
  auto [x, y] = testing::tower_test_data(16);
  const FitOptions fit{.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false};
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("tower_mw_files_{}", getppid());
  std::filesystem::create_directories(dir);
  auto checkpoint = std::make_shared<callbacks::ModelCheckpoint>((dir / "ckpt.h5").string());
  FitOptions with_checkpoint = fit;
  with_checkpoint.callbacks = {checkpoint};
  check_same_training(model.fit(x, y, with_checkpoint), reference.fit(x, y, fit), model, reference, 1e-5);
  const auto mine = dir / fmt::format("worker_{}.h5", rank);
  model.save(mine.string());
  CHECK(std::filesystem::exists(mine) == (rank == 0));
  parallel::ProcessGroup::world().barrier({.what = "test"});
  CHECK(std::filesystem::exists(dir / "ckpt.h5"));
  parallel::ProcessGroup::world().barrier({.what = "test"});
  if (rank == 0) std::filesystem::remove_all(dir);
}

TEST_CASE("MultiWorkerMirroredStrategy: TF_CONFIG and KERAS_DISTRIBUTION_* are checked against MPI") {
  CHECK(parallel::check_cluster_environment(1, 2).empty());
  setenv("TF_CONFIG", R"({"cluster": {"worker": ["a:1", "b:2", "c:3"]}, "task": {"type": "worker", "index": 1}})", 1);
  const std::string three = parallel::check_cluster_environment(1, 2);
  CHECK(contains(three, "TF_CONFIG lists 3 processes"));
  CHECK(contains(three, "rank 1 of 2"));
  setenv("TF_CONFIG", R"({"cluster": {"chief": ["a:1"], "worker": ["b:2"]}, "task": {"type": "worker", "index": 0}})", 1);
  CHECK(parallel::check_cluster_environment(1, 2).empty());  // the chief is rank 0, worker 0 rank 1
  CHECK(contains(parallel::check_cluster_environment(0, 2), "number 1"));
  setenv("TF_CONFIG", "{not json", 1);
  CHECK(contains(parallel::check_cluster_environment(0, 2), "TF_CONFIG is not the JSON"));
  setenv("TF_CONFIG", (std::string(100000, '[') + std::string(100000, ']')).c_str(), 1);  // issue 37
  CHECK(contains(parallel::check_cluster_environment(0, 2), "TF_CONFIG: the JSON nests objects and lists more than"));
  unsetenv("TF_CONFIG");
  setenv("KERAS_DISTRIBUTION_PROCESS_ID", "3", 1);
  CHECK(contains(parallel::check_cluster_environment(0, 2), "KERAS_DISTRIBUTION_PROCESS_ID=3"));
  unsetenv("KERAS_DISTRIBUTION_PROCESS_ID");
  setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "4", 1);
  CHECK(contains(parallel::check_cluster_environment(0, 2), "KERAS_DISTRIBUTION_NUM_PROCESSES=4"));
  unsetenv("KERAS_DISTRIBUTION_NUM_PROCESSES");
}

TEST_CASE("MultiWorkerMirroredStrategy: a bucket's all-reduce starts while the backward pass goes on") {
  clear_session();
  parallel::MultiWorkerMirroredStrategy strategy({"cpu:0"});
  Sequential model;
  {
    auto scope = strategy.scope();
    // dense_1's kernel (1100 x 1000 floats, 4.4 MB) fills a bucket of its own (4 MiB buckets).
    model = Sequential({layers::Input({6}), layers::Dense(1100, {.activation = "relu"}),
                        layers::Dense(1000, {.activation = "relu"}), layers::Dense(3, {.activation = "softmax"})});
    model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  }
  auto [x, y] = testing::tower_test_data(8);
  model.fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0});
  const std::string plan = model.last_plan(Model::Mode::train)->to_string();
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl; (nl = plan.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(plan.substr(at, nl - at));
  std::vector<std::size_t> starts, finishes, matmuls;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (contains(lines[i], "worker_all_reduce_start")) starts.push_back(i);
    if (contains(lines[i], "worker_all_reduce_finish")) finishes.push_back(i);
    if (contains(lines[i], " matmul ")) matmuls.push_back(i);
  }
  INFO(plan);
  REQUIRE(starts.size() == 3);  // dense_2 and dense_1's bias; dense_1's kernel; dense's weights
  REQUIRE(finishes.size() == 3);
  // The first bucket starts before the gradients of the earlier layers are computed (their matmuls),
  // and every start comes before the first finish.
  CHECK(std::count_if(matmuls.begin(), matmuls.end(), [&](std::size_t m) { return m > starts.front(); }) >= 2);
  CHECK(starts.back() < finishes.front());
}

TEST_CASE("MultiWorkerMirroredStrategy: a Dataset::shard'ed pipeline's batches are the workers' parts of the global "
          "batch") {
  clear_session();
  parallel::MultiWorkerMirroredStrategy strategy({"cpu:0"});
  const int workers = strategy.num_workers(), rank = strategy.worker_index();
  auto [x, y] = testing::tower_test_data(32);
  // Each worker reads every workers-th sample from its rank on, in batches of 4.
  const auto sharded = io::Dataset::from_tensor_slices({x}, {y}).shard(workers, rank).batch(4);
  CHECK(sharded.sharded());
  // One device sees each global batch as the workers' parts one after the other.
  std::vector<std::int64_t> order;
  const std::int64_t per_worker = 32 / workers;
  for (std::int64_t b = 0; b * 4 < per_worker; ++b)
    for (int w = 0; w < workers; ++w)
      for (std::int64_t k = b * 4; k < std::min<std::int64_t>(b * 4 + 4, per_worker); ++k) order.push_back(k * workers + w);
  const Tensor x_ref = engine::take_rows(x, order.data(), static_cast<std::int64_t>(order.size()));
  const Tensor y_ref = engine::take_rows(y, order.data(), static_cast<std::int64_t>(order.size()));
  auto reference = make_model(12);
  reference.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
  auto model = under(strategy, 12, optimizers::SGD(0.1));
  const auto h1 = model.fit(sharded, {.epochs = 2, .verbose = 0});
  const auto h2 = reference.fit(x_ref, y_ref, {.batch_size = 4 * workers, .epochs = 2, .verbose = 0, .shuffle = false});
  check_same_training(h1, h2, model, reference, 1e-5);
  // predict gathers every worker's rows of each batch, in rank order: the reference's order.
  check_close(model.predict(io::Dataset::from_tensor_slices({x}).shard(workers, rank).batch(4), {.verbose = 0})[0],
              reference.predict(x_ref, {.verbose = 0}), 1e-5, 1e-6);
}

TEST_CASE("MultiWorkerMirroredStrategy: BatchNormalization's moving statistics follow the global batch on every "
          "worker, as one worker's towers do") {
  clear_session();
  const int workers = parallel::ProcessGroup::world().size();
  std::vector<std::string> devices;
  for (int k = 0; k < workers; ++k) devices.push_back(fmt::format("cpu:{}", k));
  parallel::MirroredStrategy one_worker(devices);
  parallel::MultiWorkerMirroredStrategy strategy({"cpu:0"});
  const auto make = [](const auto& s) {
    auto scope = s.scope();
    auto m = testing::tower_test_model(21, /*batch_normalization=*/true);
    m.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
    return m;
  };
  auto reference = make(one_worker);
  auto model = make(strategy);
  auto [x, y] = testing::tower_test_data(24);
  const FitOptions fit{.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false};
  check_same_training(model.fit(x, y, fit), reference.fit(x, y, fit), model, reference, 1e-5);
  // The moving mean and variance (non-trainable) moved, the same on every worker.
  const LayerPtr bn = model.layers()[0];
  REQUIRE(bn->weights().size() == 4);
  const Tensor moving_mean = bn->weights()[2]->value();
  Tensor gathered = moving_mean.clone();
  parallel::ProcessGroup::world().broadcast(gathered, 0, {.what = "test"});
  check_close(moving_mean, gathered, 0.0, 0.0);
  CHECK(std::abs(moving_mean.to_vector<float>()[0]) > 0.0f);
}

TEST_CASE("MultiWorkerMirroredStrategy: a stateful metric's statistics are summed across the workers") {
  clear_session();
  parallel::MultiWorkerMirroredStrategy strategy({"cpu:0"});
  auto [x, y] = testing::tower_test_data(26);
  // MeanIoU of the argmax against the class ids: a 3 x 3 confusion matrix per step, beside the means.
  const std::vector<metrics::Metric> list = {metrics::MeanIoU(3, {.sparse_y_pred = false}), "accuracy"};
  auto reference = make_model(4);
  reference.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", list);
  auto model = [&] {
    auto scope = strategy.scope();
    auto m = make_model(4);
    m.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", list);
    return m;
  }();
  const FitOptions fit{.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false};
  const auto got = model.fit(x, y, fit), want = reference.fit(x, y, fit);
  for (const char* name : {"loss", "mean_io_u", "accuracy"}) {
    CAPTURE(name);
    for (std::size_t e = 0; e < 2; ++e)
      CHECK(got.history.at(name)[e] == doctest::Approx(want.history.at(name)[e]).epsilon(1e-5));
  }
  CHECK(model.evaluate(x, y, {.batch_size = 5, .verbose = 0}).at("mean_io_u") ==
        doctest::Approx(reference.evaluate(x, y, {.batch_size = 5, .verbose = 0}).at("mean_io_u")).epsilon(1e-5));
}
