// model_config JSON: tower's configs against tf_keras's, every Keras dialect (Keras 1.2, 2.0, 2.2.4,
// tf.keras 2, Keras 3's legacy .h5) rebuilt and checked against Keras's predictions, and errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tower/io/hdf5.h"
#include "tower/io/model_config.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/support/errors.h"

using namespace tower;
using namespace tower::layers;
using nlohmann::json;
using tower::testing::contains;
using tower::testing::message_of;
namespace fs = std::filesystem;
namespace h5 = tower::io::hdf5;

namespace {

const fs::path kConfigs = fs::path(TOWER_GOLDEN_DIR) / "files" / "configs";
const fs::path kKerasFiles = fs::path(TOWER_SHARED_DIR) / "keras-files";

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json read_json(const fs::path& path) { return json::parse(read_text(path)); }

// What "every dialect parses to the same architecture" compares: per layer, name, class, output
// shape and parameter count, plus the model's inputs and outputs.
std::vector<std::string> architecture(const Model& model) {
  std::vector<std::string> out;
  for (const auto& layer : model.layers())
    out.push_back(layer->name() + " " + layer->class_name() + " " + layer->output_shape_string() + " " +
                  std::to_string(layer->count_params()));
  for (const auto& x : model.inputs()) out.push_back("input " + x.shape().to_string());
  for (const auto& y : model.outputs()) out.push_back("output " + y.layer().name() + " " + y.shape().to_string());
  return out;
}

// Loads <case>.weights.h5, predicts <case>.io.h5's inputs and compares with Keras's outputs
// (|tower - keras| <= 1e-5 |keras| + 1e-6).
void check_predictions(Model& model, const std::string& case_name) {
  model.load_weights((kConfigs / (case_name + ".weights.h5")).string());
  auto file = h5::File::open((kConfigs / (case_name + ".io.h5")).string());
  std::vector<Tensor> xs, ys;
  for (int i = 0; file.exists("x" + std::to_string(i)); ++i) xs.push_back(file.read_dataset("x" + std::to_string(i)));
  for (int i = 0; file.exists("y" + std::to_string(i)); ++i) ys.push_back(file.read_dataset("y" + std::to_string(i)));
  auto got = model.predict(xs);
  REQUIRE(got.size() == ys.size());
  for (std::size_t k = 0; k < ys.size(); ++k) {
    CAPTURE(k);
    REQUIRE(got[k].shape() == ys[k].shape());
    auto g = got[k].to_vector<float>();
    auto e = ys[k].to_vector<float>();
    double worst = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(g[i]) - e[i]) - 1e-5 * std::abs(static_cast<double>(e[i])));
    CHECK_MESSAGE(worst <= 1e-6, case_name << ": output " << k << " differs from Keras's by " << worst);
  }
}

// The keys Keras compares: class names, layer names, layer configs and inbound_nodes. tf_keras 2.13+
// also writes InputLayer's "optional" (false; tower leaves it out so older tf.keras loads the file)
// and Embedding's "batch_input_shape" of the Sequential it was built in.
void remove_ignored(json& layer_config) {
  layer_config.erase("optional");
  if (layer_config.contains("input_length")) layer_config.erase("batch_input_shape");
}

void compare_configs(const json& tower_config, const json& keras_config, const std::string& where) {
  CAPTURE(where);
  REQUIRE(tower_config["class_name"] == keras_config["class_name"]);
  const json& a = tower_config["config"];
  const json& b = keras_config["config"];
  CHECK(a["name"] == b["name"]);
  REQUIRE(a["layers"].size() == b["layers"].size());
  for (std::size_t i = 0; i < a["layers"].size(); ++i) {
    const json& la = a["layers"][i];
    const json& lb = b["layers"][i];
    CAPTURE(lb["config"].value("name", ""));
    CHECK(la["class_name"] == lb["class_name"]);
    if (lb.contains("name")) CHECK(la["name"] == lb["name"]);
    if (lb.contains("inbound_nodes")) CHECK(la["inbound_nodes"] == lb["inbound_nodes"]);
    if (lb["class_name"] == "Sequential" || lb["class_name"] == "Functional") {
      compare_configs(la, lb, where + "/" + lb["config"].value("name", ""));
      continue;
    }
    json ca = la["config"], cb = lb["config"];
    remove_ignored(ca);
    remove_ignored(cb);
    CHECK(ca.dump() == cb.dump());
  }
  for (const char* key : {"input_layers", "output_layers"})
    if (b.contains(key)) CHECK(a[key] == b[key]);
}

