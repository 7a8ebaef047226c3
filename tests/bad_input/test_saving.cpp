// Bad input, kind "files that never lie" (docs/refusals.md): saves that hit the file-size limit, read-only
// targets, destinations checked before training, non-finite weights, checksums of tower's own files.
#include "tests/bad_input/bad_input.h"

#include <hdf5.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <limits>

#include "tower/io/backup_and_restore.h"
#include "tower/io/keras_model.h"
#include "tower/io/keras_weights.h"
#include "tower/io/model_checkpoint.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::FileSnapshot;
using tower::testing::message_of;
using tower::testing::read_bytes;
using tower::testing::TempDir;
namespace fs = std::filesystem;

namespace {

Model small_model(std::uint64_t seed = 1) {
  clear_session();
  set_random_seed(seed);
  Model m = Sequential({layers::Input({6}), layers::Dense(8, {.activation = "relu", .name = "hidden"}),
                        layers::Dense(3, {.activation = "softmax", .name = "out"})});
  m.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
  return m;
}

std::pair<Tensor, Tensor> data(std::int64_t n = 32) {
  Tensor x = random_normal({n, 6}, 0, 1, 5);
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i) labels.push_back(static_cast<std::int32_t>(i % 3));
  return {x, Tensor::from_vector<std::int32_t>({n}, labels)};
}

// A trained, compiled model: it has optimizer slots to save.
Model trained_model(std::uint64_t seed = 1) {
  Model m = small_model(seed);
  auto [x, y] = data();
  m.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0});
  return m;
}

std::vector<Tensor> values(const Model& m) {
  std::vector<Tensor> out;
  for (const auto& w : m.weights()) out.push_back(w->value().to(cpu_device()).clone());
  return out;
}

bool same_values(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].nbytes() != b[i].nbytes() || std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes()) != 0)
      return false;
  return true;
}

// The temporary files of saves ("<name>.tmp-<pid>") left in dir.
std::vector<std::string> temporaries(const TempDir& dir) {
  std::vector<std::string> out;
  for (const auto& name : dir.files())
    if (contains(name, ".tmp-")) out.push_back(name);
  return out;
}

void make_read_only(const std::string& path) { fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read); }

// Counts the epochs fit began: 0 when a callback refused in on_train_begin.
struct EpochCounter : Callback {
  int epochs = 0;
  void on_epoch_begin(int, const Logs&) override { ++epochs; }
};

// Where the stored bytes of dataset `name` lie in `file` (its one chunk when chunked), and whether
// it is chunked with HDF5's fletcher32 filter.
struct DataLocation {
  haddr_t address = HADDR_UNDEF;
  hsize_t size = 0;
  bool fletcher32 = false;
};

DataLocation locate(const std::string& file, const std::string& name) {
  DataLocation where;
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0);
  hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  REQUIRE_MESSAGE(d >= 0, file << " has no dataset " << name);
  hid_t plist = H5Dget_create_plist(d);
  if (H5Pget_layout(plist) == H5D_CHUNKED) {
    unsigned flags = 0, config = 0;
    std::size_t n = 0;
    where.fletcher32 = H5Pget_filter_by_id2(plist, H5Z_FILTER_FLETCHER32, &flags, &n, nullptr, 0, nullptr, &config) >= 0;
    hid_t space = H5Dget_space(d);
    hsize_t chunks = 0;
    H5Dget_num_chunks(d, space, &chunks);
    REQUIRE(chunks == 1);
    unsigned mask = 0;
    REQUIRE(H5Dget_chunk_info(d, space, 0, nullptr, &mask, &where.address, &where.size) >= 0);
    H5Sclose(space);
  } else {
    where.address = H5Dget_offset(d);
    where.size = H5Dget_storage_size(d);
  }
  H5Pclose(plist);
  H5Dclose(d);
  H5Fclose(f);
  REQUIRE(where.address != HADDR_UNDEF);
  return where;
}

