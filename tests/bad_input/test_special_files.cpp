// Bad input, kind "saving over what is not a regular file" (docs/refusals.md, issue 37 part 2) and the
// messages of files that cannot be read or written (part 8): a save never replaces a FIFO, a device or a
// socket; it writes through a symbolic link to the file the link names, as h5py and Keras do; a link
// loop, an empty name, a file of another user and a file without read permission get their own words.
#include "tests/bad_input/bad_input.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "tower/io/backup_and_restore.h"
#include "tower/io/idx.h"
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

namespace special_files_test {

namespace fs = std::filesystem;

Model tiny_model() {
  clear_session();
  set_random_seed(3);
  Model m = Sequential({layers::Input({4}), layers::Dense(2, {.activation = "softmax", .name = "out"})});
  m.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  return m;
}

std::pair<Tensor, Tensor> tiny_data() {
  return {random_normal({8, 4}, 0, 1, 5), Tensor::from_vector<std::int32_t>({8}, {0, 1, 0, 1, 0, 1, 0, 1})};
}

bool is_fifo(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

bool is_link(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// A listening-free Unix socket file at p.
void make_socket(const std::string& p) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(p.size() < sizeof addr.sun_path);
  std::copy(p.begin(), p.end(), addr.sun_path);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  ::close(fd);
}

// What `run` returns, run as the user "nobody" (uid 65534) in a child process where this test runs as
// root (as a CI container does), else in this one: what a user without root's rights is told.
std::string as_unprivileged(const TempDir& dir, const std::function<std::string()>& run) {
  if (::geteuid() != 0) return run();
  const std::string report = dir / "report.txt";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::string seen = "could not drop root";
    if (::setgid(65534) == 0 && ::setuid(65534) == 0) seen = run();
    // The report is written by the child, as nobody: into a file root made writable for it.
    std::ofstream(report) << seen;
    ::_exit(0);
  }
  const int status = tower::testing::wait_for(pid);
  REQUIRE(WIFEXITED(status));
  return read_bytes(report);
}

// The message a call throws (as `as_unprivileged` needs it: a string), or "no error".
std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace special_files_test

using namespace special_files_test;

TEST_CASE("a save never replaces a FIFO, a socket or a device, by any of the five ways of saving") {
  TempDir dir("special");
  const std::string fifo = dir / "pipe.h5", socket = dir / "socket.h5";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  make_socket(socket);
  Model m = tiny_model();
  auto [x, y] = tiny_data();
  for (const auto& [path, kind] : {std::pair{fifo, "a FIFO (named pipe)"}, std::pair{socket, "a socket"}}) {
    CAPTURE(path);
    const std::string refusal = "\"" + path + "\" is " + kind + "; a save replaces only a regular file";
    CHECK(contains(message_of<io::FileError>([&] { m.save(path); }), refusal));
    CHECK(contains(message_of<io::FileError>([&] { m.save_weights(path); }), refusal));
    CHECK(contains(message_of<io::FileError>([&] { io::check_writable(path, "--save"); }), refusal));
    auto checkpoint = std::make_shared<callbacks::ModelCheckpoint>(path);
    CHECK(contains(message_of<io::FileError>([&] {
                     m.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0, .callbacks = {checkpoint}});
                   }),
                   refusal));
  }
  // BackupAndRestore: its backup.h5 a FIFO.
  fs::create_directory(dir / "backup");
  REQUIRE(::mkfifo((dir / "backup/backup.h5").c_str(), 0644) == 0);
  auto backup = std::make_shared<callbacks::BackupAndRestore>(dir / "backup");
  CHECK(contains(message_of<io::FileError>(
                     [&] { m.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0, .callbacks = {backup}}); }),
                 "backup.h5\" is a FIFO (named pipe); a save replaces only a regular file"));
  CHECK(is_fifo(fifo));
  CHECK(is_fifo(dir / "backup/backup.h5"));
  // A character device: checked only (the check is what stands between a save and /dev/null, which a
  // save run as root used to replace by a regular file).
  CHECK(contains(message_of<io::FileError>([&] { io::check_writable("/dev/null", "--save /dev/null"); }),
                 "\"/dev/null\" is a character device; a save replaces only a regular file"));
  // train_mnist refuses it as a usage error, before reading any data.
  const auto r = tower::testing::train_mnist({"--save", fifo, "--epochs", "1"}, dir);
  CHECK_MESSAGE(r.exit_code == 2, r.output);
  CHECK_MESSAGE(contains(r.output, "is a FIFO (named pipe)"), r.output);
  CHECK(is_fifo(fifo));
}