const std::vector<std::string> kCases = {"mlp",         "cnn",         "merge",        "nested",      "shared",
                                         "embedding",   "activations", "dialect_mlp", "dialect_cnn", "dialect_func"};

}  // namespace

TEST_CASE("model_config: tf_keras and Keras 3 configs rebuild models that predict as Keras") {
  for (const auto& name : kCases) {
    for (const char* dialect : {"tf_keras", "keras3"}) {
      CAPTURE(name);
      CAPTURE(dialect);
      Model model = io::model_from_json(read_text(kConfigs / (name + "." + dialect + ".json")));
      check_predictions(model, name);
    }
    // Both dialects describe the same architecture.
    Model a = io::model_from_json(read_text(kConfigs / (name + ".tf_keras.json")));
    Model b = io::model_from_json(read_text(kConfigs / (name + ".keras3.json")));
    CHECK(architecture(a) == architecture(b));
  }
}

TEST_CASE("model_config: tower's configs equal tf_keras's") {
  SUBCASE("hand-built MLP, CNN and functional merge models") {
    Sequential mlp(
        {Input({20}, {.name = "mlp_input"}),
         Dense(16, {.activation = "relu", .kernel_initializer = "he_normal", .bias_initializer = Initializer::constant(0.1),
                    .kernel_regularizer = regularizers::l2(0.01), .name = "dense_a"}),
         BatchNormalization({.name = "bn"}), Dropout(0.25, {.name = "drop"}),
         Dense(8, {.kernel_initializer = Initializer::random_uniform(-0.1, 0.1), .bias_regularizer = regularizers::l1(0.001),
                   .name = "dense_b"}),
         Activation("tanh", {.name = "act"}),
         Dense(4, {.activation = "softmax", .kernel_regularizer = regularizers::l1_l2(0.01, 0.02), .name = "dense_c"})},
        "mlp");
    compare_configs(io::model_to_config(mlp), read_json(kConfigs / "mlp.tf_keras.json"), "mlp");

    Sequential cnn({Input({10, 10, 3}, {.name = "cnn_input"}),
                    Conv2D(4, 3, {.padding = "same", .activation = "relu", .name = "conv_a"}),
                    ZeroPadding2D(std::vector<std::vector<std::int64_t>>{{1, 0}, {0, 1}}, {.name = "pad"}),
                    MaxPooling2D(2, {.name = "max_pool"}),
                    Conv2D(6, {3, 2}, {.strides = {1, 1}, .use_bias = false, .name = "conv_b"}),
                    AveragePooling2D(2, {.strides = {1}, .padding = "same", .name = "avg_pool"}),
                    Flatten({.name = "flat"}), Reshape({3, 4, 6}, {.name = "reshape"}),
                    GlobalAveragePooling2D({.name = "gap"}), Dense(3, {.name = "out"})},
                   "cnn");
    compare_configs(io::model_to_config(cnn), read_json(kConfigs / "cnn.tf_keras.json"), "cnn");

    auto a = Input({6}, {.name = "in_a"});
    auto b = Input({6}, {.name = "in_b"});
    auto d1 = Dense(8, {.activation = "relu", .name = "d1"})(a);
    auto d2 = Dense(8, {.activation = "tanh", .name = "d2"})(b);
    auto cat = Concatenate({.name = "cat"})({d1, d2});
    auto add = Add({.name = "add"})({d1, d2});
    auto mul = Multiply({.name = "mul"})({d1, d2});
    auto sub = Subtract({.name = "sub"})({d1, d2});
    auto avg = Average({.name = "avg"})({d1, d2, add});
    auto mx = Maximum({.name = "max"})({d1, d2});
    auto all = Concatenate({.axis = -1, .name = "cat_all"})({cat, mul, sub, avg});
    auto y1 = Dense(3, {.activation = "softmax", .name = "y1"})(all);
    auto y2 = Dense(1, {.name = "y2"})(mx);
    Model merge({a, b}, {y1, y2}, "merge");
    compare_configs(io::model_to_config(merge), read_json(kConfigs / "merge.tf_keras.json"), "merge");
  }
  SUBCASE("every case read and written again (nested models, shared layers, Embedding, activations)") {
    // TOWER_WRITE_CONFIG_DIR=dir also writes tower's JSON there, for `make_configs.py --check-cpp dir`
    // (Keras loads each file and predicts with the case's weights).
    const char* out_dir = std::getenv("TOWER_WRITE_CONFIG_DIR");
    for (const auto& name : kCases) {
      json keras = read_json(kConfigs / (name + ".tf_keras.json"));
      Model model = io::model_from_config(keras);
      compare_configs(io::model_to_config(model), keras, name);
      if (out_dir) std::ofstream(fs::path(out_dir) / (name + ".tower.json")) << io::model_to_json(model);
    }
  }
}

