// Bad input, kind "sizes, counts, ratios and offsets" (docs/refusals.md): huge but parseable values are
// refused with a named error instead of overflowing; device counts beyond the machine are refused and
// planning stays near-linear in the device count.
#include "tests/bad_input/bad_input.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "tower/core/checked.h"
#include "tower/core/device.h"
#include "tower/core/memory_plan.h"
#include "tower/core/ops.h"
#include "tower/core/ops/shape_utils.h"
#include "tower/core/random.h"
#include "tower/io/backup_and_restore.h"
#include "tower/io/dataset.h"
#include "tower/io/hdf5.h"
#include "tower/io/keras_weights.h"
#include "tower/layers/engine/data_adapter.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/multi_gpu_model.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::TempDir;
using tower::testing::train_mnist;
using tower::testing::write_idx_set;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();  // 9223372036854775807
constexpr std::int64_t k2_32 = std::int64_t{1} << 32;

// Sets an environment variable for the life of a scope (train_mnist children inherit it).
struct EnvScope {
  std::string name;
  EnvScope(std::string n, const std::string& value) : name(std::move(n)) { ::setenv(name.c_str(), value.c_str(), 1); }
  ~EnvScope() { ::unsetenv(name.c_str()); }
};

Model small_model(std::int64_t features = 4) {
  clear_session();
  set_random_seed(1);
  Model m = Sequential({layers::Input({features}), layers::Dense(3, {.activation = "softmax"})});
  m.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
  return m;
}

std::pair<Tensor, Tensor> small_data(std::int64_t n, std::int64_t features = 4) {
  Tensor x = random_normal({n, features}, 0, 1, 5);
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i) labels.push_back(static_cast<std::int32_t>(i % 3));
  return {x, Tensor::from_vector<std::int32_t>({n}, labels)};
}

// Records the step count fit announces and the batches it runs.
struct StepCounter : Callback {
  std::int64_t announced = -1, batches = 0;
  void on_train_begin(const Logs&) override { announced = params_.steps; }
  void on_train_batch_end(std::int64_t, const Logs&) override { ++batches; }
};

}  // namespace

// ---- the helper --------------------------------------------------------------------------------------

TEST_CASE("checked arithmetic: an overflow raises ValueError naming what was computed, never wraps") {
  CHECK(checked_add(kMax - 1, 1, "x") == kMax);
  CHECK(checked_mul(k2_32, k2_32 / 4, "x") == std::int64_t{1} << 62);
  const std::vector<std::int64_t> with_zero{k2_32, k2_32, 0};
  CHECK(checked_product(with_zero, "x") == 0);  // as a shape with a 0 dimension: no elements
  CHECK(checked_int(-7, "x") == -7);
  CHECK(message_of<ValueError>([] { checked_add(kMax, 1, "the sum of the ratios", "give smaller ones"); }) ==
        "the sum of the ratios: 9223372036854775807 + 1 is more than 9223372036854775807, the largest 64-bit "
        "integer; give smaller ones");
  CHECK(message_of<ValueError>([] { checked_mul(-k2_32, k2_32, "an offset"); }) ==
        "an offset: -4294967296 * 4294967296 is less than -9223372036854775808, the smallest 64-bit integer");
  const std::vector<std::int64_t> dims{k2_32, k2_32};
  CHECK(contains(message_of<ValueError>([&] { checked_product(dims, "elements"); }), "4294967296 * 4294967296 is more"));
  CHECK(message_of<ValueError>([] { checked_int(k2_32, "the axis"); }) ==
        "the axis: 4294967296 does not fit in a 32-bit int (-2147483648 to 2147483647)");
  CHECK(contains(message_of<ValueError>([] { checked_bytes(kMax / 2, 4, "a tensor"); }), "4611686018427387903 * 4 is more"));
}

// ---- shapes and tensors --------------------------------------------------------------------------------

TEST_CASE("Shape: a dimension below -1 (the unknown marker) is refused where the shape is made") {
  CHECK(message_of<ValueError>([] { Shape{2, -5}; }) ==
        "shape (2, -5): dimension 1 is -5; a dimension is a size >= 0, or -1 (None) for one unknown until run time");
  CHECK(contains(message_of<ValueError>([] { Shape(std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min()}); }),
                 "dimension 0 is -9223372036854775808"));
  CHECK(Shape{-1, 3}.to_string() == "(None, 3)");  // the unknown marker stays allowed
  CHECK(contains(message_of<ValueError>([] { layers::Input({28, -28}); }), "dimension 1 is -28"));
}

