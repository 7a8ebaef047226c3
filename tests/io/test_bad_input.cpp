// Bad input (docs/architecture.md, "Bad input"): truncated, corrupt and mismatched IDX and HDF5 files,
// labels out of range, unwritable outputs and saves that fail midway. Each gives a tower::Error naming
// the file and the problem, and no good file on disk is lost.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tower/core/random.h"
#include "tower/io/hdf5.h"
#include "tower/io/idx.h"
#include "tower/io/keras_weights.h"
#include "tower/layers/core/dense.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/sequential.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::read_bytes;
using tower::testing::TempDir;
using tower::testing::contains;
using tower::testing::message_of;
namespace fs = std::filesystem;
namespace h5 = tower::io::hdf5;

namespace {

std::string write_bytes(const std::string& path, const std::string& bytes, bool gzip = false) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  return path;
}

// An IDX header for unsigned bytes with these dimensions, followed by `payload` bytes 0, 1, 2, ...
std::string idx_bytes(const std::vector<std::uint32_t>& dims, std::size_t payload, int rank = -1) {
  std::string s{'\0', '\0', '\x08', static_cast<char>(rank < 0 ? static_cast<int>(dims.size()) : rank)};
  for (auto d : dims)
    for (int shift : {24, 16, 8, 0}) s += static_cast<char>((d >> shift) & 0xff);
  for (std::size_t i = 0; i < payload; ++i) s += static_cast<char>(i % 251);
  return s;
}

// The message of the tower::Error subclass E that f throws; also checks that it names `file`.
template <typename E, typename F>
std::string error_naming(const std::string& file, F&& f) {
  auto msg = message_of<E>(std::forward<F>(f));
  CHECK_MESSAGE(contains(msg, file), "message: " << msg);
  return msg;
}

// Input(4) -> Dense(units) "dense" with distinct weights.
Sequential small_model(std::int64_t units = 3, float start = 0.5f) {
  Sequential m({layers::Input({4}), layers::Dense(units, {.name = "dense"})});
  for (const auto& w : m.weights()) {
    std::vector<float> v(static_cast<std::size_t>(w->shape().num_elements()));
    for (auto& x : v) x = (start += 0.01f);
    w->assign(Tensor::from_vector<float>(w->shape(), v));
  }
  return m;
}

std::vector<std::vector<float>> values(const Model& m) {
  std::vector<std::vector<float>> out;
  for (const auto& w : m.weights()) out.push_back(w->value().to_vector<float>());
  return out;
}

}  // namespace

// ---- IDX ----------------------------------------------------------------------------------------