TEST_CASE("a save through a symbolic link replaces the file it names, and the link stays") {
  TempDir dir("symlink");
  fs::create_directory(dir / "real");
  Model m = tiny_model();
  m.save(dir / "real/model.h5");
  FileSnapshot before(dir / "real/model.h5");
  fs::create_symlink("real/model.h5", dir / "link.h5");       // relative
  fs::create_symlink(dir / "link.h5", dir / "chain.h5");      // a link to a link
  fs::create_symlink("real/new.h5", dir / "dangling.h5");     // to a file not yet there
  auto [x, y] = tiny_data();
  m.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0});
  m.save(dir / "chain.h5");
  CHECK(is_link(dir / "chain.h5"));
  CHECK(is_link(dir / "link.h5"));
  CHECK_FALSE(before.unchanged());  // the target holds the trained model
  CHECK(read_bytes(dir / "real/model.h5") == read_bytes(dir / "chain.h5"));
  m.save_weights(dir / "dangling.h5");
  CHECK(is_link(dir / "dangling.h5"));
  CHECK(fs::is_regular_file(dir / "real/new.h5"));
  // The temporary file was made in the target's directory, and is gone.
  CHECK(dir.files() == std::vector<std::string>{"chain.h5", "dangling.h5", "link.h5", "real"});
  std::vector<std::string> real;
  for (const auto& e : fs::directory_iterator(dir / "real")) real.push_back(e.path().filename().string());
  std::sort(real.begin(), real.end());
  CHECK(real == std::vector<std::string>{"model.h5", "new.h5"});
  // ModelCheckpoint and BackupAndRestore write through links too.
  fs::create_directory(dir / "backup");
  fs::create_symlink(dir / "real/backup.h5", dir / "backup/backup.h5");
  auto backup = std::make_shared<callbacks::BackupAndRestore>(
      dir / "backup", callbacks::BackupAndRestoreOptions{.delete_checkpoint = false});
  auto checkpoint = std::make_shared<callbacks::ModelCheckpoint>(dir / "link.h5");
  FileSnapshot trained(dir / "real/model.h5");
  m.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0, .callbacks = {backup, checkpoint}});
  CHECK(is_link(dir / "link.h5"));
  CHECK(is_link(dir / "backup/backup.h5"));
  CHECK_FALSE(trained.unchanged());
  CHECK(fs::is_regular_file(dir / "real/backup.h5"));
  CHECK_NOTHROW(models::load_model(dir / "link.h5"));
}

