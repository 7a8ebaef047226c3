// ModelCheckpoint and BackupAndRestore, and the proof that a training process killed with SIGKILL in
// the middle of an epoch and started again ends with the same weights as an uninterrupted run.
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tower/core/random.h"
#include "tower/io/backup_and_restore.h"
#include "tower/io/keras_model.h"
#include "tower/io/model_checkpoint.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/process.h"
#include "tests/support/resume.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::CrashAt;
using tower::testing::read_bytes;
using tower::testing::spawn;
using tower::testing::wait_for;
using tower::testing::write_idx_set;
using tower::testing::TempDir;
namespace fs = std::filesystem;

namespace {

Model make_model(std::uint64_t seed) {
  clear_session();
  set_random_seed(seed);
  Model m = Sequential({layers::Input({5}), layers::Dense(16, {.activation = "relu"}), layers::Dropout(0.25),
                        layers::Dense(3, {.activation = "softmax"})});
  m.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
  return m;
}

std::pair<Tensor, Tensor> data(std::int64_t n) {
  Tensor x = random_normal({n, 5}, 0, 1, 99);
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i) labels.push_back(static_cast<std::int32_t>((i * 7) % 3));
  return {x, Tensor::from_vector<std::int32_t>({n}, labels)};
}

bool same_weights(const Model& a, const Model& b) { return tower::testing::same_bits(a.get_weights(), b.get_weights()); }

}  // namespace

TEST_CASE("format_checkpoint_path: Python-style fields") {
  Logs logs;
  logs.set("val_loss", 0.12345);
  logs.set("accuracy", 0.5);
  using callbacks::format_checkpoint_path;
  CHECK(format_checkpoint_path("ckpt-{epoch:02d}-{val_loss:.2f}.h5", 2, std::nullopt, logs) == "ckpt-03-0.12.h5");
  CHECK(format_checkpoint_path("m{epoch}_{batch}.h5", 0, 9, logs) == "m1_10.h5");
  CHECK(format_checkpoint_path("{{literal}}{accuracy:.3f}.h5", 0, std::nullopt, logs) == "{literal}0.500.h5");
  CHECK_THROWS_WITH_AS(format_checkpoint_path("m-{val_acc}.h5", 0, std::nullopt, logs),
                       doctest::Contains("uses {val_acc} but the logs hold only epoch, val_loss, accuracy"), ValueError);
  CHECK_THROWS_WITH_AS(format_checkpoint_path("m-{val_loss:02d}.h5", 0, std::nullopt, logs),
                       doctest::Contains("does not fit the value"), ValueError);
  CHECK_THROWS_AS(format_checkpoint_path("m-{epoch.h5", 0, std::nullopt, logs), ValueError);
}

TEST_CASE("ModelCheckpoint: every epoch, best only, weights only, every N batches") {
  TempDir dir("mc");
  auto [x, y] = data(64);
  SUBCASE("one full-model file per epoch, loadable") {
    Model m = make_model(1);
    auto cb = std::make_shared<callbacks::ModelCheckpoint>(dir.file("m-{epoch:02d}-{loss:.3f}.h5"));
    m.fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0, .callbacks = {cb}});
    CHECK(dir.files().size() == 3);
    Model loaded = models::load_model(cb->last_saved());
    CHECK(same_weights(loaded, m));
    CHECK(loaded.optimizer().iterations() == 12);
  }
  SUBCASE("save_best_only keeps the best by the monitored value") {
    Model m = make_model(1);
    auto cb = std::make_shared<callbacks::ModelCheckpoint>(
        dir.file("best.h5"), callbacks::ModelCheckpointOptions{.monitor = "loss", .save_best_only = true});
    auto history = m.fit(x, y, {.batch_size = 16, .epochs = 4, .verbose = 0, .callbacks = {cb}});
    const auto& losses = history.history.at("loss");
    CHECK(*cb->best() == doctest::Approx(*std::min_element(losses.begin(), losses.end())));
    CHECK(fs::exists(dir.file("best.h5")));
    // A threshold nothing beats: no file.
    auto never = std::make_shared<callbacks::ModelCheckpoint>(
        dir.file("never.h5"),
        callbacks::ModelCheckpointOptions{.monitor = "loss", .save_best_only = true, .initial_value_threshold = 0.0});
    m.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .callbacks = {never}});
    CHECK_FALSE(fs::exists(dir.file("never.h5")));
  }
  SUBCASE("save_weights_only writes a weights file; save_freq counts batches") {
    Model m = make_model(1);
    auto cb = std::make_shared<callbacks::ModelCheckpoint>(
        dir.file("w-{epoch}-{batch}.h5"), callbacks::ModelCheckpointOptions{.save_weights_only = true, .save_freq = 3});
    m.fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0, .callbacks = {cb}});  // 12 batches
    CHECK(dir.files() == std::vector<std::string>{"w-1-3.h5", "w-2-2.h5", "w-3-1.h5", "w-3-4.h5"});
    auto f = io::hdf5::File::open(dir.file("w-3-4.h5"));
    CHECK(f.has_string_array_attr("layer_names"));
    CHECK_FALSE(f.has_attr("model_config"));
  }
  SUBCASE("a failed save is an error and leaves the last good file as it was") {
    Model m = make_model(1);
    m.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0});
    m.save(dir.file("good.h5"));
    const std::string before = read_bytes(dir.file("good.h5"));
    auto missing = std::make_shared<callbacks::ModelCheckpoint>(dir.file("no/such/dir/m.h5"));
    CHECK_THROWS_AS(m.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0, .callbacks = {missing}}), io::FileError);
    // A file name that is a directory: the rename fails after the temporary file was written.
    fs::create_directories(dir.file("taken.h5"));
    auto taken = std::make_shared<callbacks::ModelCheckpoint>(dir.file("taken.h5"));
    CHECK_THROWS_AS(m.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0, .callbacks = {taken}}), io::FileError);
    CHECK(read_bytes(dir.file("good.h5")) == before);
    CHECK(dir.files() == std::vector<std::string>{"good.h5", "taken.h5"});  // no temporary left behind
  }
  SUBCASE("bad options") {
    CHECK_THROWS_AS(callbacks::ModelCheckpoint("m.keras"), ValueError);
    CHECK_THROWS_AS(callbacks::ModelCheckpoint("m.h5", {.mode = "best"}), ValueError);
    CHECK_THROWS_AS(callbacks::ModelCheckpoint("m.h5", {.save_freq = -1}), ValueError);
  }
}