TEST_CASE("Shape::num_elements and tensor bytes: products beyond 64 bits are refused, not wrapped to 0") {
  // 2^32 * 2^32 = 2^64 wrapped to 0: such a tensor "held" nothing.
  CHECK(message_of<ValueError>([] { Shape{k2_32, k2_32}.num_elements(); }) ==
        "the number of elements of shape (4294967296, 4294967296): 4294967296 * 4294967296 is more than "
        "9223372036854775807, the largest 64-bit integer; no tensor can be that large: use smaller dimensions");
  CHECK(Shape{k2_32, k2_32, 0}.num_elements() == 0);
  CHECK(Shape{k2_32, 2}.num_elements() == 2 * k2_32);
  // 2^62 elements fit; their bytes (2^64) do not, and wrapped into a small allocation.
  const Shape big{std::int64_t{1} << 61, 2};
  CHECK(contains(message_of<ValueError>([&] { tensor_bytes(big, DType::float32); }),
                 "the bytes of a float32 tensor of shape (2305843009213693952, 2): 4611686018427387904 * 4 is more"));
  CHECK(contains(message_of<ValueError>([&] { Tensor::zeros(big); }), "the bytes of a float32 tensor"));
  CHECK(tensor_bytes(Shape{3, 5}, DType::float64) == 120);
}

TEST_CASE("the memory plan: buffers whose offsets pass 2^64 bytes are refused") {
  const std::vector<BufferLifetime> buffers{{std::size_t{1} << 63, 0, 1}, {std::size_t{1} << 63, 0, 1}};
  for (bool reuse : {false, true}) {
    CAPTURE(reuse);
    CHECK(contains(message_of<ValueError>([&] { plan_memory(buffers, reuse); }),
                   "the memory plan: a buffer of 9223372036854775808 bytes at offset 9223372036854775808 ends "
                   "beyond 2^64 bytes"));
  }
}

// ---- layers ------------------------------------------------------------------------------------------

TEST_CASE("Dense(1 << 32): a weight too large to count or to hold is refused before anything is allocated") {
  // On 2^32 features the kernel (2^32, 2^32) counted 2^64 = 0 elements: the model built with 0
  // parameters and saved. Nothing is allocated before the refusal (the bias would be 16 GB).
  CHECK(message_of<ValueError>([] {
          Sequential({layers::Input({k2_32}), layers::Dense(k2_32, {.name = "huge"})});
        }) == "Dense \"huge\": weight \"kernel\" of shape (4294967296, 4294967296), its number of elements: "
              "4294967296 * 4294967296 is more than 9223372036854775807, the largest 64-bit integer; use fewer units "
              "or filters, or a smaller input");
  // On 2^30 features: 2^62 elements, whose 2^64 bytes wrapped into a small allocation (a crash).
  CHECK(contains(message_of<ValueError>([] {
                   Sequential({layers::Input({std::int64_t{1} << 30}), layers::Dense(k2_32, {.name = "wide"})});
                 }),
                 "Dense \"wide\": weight \"kernel\" of shape (1073741824, 4294967296), its bytes: 4611686018427387904 "
                 "* 4 is more"));
  // From a file, the same.
  const nlohmann::json config = {{"units", k2_32}, {"name", "from_file"}};
  CHECK(contains(message_of<ValueError>([&] {
                   Sequential({layers::Input({k2_32}), layers::layer_from_config({{"class_name", "Dense"}, {"config", config}})});
                 }),
                 "Dense \"from_file\": weight \"kernel\" of shape (4294967296, 4294967296)"));
}

