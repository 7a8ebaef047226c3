// Bad input, kind "clear messages and nothing silently wrong" (docs/refusals.md): compressed IDX bombs,
// images of the wrong size, damaged BackupAndRestore metadata, class_weight, learning rates, empty
// arrays, checkpoints past --epochs.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "tests/bad_input/bad_input.h"
#include "tower/core/random.h"
#include "tower/io/backup_and_restore.h"
#include "tower/io/dataset.h"
#include "tower/io/datasets.h"
#include "tower/io/hdf5.h"
#include "tower/io/idx.h"
#include "tower/io/keras_model.h"
#include "tower/io/keras_weights.h"
#include "tower/io/model_config.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layers.h"
#include "tower/layers/engine/sequential.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::TempDir;
using tower::testing::train_mnist;
using tower::testing::write_idx_set;
namespace fs = std::filesystem;

namespace {

// ---- helpers ------------------------------------------------------------------------------------

// Sanitizers reserve terabytes of address space and abort on a failed allocation: under them no
// RLIMIT_AS is set, and the tests that need an allocation to fail are skipped.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// An IDX header for unsigned bytes with these dimensions, then `payload` bytes.
std::string idx_bytes(const std::vector<std::uint32_t>& dims, std::size_t payload) {
  std::string s{'\0', '\0', '\x08', static_cast<char>(dims.size())};
  for (auto d : dims)
    for (int shift : {24, 16, 8, 0}) s += static_cast<char>((d >> shift) & 0xff);
  return s + std::string(payload, '\x07');
}

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// Appends `bytes` to `path` as one more gzip member (gzip files may hold several, read as one stream).
void append_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "ab9");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

// What a child process reports: how it ended and the exception it caught.
struct ChildResult {
  bool exited = false;  // false: killed by a signal (a crash, or the alarm)
  std::string error;    // "<kind>: <what()>", or "none" when f returned
  double seconds = 0;
};

// The address space this process has now (bytes), from /proc/self/statm.
std::size_t address_space() {
  std::size_t pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// Runs f in a forked child whose address space may grow by at most `headroom` bytes (RLIMIT_AS), so a
// reader that allocated what a hostile file makes it inflate would fail there, not here.
template <typename F>
ChildResult in_child_with_memory_limit(std::size_t headroom, F&& f) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    const rlimit limit{address_space() + headroom, RLIM_INFINITY};
    if (!kSanitized) ::setrlimit(RLIMIT_AS, &limit);
    ::alarm(60);
    std::string error = "none";
    try {
      f();
    } catch (const OutOfMemoryError& e) {
      error = std::string("OutOfMemoryError: ") + e.what();
    } catch (const ValueError& e) {
      error = std::string("ValueError: ") + e.what();
    } catch (const std::bad_alloc& e) {
      error = "std::bad_alloc";
    } catch (const std::exception& e) {
      error = std::string("other: ") + e.what();
    }
    [[maybe_unused]] auto written = ::write(fds[1], error.data(), error.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  ChildResult r;
  r.error.clear();
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) r.error.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exited = WIFEXITED(status);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// train_mnist's "mlp" model (apps/train_mnist.cpp build_model), with the same layer names when built
// first in a session.
Sequential mnist_mlp() {
  clear_session();
  Sequential model;
  model.add(layers::Input({28, 28}));
  model.add(layers::Flatten());
  model.add(layers::Dense(512, {.activation = "relu"}));
  model.add(layers::Dropout(0.2));
  model.add(layers::Dense(512, {.activation = "relu"}));
  model.add(layers::Dropout(0.2));
  model.add(layers::Dense(10, {.activation = "softmax"}));
  return model;
}

// A backup as BackupAndRestore writes it (<dir>/backup.h5: training_metadata and model_weights),
// with the metadata given. Returns the file's path.
std::string write_backup(const fs::path& dir, const Model& model, const std::string& metadata) {
  fs::create_directories(dir);
  const std::string path = (dir / "backup.h5").string();
  auto file = io::hdf5::File::create(path);
  file.write_string_attr("training_metadata", metadata);
  auto weights = file.create_group("model_weights");
  io::save_weights_to_group(weights, model.layers());
  return path;
}

// Input(4) -> Dense(3, softmax), compiled for class ids; and 6 samples of 3 classes.
struct Small {
  Sequential model{{layers::Input({4}), layers::Dense(3, {.activation = "softmax"})}};
  Tensor x = random_normal({6, 4}, 0, 1, 1);
  Tensor y = Tensor::from_vector<std::int32_t>({6}, {0, 1, 2, 0, 1, 2});
  Small() { model.compile("sgd", "sparse_categorical_crossentropy", {"accuracy"}); }
};

// The error BackupAndRestore gives for a backup with this training_metadata.
std::string backup_error(const std::string& metadata, std::string* path = nullptr) {
  TempDir dir("msgs");
  Small s;
  const std::string file = write_backup(dir.path / "backup", s.model, metadata);
  if (path) *path = file;
  auto callback = std::make_shared<callbacks::BackupAndRestore>((dir.path / "backup").string());
  auto msg = message_of<io::FileError>([&] { s.model.fit(s.x, s.y, {.epochs = 2, .verbose = 0, .callbacks = {callback}}); });
  CHECK_MESSAGE(contains(msg, file), msg);
  CHECK_MESSAGE(contains(msg, "delete the backup directory \"" + (dir.path / "backup").string() + "\" to start training over"), msg);
  return msg;
}

}  // namespace