TEST_CASE("model_config: Keras 1.2, 2.0, 2.1 and 2.2.4 configs (hand-written) parse to the same models") {
  struct Dialect {
    const char* file;
    const char* keras_case;  // the generated case with the same architecture and its weights
  };
  for (const Dialect& d : {Dialect{"keras1_mlp", "dialect_mlp"}, Dialect{"keras2_0_mlp", "dialect_mlp"},
                           Dialect{"keras2_2_4_mlp", "dialect_mlp"}, Dialect{"keras1_cnn", "dialect_cnn"},
                           Dialect{"keras1_functional", "dialect_func"}, Dialect{"keras2_functional", "dialect_func"},
                           Dialect{"keras2_nested", "nested"}}) {
    CAPTURE(d.file);
    Model model = io::model_from_json(read_text(kConfigs / (std::string(d.file) + ".json")));
    Model keras = io::model_from_json(read_text(kConfigs / (std::string(d.keras_case) + ".tf_keras.json")));
    CHECK(architecture(model) == architecture(keras));
    CHECK(model.class_name() == keras.class_name());
    check_predictions(model, d.keras_case);
  }
}

TEST_CASE("model_config: Sequential keeps its identity and every Sequential form is read") {
  Model seq = io::model_from_json(read_text(kConfigs / "mlp.tf_keras.json"));
  CHECK(seq.class_name() == "Sequential");
  CHECK(seq.layers().size() == 6);  // without the InputLayer
  CHECK(seq.layers()[0]->name() == "dense_a");
  CHECK(io::model_to_config(seq)["class_name"] == "Sequential");

  // Keras 3 without an InputLayer: build_input_shape gives the input.
  json k3 = {{"class_name", "Sequential"},
             {"config",
              {{"name", "s3"},
               {"build_input_shape", {nullptr, 3}},
               {"layers", json::array({json{{"class_name", "Dense"}, {"config", {{"name", "d3"}, {"units", 2}}}}})}}}};
  Model m3 = io::model_from_config(k3);
  CHECK(m3.outputs()[0].shape() == Shape({-1, 2}));

  // No input shape at all: an unbuilt Sequential (from layer_from_config), built by the first data, as Keras.
  json lazy = {{"class_name", "Sequential"},
               {"config", {{"name", "lazy"}, {"layers", json::array({json{{"class_name", "Dense"}, {"config", {{"name", "dl"}, {"units", 2}}}}})}}}};
  auto unbuilt = std::dynamic_pointer_cast<Sequential>(layer_from_config(lazy));
  REQUIRE(unbuilt);
  CHECK(unbuilt->inputs().empty());
  CHECK(unbuilt->predict(Tensor::zeros({1, 5})).shape() == Shape({1, 2}));
  // model_from_config returns a Model, which cannot build itself later: it says so.
  CHECK(contains(message_of<ValueError>([&] { io::model_from_config(lazy); }), "Sequential \"lazy\" gives no input shape"));

  // to_json adds keras_version and backend; from_json(to_json(m)) gives the same config.
  json written = json::parse(seq.to_json());
  CHECK(written.contains("keras_version"));
  CHECK(written["backend"] == "tensorflow");
  CHECK(io::model_to_config(io::model_from_json(seq.to_json())) == io::model_to_config(seq));
}

TEST_CASE("model_config: nested models are numbered from 1 as tf.keras does, and read back") {
  auto x = Input({5}, {.name = "x"});
  Sequential inner({Input({5}, {.name = "inner_in"}), Dense(3, {.name = "inner_d"})}, "inner");
  auto h1 = inner(x);
  auto h2 = inner(Dense(5, {.name = "proj"})(x));
  Model outer(x, Add({.name = "sum"})({h1, h2}), "outer");
  json config = io::model_to_config(outer);
  json inner_entry;
  for (const auto& layer : config["config"]["layers"])
    if (layer["name"] == "inner") inner_entry = layer;
  REQUIRE(inner_entry["inbound_nodes"].size() == 2);
  json sum_entry = config["config"]["layers"].back();
  CHECK(sum_entry["inbound_nodes"] == json::parse(R"([[["inner", 1, 0, {}], ["inner", 2, 0, {}]]])"));
  Model rebuilt = io::model_from_config(config);
  CHECK(architecture(rebuilt) == architecture(outer));
  CHECK(io::model_to_config(rebuilt) == config);
}