TEST_CASE("other huge layers: Embedding, Conv2D, Reshape, Flatten and a dilated window refuse their overflow") {
  CHECK(contains(message_of<ValueError>([] {
                   Sequential({layers::Input({3}), layers::Embedding(std::int64_t{1} << 40, std::int64_t{1} << 40,
                                                                      {.name = "vocabulary"})});
                 }),
                 "Embedding \"vocabulary\": weight \"embeddings\" of shape (1099511627776, 1099511627776), its number "
                 "of elements"));
  CHECK(contains(message_of<ValueError>([] {
                   Sequential({layers::Input({8, 8, k2_32}), layers::Conv2D(k2_32, {3, 3}, {.name = "filters"})});
                 }),
                 "Conv2D \"filters\": weight \"kernel\" of shape (3, 3, 4294967296, 4294967296), its number of "
                 "elements"));
  CHECK(contains(message_of<ValueError>([] {
                   Sequential({layers::Input({4}), layers::Reshape({k2_32, k2_32, -1}, {.name = "target"})});
                 }),
                 "Reshape \"target\": the elements of target_shape [4294967296, 4294967296, -1]: 4294967296 * "
                 "4294967296 is more"));
  CHECK(contains(message_of<ValueError>([] {
                   Sequential({layers::Input({k2_32, k2_32}), layers::Flatten({.name = "flat"})});
                 }),
                 "Flatten \"flat\": the features of (None, 4294967296, 4294967296): 4294967296 * 4294967296 is more"));
  // A 3x3 kernel dilated by 2^62 spans 2 * 2^62 + 1 rows: the window geometry wrapped.
  const std::int64_t d = std::int64_t{1} << 62;
  CHECK(contains(message_of<ValueError>([&] {
                   Sequential({layers::Input({28, 28, 1}),
                               layers::Conv2D(1, {3, 3}, {.padding = "same", .dilation_rate = {d, d}})});
                 }),
                 "the span of a window, (size - 1) * dilation + 1: 2 * 4611686018427387904 is more than "
                 "9223372036854775807, the largest 64-bit integer; use a smaller window or dilation"));
}

TEST_CASE("ops: lengths that add up beyond 64 bits (concat, pad, split, reshape) are refused at graph build") {
  Graph g;
  const std::int64_t half = std::int64_t{1} << 62;
  auto a = g.placeholder({half, 1});
  // The op's error names it, its inputs and attrs; the arithmetic says what overflowed.
  const auto concat = message_of<ValueError>([&] { ops::concat({a, a}, 0); });
  CHECK(contains(concat, "concat"));
  CHECK(contains(concat, "the length of the joined axis: 4611686018427387904 + 4611686018427387904 is more than "
                         "9223372036854775807"));
  CHECK(contains(message_of<ValueError>([&] { ops::pad(a, {half, half, 0, 0}); }),
                 "the paddings of an axis: 4611686018427387904 + 4611686018427387904 is more"));
  CHECK(contains(message_of<ValueError>([&] { ops::pad(a, {half, 0, 0, 0}); }),
                 "an axis with its paddings: 4611686018427387904 + 4611686018427387904 is more"));
  auto b = g.placeholder({4});
  const auto split = message_of<ValueError>([&] { ops::split(b, 0, {kMax, 1, 3}); });
  CHECK(contains(split, "the sum of the sizes: 9223372036854775807 + 1 is more"));
  CHECK(contains(split, "9223372036854775807, 1, 3"));  // the attrs
  CHECK(contains(message_of<ValueError>([&] { ops::reshape(b, {k2_32, k2_32, -1}); }),
                 "the elements of the target shape: 4294967296 * 4294967296 is more"));
  // A slice whose begin + size wrapped passed the bounds check.
  CHECK_THROWS_WITH_AS(ops::slice(b, {2}, {kMax}), doctest::Contains("reaches past axis 0"), ShapeError);
}

TEST_CASE("layer configs: integers beyond int64 and axes beyond int are refused, not wrapped") {
  // nlohmann reads 2^64 - 1 as -1 with get<std::int64_t>; a cast to int read 2^32 as axis 0.
  const nlohmann::json huge_units = {{"units", std::numeric_limits<std::uint64_t>::max()}, {"name", "d"}};
  CHECK(contains(message_of<ValueError>([&] { layers::layer_from_config({{"class_name", "Dense"}, {"config", huge_units}}); }),
                 "Dense \"d\": field \"units\" must be an integer from -9223372036854775808 to 9223372036854775807, "
                 "got 18446744073709551615"));
  const nlohmann::json axis = {{"axis", k2_32}, {"name", "c"}};
  CHECK(message_of<ValueError>([&] { layers::layer_from_config({{"class_name", "Concatenate"}, {"config", axis}}); }) ==
        "Concatenate \"c\": field \"axis\": 4294967296 does not fit in a 32-bit int (-2147483648 to 2147483647); an "
        "axis is a small number such as -1");
  const nlohmann::json softmax = {{"axis", std::numeric_limits<std::uint64_t>::max()}, {"name", "s"}};
  CHECK(contains(message_of<ValueError>([&] { layers::layer_from_config({{"class_name", "Softmax"}, {"config", softmax}}); }),
                 "Softmax \"s\": field \"axis\" must be an integer or a list of integers"));
}