// ---- IDX files ----------------------------------------------------------------------------------

TEST_CASE("IDX gzip bomb: a valid header for 10 images, then 4 GiB of zeros, is refused in bounded memory and time") {
  TempDir dir("msgs");
  const std::string bomb = dir / "train-images-idx3-ubyte.gz";
  append_gzip(bomb, idx_bytes({10, 28, 28}, 10 * 28 * 28));
  // 256 members of 16 MiB of zeros: 4 GiB inflated from a 4 MB file (made in milliseconds).
  const std::string zeros = dir / "zeros.gz";
  append_gzip(zeros, std::string(16 << 20, '\0'));
  const std::string member = testing::read_bytes(zeros);
  {
    std::ofstream out(bomb, std::ios::binary | std::ios::app);
    for (int i = 0; i < 256; ++i) out << member;
  }
  CHECK(fs::file_size(bomb) < (8u << 20));
  // Reading it may not grow the address space by more than 256 MiB (it used to inflate all 4 GiB into
  // a vector: 8.5 GB and 24 s).
  const auto r = in_child_with_memory_limit(256u << 20, [&] { io::read_idx(bomb); });
  CHECK(r.exited);
  CHECK_MESSAGE(contains(r.error, "ValueError: read_idx(\"" + bomb + "\"): the header announces 7840 bytes of data but "
                                  "the file holds more (trailing bytes after the data)"),
                r.error);
  CHECK_MESSAGE(r.seconds < 2.0, r.seconds << " s");
}

TEST_CASE("IDX header announcing more than the file can hold, or than read_idx reads: refused before allocating") {
  TempDir dir("msgs");
  // A plain file: its size says how much it holds.
  const std::string plain = dir / "plain-idx3-ubyte";
  write_file(plain, idx_bytes({60000, 28, 28}, 100));
  CHECK(contains(message_of<ValueError>([&] { io::read_idx(plain); }),
                 "read_idx(\"" + plain + "\"): the header announces 47040000 bytes of data but the file holds 100 (it "
                 "is truncated)"));
  // A gzip file holds at most 1032 times its size (deflate's best ratio): 1.5 GB from 100 bytes is a lie.
  const std::string gz = dir / "lie-idx3-ubyte.gz";
  append_gzip(gz, idx_bytes({2000000, 28, 28}, 10));
  const auto r = in_child_with_memory_limit(256u << 20, [&] { io::read_idx(gz); });
  CHECK_MESSAGE(contains(r.error, "ValueError: read_idx(\"" + gz + "\"): the header announces 1568000000 bytes of data, "
                                  "more than a gzip file of " + std::to_string(fs::file_size(gz)) +
                                  " bytes can hold (deflate inflates at most 1032 times)"),
                r.error);
  // Over the limit of one file, whatever the file.
  const std::string huge = dir / "huge-idx3-ubyte";
  write_file(huge, idx_bytes({4000, 1000, 1000}, 0));
  CHECK(contains(message_of<ValueError>([&] { io::read_idx(huge); }),
                 "read_idx(\"" + huge + "\"): the header announces dimensions (4000, 1000, 1000), 3.73 GiB of data, "
                 "more than read_idx reads from one file (2.00 GiB)"));
}

TEST_CASE("IDX data that does not fit in memory: OutOfMemoryError naming the file, not a bare std::bad_alloc") {
  if (kSanitized) {
    MESSAGE("skipped under a sanitizer (it needs RLIMIT_AS)");
    return;
  }
  TempDir dir("msgs");
  // 1.5 GB of images in a sparse file (no disk used), read under a 256 MiB limit.
  const std::string big = dir / "big-idx3-ubyte";
  write_file(big, idx_bytes({1900000, 28, 28}, 0));
  fs::resize_file(big, 16 + std::uintmax_t{1900000} * 784);
  const auto r = in_child_with_memory_limit(256u << 20, [&] { io::read_idx(big); });
  CHECK(r.exited);
  CHECK_MESSAGE(contains(r.error, "OutOfMemoryError: read_idx(\"" + big + "\"): not enough memory for the 1.39 GiB of "
                                  "data its header announces ((1900000, 28, 28))"),
                r.error);
  CHECK_MESSAGE(!contains(r.error, "smaller batch"), r.error);
}