// Flips one bit in the middle of the stored data of dataset `name`, as a bad disk sector or a
// damaged copy would.
void flip_a_bit(const std::string& file, const std::string& name) {
  const DataLocation where = locate(file, name);
  std::string bytes = read_bytes(file);
  const std::size_t at = where.address + where.size / 2;
  REQUIRE(at < bytes.size());
  bytes[at] = static_cast<char>(bytes[at] ^ 0x10);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// Writes `value` into the existing float32 dataset `name` of `file` in place, as h5py's
// `f[name][...] = value` would: HDF5 recomputes fletcher32, tower's attribute stays as it was.
void overwrite_in_place(const std::string& file, const std::string& name, float value) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(f >= 0);
  hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  hid_t space = H5Dget_space(d);
  std::vector<float> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)), value);
  REQUIRE(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

volatile sig_atomic_t xfsz_handled = 0;
void on_xfsz(int) { xfsz_handled = 1; }

// Sets the first value of a weight to NaN at the end of each epoch: a training that diverged there.
struct Diverge : Callback {
  void on_epoch_end(int, Logs&) override {
    const VariablePtr w = model().weights().front();
    Tensor bad = w->value().to(cpu_device()).clone();
    bad.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
    w->assign(bad);
  }
};

}  // namespace

// ---- the file size limit (SIGXFSZ) ---------------------------------------------------------------

TEST_CASE("saving past the file size limit (ulimit -f) is a named error, not death by SIGXFSZ") {
  // In a child process: SIGXFSZ's default action would kill it. The child saves, with SIGXFSZ at its
  // default disposition and then with a handler of the user's, writes what it saw to `report` and exits.
  TempDir dir("saving"), out("saving_report");
  Model big = Sequential({layers::Input({512}), layers::Dense(512, {.name = "dense"})});  // a 1 MiB kernel
  big.compile(optimizers::Adam(), "mse");
  const std::string weights = dir / "w.h5", model = dir / "m.h5";
  small_model().save_weights(weights);
  small_model().save(model);
  const FileSnapshot weights_before(weights), model_before(model);

  for (const bool with_handler : {false, true}) {
    CAPTURE(with_handler);
    const std::string report = out / (with_handler ? "handler.txt" : "default.txt");
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      std::signal(SIGXFSZ, with_handler ? on_xfsz : SIG_DFL);
      const rlimit limit{64 * 1024, RLIM_INFINITY};
      ::setrlimit(RLIMIT_FSIZE, &limit);
      std::string seen;
      for (const auto& save : std::vector<std::function<void()>>{[&] { big.save_weights(weights); },
                                                                 [&] { big.save(model); }}) {
        try {
          save();
          seen += "saved\n";
        } catch (const io::FileError& e) {
          seen += std::string(e.what()) + "\n";
        }
      }
      // The process's disposition and signal mask are as they were, and no SIGXFSZ is pending.
      struct sigaction now {};
      ::sigaction(SIGXFSZ, nullptr, &now);
      sigset_t pending, mask;
      ::sigpending(&pending);
      ::pthread_sigmask(SIG_BLOCK, nullptr, &mask);
      if ((now.sa_handler == SIG_DFL) == with_handler) seen += "disposition changed\n";
      if (sigismember(&pending, SIGXFSZ)) seen += "SIGXFSZ pending\n";
      if (sigismember(&mask, SIGXFSZ)) seen += "SIGXFSZ left blocked\n";
      if (xfsz_handled) seen += "handler called\n";
      std::ofstream(report) << seen;
      ::_exit(0);
    }
    const int status = tower::testing::wait_for(pid);
    REQUIRE_MESSAGE(WIFEXITED(status), "the child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
    const std::string seen = read_bytes(report);
    CHECK_MESSAGE(contains(seen, "save_weights(" + quoted(weights) + "): cannot write \"" + weights + ".tmp-"),
                  seen);
    CHECK_MESSAGE(contains(seen, "File too large (the file size limit, ulimit -f, is 65536 bytes: raise it) (" +
                                     quoted(weights) + " is unchanged)"),
                  seen);
    CHECK_MESSAGE(contains(seen, "save(" + quoted(model) + "): cannot write"), seen);
    CHECK_MESSAGE(contains(seen, quoted(model) + " is unchanged"), seen);
    CHECK_FALSE(contains(seen, "saved"));
    CHECK_FALSE(contains(seen, "changed\n"));
    CHECK_FALSE(contains(seen, "pending"));
    CHECK_FALSE(contains(seen, "blocked"));
    CHECK_FALSE(contains(seen, "handler called"));
    CHECK(weights_before.unchanged());
    CHECK(model_before.unchanged());
    CHECK(dir.files() == std::vector<std::string>{"m.h5", "w.h5"});
  }
}