// ---- ratios and splits -----------------------------------------------------------------------------------

TEST_CASE("largest_remainder_split: huge weights split exactly; weights whose sum overflows are refused") {
  // n * w overflowed for a huge weight: the shares came out negative.
  CHECK(largest_remainder_split(10, {std::int64_t{1} << 61, std::int64_t{1} << 61}) == std::vector<std::int64_t>{5, 5});
  CHECK(largest_remainder_split(7, {kMax - 1, 1}) == std::vector<std::int64_t>{7, 0});
  // kMax * 3 / 5 = ...484.2 and kMax * 2 / 5 = ...322.8: the leftover unit to the larger remainder.
  CHECK(largest_remainder_split(kMax, {3, 2}) ==
        std::vector<std::int64_t>{5534023222112865484, 3689348814741910323});
  CHECK(share_range(kMax, {1, 1}, 1) == std::pair<std::int64_t, std::int64_t>{kMax / 2 + 1, kMax / 2});
  CHECK(message_of<ValueError>([] { largest_remainder_split(10, {kMax, 1}); }) ==
        "the sum of the split weights [9223372036854775807, 1]: 9223372036854775807 + 1 is more than "
        "9223372036854775807, the largest 64-bit integer; give smaller weights: only their proportions count (3:2 is "
        "60 % and 40 %)");
}

TEST_CASE("multi_gpu_model: ratios whose sum overflows are refused; huge ratios that fit train") {
  CHECK(contains(message_of<ValueError>([] {
                   parallel::multi_gpu_model(small_model(), {"cpu:0", "cpu:1"}, {.ratios = {kMax, 1}});
                 }),
                 "multi_gpu_model: the sum of the ratios 9223372036854775807:1: 9223372036854775807 + 1 is more than "
                 "9223372036854775807"));
  Model parallel = parallel::multi_gpu_model(small_model(), {"cpu:0", "cpu:1"},
                                             {.ratios = {std::int64_t{1} << 62, std::int64_t{1} << 61}});
  auto [x, y] = small_data(30);
  auto history = parallel.fit(x, y, {.batch_size = 30, .epochs = 1, .verbose = 0, .seed = 3});
  CHECK(std::isfinite(history.history.at("loss").back()));
}

TEST_CASE("train_mnist --cpu-devices 2 --ratios 9223372036854775807 1: a usage error naming --ratios, not a crash") {
  TempDir dir("arith_ratios");
  write_idx_set(dir.path, 32, 8);
  const auto r = train_mnist({"--data", dir.path.string(), "--cpu-devices", "2", "--ratios", "9223372036854775807",
                              "1", "--epochs", "1", "--verbose", "0"},
                             dir);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "--ratios: the sum of 9223372036854775807 1: 9223372036854775807 + 1 is more than "
                           "9223372036854775807, the largest 64-bit integer; give smaller numbers: only their "
                           "proportions count (3 2 is 60 % and 40 %)"));
  // All shares 0: nothing to split a batch by, refused before the data is read.
  const auto zeros = train_mnist({"--data", "/nonexistent", "--cpu-devices", "2", "--ratios", "0", "0"}, dir);
  CHECK(zeros.exit_code == 2);
  CHECK(contains(zeros.output, "--ratios 0 0: at least one share must be above 0"));
  // Huge ratios whose sum fits split each batch exactly.
  const auto ok = train_mnist({"--data", dir.path.string(), "--cpu-devices", "2", "--ratios", "4611686018427387904",
                               "1", "--epochs", "1", "--verbose", "0"},
                              dir);
  CHECK_MESSAGE(ok.exit_code == 0, ok.output);
}

// ---- steps and resumed row offsets -----------------------------------------------------------------------