TEST_CASE("train_mnist --data with 10x10 images: the model expects 28x28, and the message names the file") {
  TempDir dir("msgs");
  write_idx_set(dir.path, 32, 8);
  const std::string images = dir / "train-images-idx3-ubyte";
  write_file(images, idx_bytes({32, 10, 10}, 32 * 100));
  const auto r = train_mnist({"--data", dir.path.string(), "--epochs", "1", "--verbose", "0"}, dir);
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(contains(r.output, "load_mnist: the images in " + images + " are 10x10, but MNIST-style data (and the "
                                   "models made for it) are 28x28"),
                r.output);
  // The library's loader says the same.
  CHECK(contains(message_of<ValueError>([&] { io::load_mnist(dir.path.string()); }), images + " are 10x10"));
}

// ---- learning rates -----------------------------------------------------------------------------

TEST_CASE("train_mnist --lr inf, 1e300, nan, -1: a usage error (exit 2) naming --lr") {
  TempDir dir("msgs");
  write_idx_set(dir.path, 16, 8);
  for (const std::string& lr : {"inf", "1e300", "nan", "-1"}) {
    CAPTURE(lr);
    const auto r = train_mnist({"--data", dir.path.string(), "--epochs", "1", "--verbose", "0", "--lr", lr}, dir);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(contains(r.output, "--lr must be a finite number >= 0 that float32 can hold (at most 3.4028235e+38), "
                                     "got "),
                  r.output);
  }
}

TEST_CASE("optimizers: a learning rate that is not finite or does not fit float32 is refused at the root") {
  const std::string rule = "must be a finite number >= 0 that float32 can hold (at most 3.4028235e+38), got ";
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(contains(message_of<ValueError>([&] { optimizers::Adam{inf}; }), "optimizer: learning_rate " + rule + "inf"));
  CHECK(contains(message_of<ValueError>([&] { optimizers::SGD{1e300}; }), "learning_rate " + rule + "1e+300"));
  CHECK(contains(message_of<ValueError>([&] { optimizers::RMSprop{std::nan("")}; }), "learning_rate " + rule + "nan"));
  optimizers::Adam adam;
  CHECK(contains(message_of<ValueError>([&] { adam.set_learning_rate(inf); }), "Adam: learning_rate " + rule + "inf"));
  CHECK(adam.current_learning_rate() == doctest::Approx(0.001));  // unchanged
  // From a config: a bad rate is refused, not replaced by the default.
  for (double lr : {1e300, -0.5}) {
    nlohmann::json config = optimizers::to_config(adam);
    config["config"]["learning_rate"] = lr;
    CHECK(contains(message_of<ValueError>([&] { optimizers::from_config(config); }), "learning_rate " + rule));
  }
  // Schedules: their rates when made, and their values at each step.
  CHECK(contains(message_of<ValueError>([&] { optimizers::ExponentialDecay(inf, 10, 0.9); }),
                 "ExponentialDecay: initial_learning_rate " + rule + "inf"));
  CHECK(contains(message_of<ValueError>([&] { optimizers::PiecewiseConstantDecay({10}, {0.1, 1e300}); }),
                 "PiecewiseConstantDecay: values[1] " + rule + "1e+300"));
  auto exploding = std::make_shared<optimizers::ExponentialDecay>(1.0, 1, 1e10);  // 1e10^step: past float32 at step 4
  optimizers::SGD sgd(exploding);
  sgd.set_iterations(3);
  CHECK(sgd.current_learning_rate() == doctest::Approx(1e30));
  sgd.set_iterations(4);
  CHECK(contains(message_of<ValueError>([&] { sgd.current_learning_rate(); }),
                 "SGD: the learning-rate schedule ExponentialDecay: its value at step 4 " + rule + "1e+40"));
}

// ---- class_weight -------------------------------------------------------------------------------