TEST_CASE("a symbolic link loop, an empty name: a save says which, and writes nothing") {
  TempDir dir("loop");
  fs::create_symlink(dir / "b.h5", dir / "a.h5");
  fs::create_symlink(dir / "a.h5", dir / "b.h5");
  Model m = tiny_model();
  CHECK(contains(message_of<io::FileError>([&] { m.save(dir / "a.h5"); }),
                 "\"" + (dir / "a.h5") + "\" is a symbolic link that leads back to itself (a loop)"));
  const std::string empty = message_of<io::FileError>([&] { m.save(""); });
  CHECK_MESSAGE(contains(empty, "the file name is empty; give the name of the file to write"), empty);
  CHECK_MESSAGE(!contains(empty, ".tmp-"), empty);
  CHECK(contains(message_of<io::FileError>([&] { models::load_model(dir / "a.h5"); }), "leads back to itself"));
  CHECK(dir.files() == std::vector<std::string>{"a.h5", "b.h5"});
  // train_mnist: a usage error (exit 2), not std::filesystem's words with exit 1.
  const auto r = tower::testing::train_mnist({"--load", dir / "a.h5"}, dir);
  CHECK_MESSAGE(r.exit_code == 2, r.output);
  CHECK_MESSAGE(contains(r.output, "leads back to itself"), r.output);
  const auto data = tower::testing::train_mnist({"--data", dir / "a.h5", "--epochs", "1"}, dir);
  CHECK_MESSAGE(data.exit_code == 2, data.output);
  const auto resume = tower::testing::train_mnist({"--resume", dir / "a.h5"}, dir);
  CHECK_MESSAGE(resume.exit_code == 2, resume.output);
  CHECK_MESSAGE(contains(resume.output, "--resume " + (dir / "a.h5") + ": it is a symbolic link that leads back"),
                resume.output);
}

TEST_CASE("BackupAndRestore's clean-up removes only the temporary files of tower's own killed saves") {
  TempDir dir("cleanup");
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
  };
  const std::string hdf5_start("\x89HDF\r\n\x1a\n", 8);
  write("backup.h5.tmp-999999999", hdf5_start + "rest");  // a save of a process that is gone: removed
  write("backup.h5.tmp-1", hdf5_start);                   // of a running process (init): kept
  write("backup.h5.tmp-notes", "my notes");               // the user's: kept
  write("backup.h5.tmp-12345678", "my notes");            // not an HDF5 file: kept
  fs::create_directory(dir / "backup.h5.tmp-99999998");   // a directory: kept
  Model m = tiny_model();
  auto [x, y] = tiny_data();
  auto backup = std::make_shared<callbacks::BackupAndRestore>(dir.path.string());
  m.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0, .callbacks = {backup}});
  CHECK(dir.files() == std::vector<std::string>{"backup.h5.tmp-1", "backup.h5.tmp-12345678", "backup.h5.tmp-99999998",
                                                "backup.h5.tmp-notes"});
}

TEST_CASE("files that cannot be read or written are told why, as a user without root's rights sees it") {
  TempDir dir("rights");
  ::chmod(dir.path.c_str(), 0777);  // the child, as nobody, writes its report here
  Model m = tiny_model();
  m.save(dir / "model.h5");
  ::chmod((dir / "model.h5").c_str(), 0600);  // root's, unreadable to others
  std::ofstream(dir / "images-idx3-ubyte") << "data";
  ::chmod((dir / "images-idx3-ubyte").c_str(), 0600);
  fs::create_directory(dir / "weights_dir.h5");
  const std::string seen = as_unprivileged(dir, [&] {
    return error_of([&] { models::load_model(dir / "model.h5"); }) + "\n" +
           error_of([&] { io::read_idx(dir / "images-idx3-ubyte"); }) + "\n" +
           error_of([&] { io::check_writable(dir / "model.h5", "--save"); }) + "\n";
  });
  if (::geteuid() == 0) {  // as nobody: another user's file
    CHECK_MESSAGE(contains(seen, "Permission denied (you may not read it: give yourself read permission"), seen);
    CHECK_MESSAGE(contains(seen, "images-idx3-ubyte\"): cannot open the file: Permission denied"), seen);
    CHECK_MESSAGE(contains(seen, "is read-only to you: it belongs to another user (uid 0"), seen);
    CHECK_MESSAGE(!contains(seen, "chmod u+w"), seen);
  }
  CHECK_MESSAGE(!contains(seen, "not an HDF5 file"), seen);
  Model loaded = tiny_model();
  const std::string directory = message_of<io::FileError>([&] { loaded.load_weights(dir / "weights_dir.h5"); });
  CHECK_MESSAGE(contains(directory, "it is a directory; give the path of a file"), directory);
}