TEST_CASE("model_config: errors") {
  // Malformed JSON names the position.
  auto bad = message_of<ValueError>([] { io::model_from_json(R"({"class_name": "Sequential", "config": [)"); });
  CHECK(contains(bad, "malformed JSON at byte"));
  // Missing class_name / config.
  CHECK(contains(message_of<ValueError>([] { io::model_from_json(R"({"config": {}})"); }), "class_name"));
  CHECK(contains(message_of<ValueError>([] { io::model_from_json(R"({"class_name": "Functional"})"); }), "\"config\""));
  CHECK(contains(message_of<ValueError>([] { io::model_from_json(R"({"class_name": "Dense", "config": {}})"); }),
                 "not a model"));

  json keras = read_json(kConfigs / "dialect_func.tf_keras.json");
  // An inbound node that names a layer the config does not have.
  {
    json c = keras;
    c["config"]["layers"][3]["inbound_nodes"][0][0][0] = "dense_99";
    auto msg = message_of<ValueError>([&] { io::model_from_config(c); });
    CHECK(contains(msg, "\"dense_99\""));
    CHECK(contains(msg, "\"merge_1\""));
  }
  // An unknown layer class inside a model.
  {
    json c = keras;
    c["config"]["layers"][1]["class_name"] = "SpectralNormalization";
    auto msg = message_of<NotFoundError>([&] { io::model_from_config(c); });
    CHECK(contains(msg, "\"SpectralNormalization\""));
    CHECK(contains(msg, "\"dense_1\""));
  }
  // A layer entry without class_name or config.
  {
    json c = keras;
    c["config"]["layers"][1].erase("class_name");
    CHECK(contains(message_of<ValueError>([&] { io::model_from_config(c); }), "class_name"));
    c = keras;
    c["config"]["layers"][1].erase("config");
    CHECK(contains(message_of<ValueError>([&] { io::model_from_config(c); }), "\"config\""));
  }
  // A node index that does not exist.
  {
    json c = keras;
    c["config"]["layers"][4]["inbound_nodes"][0][0][1] = 3;
    CHECK(contains(message_of<ValueError>([&] { io::model_from_config(c); }), "node 3 of layer \"merge_1\""));
  }
  // channels_first where tower does not take it (ConvLSTM2D); the layers that take it load it.
  {
    json c = read_json(kConfigs / "cnn.tf_keras.json");
    c["config"]["layers"][1]["class_name"] = "ConvLSTM2D";
    c["config"]["layers"][1]["config"]["data_format"] = "channels_first";
    auto msg = message_of<ValueError>([&] { io::model_from_config(c); });
    CHECK(contains(msg, "ConvLSTM2D \"conv_a\""));
    CHECK(contains(msg, "channels_first"));
  }
}

TEST_CASE("model_config: tf.keras 2.2.4 files from ../shared/keras-files") {
  for (const char* name : {"toyresnet", "batchnorm"}) {
    CAPTURE(name);
    const fs::path config_path = kKerasFiles / (std::string(name) + "_modelConfig.json");
    const fs::path weights_path = kKerasFiles / (std::string(name) + "_weights.h5");
    if (!fs::exists(config_path) || !fs::exists(weights_path)) {
      MESSAGE("skipped: " << config_path << " is not there (the shared Keras files are not committed)");
      continue;
    }
    Model model = io::model_from_json(read_text(config_path));
    model.load_weights(weights_path.string());

    // Every weight equals the file's (read by the names the file lists).
    auto file = h5::File::open(weights_path.string());
    h5::Group root = file.has_string_array_attr("layer_names") ? file.root() : file.group("model_weights");
    int compared = 0;
    for (const auto& layer_name : root.read_string_array_attr("layer_names")) {
      h5::Group group = root.group(layer_name);
      auto names = group.read_string_array_attr("weight_names");
      if (names.empty()) continue;
      auto values = model.get_layer(layer_name)->get_weights();
      REQUIRE(values.size() == names.size());
      for (std::size_t i = 0; i < names.size(); ++i) {
        CHECK(values[i].to_vector<float>() == group.read_dataset(names[i]).to_vector<float>());
        ++compared;
      }
    }
    CHECK(compared > 0);

    // Predictions are finite.
    auto shape = model.inputs()[0].shape().dims();
    shape[0] = 2;
    std::vector<float> data(static_cast<std::size_t>(Shape(shape).num_elements()));
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((i % 17) / 17.0);
    auto out = model.predict(Tensor::from_vector<float>(Shape(shape), data)).to_vector<float>();
    for (float v : out) CHECK(std::isfinite(v));
  }
}