// ---- read-only targets ---------------------------------------------------------------------------

TEST_CASE("save_weights onto a read-only file is refused (even as root), and the file is left as it was") {
  TempDir dir("saving");
  const std::string path = dir / "w.h5";
  small_model(1).save_weights(path);
  make_read_only(path);
  const FileSnapshot before(path);
  Model other = small_model(2);
  const auto msg = message_of<io::FileError>([&] { other.save_weights(path); });
  CHECK_MESSAGE(contains(msg, "save_weights(" + quoted(path) + "): " + quoted(path) +
                                  " is read-only (mode 0444); tower does not replace a read-only file: make it "
                                  "writable (chmod u+w " + quoted(path) + ") or save under another name"),
                msg);
  CHECK(before.unchanged());
  CHECK(dir.files() == std::vector<std::string>{"w.h5"});
}

TEST_CASE("model.save onto a file without write permission bits is refused; the file is left as it was") {
  TempDir dir("saving");
  const std::string path = dir / "m.h5";
  trained_model(1).save(path);
  fs::permissions(path, fs::perms::owner_read);  // 0400
  const FileSnapshot before(path);
  Model other = trained_model(2);
  const auto msg = message_of<io::FileError>([&] { other.save(path); });
  CHECK_MESSAGE(contains(msg, "save(" + quoted(path) + "): " + quoted(path) + " is read-only (mode 0400)"), msg);
  CHECK(contains(msg, "chmod u+w"));
  CHECK(before.unchanged());
  CHECK(dir.files() == std::vector<std::string>{"m.h5"});
}

TEST_CASE("a replaced file keeps its mode and owner") {
  TempDir dir("saving");
  const std::string weights = dir / "w.h5", model = dir / "m.h5";
  small_model(1).save_weights(weights);
  trained_model(1).save(model);
  fs::permissions(weights, fs::perms::owner_read | fs::perms::owner_write);  // 0600
  fs::permissions(model, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);  // 0640
  const bool root = ::geteuid() == 0;
  if (root) REQUIRE(::chown(weights.c_str(), 65534, 65534) == 0);
  const std::string old_weights = read_bytes(weights), old_model = read_bytes(model);

  small_model(2).save_weights(weights);
  trained_model(2).save(model);
  CHECK(read_bytes(weights) != old_weights);
  CHECK(read_bytes(model) != old_model);
  struct stat st {};
  REQUIRE(::stat(weights.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  if (root) {
    CHECK(st.st_uid == 65534u);
    CHECK(st.st_gid == 65534u);
  }
  REQUIRE(::stat(model.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
  CHECK(temporaries(dir).empty());
}

TEST_CASE("ModelCheckpoint onto a read-only file fails in on_train_begin, before the first epoch") {
  TempDir dir("saving");
  auto [x, y] = data();
  for (const bool weights_only : {false, true}) {
    CAPTURE(weights_only);
    const std::string path = dir / "ckpt.h5";
    Model m = trained_model(1);
    if (weights_only)
      m.save_weights(path);
    else
      m.save(path);
    make_read_only(path);
    const FileSnapshot before(path);
    const auto before_values = values(m);
    auto counter = std::make_shared<EpochCounter>();
    auto checkpoint = std::make_shared<callbacks::ModelCheckpoint>(
        path, callbacks::ModelCheckpointOptions{.save_weights_only = weights_only});
    const auto msg = message_of<io::FileError>(
        [&] { m.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .callbacks = {checkpoint, counter}}); });
    CHECK_MESSAGE(contains(msg, "ModelCheckpoint: " + quoted(path) + ": " + quoted(path) + " is read-only (mode 0444)"),
                  msg);
    CHECK(counter->epochs == 0);
    CHECK(same_values(values(m), before_values));
    CHECK(before.unchanged());
    CHECK(temporaries(dir).empty());
    fs::permissions(path, fs::perms::owner_write, fs::perm_options::add);
    fs::remove(path);
  }
}

// ---- destinations checked before training ----------------------------------------------------------

TEST_CASE("ModelCheckpoint: a missing directory, a directory as the file, or an uncreatable place fail before the first epoch") {
  TempDir dir("saving");
  auto [x, y] = data();
  fs::create_directories(dir / "taken.h5");
  struct Case {
    std::string filepath, message;
  };
  const std::vector<Case> cases = {
      {dir / "no/such/ckpt-{epoch}.h5", "the directory " + quoted(dir / "no/such") + " does not exist (create it first)"},
      {dir / "taken.h5", quoted(dir / "taken.h5") + " is a directory; give a file name"},
      {"/proc/tower_ckpt-{epoch:02d}.h5", "cannot create files in the directory \"/proc\""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.filepath);
    Model m = small_model();
    auto counter = std::make_shared<EpochCounter>();
    auto checkpoint = std::make_shared<callbacks::ModelCheckpoint>(c.filepath);
    const auto msg = message_of<io::FileError>(
        [&] { m.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0, .callbacks = {checkpoint, counter}}); });
    CHECK_MESSAGE(contains(msg, "ModelCheckpoint: " + quoted(c.filepath) + ": " + c.message), msg);
    CHECK(counter->epochs == 0);
  }
  CHECK(dir.files() == std::vector<std::string>{"taken.h5"});
  // A writable place passes, and the scratch file of the check is gone again.
  Model m = small_model();
  m.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0,
               .callbacks = {std::make_shared<callbacks::ModelCheckpoint>(dir / "ckpt-{epoch}.h5")}});
  CHECK(dir.files() == std::vector<std::string>{"ckpt-1.h5", "ckpt-2.h5", "taken.h5"});
}