TEST_CASE("steps_per_epoch: a huge batch_size is one step, not an overflowed count") {
  auto [x, y] = small_data(10);
  // (n + batch - 1) / batch overflowed into a negative step count.
  CHECK(ArrayDataAdapter({x}, {y}, Tensor(), kMax).steps_per_epoch() == 1);
  CHECK(ArrayDataAdapter({x}, {y}, Tensor(), 3).steps_per_epoch() == 4);
  CHECK(io::Dataset::from_tensor_slices({x}, {y}).batch(kMax).cardinality() == 1);
  CHECK(io::Dataset::from_tensor_slices({x}, {y}).batch(kMax, /*drop_remainder=*/true).cardinality() == 0);
  CHECK(io::Dataset::from_tensor_slices({x}, {y}).batch(3).cardinality() == 4);
  // Skipping batches of a huge size (a resumed dataset epoch) skips everything: n * size overflowed.
  CHECK(io::Dataset::from_tensor_slices({x}, {y}).batch(kMax / 2).collect().size() == 1);
  auto it = io::Dataset::from_tensor_slices({x}, {y}).batch(kMax / 2).iterate(0, 2);
  io::Element element;
  CHECK_FALSE(it.next(element));

  Model m = small_model();
  auto counter = std::make_shared<StepCounter>();
  m.fit(x, y, {.batch_size = kMax, .epochs = 2, .verbose = 0, .callbacks = {counter}});
  CHECK(counter->announced == 1);
  CHECK(counter->batches == 2);
  CHECK(m.evaluate(x, y, {.batch_size = kMax, .verbose = 0}).size() == 2);

  TempDir dir("arith_batch");
  write_idx_set(dir.path, 40, 8);
  const auto r = train_mnist({"--data", dir.path.string(), "--batch-size", "9223372036854775807", "--epochs", "1",
                              "--verbose", "2"},
                             dir);
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(contains(r.output, "1/1 - "));  // the progress line: one step of one
}

TEST_CASE("BackupAndRestore: a backup whose step x batch_size overflows is refused naming the position") {
  TempDir dir("arith_backup");
  auto [x, y] = small_data(64);
  const std::string backup_dir = dir / "backup";
  // A backup as BackupAndRestore writes it, at epoch 0 and a step whose rows (step * batch_size)
  // overflow: they became a negative row offset and fit read before its arrays.
  std::filesystem::create_directories(backup_dir);
  {
    Model m = small_model();
    const nlohmann::json position = {{"epoch", 0}, {"step", kMax / 4}};
    io::hdf5::write_file_atomically(backup_dir + "/backup.h5", "crafted backup", [&](io::hdf5::File& file) {
      file.write_string_attr("training_metadata", position.dump());
      io::hdf5::Group weights = file.create_group("model_weights");
      io::save_weights_to_group(weights, m.layers());
    });
  }
  const tower::testing::FileSnapshot backup(backup_dir + "/backup.h5");
  Model m = small_model();
  auto restore = std::make_shared<callbacks::BackupAndRestore>(backup_dir);
  const std::string message = message_of<ValueError>([&] {
    m.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .callbacks = {restore}, .seed = 1});
  });
  CHECK(contains(message, "fit resumes epoch 0 at step 2305843009213693951 (BackupAndRestore's backup, or "
                          "set_initial_position), but an epoch of this data has 4 step(s); the position was saved for "
                          "other data or another batch_size: train on the same, or delete the backup to start afresh"));
  CHECK(backup.unchanged());  // the backup stays for a run with the right data

  // The same through set_initial_position, at the first step past the end (at the end is the
  // position of an epoch done).
  Model n = small_model();
  n.set_initial_position(0, 5);
  CHECK(contains(message_of<ValueError>([&] { n.fit(x, y, {.batch_size = 16, .verbose = 0}); }),
                 "fit resumes epoch 0 at step 5 (BackupAndRestore's backup, or set_initial_position), but an epoch of "
                 "this data has 4 step(s)"));
  // The adapter itself never computes a row past its data, whatever it is asked to skip.
  ArrayDataAdapter adapter({x}, {y}, Tensor(), 16);
  adapter.begin_epoch(0, kMax);
  DataElement batch;
  CHECK_FALSE(adapter.next(batch));
}

// ---- devices -----------------------------------------------------------------------------------------