TEST_CASE("bad IDX files: each error names the file and the problem") {
  TempDir dir("bad");
  SUBCASE("empty file") {
    auto path = write_bytes(dir / "empty-idx1-ubyte", "");
    CHECK(contains(error_naming<ValueError>(path, [&] { io::read_idx(path); }), "empty"));
  }
  SUBCASE("truncated header") {
    auto path = write_bytes(dir / "header-idx3-ubyte", idx_bytes({10, 28, 28}, 0).substr(0, 9));
    CHECK(contains(error_naming<ValueError>(path, [&] { io::read_idx(path); }), "truncated header"));
  }
  SUBCASE("truncated data") {
    auto path = write_bytes(dir / "data-idx3-ubyte", idx_bytes({10, 28, 28}, 7839));
    CHECK(contains(error_naming<ValueError>(path, [&] { io::read_idx(path); }),
                   "announces 7840 bytes of data but the file holds 7839"));
  }
  SUBCASE("trailing bytes") {
    auto path = write_bytes(dir / "trailing-idx1-ubyte", idx_bytes({10}, 12));
    CHECK(contains(error_naming<ValueError>(path, [&] { io::read_idx(path); }),
                   "announces 10 bytes of data but the file holds 12"));
  }
  SUBCASE("wrong magic") {
    auto path = write_bytes(dir / "magic-idx1-ubyte", "PK\x03\x04 a zip file, not IDX");
    CHECK(contains(error_naming<ValueError>(path, [&] { io::read_idx(path); }), "bad magic number"));
  }
  SUBCASE("wrong rank") {
    auto zero = write_bytes(dir / "rank0-idx1-ubyte", idx_bytes({}, 1, 0));
    CHECK(contains(error_naming<ValueError>(zero, [&] { io::read_idx(zero); }), "0 dimensions is not a valid IDX rank"));
    auto nine = write_bytes(dir / "rank9-idx1-ubyte", idx_bytes({1, 1, 1, 1, 1, 1, 1, 1, 1}, 1));
    CHECK(contains(error_naming<ValueError>(nine, [&] { io::read_idx(nine); }), "9 dimensions is not a valid IDX rank"));
  }
  SUBCASE("dimensions whose product overflows") {
    // 2^31 * 2^31 * 4 = 2^64 wraps to 0 in 64 bits, which would "match" a file with no data.
    auto path = write_bytes(dir / "huge-idx3-ubyte", idx_bytes({0x80000000u, 0x80000000u, 4}, 0));
    CHECK(contains(error_naming<ValueError>(path, [&] { io::read_idx(path); }), "more data than"));
  }
  SUBCASE("corrupt gzip") {
    auto path = write_bytes(dir / "corrupt-idx1-ubyte.gz", idx_bytes({1000}, 1000), /*gzip=*/true);
    auto bytes = read_bytes(path);
    for (std::size_t i = 12; i < 40; ++i) bytes[i] = static_cast<char>(0xff);  // the deflate stream
    write_bytes(path, bytes);
    CHECK(contains(error_naming<ValueError>(path, [&] { io::read_idx(path); }), "corrupt"));
  }
  SUBCASE("truncated gzip") {
    auto path = write_bytes(dir / "cut-idx1-ubyte.gz", idx_bytes({1000}, 1000), /*gzip=*/true);
    fs::resize_file(path, fs::file_size(path) - 10);
    CHECK_THROWS_AS(io::read_idx(path), ValueError);
  }
  SUBCASE("a directory instead of a file") {
    fs::create_directories(dir / "train-images-idx3-ubyte");
    CHECK(contains(error_naming<ValueError>(dir / "train-images-idx3-ubyte",
                                            [&] { io::read_idx(dir / "train-images-idx3-ubyte"); }),
                   "is a directory"));
  }
  SUBCASE("a missing file") {
    CHECK(contains(error_naming<NotFoundError>(dir / "none", [&] { io::read_idx(dir / "none"); }), "cannot open"));
  }
}

TEST_CASE("read_idx_split: image and label counts must agree, and both files must be there") {
  TempDir dir("bad");
  write_bytes(dir / "train-images-idx3-ubyte", idx_bytes({5, 2, 2}, 20));
  write_bytes(dir / "train-labels-idx1-ubyte.gz", idx_bytes({6}, 6), /*gzip=*/true);
  auto msg = error_naming<ValueError>(dir.path.string(), [&] { io::read_idx_split(dir.path.string(), "train"); });
  CHECK(contains(msg, "5 images but 6 labels"));
  // Labels given as images (rank 3) are refused too.
  write_bytes(dir / "t10k-images-idx3-ubyte", idx_bytes({2, 2, 2}, 8));
  write_bytes(dir / "t10k-labels-idx1-ubyte", idx_bytes({2, 2, 2}, 8));
  CHECK(contains(message_of<ValueError>([&] { io::read_idx_split(dir.path.string(), "t10k"); }),
                 "expected images (n, rows, cols) and labels (n,)"));
  CHECK(contains(message_of<NotFoundError>([&] { io::read_idx_split(dir.path.string(), "test"); }),
                 "test-images-idx3-ubyte"));
}

// ---- HDF5 weight files --------------------------------------------------------------------------