TEST_CASE("BackupAndRestore: a read-only backup fails in on_train_begin, before restoring or training") {
  TempDir dir("saving");
  auto [x, y] = data();
  Model m = small_model();
  const std::string backup = dir / "backup.h5";
  m.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0,
               .callbacks = {std::make_shared<callbacks::BackupAndRestore>(
                   dir.path.string(), callbacks::BackupAndRestoreOptions{.delete_checkpoint = false})}});
  REQUIRE(fs::exists(backup));
  make_read_only(backup);
  const FileSnapshot before(backup);
  const auto before_values = values(m);
  auto counter = std::make_shared<EpochCounter>();
  const auto msg = message_of<io::FileError>([&] {
    m.fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0,
                 .callbacks = {std::make_shared<callbacks::BackupAndRestore>(dir.path.string()), counter}});
  });
  CHECK_MESSAGE(contains(msg, "BackupAndRestore(" + quoted(backup) + "): " + quoted(backup) + " is read-only"), msg);
  CHECK(counter->epochs == 0);
  CHECK(same_values(values(m), before_values));
  CHECK(before.unchanged());
  CHECK(dir.files() == std::vector<std::string>{"backup.h5"});
}

TEST_CASE("train_mnist --save to an unwritable place, a directory, a read-only file or a .keras name fails before training") {
  TempDir dir("saving");
  const std::string data = dir / "data";
  fs::create_directories(data);
  tower::testing::write_idx_set(data, 64, 16);
  fs::create_directories(dir / "models.h5");
  const std::string read_only = dir / "ro.h5";
  small_model().save_weights(read_only);
  make_read_only(read_only);
  const FileSnapshot before(read_only);
  struct Case {
    std::string save, message;
  };
  const std::vector<Case> cases = {
      {"/proc/tower_m.h5", "--save /proc/tower_m.h5: cannot create files in the directory \"/proc\""},
      {dir / "models.h5", "--save " + (dir / "models.h5") + ": " + quoted(dir / "models.h5") + " is a directory"},
      {read_only, "--save " + read_only + ": " + quoted(read_only) + " is read-only (mode 0444)"},
      {dir / "m.keras", "--save " + (dir / "m.keras") + ": the .keras format (Keras 3's zip archive) is not implemented"},
      {dir / "no/such/m.h5", "the directory " + quoted(dir / "no/such") + " does not exist"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.save);
    const auto r = tower::testing::train_mnist(
        {"--data", data, "--epochs", "1", "--verbose", "2", "--save", c.save}, dir);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(contains(r.output, c.message), r.output);
    const bool trained = contains(r.output, "Epoch") || contains(r.output, "Data:");
    CHECK_MESSAGE(!trained, "training started:\n" << r.output);
  }
  CHECK(before.unchanged());
  CHECK(dir.files() == std::vector<std::string>{"data", "models.h5", "process-output.txt", "ro.h5"});
  // A good destination: the check leaves no scratch file behind, and the model is written.
  const auto r = tower::testing::train_mnist({"--data", data, "--epochs", "1", "--verbose", "0", "--save", dir / "m.h5"}, dir);
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(dir.files() == std::vector<std::string>{"data", "m.h5", "models.h5", "process-output.txt", "ro.h5"});
}

