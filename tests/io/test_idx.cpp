// IDX reader: real files, gzip and raw, and every kind of bad file giving a clear error.
#include <doctest/doctest.h>

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tower/io/datasets.h"
#include "tower/io/idx.h"
#include "tests/support/errors.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("tower_test_idx_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// An IDX header for unsigned bytes with these dimensions, followed by `payload` bytes 0, 1, 2, ...
std::string idx_bytes(const std::vector<std::uint32_t>& dims, std::size_t payload, unsigned char type = 0x08) {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (auto d : dims)
    for (int shift : {24, 16, 8, 0}) s += static_cast<char>((d >> shift) & 0xff);
  for (std::size_t i = 0; i < payload; ++i) s += static_cast<char>(i % 251);
  return s;
}

std::string write_file(const std::filesystem::path& path, const std::string& bytes, bool gzip = false) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  return path.string();
}

}  // namespace

TEST_CASE("read_idx: raw and gzip files give the same array") {
  auto dir = temp_dir();
  auto bytes = idx_bytes({3, 2, 4}, 24);
  auto raw = io::read_idx(write_file(dir / "a-idx3-ubyte", bytes));
  auto gz = io::read_idx(write_file(dir / "a-idx3-ubyte.gz", bytes, true));
  CHECK(raw.shape() == Shape{3, 2, 4});
  CHECK(raw.dtype() == DType::uint8);
  CHECK(raw.to_vector<std::uint8_t>() == gz.to_vector<std::uint8_t>());
  CHECK(raw.to_vector<std::uint8_t>()[23] == 23);
  std::filesystem::remove_all(dir);
}