TEST_CASE("class_weight with classes the model does not have: Keras's ValueError, checked against the output width") {
  Small s;
  const std::string keras = "Expected `class_weight` to be a dict with keys from 0 to one less than the number of "
                            "classes, found ";
  auto msg = message_of<ValueError>([&] { s.model.fit(s.x, s.y, {.verbose = 0, .class_weight = {{0, 1.0}, {7, 2.0}}}); });
  CHECK_MESSAGE(contains(msg, "fit: " + keras + "{0: 1, 7: 2}; the model has 3 classes, so the keys must be among 0 to 2"),
                msg);
  CHECK(contains(message_of<ValueError>([&] { s.model.fit(s.x, s.y, {.verbose = 0, .class_weight = {{-1, 1.0}}}); }),
                 keras + "{-1: 1}"));
  // Through a dataset too.
  auto ds = io::Dataset::from_tensor_slices({s.x}, {s.y}).batch(3);
  CHECK(contains(message_of<ValueError>([&] { s.model.fit(ds, {.verbose = 0, .class_weight = {{3, 1.0}}}); }), keras));
  // A single sigmoid unit has two classes, 0 and 1.
  Sequential binary({layers::Input({4}), layers::Dense(1, {.activation = "sigmoid"})});
  binary.compile("sgd", "binary_crossentropy");
  auto y01 = Tensor::from_vector<float>({6, 1}, {0, 1, 1, 0, 1, 0});
  CHECK_NOTHROW(binary.fit(s.x, y01, {.verbose = 0, .class_weight = {{0, 1.0}, {1, 3.0}}}));
  CHECK(contains(message_of<ValueError>([&] { binary.fit(s.x, y01, {.verbose = 0, .class_weight = {{0, 1.0}, {1, 1.0}, {2, 1.0}}}); }),
                 "the model has 2 classes"));
  // Fewer keys than classes, with gaps, is fine (as in Keras 3; the others weigh 1).
  CHECK_NOTHROW(s.model.fit(s.x, s.y, {.verbose = 0, .class_weight = {{0, 2.0}, {2, 0.5}}}));
}

TEST_CASE("class_weight: negative and non-finite weights are refused") {
  Small s;
  const auto before = s.model.get_weights();
  CHECK(contains(message_of<ValueError>([&] { s.model.fit(s.x, s.y, {.verbose = 0, .class_weight = {{0, 1.0}, {1, -2.0}}}); }),
                 "fit: class_weight[1] is -2; class weights must be finite and >= 0"));
  CHECK(contains(message_of<ValueError>([&] {
                   s.model.fit(s.x, s.y, {.verbose = 0, .class_weight = {{0, std::numeric_limits<double>::infinity()}}});
                 }),
                 "class_weight[0] is inf"));
  CHECK(testing::contains(message_of<ValueError>([&] { s.model.fit(s.x, s.y, {.verbose = 0, .class_weight = {{0, std::nan("")}}}); }),
                          "class_weight[0] is nan"));
  CHECK(s.model.get_weights()[0].to_vector<float>() == before[0].to_vector<float>());  // refused before any step
}

// ---- BackupAndRestore metadata ------------------------------------------------------------------

TEST_CASE("BackupAndRestore metadata without a field: the file, the field and the fix") {
  CHECK(contains(backup_error(R"({"step": 0})"), "training_metadata has no field \"epoch\" (the next epoch to train)"));
  CHECK(contains(backup_error(R"({"epoch": 1})"), "training_metadata has no field \"step\" (the next batch of that epoch)"));
  // No metadata at all.
  TempDir dir("msgs");
  Small s;
  const std::string file = write_backup(dir.path / "b", s.model, "{}");
  {
    auto h5 = io::hdf5::File::create(file);  // weights only, no training_metadata
    auto weights = h5.create_group("model_weights");
    io::save_weights_to_group(weights, s.model.layers());
  }
  auto callback = std::make_shared<callbacks::BackupAndRestore>((dir.path / "b").string());
  auto msg = message_of<io::FileError>([&] { s.model.fit(s.x, s.y, {.verbose = 0, .callbacks = {callback}}); });
  CHECK_MESSAGE(contains(msg, "BackupAndRestore(\"" + file + "\"): the attribute training_metadata (where to resume) is "
                              "missing; the backup is damaged; delete the backup directory"),
                msg);
}