TEST_CASE("bad HDF5 weight files: FileError naming the file; the model keeps its weights") {
  clear_session();
  TempDir dir("bad");
  Sequential good = small_model(3, 0.5f);
  const auto path = dir / "good.h5";
  good.save_weights(path);
  const auto valid = read_bytes(path);
  REQUIRE(valid.size() > 1000);

  Sequential m = small_model(3, -2.0f);
  const auto before = values(m);
  auto refused = [&](const std::string& file) {
    auto msg = error_naming<io::FileError>(file, [&] { m.load_weights(file); });
    CHECK(contains(msg, "load_weights(\"" + file + "\")"));
    CHECK(values(m) == before);
    // by name, and the lower-level reader, refuse it as well.
    CHECK_THROWS_AS(m.load_weights(file, {.by_name = true}), io::FileError);
    CHECK(values(m) == before);
    return msg;
  };

  SUBCASE("truncated copies of a valid file") {
    for (std::size_t size : {std::size_t{0}, std::size_t{8}, std::size_t{100}, std::size_t{2048}, valid.size() / 2,
                             valid.size() - 1}) {
      CAPTURE(size);
      const auto cut = write_bytes(dir / ("cut" + std::to_string(size) + ".h5"), valid.substr(0, size));
      auto msg = refused(cut);
      if (size < 8) CHECK(contains(msg, "is not an HDF5 file"));
    }
    // A truncated file that HDF5 still opens must still fail when its data is read.
    CHECK_THROWS_AS(h5::File::open(dir / ("cut" + std::to_string(valid.size() - 1) + ".h5")).read_dataset(
                        "dense/dense/kernel:0"),
                    io::FileError);
  }
  SUBCASE("random bytes, without and with the HDF5 signature") {
    std::mt19937 rng(42);
    std::string noise(4096, '\0');
    for (auto& c : noise) c = static_cast<char>(rng() & 0xff);
    const auto plain = write_bytes(dir / "noise.h5", noise);
    CHECK(contains(refused(plain), "is not an HDF5 file"));
    const auto signed_noise = write_bytes(dir / "signed_noise.h5", std::string("\x89HDF\r\n\x1a\n", 8) + noise);
    refused(signed_noise);
    // The signature followed by a superblock version 0 and random bytes.
    const auto superblock = write_bytes(dir / "superblock.h5", valid.substr(0, 48) + noise);
    refused(superblock);
  }
  SUBCASE("flipped bytes in the superblock") {
    // Each copy loads or fails with a tower::Error naming the file, and a failed load changes no
    // weight. Only the superblock: a flip in some other places (a variable-length string's global
    // heap reference, 33 of the file's 11160 bytes) crashes or hangs libhdf5 1.10 itself, which
    // tower cannot prevent (docs/fuzzing.md).
    for (std::size_t at = 0; at < 96; ++at) {
      CAPTURE(at);
      auto bytes = valid;
      bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
      const auto file = write_bytes(dir / "flipped.h5", bytes);
      for (bool by_name : {false, true}) {
        const auto previous = values(m);
        try {
          m.load_weights(file, {.by_name = by_name});
        } catch (const Error& e) {
          CHECK_MESSAGE(contains(e.what(), file), e.what());
          CHECK(values(m) == previous);
        }
      }
    }
  }
  SUBCASE("a valid HDF5 file without layer_names") {
    {
      auto f = h5::File::create(dir / "plain.h5");
      f.write_dataset("dense/kernel:0", Tensor::zeros({4, 3}));
    }
    CHECK(contains(refused(dir / "plain.h5"), "is not a Keras weight file: no layer_names attribute"));
  }
  SUBCASE("layer_names naming a group that is not there") {
    {
      auto f = h5::File::create(dir / "dangling.h5");
      f.write_string_array_attr("layer_names", {"dense"});
    }
    CHECK(contains(refused(dir / "dangling.h5"), "no group \"/dense\""));
  }
  SUBCASE("a missing file") {
    CHECK(contains(refused(dir / "missing.h5"), "no such file"));
  }
}

