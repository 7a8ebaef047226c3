// utils::model_to_dot against Keras 3's DOT text (tests/golden/make_plot_model.py) and plot_model's
// files: PNG and SVG through Graphviz, the DOT text itself, and its errors.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tower/layers/layers.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/engine/sequential.h"
#include "tower/layers/utils/plot_model.h"
#include "tests/support/errors.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string golden(const std::string& name) {
  const std::string text = read_file(std::string(TOWER_GOLDEN_DIR) + "/files/plot_model/" + name + ".dot");
  REQUIRE_MESSAGE(!text.empty(), "missing golden file " << name << ".dot (tests/golden/make_plot_model.py)");
  return text;
}

// The model of make_plot_model.py's two_inputs(): two inputs, a nested Sequential on the first, merged
// with the second, one output.
Model two_inputs() {
  auto image = layers::Input({8}, {.name = "image"});
  auto meta = layers::Input({4}, {.name = "meta"});
  Sequential encoder({layers::Input({8}), layers::Dense(16, {.activation = "relu", .name = "hidden"}),
                      layers::Dense(8, {.name = "features"})},
                     "encoder");
  auto z = encoder(image);
  auto c = layers::Concatenate({.name = "merge"})({z, meta});
  auto out = layers::Dense(1, {.activation = "sigmoid", .name = "label"})(c);
  return Model({image, meta}, {out}, "two_inputs");
}

// The per-test scratch file, removed afterwards.
struct ScratchFile {
  std::string path;
  explicit ScratchFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() / ("tower_test_plot_" + name)).string()) {
    std::filesystem::remove(path);
  }
  ~ScratchFile() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("model_to_dot writes Keras 3's DOT text: nodes, edges, shapes, rankdir, nested clusters") {
  clear_session();
  Model model = two_inputs();
  CHECK(utils::model_to_dot(model) == golden("two_inputs_default"));
  CHECK(utils::model_to_dot(model, {.show_shapes = true, .show_layer_names = true, .rankdir = "LR"}) ==
        golden("two_inputs_shapes_lr"));
  CHECK(utils::model_to_dot(model, {.show_shapes = true, .show_dtype = true, .show_layer_names = false,
                                    .expand_nested = true, .show_layer_activations = true, .show_trainable = true}) ==
        golden("two_inputs_expanded"));
}

TEST_CASE("model_to_dot of a Sequential: a chain, frozen layers Non-trainable, dpi") {
  clear_session();
  layers::Dense d1(5, {.name = "d1"});
  Sequential chain({layers::Input({3, 4}), layers::Flatten({.name = "flat"}), d1,
                    layers::Dense(2, {.activation = "softmax", .name = "d2"})},
                   "chain");
  d1.set_trainable(false);
  CHECK(utils::model_to_dot(chain, {.show_shapes = true, .show_layer_names = true, .dpi = 96,
                                    .show_trainable = true}) == golden("chain_trainable"));
}

TEST_CASE("model_to_dot expands a nested functional model: its InputLayer inside the cluster") {
  clear_session();
  auto inner_in = layers::Input({5}, {.name = "inner_in"});
  auto inner_out = layers::Dense(3, {.activation = "tanh", .name = "inner_dense"})(inner_in);
  Model block(inner_in, inner_out, "block");
  auto x = layers::Input({5}, {.name = "x"});
  auto y = layers::Dense(2, {.name = "head"})(block(x));
  Model outer(x, y, "outer");
  CHECK(utils::model_to_dot(outer, {.show_shapes = true, .show_layer_names = true, .expand_nested = true}) ==
        golden("nested_functional_expanded"));
}

TEST_CASE("model_to_dot refuses a model that is not built and bad options") {
  clear_session();
  Sequential unbuilt({layers::Dense(2)});
  CHECK(contains(message_of<ValueError>([&] { utils::model_to_dot(unbuilt); }), "not built"));
  Model model = two_inputs();
  CHECK(contains(message_of<ValueError>([&] { utils::model_to_dot(model, {.rankdir = "XY"}); }), "rankdir"));
  CHECK(contains(message_of<ValueError>([&] { utils::model_to_dot(model, {.dpi = 0}); }), "dpi"));
  CHECK(contains(message_of<ValueError>([&] { utils::plot_model(model, "model.bmpx"); }), ".png, .svg"));
}

TEST_CASE("plot_model writes the DOT text for .dot without Graphviz") {
  clear_session();
  Model model = two_inputs();
  ScratchFile file("model.dot");
  utils::plot_model(model, file.path, {.show_shapes = true, .show_layer_names = true, .rankdir = "LR"});
  CHECK(read_file(file.path) == golden("two_inputs_shapes_lr"));
}

TEST_CASE("plot_model renders PNG and SVG with Graphviz") {
  if (!utils::graphviz_available()) {
    MESSAGE("SKIPPED: Graphviz's dot is not installed (apt-get install graphviz); PNG rendering not tested");
    return;
  }
  clear_session();
  Model model = two_inputs();
  ScratchFile png("model.png");
  utils::plot_model(model, png.path, {.show_shapes = true, .expand_nested = true, .dpi = 96});
  const std::string bytes = read_file(png.path);
  REQUIRE(bytes.size() > 24);
  CHECK(bytes.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  CHECK(bytes.substr(12, 4) == "IHDR");
  CHECK(be32(16) > 100);  // a few hundred pixels at 96 dpi
  CHECK(be32(20) > 100);
  // The same graph left to right: wider and less high than top to bottom.
  ScratchFile wide("model_lr.png");
  utils::plot_model(model, wide.path, {.show_shapes = true, .rankdir = "LR", .expand_nested = true, .dpi = 96});
  const std::string lr = read_file(wide.path);
  REQUIRE(lr.size() > 24);
  auto lr32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(lr[at + i]);
    return v;
  };
  CHECK(lr32(16) > be32(16));
  CHECK(lr32(20) < be32(20));

  ScratchFile svg("model.svg");
  utils::plot_model(model, svg.path, {.show_layer_names = true});
  const std::string text = read_file(svg.path);
  CHECK(contains(text, "<svg"));
  CHECK(contains(text, "encoder"));
  CHECK(contains(text, "Concatenate"));
  CHECK_FALSE(std::filesystem::exists(svg.path + ".tower-tmp"));  // no temporary file left behind
}

TEST_CASE("plot_model without Graphviz on PATH names the package to install") {
  clear_session();
  Model model = two_inputs();
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  setenv("PATH", "/nonexistent-tower-test", 1);
  std::string message;
  try {
    utils::plot_model(model, "never_written.png");
  } catch (const Error& e) {
    message = e.what();
  }
  setenv("PATH", saved.c_str(), 1);
  CHECK(contains(message, "apt-get install graphviz"));
  CHECK_FALSE(std::filesystem::exists("never_written.png"));
}