TEST_CASE("BackupAndRestore metadata of the wrong type: the file, the field, what it holds and the fix") {
  CHECK(contains(backup_error(R"({"epoch": "3", "step": 0})"),
                 "training_metadata field \"epoch\" (the next epoch to train) must be an integer from 0 to 2147483647, "
                 "got \"3\""));
  CHECK(contains(backup_error(R"({"epoch": 2.5, "step": 0})"), "field \"epoch\" (the next epoch to train) must be an "
                                                                "integer from 0 to 2147483647, got 2.5"));
  CHECK(contains(backup_error(R"({"epoch": 1, "step": -4})"), "field \"step\" (the next batch of that epoch) must be an "
                                                                "integer from 0 to 9223372036854775807, got -4"));
  CHECK(contains(backup_error(R"({"epoch": 99999999999, "step": 0})"), "got 99999999999"));
  CHECK(contains(backup_error("[1, 2]"), "training_metadata is [1,2], not a JSON object {\"epoch\": ..., \"step\": ...}"));
  // The model keeps its weights: nothing is restored from a damaged backup.
  Small s;
  TempDir dir("msgs");
  const auto before = s.model.get_weights();
  Small other;
  write_backup(dir.path / "b", other.model, R"({"epoch": null, "step": 0})");
  auto callback = std::make_shared<callbacks::BackupAndRestore>((dir.path / "b").string());
  CHECK_THROWS_AS(s.model.fit(s.x, s.y, {.verbose = 0, .callbacks = {callback}}), io::FileError);
  CHECK(s.model.get_weights()[0].to_vector<float>() == before[0].to_vector<float>());
}

TEST_CASE("BackupAndRestore metadata that is not JSON, or empty: the file and the fix") {
  CHECK(contains(backup_error("epoch=3"), "training_metadata is not valid JSON ("));
  CHECK(contains(backup_error(""), "training_metadata is not valid JSON ("));
}

TEST_CASE("BackupAndRestore: an empty backup file names the file and the fix") {
  TempDir dir("msgs");
  Small s;
  fs::create_directories(dir.path / "b");
  const std::string file = dir / "b/backup.h5";
  write_file(file, "");
  auto callback = std::make_shared<callbacks::BackupAndRestore>((dir.path / "b").string());
  auto msg = message_of<io::FileError>([&] { s.model.fit(s.x, s.y, {.verbose = 0, .callbacks = {callback}}); });
  CHECK_MESSAGE(contains(msg, "BackupAndRestore: \"" + file + "\" is not an HDF5 file"), msg);
  CHECK_MESSAGE(contains(msg, "the backup is damaged; delete the backup directory \"" + (dir.path / "b").string() +
                              "\" to start training over"),
                msg);
}

TEST_CASE("train_mnist --resume with a backup past --epochs says there is nothing left to train") {
  TempDir dir("msgs");
  write_idx_set(dir.path, 32, 8);
  const fs::path backup = dir.path / "backup";
  write_backup(backup, mnist_mlp(), R"({"epoch": 7, "step": 0})");
  const auto r = train_mnist({"--data", dir.path.string(), "--epochs", "5", "--verbose", "0", "--resume", backup.string()},
                             dir);
  CHECK(r.exit_code == 0);
  CHECK_MESSAGE(contains(r.output, "BackupAndRestore: the backup in " + backup.string() + " has finished epoch 7; "
                                   "fit(epochs=5) has nothing left to train, and deletes the backup as it ends "
                                   "(delete_checkpoint)"),
                r.output);
  CHECK(contains(r.output, "Test accuracy:"));
}

TEST_CASE("train_mnist --resume naming a file, not a directory: a clear error") {
  TempDir dir("msgs");
  write_idx_set(dir.path, 16, 8);
  const std::string file = dir / "not-a-dir";
  write_file(file, "x");
  const auto r = train_mnist({"--data", dir.path.string(), "--epochs", "1", "--verbose", "0", "--resume", file}, dir);
  CHECK(r.exit_code == 2);  // a usage error, before any data is read
  CHECK_MESSAGE(contains(r.output, "--resume " + file + ": this is a file; give the directory to keep the backup in"),
                r.output);
  CHECK(testing::read_bytes(file) == "x");
}

// ---- out of memory ------------------------------------------------------------------------------

TEST_CASE("out of memory for a model's weights names the variable and its size; no smaller batch is suggested") {
  if (kSanitized) {
    MESSAGE("skipped under a sanitizer (it needs RLIMIT_AS)");
    return;
  }
  // A Dense layer of 65536 x 65536 float32 weights (16 GiB) under a 512 MiB limit.
  const auto r = in_child_with_memory_limit(512u << 20, [] {
    Sequential huge({layers::Input({1 << 16}), layers::Dense(1 << 16, {.name = "huge"})});
  });
  CHECK(r.exited);
  CHECK_MESSAGE(contains(r.error, "OutOfMemoryError: out of memory allocating the variable \"huge/kernel:0\" ((65536, "
                                  "65536) float32, 16.00 GiB): the model's weights and optimizer state do not fit in "
                                  "this device's memory, whatever the batch size; use a smaller model, or a device "
                                  "with more memory (cpu:0: out of memory allocating 16.00 GiB"),
                r.error);
  CHECK_MESSAGE(!contains(r.error, "smaller batch"), r.error);
  // The message alone, from an allocator's error.
  const OutOfMemoryError cause(std::string("cuda:0: out of memory allocating 2.00 GiB") + kSmallerBatchAdvice);
  auto msg = message_of<OutOfMemoryError>([&] { raise_variable_out_of_memory("Adam/m/dense/kernel:0", {4, 5}, DType::float32, &cause); });
  CHECK(msg == "out of memory allocating the variable \"Adam/m/dense/kernel:0\" ((4, 5) float32, 80 B): the model's "
               "weights and optimizer state do not fit in this device's memory, whatever the batch size; use a smaller "
               "model, or a device with more memory (cuda:0: out of memory allocating 2.00 GiB)");
}