TEST_CASE("read_idx: bad files name the file and the problem") {
  auto dir = temp_dir();
  auto path = [&](const char* name) { return (dir / name).string(); };
  CHECK(contains(message_of<NotFoundError>([&] { io::read_idx(path("missing")); }), "cannot open"));
  auto magic = write_file(dir / "magic", "\x12\x34\x08\x01\0\0\0\0");
  CHECK(contains(message_of<ValueError>([&] { io::read_idx(magic); }), "bad magic number"));
  auto type = write_file(dir / "type", idx_bytes({2}, 2, 0x0d));
  CHECK(contains(message_of<ValueError>([&] { io::read_idx(type); }), "0x0d (float32) is not supported"));
  auto truncated = write_file(dir / "truncated", idx_bytes({10, 28, 28}, 7000));
  auto msg = message_of<ValueError>([&] { io::read_idx(truncated); });
  CHECK(contains(msg, "7840 bytes of data but the file holds 7000"));
  CHECK(contains(msg, "truncated"));  // the file name is in the message
  CHECK(contains(msg, "(it is truncated)"));
  auto header = write_file(dir / "header", std::string("\0\0\x08\x03\0\0", 6));
  CHECK(contains(message_of<ValueError>([&] { io::read_idx(header); }), "truncated header"));
  auto corrupt = write_file(dir / "corrupt.gz", idx_bytes({100}, 100), true);
  {  // damage the compressed stream after the gzip header
    std::fstream f(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12);
    f.write("\xff\xff\xff\xff\xff\xff", 6);
  }
  CHECK_THROWS_AS(io::read_idx(corrupt), ValueError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("read_idx_split: counts must agree; load_mnist on the real digits") {
  auto dir = temp_dir();
  write_file(dir / "train-images-idx3-ubyte", idx_bytes({3, 2, 2}, 12));
  write_file(dir / "train-labels-idx1-ubyte", idx_bytes({4}, 4));
  auto msg = message_of<ValueError>([&] { io::read_idx_split(dir.string(), "train"); });
  CHECK(contains(msg, "3 images but 4 labels"));
  CHECK(contains(message_of<NotFoundError>([&] { io::read_idx_split(dir.string(), "t10k"); }), "t10k-images-idx3-ubyte"));
  std::filesystem::remove_all(dir);

  const std::string digits = TOWER_SHARED_DIR "/data/mnist-digits-10k";
  if (!std::filesystem::exists(digits)) {
    MESSAGE("skipped: " << digits << " is absent");
    return;
  }
  auto [train, test] = io::load_mnist(digits);
  CHECK(train.first.shape() == Shape{8000, 28, 28});
  CHECK(train.second.shape() == Shape{8000});
  CHECK(test.first.shape() == Shape{2000, 28, 28});
  auto labels = train.second.to_vector<std::uint8_t>();
  CHECK(*std::max_element(labels.begin(), labels.end()) == 9);
}

TEST_CASE("to_categorical and to_float") {
  auto labels = Tensor::from_vector<std::uint8_t>({3}, {2, 0, 1});
  auto onehot = io::to_categorical(labels, 3);
  CHECK(onehot.to_vector<float>() == std::vector<float>{0, 0, 1, 1, 0, 0, 0, 1, 0});
  CHECK(contains(message_of<ValueError>([&] { io::to_categorical(labels, 2); }), "label 2 (sample 0) is outside [0, 2)"));
  auto x = io::to_float(Tensor::from_vector<std::uint8_t>({2, 2}, {0, 51, 102, 255}), 1.0 / 255, {-1, 4});
  CHECK(x.shape() == Shape{1, 4});
  CHECK(x.to_vector<float>()[1] == doctest::Approx(0.2f));
}

TEST_CASE("read_idx: the size must be exactly header + data; every dimension and type is checked") {
  auto dir = temp_dir();
  for (bool gzip : {false, true}) {
    CAPTURE(gzip);
    auto trailing = write_file(dir / (gzip ? "trailing.gz" : "trailing"), idx_bytes({4, 2}, 9), gzip);
    auto msg = message_of<ValueError>([&] { io::read_idx(trailing); });
    // A gzip file is not inflated past the data's end plus one byte, so the extra bytes go uncounted.
    CHECK(contains(msg, gzip ? "announces 8 bytes of data but the file holds more (trailing bytes after the data)"
                             : "announces 8 bytes of data but the file holds 9 (trailing bytes after the data)"));
    auto short_file = write_file(dir / (gzip ? "short.gz" : "short"), idx_bytes({4, 2}, 7), gzip);
    CHECK(contains(message_of<ValueError>([&] { io::read_idx(short_file); }), "holds 7 (it is truncated)"));
    auto exact = write_file(dir / (gzip ? "exact.gz" : "exact"), idx_bytes({4, 2}, 8), gzip);
    CHECK(io::read_idx(exact).shape() == Shape{4, 2});
  }
  auto zero = write_file(dir / "zero", idx_bytes({3, 0, 28}, 0));
  CHECK(contains(message_of<ValueError>([&] { io::read_idx(zero); }), "dimension 1 of (3, 0, 28) is 0"));
  for (auto [code, name] : {std::pair<unsigned char, const char*>{0x09, "signed byte"}, {0x0b, "int16"}, {0x0c, "int32"},
                            {0x0d, "float32"}, {0x0e, "float64"}}) {
    auto path = write_file(dir / "typed", idx_bytes({2}, 2, code));
    auto msg = message_of<ValueError>([&] { io::read_idx(path); });
    CHECK(contains(msg, name));
    CHECK(contains(msg, "only unsigned bytes, 0x08"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("KMNIST and EMNIST files: the same IDX format, other counts and classes") {
  auto dir = temp_dir();
  // KMNIST uses MNIST's names (train-*, t10k-*), gzip; 10 classes.
  write_file(dir / "train-images-idx3-ubyte.gz", idx_bytes({6, 28, 28}, 6 * 784), true);
  write_file(dir / "train-labels-idx1-ubyte.gz", idx_bytes({6}, 6), true);
  write_file(dir / "t10k-images-idx3-ubyte.gz", idx_bytes({2, 28, 28}, 2 * 784), true);
  write_file(dir / "t10k-labels-idx1-ubyte.gz", idx_bytes({2}, 2), true);
  auto [train, test] = io::load_mnist(dir.string());
  CHECK(train.first.shape() == Shape{6, 28, 28});
  CHECK(test.second.shape() == Shape{2});
  // EMNIST balanced: 47 classes, labels 0..46; raw files this time.
  std::string labels = idx_bytes({47}, 0);
  for (int i = 0; i < 47; ++i) labels += static_cast<char>(i);
  write_file(dir / "emnist-balanced-train-images-idx3-ubyte", idx_bytes({47, 28, 28}, 47 * 784));
  write_file(dir / "emnist-balanced-train-labels-idx1-ubyte", labels);
  write_file(dir / "emnist-balanced-test-images-idx3-ubyte.gz", idx_bytes({3, 28, 28}, 3 * 784), true);
  write_file(dir / "emnist-balanced-test-labels-idx1-ubyte.gz", idx_bytes({3}, 3), true);
  auto [etrain, etest] = io::load_emnist(dir.string(), "balanced");
  CHECK(etrain.first.shape() == Shape{47, 28, 28});
  auto ids = etrain.second.to_vector<std::uint8_t>();
  CHECK(*std::max_element(ids.begin(), ids.end()) == 46);
  CHECK(io::to_categorical(etrain.second, 47).shape() == Shape{47, 47});
  CHECK(etest.first.shape() == Shape{3, 28, 28});
  CHECK(contains(message_of<ValueError>([&] { io::load_emnist(dir.string(), "weird"); }), "unknown split"));
  CHECK(contains(message_of<NotFoundError>([&] { io::load_emnist(dir.string(), "byclass"); }),
                 "emnist-byclass-train-images-idx3-ubyte"));
  // Labels with images' rank: the magic numbers are named.
  write_file(dir / "emnist-digits-train-images-idx3-ubyte", idx_bytes({2, 28, 28}, 2 * 784));
  write_file(dir / "emnist-digits-train-labels-idx1-ubyte", idx_bytes({2, 1, 1}, 2));
  auto msg = message_of<ValueError>([&] { io::read_idx_split(dir.string(), "emnist-digits-train"); });
  CHECK(contains(msg, "magic numbers 0x00000803 and 0x00000803"));
  std::filesystem::remove_all(dir);
}
