// utils::plot_history: a PNG of the stated size from a History (cairo), and its errors.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tower/core/error.h"
#include "tower/layers/callbacks/callback.h"
#include "tower/layers/utils/plot_history.h"
#include "tests/support/errors.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

History sample_history(int epochs) {
  History h;
  for (int e = 0; e < epochs; ++e) {
    h.epoch.push_back(e);
    h.history["loss"].push_back(1.0 / (e + 1));
    h.history["val_loss"].push_back(1.2 / (e + 1) + 0.05);
    h.history["accuracy"].push_back(0.5 + 0.4 * (1 - std::exp(-e)));
    h.history["val_accuracy"].push_back(0.45 + 0.4 * (1 - std::exp(-e)));
  }
  return h;
}

// Width and height from a PNG's IHDR chunk, after checking the signature.
std::pair<std::uint32_t, std::uint32_t> png_size(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  REQUIRE(bytes.size() > 24);
  REQUIRE(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  REQUIRE(bytes.substr(12, 4) == "IHDR");
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

struct ScratchFile {
  std::string path;
  explicit ScratchFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() / ("tower_test_history_" + name)).string()) {
    std::filesystem::remove(path);
  }
  ~ScratchFile() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("plot_history writes a PNG of the stated size, one panel per quantity") {
  if (!utils::plot_history_available()) {
    ScratchFile file("none.png");
    CHECK(contains(message_of<Error>([&] { utils::plot_history(sample_history(3), file.path); }), "libcairo2-dev"));
    MESSAGE("SKIPPED: tower was built without cairo (libcairo2-dev); only the error was tested");
    return;
  }
  History h = sample_history(12);
  ScratchFile file("history.png");
  utils::plot_history(h, file.path, {.width = 640, .height = 480});
  CHECK(png_size(file.path) == std::pair<std::uint32_t, std::uint32_t>{640, 480});
  // The default height: 300 per panel (loss and accuracy), plus the title's line.
  ScratchFile tall("history_default.png");
  utils::plot_history(h, tall.path, {.title = "training"});
  CHECK(png_size(tall.path) == std::pair<std::uint32_t, std::uint32_t>{800, 630});
  CHECK_FALSE(std::filesystem::exists(tall.path + ".tower-tmp"));
  // One epoch, one chosen key, a NaN among the values: still a picture.
  History one = sample_history(1);
  one.history["loss"][0] = std::nan("");
  ScratchFile single("history_one.png");
  utils::plot_history(one, single.path, {.width = 300, .height = 200, .keys = {"loss"}});
  CHECK(png_size(single.path) == std::pair<std::uint32_t, std::uint32_t>{300, 200});
  // The same through History::plot.
  ScratchFile method("history_method.png");
  h.plot(method.path, {.width = 500});
  CHECK(png_size(method.path) == std::pair<std::uint32_t, std::uint32_t>{500, 600});
}

TEST_CASE("plot_history errors: empty history, unknown key, bad size, unwritable path") {
  ScratchFile file("bad.png");
  CHECK(contains(message_of<ValueError>([&] { utils::plot_history(History{}, file.path); }), "empty"));
  auto msg = message_of<ValueError>([&] { utils::plot_history(sample_history(2), file.path, {.keys = {"acc"}}); });
  CHECK(contains(msg, "\"acc\""));
  CHECK(contains(msg, "accuracy, loss, val_accuracy, val_loss"));
  if (!utils::plot_history_available()) return;
  CHECK(contains(message_of<ValueError>([&] { utils::plot_history(sample_history(2), file.path, {.width = 10}); }),
                 "64 to 8192"));
  CHECK(contains(message_of<Error>([&] { utils::plot_history(sample_history(2), "/nonexistent-dir/h.png"); }),
                 "/nonexistent-dir/h.png"));
  CHECK_FALSE(std::filesystem::exists(file.path));
}