TEST_CASE("out of memory for a step's activations suggests a smaller batch") {
  if (kSanitized) {
    MESSAGE("skipped under a sanitizer (it needs RLIMIT_AS)");
    return;
  }
  // Small weights (Dense 1 -> 16384), but a batch of 65536 samples: 4 GiB of outputs, under a 512 MiB limit.
  const auto r = in_child_with_memory_limit(512u << 20, [] {
    Sequential wide({layers::Input({1}), layers::Dense(1 << 14, {.name = "wide"})});
    wide.predict(Tensor::zeros({1 << 16, 1}), {.batch_size = 1 << 16, .verbose = 0});
  });
  CHECK(r.exited);
  CHECK_MESSAGE(contains(r.error, "OutOfMemoryError: "), r.error);
  CHECK_MESSAGE(contains(r.error, "out of memory allocating 4.00 GiB"), r.error);
  CHECK_MESSAGE(contains(r.error, "use a smaller batch size"), r.error);
  CHECK_MESSAGE(!contains(r.error, "the variable"), r.error);
}

// ---- arrays -------------------------------------------------------------------------------------

TEST_CASE("predict, evaluate, fit and the *_on_batch calls on 0 samples: a ValueError naming x") {
  Small s;
  const Tensor none = Tensor::zeros({0, 4});
  const Tensor no_labels = Tensor::zeros({0}, DType::int32);
  const std::string rule = ": x has 0 samples (shape (0, 4)); give at least one sample";
  CHECK(contains(message_of<ValueError>([&] { s.model.predict(none, {.verbose = 0}); }), "predict" + rule));
  CHECK(contains(message_of<ValueError>([&] { s.model.evaluate(none, no_labels, {.verbose = 0}); }), "evaluate" + rule));
  CHECK(contains(message_of<ValueError>([&] { s.model.fit(none, no_labels, {.verbose = 0}); }), "fit" + rule));
  CHECK(contains(message_of<ValueError>([&] { s.model.predict_on_batch({none}); }), "predict_on_batch" + rule));
  CHECK(contains(message_of<ValueError>([&] { s.model.train_on_batch({none}, {no_labels}); }), "train_on_batch" + rule));
  CHECK(contains(message_of<ValueError>([&] { s.model.test_on_batch({none}, {no_labels}); }), "test_on_batch" + rule));
  CHECK(contains(message_of<ValueError>([&] {
                   s.model.fit(s.x, s.y, {.verbose = 0, .validation_data = std::make_pair(std::vector<Tensor>{none},
                                                                                     std::vector<Tensor>{no_labels})});
                 }),
                 "fit(validation_data)" + rule));
}

TEST_CASE("x and y with different sample counts: a ShapeError with both counts") {
  Small s;
  auto five = Tensor::from_vector<std::int32_t>({5}, {0, 1, 2, 0, 1});
  CHECK(contains(message_of<ShapeError>([&] { s.model.fit(s.x, five, {.verbose = 0}); }),
                 "fit(x, y): all arrays must have the same number of samples, got 6, 5"));
  CHECK(contains(message_of<ShapeError>([&] { s.model.evaluate(s.x, five, {.verbose = 0}); }),
                 "evaluate(x, y): all arrays must have the same number of samples, got 6, 5"));
  const std::string weights =
      message_of<ShapeError>([&] { s.model.fit(s.x, s.y, {.verbose = 0, .sample_weight = Tensor::full({4}, 1.0)}); });
  CHECK(contains(weights, "fit: sample_weight must have shape (6,) (one weight per sample)"));
  CHECK(contains(weights, "got (4,)"));
  // Per-time-step weights need labels with a time axis of that length.
  CHECK(contains(message_of<ShapeError>([&] {
                   s.model.fit(s.x, s.y, {.verbose = 0, .sample_weight = Tensor::full({6, 3}, 1.0)});
                 }),
                 "or (6, time) (one per time step)"));
}

