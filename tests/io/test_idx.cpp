// IDX reader: real files, gzip and raw, and every kind of bad file giving a clear error.
#include <doctest/doctest.h>

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "io/datasets.h"
#include "io/idx.h"
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
  CHECK(contains(message_of<ValueError>([&] { io::read_idx(type); }), "0x0d is not supported"));
  auto truncated = write_file(dir / "truncated", idx_bytes({10, 28, 28}, 7000));
  auto msg = message_of<ValueError>([&] { io::read_idx(truncated); });
  CHECK(contains(msg, "7840 bytes of data but the file holds 7000"));
  CHECK(contains(msg, "truncated"));  // the file name is in the message
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