TEST_CASE("too many CPU devices: refused with the limit, the environment variable and what a device costs") {
  TempDir dir("arith_devices");  // no data in it: the refusal comes before any data is read
  SUBCASE("train_mnist beyond the default limit") {
    const auto r = train_mnist({"--data", dir.path.string(), "--cpu-devices", "65"}, dir);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, "--cpu-devices 65 is more CPU devices than the limit of 64: give fewer, or set the "
                             "environment variable TOWER_MAX_CPU_DEVICES (at most 256: each CPU device is a thread of "
                             "its own and holds a copy of the weights)"));
  }
  SUBCASE("train_mnist beyond a raised limit") {
    EnvScope env("TOWER_MAX_CPU_DEVICES", "100");
    const auto r = train_mnist({"--data", dir.path.string(), "--cpu-devices", "1000"}, dir);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, "--cpu-devices 1000 is more CPU devices than the limit of 100"));
  }
  SUBCASE("TOWER_MAX_CPU_DEVICES beyond what the machine can run, or not a number") {
    for (const char* value : {"257", "5000", "abc", "-3", "99999999999999999999"}) {
      CAPTURE(value);
      EnvScope env("TOWER_MAX_CPU_DEVICES", value);
      const auto r = train_mnist({"--data", dir.path.string(), "--cpu-devices", "2"}, dir);
      CHECK(r.exit_code == 2);
      CHECK(contains(r.output, fmt::format("environment variable TOWER_MAX_CPU_DEVICES=\"{}\" is not a CPU device "
                                           "count this machine can run: set a number from 1 to 256",
                                           value)));
      CHECK(contains(message_of<ValueError>([] { max_cpu_devices(); }), "set a number from 1 to 256"));
    }
  }
  SUBCASE("the C++ API") {
    CHECK(contains(message_of<NotFoundError>([] { device("cpu:64"); }),
                   "set the environment variable TOWER_MAX_CPU_DEVICES (now 64, at most 256) to allow more"));
    EnvScope env("TOWER_MAX_CPU_DEVICES", "256");
    CHECK(max_cpu_devices() == 256);
  }
  SUBCASE("--gpus with a huge count is refused at once (it listed 2^31 ids first)") {
    const auto r = train_mnist({"--data", dir.path.string(), "--gpus", "2147483647"}, dir);
    CHECK(r.exit_code == 2);
    CHECK((contains(r.output, "--gpus asks for 2147483647 GPU(s) but none is visible") ||
           contains(r.output, "does not exist")));
  }
}

TEST_CASE("as many CPU devices as the limit allows: a parallel fit and evaluate compile and run") {
  // The ceiling's towers (256), one all-reduce per weight, most of them with no rows of a batch of 128:
  // the hazard search compared every step with every buffer and every finished step woke all lanes
  // (quadratic: 128 devices took seconds), and one condition variable for every all-reduce group woke
  // every waiting replica of every group (1,024 devices never ended an epoch). No timing is asserted:
  // the test's time limit catches a regression.
  EnvScope env("TOWER_MAX_CPU_DEVICES", std::to_string(kMaxCpuDevicesCeiling));
  std::vector<std::string> devices;
  for (int i = 0; i < kMaxCpuDevicesCeiling; ++i) devices.push_back(fmt::format("cpu:{}", i));
  Model parallel = parallel::multi_gpu_model(small_model(), devices);
  auto [x, y] = small_data(256);
  auto history = parallel.fit(x, y, {.batch_size = 128, .epochs = 2, .verbose = 0, .seed = 2});
  CHECK(history.history.at("loss").size() == 2);
  CHECK(std::isfinite(history.history.at("loss").back()));
  const Logs score = parallel.evaluate(x, y, {.batch_size = 256, .verbose = 0});
  CHECK(score.size() == 2);
}

// ---- results that mean nothing -------------------------------------------------------------------------

TEST_CASE("a loss that turns NaN is told once, at its first batch; TerminateOnNaN ends fit there") {
  clear_session();
  set_random_seed(1);
  Model m = Sequential({layers::Input({4}), layers::Dense(3, {.activation = "relu"}), layers::Dense(1)});
  m.compile(optimizers::SGD(1e30), "mse");
  Tensor x = random_normal({32, 4}, 0, 1, 5), y = random_normal({32, 1}, 0, 1, 6);
  std::ostringstream warnings;
  std::streambuf* old = std::cerr.rdbuf(warnings.rdbuf());
  auto history = m.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0});
  std::cerr.rdbuf(old);
  const std::string told = warnings.str();
  CHECK(std::isnan(history.history.at("loss").back()));
  CHECK_MESSAGE(contains(told, "Warning: fit: the loss of model \"" + m.name() + "\" is inf from epoch 1, batch 1 on"), told);
  CHECK_MESSAGE(contains(told, "the training diverged (is the learning rate, 1e+30, too high?); "
                               "callbacks::TerminateOnNaN ends fit there"),
                told);
  CHECK(told.find("Warning: fit") == told.rfind("Warning: fit"));  // once per fit
  // With TerminateOnNaN, fit ends after that batch.
  auto counter = std::make_shared<StepCounter>();
  old = std::cerr.rdbuf(warnings.rdbuf());
  history = m.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0,
                         .callbacks = {std::make_shared<callbacks::TerminateOnNaN>(), counter}});
  std::cerr.rdbuf(old);
  CHECK(counter->batches == 1);
}