// ---- non-finite weights --------------------------------------------------------------------------

TEST_CASE("save_weights and save refuse NaN or infinite weights naming the variable; allow_non_finite writes them") {
  TempDir dir("saving");
  const std::string weights = dir / "w.h5", model = dir / "m.h5";
  Model good = trained_model(1);
  good.save_weights(weights);
  good.save(model);
  const FileSnapshot weights_before(weights), model_before(model);

  Model diverged = trained_model(2);
  const VariablePtr kernel = diverged.get_layer("out")->weights()[0];  // (8, 3)
  Tensor bad = kernel->value().to(cpu_device()).clone();
  bad.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  bad.data<float>()[5] = std::numeric_limits<float>::infinity();
  kernel->assign(bad);

  auto msg = message_of<ValueError>([&] { diverged.save_weights(weights); });
  CHECK_MESSAGE(contains(msg, "save_weights(" + quoted(weights) + "): variable \"" + kernel->name() +
                                  "\" has 2 of 24 values not finite (NaN or infinity), as after a training that "
                                  "diverged (a learning rate too high?); a file of them would predict nothing useful, "
                                  "so nothing was written"),
                msg);
  CHECK(contains(msg, "to write them anyway call save_weights(" + quoted(weights) +
                          ", {.allow_non_finite = true})"));
  msg = message_of<ValueError>([&] { diverged.save(model); });
  CHECK_MESSAGE(contains(msg, "save(" + quoted(model) + "): variable \"" + kernel->name() + "\" has 2 of 24"), msg);
  CHECK(contains(msg, "save(" + quoted(model) + ", {.allow_non_finite = true})"));
  CHECK(weights_before.unchanged());
  CHECK(model_before.unchanged());
  CHECK(dir.files() == std::vector<std::string>{"m.h5", "w.h5"});

  // Asked for, they are written, and read back as they were.
  diverged.save_weights(weights, {.allow_non_finite = true});
  diverged.save(model, {.allow_non_finite = true});
  // They load, as in Keras, with a warning that names the file and the first such variable.
  Model loaded = small_model(3);
  std::ostringstream warnings;
  std::streambuf* old = std::cerr.rdbuf(warnings.rdbuf());
  loaded.load_weights(weights);
  const bool nan_loaded = std::isnan(models::load_model(model).get_layer("out")->weights()[0]->value().data<float>()[0]);
  std::cerr.rdbuf(old);
  CHECK(same_values(values(loaded), values(diverged)));
  CHECK(nan_loaded);
  CHECK_MESSAGE(contains(warnings.str(), "Warning: load_weights(" + quoted(weights) + "): 2 of the 83 loaded weight "
                                         "values are not finite (NaN or infinity), the first in variable \"" +
                                         kernel->name() + "\""),
                warnings.str());
  CHECK_MESSAGE(contains(warnings.str(), "Warning: load_model(" + quoted(model) + "): 2 of the 83"), warnings.str());
}