TEST_CASE("a weight file from another model: the layer count or the shapes differ") {
  clear_session();
  TempDir dir("bad");
  Sequential m = small_model(3, 1.0f);
  const auto before = values(m);

  Sequential two({layers::Input({4}), layers::Dense(3, {.name = "dense"}), layers::Dense(2, {.name = "out"})});
  two.save_weights(dir / "two.h5");
  auto msg = error_naming<ValueError>(dir / "two.h5", [&] { m.load_weights(dir / "two.h5"); });
  CHECK(contains(msg, "the file has weights for 2 layers (dense, out) but the model has 1 layers with weights (dense)"));
  CHECK(values(m) == before);

  clear_session();
  Sequential wide = small_model(5, 3.0f);  // kernel (4, 5) in the file, (4, 3) in the model
  wide.save_weights(dir / "wide.h5");
  for (bool by_name : {false, true}) {
    CAPTURE(by_name);
    msg = error_naming<ValueError>(dir / "wide.h5", [&] { m.load_weights(dir / "wide.h5", {.by_name = by_name}); });
    CHECK(contains(msg, "layer \"dense\" weight \"dense/kernel:0\" has shape (4, 3) in the model but (4, 5) in the "
                        "file (\"dense/dense/kernel:0\")"));
    CHECK(values(m) == before);
  }
}

// ---- labels -------------------------------------------------------------------------------------

// Also tests/layers/engine/test_model.cpp "fit: bad data gets clear errors" (label 7 for 3 classes).
TEST_CASE("labels out of range for the model's output: label 10 on a 10-unit softmax") {
  clear_session();
  Sequential model({layers::Input({4}), layers::Dense(10, {.activation = "softmax"})});
  model.compile("sgd", "sparse_categorical_crossentropy", {"accuracy"});
  auto x = random_normal({4, 4}, 0, 1, 1);
  auto y = Tensor::from_vector<std::int32_t>({4}, {0, 9, 10, 3});
  const auto before = values(model);
  // Refused on the host before a step, whatever the device (a GPU kernel would give NaN).
  auto msg = message_of<ValueError>([&] { model.fit(x, y, {.verbose = 0}); });
  CHECK_MESSAGE(contains(msg, "sparse_categorical_crossentropy: label 10 (sample "), msg);  // (fit shuffles)
  CHECK_MESSAGE(contains(msg, "of the batch) is out of range for 10 classes"), msg);
  CHECK(values(model) == before);  // refused before any step
  CHECK(contains(message_of<ValueError>([&] { model.evaluate(x, y, {.verbose = 0}); }), "10"));
  auto negative = Tensor::from_vector<std::int32_t>({4}, {0, -1, 2, 3});
  CHECK(contains(message_of<ValueError>([&] { model.fit(x, negative, {.verbose = 0}); }), "-1"));
}

// ---- outputs ------------------------------------------------------------------------------------