TEST_CASE("BackupAndRestore: a crashed fit resumes at its epoch and batch and ends as an uninterrupted one") {
  TempDir dir("bar");
  auto [x, y] = data(80);  // 5 batches of 16 per epoch
  const FitOptions base{.batch_size = 16, .epochs = 3, .verbose = 0, .seed = 7};

  Model reference = make_model(3);
  reference.fit(x, y, base);

  for (std::int64_t every : {0, 2}) {
    SUBCASE(every == 0 ? "backups at epoch ends" : "backups every 2 batches") {
      const std::string backup_dir = dir.file("backup_" + std::to_string(every));
      auto options = base;
      {
        Model first = make_model(3);
        options.callbacks = {std::make_shared<callbacks::BackupAndRestore>(
                                 backup_dir, callbacks::BackupAndRestoreOptions{.save_freq = every}),
                             std::make_shared<CrashAt>(1, 3)};
        CHECK_THROWS_WITH(first.fit(x, y, options), "simulated crash");
      }
      CHECK(fs::exists(backup_dir + "/backup.h5"));
      Model second = make_model(3);  // a fresh process would build the same model
      auto restore = std::make_shared<callbacks::BackupAndRestore>(
          backup_dir, callbacks::BackupAndRestoreOptions{.save_freq = every});
      options.callbacks = {restore};
      second.fit(x, y, options);
      CHECK(restore->resumed_epoch() == 1);
      CHECK(restore->resumed_step() == (every == 0 ? 0 : 3));  // backups after batches 0, 2 (and 4 of epoch 0)
      CHECK(second.optimizer().iterations() == reference.optimizer().iterations());
      CHECK(same_weights(second, reference));
      CHECK_FALSE(fs::exists(backup_dir + "/backup.h5"));  // deleted once fit ended normally
    }
  }
}

// ---- SIGKILL -----------------------------------------------------------------------------------------

namespace {

// The backup's training_metadata, or an empty object while there is none.
nlohmann::json backup_position(const std::string& path) {
  if (!fs::exists(path)) return nlohmann::json::object();
  return nlohmann::json::parse(io::hdf5::File::open(path).read_string_attr("training_metadata"));
}

}  // namespace

TEST_CASE("SIGKILL in the middle of an epoch, restart with --resume: the same weights as without the kill") {
  TempDir dir("kill");
  write_idx_set(dir.path, 6000, 100);
  const std::vector<std::string> common = {TOWER_TRAIN_MNIST, "--model", "mlp", "--data", dir.path.string(),
                                           "--epochs", "2", "--batch-size", "32", "--seed", "5", "--verbose", "0"};
  auto with = [&](std::vector<std::string> extra) {
    auto args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };

  // The uninterrupted run.
  int status = wait_for(spawn(with({"--save", dir.file("straight.h5")})));
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  // The same run with backups every 10 batches, killed once a mid-epoch backup exists.
  const std::string backups = dir.file("backups");
  const auto resumed = with({"--resume", backups, "--backup-every", "10", "--save", dir.file("resumed.h5")});
  pid_t pid = spawn(resumed);
  nlohmann::json position;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    position = backup_position(backups + "/backup.h5");
    if (position.contains("step") && position["step"].get<int>() >= 20) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE_MESSAGE(position.contains("step"), "no backup appeared within 2 minutes");
  ::kill(pid, SIGKILL);
  status = wait_for(pid);
  REQUIRE_MESSAGE(WIFSIGNALED(status), "the training process ended before it could be killed");
  CHECK(WTERMSIG(status) == SIGKILL);
  position = backup_position(backups + "/backup.h5");
  MESSAGE("killed with the backup at epoch " << position["epoch"] << ", batch " << position["step"]);
  CHECK(position["step"].get<int>() > 0);  // in the middle of an epoch
  CHECK_FALSE(fs::exists(dir.file("resumed.h5")));

  // Started again, it resumes from the backup and finishes.
  status = wait_for(spawn(resumed));
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  CHECK_FALSE(fs::exists(backups + "/backup.h5"));

  Model a = models::load_model(dir.file("straight.h5"));
  Model b = models::load_model(dir.file("resumed.h5"));
  CHECK(a.optimizer().iterations() == b.optimizer().iterations());
  CHECK(same_weights(a, b));
}