TEST_CASE("optimizer slots and ModelCheckpoint: non-finite values are refused unless allowed") {
  TempDir dir("saving");
  auto [x, y] = data();
  // A slot only (Adam's m): save() checks the optimizer state it writes; include_optimizer = false does not.
  {
    Model m = trained_model(1);
    const VariablePtr slot = m.optimizer().variables().front();
    Tensor bad = slot->value().to(cpu_device()).clone();
    bad.data<float>()[0] = -std::numeric_limits<float>::infinity();
    slot->assign(bad);
    const auto msg = message_of<ValueError>([&] { m.save(dir / "m.h5"); });
    CHECK_MESSAGE(contains(msg, "variable \"" + slot->name() + "\" has 1 of"), msg);
    CHECK(dir.files().empty());
    m.save(dir / "m.h5", {.include_optimizer = false});
    m.save_weights(dir / "w.h5");
    fs::remove(dir / "m.h5");
    fs::remove(dir / "w.h5");
  }
  // ModelCheckpoint, after an epoch that ended with a NaN weight.
  for (const bool allow : {false, true}) {
    CAPTURE(allow);
    Model m = small_model();
    const std::string path = dir / "ckpt.h5";
    auto checkpoint = std::make_shared<callbacks::ModelCheckpoint>(
        path, callbacks::ModelCheckpointOptions{.save_weights_only = true, .allow_non_finite = allow});
    auto fit = [&] {
      m.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0, .callbacks = {std::make_shared<Diverge>(), checkpoint}});
    };
    if (allow) {
      fit();
      CHECK(fs::exists(path));
    } else {
      const auto msg = message_of<ValueError>(fit);
      CHECK_MESSAGE(contains(msg, "ModelCheckpoint: " + quoted(path) + ": variable \"hidden/kernel:0\" has 1 of 48 "
                                  "values not finite (NaN or infinity)"),
                    msg);
      CHECK(contains(msg, "to write them anyway call ModelCheckpoint(" + quoted(path) + ", {.allow_non_finite = true})"));
      CHECK(dir.files().empty());
    }
  }
}

// ---- checksums -----------------------------------------------------------------------------------

TEST_CASE("tower's files carry checksums: tower_crc32 on every dataset, fletcher32 on every array") {
  TempDir dir("saving");
  const std::string model = dir / "m.h5";
  trained_model().save(model);
  auto file = io::hdf5::File::open(model);
  for (const std::string name : {"model_weights/hidden/hidden/kernel:0", "model_weights/out/out/bias:0",
                                 "optimizer_weights/Adam/m/hidden/kernel:0", "optimizer_weights/iteration:0"}) {
    CAPTURE(name);
    CHECK(file.dataset(name).has_attr("tower_crc32"));
    CHECK(locate(model, name).fletcher32 == (name != "optimizer_weights/iteration:0"));  // a scalar cannot be chunked
  }
}

TEST_CASE("a flipped bit in a weights file's data: load_weights names the file and the dataset; the model is unchanged") {
  TempDir dir("saving");
  const std::string path = dir / "w.h5";
  small_model(1).save_weights(path);
  flip_a_bit(path, "hidden/hidden/kernel:0");
  Model m = small_model(2);
  const auto before = values(m);
  for (const bool by_name : {false, true}) {
    const auto msg = message_of<io::ChecksumError>([&] { m.load_weights(path, {.by_name = by_name}); });
    CHECK_MESSAGE(contains(msg, "load_weights(" + quoted(path) + "): dataset \"/hidden/hidden/kernel:0\" of " +
                                    quoted(path) + " is damaged: HDF5's fletcher32 checksum of its stored data does "
                                                   "not match"),
                  msg);
    CHECK(contains(msg, "use an intact copy"));
    CHECK(same_values(values(m), before));
  }
}

TEST_CASE("a flipped bit in a full-model file's weights or optimizer state: load_model fails naming the dataset") {
  TempDir dir("saving");
  const std::string good = dir / "good.h5";
  trained_model().save(good);
  struct Case {
    std::string dataset, message;
  };
  const std::vector<Case> cases = {
      {"model_weights/out/out/kernel:0", "fletcher32 checksum of its stored data does not match"},
      {"optimizer_weights/Adam/v/hidden/bias:0", "fletcher32 checksum of its stored data does not match"},
      // A scalar is not chunked: the tower_crc32 attribute alone finds the damage (the step count).
      {"optimizer_weights/iteration:0", "the CRC32 of its data is"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.dataset);
    const std::string path = dir / "damaged.h5";
    fs::copy_file(good, path, fs::copy_options::overwrite_existing);
    flip_a_bit(path, c.dataset);
    // An error, not the warning that an optimizer state which does not fit the model gives.
    const auto msg = message_of<io::ChecksumError>([&] { models::load_model(path); });
    CHECK_MESSAGE(contains(msg, "load_model(" + quoted(path) + "): dataset \"/" + c.dataset + "\" of " + quoted(path) +
                                    " is damaged: "),
                  msg);
    CHECK_MESSAGE(contains(msg, c.message), msg);
  }
  CHECK_NOTHROW(models::load_model(good));
}