TEST_CASE("labels of the wrong type: fractional class ids, one-hot rows for class ids, class ids for one-hot") {
  Small s;
  // Keras casts 1.5 to class 1 silently; tower refuses it.
  auto halves = Tensor::from_vector<float>({6}, {0, 1.5f, 2, 0, 1, 2});
  auto msg = message_of<ValueError>([&] { s.model.fit(s.x, halves, {.verbose = 0, .shuffle = false}); });
  CHECK_MESSAGE(contains(msg, "sparse_categorical_crossentropy: label 1.5 (sample 1 of the batch) is not a class id; "
                              "labels must be whole numbers 0..2"),
                msg);
  CHECK_NOTHROW(s.model.fit(s.x, Tensor::from_vector<float>({6}, {0, 1, 2, 0, 1, 2}), {.verbose = 0}));  // whole floats
  CHECK(contains(message_of<ShapeError>([&] { s.model.fit(s.x, io::to_categorical(s.y, 3), {.verbose = 0}); }),
                 "(for one-hot labels use categorical_crossentropy)"));
  Sequential onehot({layers::Input({4}), layers::Dense(3, {.activation = "softmax"})});
  onehot.compile("sgd", "categorical_crossentropy");
  CHECK(contains(message_of<ShapeError>([&] { onehot.fit(s.x, s.y, {.verbose = 0}); }),
                 "(for integer class ids use sparse_categorical_crossentropy, or one-hot encode the labels)"));
}

// Found by fuzz_model_config's first long run (docs/fuzzing.md): JSON errors other than a syntax error
// escaped as nlohmann exceptions instead of tower::Errors.
TEST_CASE("model_config JSON: a number beyond double's range or a field of the wrong type is a ValueError naming the layer") {
  const auto overflow = message_of<ValueError>([] { io::model_from_json(R"({"class_name": 2e400})"); });
  CHECK(contains(overflow, "model_from_json: the JSON text cannot be read: "));
  CHECK(contains(overflow, "number overflow parsing '2e400'"));
  const std::string config = R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 4], "name": "in"}},
      {"class_name": "Dense", "config": {"name": "d", "units": 3, "kernel_initializer":
          {"class_name": "VarianceScaling", "config": {"scale": 1.0, "mode": null}}}}]}})";
  const auto null_mode = message_of<ValueError>([&] { io::model_from_json(config); });
  CHECK(contains(null_mode, "layer config of Dense \"d\": a field has the wrong type or an out-of-range value ("));
  CHECK(contains(null_mode, "type must be string, but is null"));
}

// Issue 37: JSON nested tens of thousands of levels deep overflowed the stack (SIGSEGV) while it was
// parsed, copied or printed. Every JSON tower reads is bounded (layers::kMaxJsonDepth), and refused
// before the deep part is built.
TEST_CASE("JSON nested too deep: model_from_json, a model file's model_config and a backup's metadata are refused") {
  const auto lists = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  const auto objects = [](int n) {
    std::string text;
    for (int i = 0; i < n; ++i) text += R"({"a": )";
    return text + "1" + std::string(n, '}');
  };
  const std::string limit = "more than " + std::to_string(layers::kMaxJsonDepth) + " levels deep";
  CHECK(contains(message_of<ValueError>([&] { io::model_from_json(lists(100000)); }),
                 "model_from_json: the JSON nests objects and lists " + limit));
  // Deep inside a layer's argument, and just within the bound (then the usual config errors apply).
  const auto with_units = [](const std::string& units) {
    return R"({"class_name": "Sequential", "config": {"name": "s", "layers": [{"class_name": "Dense", "config": )"
           R"({"name": "d", "units": )" + units + "}}]}}";
  };
  CHECK(contains(message_of<ValueError>([&] { io::model_from_json(with_units(objects(50000))); }), limit));
  CHECK_FALSE(contains(message_of<ValueError>([&] { io::model_from_json(with_units(lists(layers::kMaxJsonDepth - 5))); }),
                       limit));
  // Models nested 30 deep (about a hundred levels of JSON) are within the bound and load.
  nlohmann::json nested = nlohmann::json::parse(R"({"class_name": "Dense", "config": {"name": "d", "units": 2}})");
  for (int i = 0; i < 30; ++i) {
    const std::string n = std::to_string(i);
    nlohmann::json input = {{"class_name", "InputLayer"}};
    input["config"] = {{"batch_input_shape", {nullptr, 4}}, {"name", "in" + n}};
    nlohmann::json outer = {{"class_name", "Sequential"}};
    outer["config"] = {{"name", "m" + n}};
    outer["config"]["layers"] = nlohmann::json::array({input, nested});
    nested = std::move(outer);
  }
  CHECK_NOTHROW(io::model_from_json(nested.dump()));

  TempDir dir("msgs");
  const std::string file = dir / "deep.h5";
  {
    auto h5 = io::hdf5::File::create(file);
    h5.write_string_attr("model_config", objects(30000));
    h5.create_group("model_weights");
  }
  CHECK(contains(message_of<ValueError>([&] { models::load_model(file); }),
                 "load_model(\"" + file + "\"): model_config: the JSON nests objects and lists " + limit));

  const auto backup = backup_error(objects(30000));
  CHECK_MESSAGE(contains(backup, "training_metadata: the JSON nests objects and lists " + limit), backup);
}

