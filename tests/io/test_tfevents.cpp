// Tests of io/tfevents: CRC-32C and its masking against known vectors, TFRecord framing, and events
// written by EventWriter read back (tags, steps, values, histogram buckets).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tower/core/error.h"
#include "tower/io/tfevents.h"

using namespace tower;
using namespace tower::io;

namespace {

std::uint32_t crc_of(const std::string& s) { return crc32c(s.data(), s.size()); }

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tower_tfevents_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace

TEST_CASE("crc32c matches the Castagnoli check values") {
  CHECK(crc_of("123456789") == 0xE3069283u);
  CHECK(crc_of("") == 0u);
  CHECK(crc_of("a") == 0xC1D04330u);
  CHECK(crc_of(std::string(32, '\0')) == 0x8A9136AAu);    // RFC 3720 B.4: 32 bytes of zeros
  CHECK(crc_of(std::string(32, '\xff')) == 0x62A8AB43u);  // RFC 3720 B.4: 32 bytes of 0xFF
  std::string ascending(32, '\0');
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<char>(i);
  CHECK(crc_of(ascending) == 0x46DD794Eu);  // RFC 3720 B.4: 0x00..0x1F
  // Continuing a CRC over a split buffer gives the CRC of the whole.
  CHECK(crc32c("56789", 5, crc32c("1234", 4)) == 0xE3069283u);
}

TEST_CASE("masked crc32c rotates right by 15 and adds 0xa282ead8") {
  const std::uint32_t crc = 0xE3069283u;
  const std::uint32_t rotated = (crc >> 15) | (crc << 17);
  CHECK(mask_crc32c(crc) == rotated + 0xa282ead8u);
  CHECK(mask_crc32c(0) == 0xa282ead8u);
  for (std::uint32_t v : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x12345678u}) CHECK(unmask_crc32c(mask_crc32c(v)) == v);
  // The header of the first record of an event file TensorFlow 2.21 wrote (Keras 3's TensorBoard):
  // length 62, masked CRC of its 8 little-endian bytes 0xe740d2d9.
  const std::uint64_t length = 62;
  CHECK(mask_crc32c(crc32c(&length, 8)) == 0xe740d2d9u);
}

TEST_CASE("EventWriter writes a file TensorFlow's framing reads back") {
  const auto dir = fresh_dir("writer");
  std::string path;
  {
    EventWriter writer(dir.string());
    path = writer.path();
    CHECK(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0) == 0);
    writer.add_scalar("epoch_loss", 0.25, 3);
    writer.add_histogram("model/dense/kernel/histogram", {1.0, 2.0, 2.0, 4.0}, 1, 3);
    writer.add_histogram("same", {5.0, 5.0}, 2, 4);
    writer.add_histogram("empty", {}, 2, 2);
    writer.add_keras_model("keras", "{\"class_name\": \"Sequential\"}", 0);
  }  // closed by the destructor
  const auto events = read_events(path);
  REQUIRE(events.size() == 6);
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK(events[0].values.empty());
  CHECK(events[0].wall_time > 1.6e9);

  const auto& scalar = events[1].values.at(0);
  CHECK(events[1].step == 3);
  CHECK(scalar.tag == "epoch_loss");
  CHECK(scalar.plugin_name == "scalars");
  CHECK(scalar.data_class == 1);
  CHECK(scalar.dtype == 1);
  CHECK(scalar.shape.empty());
  CHECK(scalar.numbers == std::vector<double>{0.25});

  const auto& histo = events[2].values.at(0);
  CHECK(histo.plugin_name == "histograms");
  CHECK(histo.dtype == 2);
  CHECK(histo.shape == std::vector<std::int64_t>{3, 3});
  CHECK(histo.numbers == std::vector<double>{1, 2, 1, 2, 3, 2, 3, 4, 1});  // width 1: [1,2) [2,3) [3,4]

  CHECK(events[3].values.at(0).numbers == std::vector<double>{5, 5, 0, 5, 5, 0, 5, 5, 0, 5, 5, 2});
  CHECK(events[4].values.at(0).numbers == std::vector<double>(6, 0.0));
  const auto& model = events[5].values.at(0);
  CHECK(model.plugin_name == "graph_keras_model");
  CHECK(model.strings == std::vector<std::string>{"{\"class_name\": \"Sequential\"}"});
  std::filesystem::remove_all(dir);
}

TEST_CASE("read_tfrecords rejects a corrupted or truncated record") {
  const auto dir = fresh_dir("corrupt");
  std::string path;
  {
    EventWriter writer(dir.string());
    path = writer.path();
    writer.add_scalar("x", 1.0, 1);
  }
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  CHECK(read_tfrecords(path).size() == 2);
  const auto write = [&](const std::string& b) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << b;
  };
  std::string flipped = bytes;
  flipped[flipped.size() - 6] ^= 0x01;  // a data byte of the last record
  write(flipped);
  CHECK_THROWS_AS(read_tfrecords(path), Error);
  write(bytes.substr(0, bytes.size() - 2));
  CHECK_THROWS_AS(read_tfrecords(path), Error);
  std::filesystem::remove_all(dir);
}