TEST_CASE("a damaged BackupAndRestore backup is an error naming the backup, the dataset and the way out") {
  TempDir dir("saving");
  auto [x, y] = data();
  const std::string backup = dir / "backup.h5";
  Model m = small_model();
  m.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0,
               .callbacks = {std::make_shared<callbacks::BackupAndRestore>(
                   dir.path.string(), callbacks::BackupAndRestoreOptions{.delete_checkpoint = false})}});
  const std::string good = read_bytes(backup);
  for (const std::string dataset : {"model_weights/hidden/hidden/bias:0", "optimizer_weights/iteration:0"}) {
    CAPTURE(dataset);
    std::ofstream(backup, std::ios::binary | std::ios::trunc) << good;
    flip_a_bit(backup, dataset);
    auto counter = std::make_shared<EpochCounter>();
    const auto msg = message_of<io::ChecksumError>([&] {
      m.fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0,
                   .callbacks = {std::make_shared<callbacks::BackupAndRestore>(dir.path.string()), counter}});
    });
    CHECK_MESSAGE(contains(msg, "BackupAndRestore(" + quoted(backup) + "): dataset \"/" + dataset + "\" of " +
                                    quoted(backup) + " is damaged"),
                  msg);
    CHECK(contains(msg, "or delete the backup to start afresh"));
    CHECK(counter->epochs == 0);
  }
}

TEST_CASE("values changed in place by another HDF5 writer are caught by tower_crc32, named, and how to accept them") {
  // h5py's f[name][...] = x rewrites the data and its fletcher32 checksum, but not tower's attribute.
  TempDir dir("saving");
  const std::string path = dir / "w.h5";
  small_model(1).save_weights(path);
  overwrite_in_place(path, "out/out/kernel:0", 0.5f);
  Model m = small_model(2);
  const auto msg = message_of<io::ChecksumError>([&] { m.load_weights(path); });
  CHECK_MESSAGE(contains(msg, "load_weights(" + quoted(path) + "): dataset \"/out/out/kernel:0\" of " + quoted(path) +
                                  " is damaged: the CRC32 of its data is"),
                msg);
  CHECK(contains(msg, "(attribute tower_crc32)"));
  CHECK(contains(msg, "If you changed the values on purpose with another tool, delete the attribute"));
  // As the message says: without the attribute, the file loads as any Keras file.
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(H5Adelete_by_name(f, "out/out/kernel:0", "tower_crc32", H5P_DEFAULT) >= 0);
  H5Fclose(f);
  m.load_weights(path);
  CHECK(m.get_layer("out")->weights()[0]->value().to(cpu_device()).data<float>()[7] == 0.5f);
}

TEST_CASE("Keras's files and older tower files (no checksum attribute) load as before") {
  const std::string golden = std::string(TOWER_GOLDEN_DIR) + "/files/";
  for (const std::string name : {"mlp_tf_keras.h5", "mlp_keras3.h5", "cnn_tf_keras.h5", "cnn_keras3.h5",
                                 "merge_tf_keras.h5", "keras1_mlp.h5"}) {
    CAPTURE(name);
    const std::string path = golden + "models/" + name;
    Model m = models::load_model(path);
    CHECK(!m.weights().empty());
  }
  // A weights file tower wrote before it had checksums (tests/golden/files/cpp_mlp.h5): every dataset
  // reads, and the dataset has no attribute to check.
  auto file = io::hdf5::File::open(golden + "cpp_mlp.h5");
  std::size_t datasets = 0;
  for (const auto& layer : io::read_weight_file_layers(file))
    for (const auto& w : layer.weight_names) {
      auto dataset = file.group(layer.name).dataset(w);
      CHECK_FALSE(dataset.has_attr("tower_crc32"));
      CHECK(dataset.read().num_elements() > 0);
      ++datasets;
    }
  CHECK(datasets > 0);
}
