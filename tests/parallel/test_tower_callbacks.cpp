// Callbacks that write files, given a tower wrapper (label unit, CPU devices): ModelCheckpoint writes the
// inner model's files (Keras's multi_gpu_model wrote the wrapper, the complaint of keras #8123), and
// BackupAndRestore resumes a crashed tower fit with the weights, the optimizer state and the mirrors of
// an uninterrupted one.
#include <doctest/doctest.h>

#include <filesystem>

#include "tower/io/backup_and_restore.h"
#include "tower/io/hdf5.h"
#include "tower/io/keras_model.h"
#include "tower/io/model_checkpoint.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/multi_gpu_model.h"
#include "tests/parallel/tower_test_model.h"
#include "tests/support/resume.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::CrashAt;
using tower::testing::same_bits;
using Devices = std::vector<std::string>;
namespace fs = std::filesystem;

namespace {

// The tower test model in a fresh session (the same layer names every time).
Sequential fresh_model(std::uint64_t seed) {
  clear_session();
  return testing::tower_test_model(seed);
}

// The inner model, and its towers on cpu:0 and cpu:1 at 3:1, compiled with Adam.
struct Towers {
  Sequential inner;
  Model wrapper;
  explicit Towers(std::uint64_t seed)
      : inner(fresh_model(seed)),
        wrapper(parallel::multi_gpu_model(inner, Devices{"cpu:0", "cpu:1"}, {.ratios = {3, 1}})) {
    wrapper.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
  }
};

std::vector<Tensor> slot_values(const optimizers::Optimizer& optimizer) {
  std::vector<Tensor> values;
  for (const VariablePtr& slot : optimizer.variables()) values.push_back(slot->value());
  return values;
}

}  // namespace

TEST_CASE("towers: ModelCheckpoint writes the inner model's files, as model.save and save_weights would") {
  testing::TempDir dir("tower_checkpoint");
  auto [x, y] = testing::tower_test_data(24);
  Towers towers(5);
  auto full = std::make_shared<callbacks::ModelCheckpoint>(dir.file("full-{epoch}.h5"));
  auto weights = std::make_shared<callbacks::ModelCheckpoint>(
      dir.file("weights-{epoch}.h5"), callbacks::ModelCheckpointOptions{.save_weights_only = true});
  towers.wrapper.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .callbacks = {full, weights}});
  towers.inner.save_weights(dir.file("inner.h5"));

  const auto layer_names = [](const std::string& path) {
    return io::hdf5::File::open(path).read_string_array_attr("layer_names");
  };
  CHECK(layer_names(dir.file("weights-2.h5")) == layer_names(dir.file("inner.h5")));
  Model loaded = models::load_model(dir.file("full-2.h5"));
  CHECK(loaded.name() == towers.inner.name());
  CHECK(loaded.wrapped_model() == nullptr);  // the inner model itself, not a wrapper around it
  CHECK(same_bits(loaded.get_weights(), towers.inner.get_weights()));
  CHECK(loaded.optimizer().iterations() == towers.wrapper.optimizer().iterations());
  auto fresh = testing::tower_test_model(77);
  fresh.load_weights(dir.file("weights-1.h5"));  // the first epoch's weights load into a plain model
  CHECK_FALSE(same_bits(fresh.get_weights(), towers.inner.get_weights()));
}

TEST_CASE("towers: BackupAndRestore resumes a crashed fit and ends as an uninterrupted one, mirrors included") {
  testing::TempDir dir("tower_backup");
  auto [x, y] = testing::tower_test_data(40);  // 5 batches of 8 per epoch, split 6:2
  const FitOptions base{.batch_size = 8, .epochs = 3, .verbose = 0, .seed = 11};

  Towers reference(9);
  reference.wrapper.fit(x, y, base);

  const std::string backup_dir = dir.file("backup");
  auto options = base;
  {
    Towers first(9);
    options.callbacks = {std::make_shared<callbacks::BackupAndRestore>(
                             backup_dir, callbacks::BackupAndRestoreOptions{.save_freq = 2}),
                         std::make_shared<CrashAt>(1, 3)};
    CHECK_THROWS_WITH(first.wrapper.fit(x, y, options), "simulated crash");
  }
  REQUIRE(fs::exists(backup_dir + "/backup.h5"));
  Towers second(9);  // a new process builds the same model and towers
  auto restore = std::make_shared<callbacks::BackupAndRestore>(
      backup_dir, callbacks::BackupAndRestoreOptions{.save_freq = 2});
  options.callbacks = {restore};
  second.wrapper.fit(x, y, options);
  CHECK(restore->resumed_epoch() == 1);
  CHECK(restore->resumed_step() == 3);
  CHECK(second.wrapper.optimizer().iterations() == reference.wrapper.optimizer().iterations());
  // The restored weights and Adam slots reached cpu:1's mirrors before the towers went on: any stale
  // mirror or slot would have made the last two epochs differ.
  CHECK(same_bits(second.inner.get_weights(), reference.inner.get_weights()));
  CHECK(same_bits(slot_values(second.wrapper.optimizer()), slot_values(reference.wrapper.optimizer())));
}