TEST_CASE("save_weights where it cannot write: a clear error, the old file intact, no temporary left") {
  clear_session();
  TempDir dir("bad");
  Sequential old_model = small_model(3, 0.25f);
  Sequential m = small_model(3, 5.0f);
  const auto path = dir / "w.h5";
  old_model.save_weights(path);
  const auto good = read_bytes(path);

  SUBCASE("into a missing directory") {
    auto msg = error_naming<io::FileError>(dir / "no/such", [&] { m.save_weights(dir / "no/such/w.h5"); });
    CHECK(contains(msg, "does not exist"));
    CHECK(dir.files() == std::vector<std::string>{"w.h5"});
  }
  SUBCASE("under a parent that is a regular file (fails even for root)") {
    auto msg = error_naming<io::FileError>(path, [&] { m.save_weights(path + "/w.h5"); });
    CHECK(contains(msg, "is not a directory"));
    CHECK(read_bytes(path) == good);
    CHECK(dir.files() == std::vector<std::string>{"w.h5"});
  }
  SUBCASE("under /proc (fails even for root)") {
    auto msg = error_naming<io::FileError>("/proc/tower_w.h5", [&] { m.save_weights("/proc/tower_w.h5"); });
    CHECK_MESSAGE(contains(msg, "save_weights(\"/proc/tower_w.h5\")"), msg);
    CHECK_FALSE(fs::exists("/proc/tower_w.h5"));
  }
  SUBCASE("onto a directory") {
    fs::create_directories(dir / "d.h5");
    CHECK(contains(error_naming<io::FileError>(dir / "d.h5", [&] { m.save_weights(dir / "d.h5"); }), "is a directory"));
  }
  SUBCASE("into a read-only directory (chmod 0555)") {
    fs::permissions(dir.path, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                  fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    if (::geteuid() != 0) {
      auto msg = error_naming<io::FileError>(path, [&] { m.save_weights(path); });
      CHECK(contains(msg, "cannot create"));
    } else {
      // Root ignores permission bits: try as user "nobody" in a child process. The child exits 0
      // when save_weights threw FileError naming the file, 1 on any other outcome, 77 when it
      // could not drop privileges.
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(77);
        try {
          m.save_weights(path);
        } catch (const io::FileError& e) {
          ::_exit(contains(e.what(), path) ? 0 : 1);
        } catch (...) {
        }
        ::_exit(1);
      }
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      REQUIRE(WIFEXITED(status));
      if (WEXITSTATUS(status) == 77)
        MESSAGE("skipped: running as root and cannot switch to user nobody");
      else
        CHECK(WEXITSTATUS(status) == 0);
    }
    fs::permissions(dir.path, fs::perms::owner_all, fs::perm_options::add);
    CHECK(read_bytes(path) == good);
    CHECK(dir.files() == std::vector<std::string>{"w.h5"});
  }
  SUBCASE("the file system refuses the data midway (file size limit, as a full disk)") {
    // RLIMIT_FSIZE binds root too: writes past the limit fail with EFBIG (SIGXFSZ ignored).
    Sequential big({layers::Input({512}), layers::Dense(512, {.name = "dense"})});  // 1 MiB kernel
    rlimit old_limit{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old_limit;
    limit.rlim_cur = 64 * 1024;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
    std::string msg;
    try {
      big.save_weights(path);
    } catch (const Error& e) {
      msg = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    std::signal(SIGXFSZ, old_handler);
    CHECK_MESSAGE(contains(msg, "save_weights(\"" + path + "\")"), msg);
    CHECK(read_bytes(path) == good);
    CHECK(dir.files() == std::vector<std::string>{"w.h5"});
  }
  // Whatever failed, the old file still loads.
  m.load_weights(path);
  CHECK(values(m) == values(old_model));
}

TEST_CASE("write_file_atomically: a writer that throws midway leaves the previous file byte-identical") {
  TempDir dir("bad");
  const auto path = dir / "ckpt.h5";
  h5::write_file_atomically(path, "test", [](h5::File& f) { f.write_dataset("x", Tensor::full({100}, 1.0f)); });
  const auto good = read_bytes(path);

  struct Interrupted : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  CHECK_THROWS_AS(h5::write_file_atomically(path, "test",
                                            [](h5::File& f) {
                                              f.write_dataset("x", Tensor::full({100000}, 2.0f));
                                              f.flush();  // data on disk in the temporary file
                                              f.write_dataset("y", Tensor::full({10}, 3.0f));
                                              throw Interrupted("killed midway");
                                            }),
                  Interrupted);
  CHECK(read_bytes(path) == good);
  CHECK(dir.files() == std::vector<std::string>{"ckpt.h5"});
  // A tower::Error from the writer passes through unchanged, too.
  CHECK(message_of<ValueError>([&] {
          h5::write_file_atomically(path, "test", [](h5::File& f) {
            f.write_dataset("x", Tensor::full({10}, 2.0f));
            raise<ValueError>("no more data");
          });
        }) == "no more data");
  CHECK(read_bytes(path) == good);
  CHECK(dir.files() == std::vector<std::string>{"ckpt.h5"});
  CHECK(h5::File::open(path).read_dataset("x").to_vector<float>() == std::vector<float>(100, 1.0f));
}