TEST_CASE("models nested in models beyond kMaxModelNesting are refused where the next level is made") {
  // Each level is checked as it is made, so a loop making thousands of levels stops at the bound, with
  // no deep recursion (building, copying or describing thousands of levels overflowed the stack).
  clear_session();
  Model inner = Sequential({layers::Input({2}), layers::Dense(2)});
  for (int level = 2; level <= kMaxModelNesting; ++level) inner = Sequential({layers::Input({2}), inner});
  const Tensor x = Tensor::zeros(Shape({1, 2}));
  CHECK(inner.predict(x, {.verbose = 0}).shape() == Shape({1, 2}));  // the bound itself works
  const std::string sequential = message_of<ValueError>([&] { Sequential({layers::Input({2}), inner}); });
  CHECK_MESSAGE(contains(sequential, "it would nest models 101 deep (a model in a model in ...); tower allows at most "
                                     "100"),
                sequential);
  const KerasTensor input = layers::Input({2});
  CHECK(contains(message_of<ValueError>([&] { Model(input, inner(input)); }), "nest models 101 deep"));
}

TEST_CASE("a backup's optimizer state of another run, and a file's training_config, name the file and the fix") {
  TempDir dir("msgs");
  // A backup written by a run with Adam, resumed by a run with RMSprop.
  Small adam;
  adam.model.compile(optimizers::Adam(), "sparse_categorical_crossentropy");
  auto keep = std::make_shared<callbacks::BackupAndRestore>((dir.path / "backup").string(),
                                                            callbacks::BackupAndRestoreOptions{.delete_checkpoint = false});
  adam.model.fit(adam.x, adam.y, {.epochs = 1, .verbose = 0, .callbacks = {keep}});
  Small rmsprop;
  rmsprop.model.compile(optimizers::RMSprop(), "sparse_categorical_crossentropy");
  auto resume = std::make_shared<callbacks::BackupAndRestore>((dir.path / "backup").string());
  const std::string msg = message_of<io::FileError>(
      [&] { rmsprop.model.fit(rmsprop.x, rmsprop.y, {.epochs = 2, .verbose = 0, .callbacks = {resume}}); });
  CHECK_MESSAGE(contains(msg, "BackupAndRestore(\"" + (dir / "backup/backup.h5") + "\"): optimizer weight"), msg);
  CHECK_MESSAGE(contains(msg, "the backup was saved by a run with another optimizer or model: train as that run did, "
                              "or delete the backup directory"),
                msg);
  // A saved slot of another shape, found when the slot is made at the first step: named by its source.
  Small other;
  other.model.compile(optimizers::Adam(), "sparse_categorical_crossentropy");
  other.model.optimizer().set_state(1, {{"Adam/m/" + other.model.layers()[0]->weights()[0]->name(),
                                         Tensor::zeros(Shape({5, 5}))}},
                                    "BackupAndRestore(\"b.h5\"): the backup was saved by another run");
  const std::string slot = message_of<ShapeError>([&] { other.model.fit(other.x, other.y, {.epochs = 1, .verbose = 0}); });
  CHECK_MESSAGE(contains(slot, "has shape (5, 5) but the slot has (4, 3); BackupAndRestore(\"b.h5\")"), slot);

  // A model file whose training_config names a loss this program does not know.
  const std::string file = dir / "model.h5";
  {
    auto h5 = io::hdf5::File::create(file);
    h5.write_string_attr("model_config", io::model_to_config(adam.model).dump());
    auto weights = h5.create_group("model_weights");
    io::save_weights_to_group(weights, adam.model.layers());
    h5.write_string_attr("training_config", R"({"loss": "my_contrastive_loss", "optimizer_config": )"
                                            R"({"class_name": "SGD", "config": {"learning_rate": 0.01}}})");
  }
  const std::string config = message_of<ValueError>([&] { models::load_model(file); });
  CHECK_MESSAGE(contains(config, "load_model(\"" + file + "\"): training_config: Unknown loss \"my_contrastive_loss\""),
                config);
  CHECK_MESSAGE(contains(config, "load_model(path, {.compile = false})"), config);
}
