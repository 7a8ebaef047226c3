// Full-model files: tower's save -> load_model round trip (training continues exactly), and files written
// by real Keras (tests/golden/files/models, made by tests/golden/make_model_files.py): tf.keras 2.x,
// Keras 3's legacy .h5, multi_gpu_model, a Theano-backend file and Keras 1.2's layout.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tower/core/random.h"
#include "tower/io/keras_model.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::read_bytes;
using tower::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kModels = std::string(TOWER_GOLDEN_DIR) + "/files/models/";

std::vector<double> values(const Tensor& t) {
  Tensor d = t.to(cpu_device());
  std::vector<double> out;
  dispatch_any(d.dtype(), "values", [&]<typename T>() {
    for (std::int64_t i = 0; i < d.num_elements(); ++i) out.push_back(static_cast<double>(d.data<T>()[i]));
  });
  return out;
}

// |a - b| <= rtol |b| + atol everywhere; the message names the array and its worst element.
void check_close(const std::string& what, const Tensor& actual, const Tensor& expected, double rtol = 1e-5,
                 double atol = 1e-6) {
  INFO(what);
  REQUIRE(actual.shape() == expected.shape());
  const auto a = values(actual), e = values(expected);
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double excess = std::abs(a[i] - e[i]) - (rtol * std::abs(e[i]) + atol);
    if (!(excess <= worst)) {
      worst = std::isnan(excess) ? INFINITY : excess;
      at = i;
    }
  }
  INFO("worst element " << at << ": " << (a.empty() ? 0 : a[at]) << " vs " << (e.empty() ? 0 : e[at]));
  CHECK(worst <= 0);
}

void check_equal_weights(const Model& a, const Model& b) {
  const auto wa = a.get_weights(), wb = b.get_weights();
  REQUIRE(wa.size() == wb.size());
  for (std::size_t i = 0; i < wa.size(); ++i) check_close("weight " + std::to_string(i), wa[i], wb[i], 0, 0);
}

std::vector<Tensor> inputs_of(const io::hdf5::File& data) {
  if (data.exists("x")) return {data.read_dataset("x")};
  return {data.read_dataset("x0"), data.read_dataset("x1")};
}

// Loads <case>_<writer>.h5, checks predict, and (when the data file has after/...) that one more
// train_on_batch lands on Keras's weights: the optimizer state and step count were restored.
void check_keras_file(const std::string& stem, const std::string& data_stem, const std::string& expected_name = "") {
  INFO(stem);
  Model model = models::load_model(kModels + stem + ".h5");
  if (!expected_name.empty()) CHECK(model.name() == expected_name);
  auto data = io::hdf5::File::open(kModels + data_stem + "_data.h5");
  const auto x = inputs_of(data);
  check_close(stem + " predict", model.predict(x)[0], data.read_dataset("predict"), 1e-5, 1e-6);
  if (!data.is_group("after")) return;
  REQUIRE(model.compiled());
  model.train_on_batch(x, {data.read_dataset("y")});
  const auto after = data.group("after");
  int compared = 0;
  for (const auto& layer : model.layers()) {
    const auto w = layer->get_weights();
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string key = layer->name() + "/" + std::to_string(i);
      REQUIRE_MESSAGE(after.exists(key), "no Keras value for " << key);
      // Looser than predict: one optimizer step of float32 arithmetic in a different order.
      check_close(stem + " after one more step: " + key, w[i], after.read_dataset(key), 1e-4, 1e-6);
      ++compared;
    }
  }
  CHECK(compared > 0);
}

Model small_model() {
  return Sequential({layers::Input({6}), layers::Dense(8, {.activation = "relu"}), layers::Dropout(0.3, {.seed = 5}),
                     layers::BatchNormalization(), layers::Dense(3, {.activation = "softmax"})});
}

std::pair<Tensor, Tensor> small_batch() {
  Tensor x = random_normal({16, 6}, 0, 1, 11);
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 16; ++i) labels.push_back(i % 3);
  return {x, Tensor::from_vector<std::int32_t>({16}, labels)};
}

}  // namespace

TEST_CASE("save and load_model: architecture, weights, compile arguments and optimizer state") {
  TempDir dir("model");
  auto [x, y] = small_batch();
  for (const char* optimizer : {"adam", "sgd", "rmsprop", "adagrad", "adadelta", "adamw"}) {
    SUBCASE(optimizer) {
      clear_session();
      Model model = small_model();
      model.compile(optimizer, "sparse_categorical_crossentropy", {"accuracy"});
      for (int i = 0; i < 3; ++i) model.train_on_batch({x}, {y});
      const std::string path = dir.file(std::string(optimizer) + ".h5");
      model.save(path);

      Model loaded = models::load_model(path);
      CHECK(loaded.class_name() == "Sequential");
      CHECK(loaded.layers().size() == model.layers().size());
      check_equal_weights(loaded, model);
      REQUIRE(loaded.compiled());
      CHECK(loaded.optimizer().name() == model.optimizer().name());
      CHECK(loaded.optimizer().iterations() == 3);
      CHECK(loaded.optimizer().current_learning_rate() == doctest::Approx(model.optimizer().current_learning_rate()));
      // The same next steps (slots restored, Dropout's masks keyed by the step count).
      for (int i = 0; i < 2; ++i) {
        auto la = model.train_on_batch({x}, {y});
        auto lb = loaded.train_on_batch({x}, {y});
        CHECK(la[0] == lb[0]);
      }
      check_equal_weights(loaded, model);
      CHECK(loaded.evaluate(x, y, {.verbose = 0}).entries() == model.evaluate(x, y, {.verbose = 0}).entries());
    }
  }
}

TEST_CASE("save: the file has Keras's full-model layout") {
  TempDir dir("model");
  clear_session();
  Model model = small_model();
  model.compile(optimizers::Adam(0.005), losses::SparseCategoricalCrossentropy({.from_logits = false}), {"accuracy"});
  auto [x, y] = small_batch();
  model.train_on_batch({x}, {y});
  model.save(dir.file("m.h5"));
  auto file = io::hdf5::File::open(dir.file("m.h5"));
  CHECK(file.read_string_attr("backend") == "tensorflow");
  auto config = nlohmann::json::parse(file.read_string_attr("model_config"));
  CHECK(config["class_name"] == "Sequential");
  auto training = nlohmann::json::parse(file.read_string_attr("training_config"));
  CHECK(training["loss"] == "sparse_categorical_crossentropy");
  CHECK(training["metrics"] == nlohmann::json::array({"sparse_categorical_accuracy"}));
  CHECK(training["tower_metric_names"] == nlohmann::json::array({"accuracy"}));
  CHECK(training["optimizer_config"]["class_name"] == "Custom>Adam");
  CHECK(training["optimizer_config"]["config"]["learning_rate"].get<double>() == doctest::Approx(0.005));
  CHECK(file.group("model_weights").read_string_array_attr("layer_names").size() == 4);
  const auto names = file.group("optimizer_weights").read_string_array_attr("weight_names");
  REQUIRE(names.size() == 1 + 2 * 6);  // iteration, then m and v of the 6 trainable weights
  CHECK(names[0] == "iteration:0");
  CHECK(names[1] == "Adam/m/dense/kernel:0");
  CHECK(file.read_dataset("optimizer_weights/iteration:0").dtype() == DType::int64);

  SUBCASE("include_optimizer = false and uncompiled models write no optimizer_weights") {
    model.save(dir.file("no_opt.h5"), {.include_optimizer = false});
    CHECK_FALSE(io::hdf5::File::open(dir.file("no_opt.h5")).exists("optimizer_weights"));
    Model plain = small_model();
    plain.save(dir.file("plain.h5"));
    auto f = io::hdf5::File::open(dir.file("plain.h5"));
    CHECK_FALSE(f.has_attr("training_config"));
    Model loaded = models::load_model(dir.file("plain.h5"));
    CHECK_FALSE(loaded.compiled());
  }
  SUBCASE("a loaded model saved again before training keeps the optimizer state") {
    Model loaded = models::load_model(dir.file("m.h5"));
    loaded.save(dir.file("again.h5"));
    auto f = io::hdf5::File::open(dir.file("again.h5"));
    CHECK(f.group("optimizer_weights").read_string_array_attr("weight_names").size() == names.size());
    Model twice = models::load_model(dir.file("again.h5"));
    CHECK(twice.optimizer().iterations() == 1);
  }
}

TEST_CASE("load_model: files written by tf.keras 2.x and Keras 3 continue training exactly") {
  for (const char* writer : {"tf_keras", "keras3"})
    for (const char* c : {"mlp", "cnn", "merge"}) {
      const std::string stem = std::string(c) + "_" + writer;
      SUBCASE(stem.c_str()) { check_keras_file(stem, stem); }
    }
}

TEST_CASE("load_model: Adafactor's factored slots (r, c, v) written by tf.keras 2.x continue training exactly") {
  check_keras_file("adafactor_tf_keras", "adafactor_tf_keras");
}

TEST_CASE("load_model: the convolution family of tf.keras 2.x and Keras 3 (DepthwiseConv2D, SeparableConv2D, "
          "Conv2DTranspose, UpSampling2D bilinear and nearest, Cropping2D) predicts and continues training exactly") {
  check_keras_file("vision_tf_keras", "vision_tf_keras");
  check_keras_file("vision_keras3", "vision_keras3");
}

TEST_CASE("load_model: the preprocessing, augmentation and noise layers of tf.keras 2.x and Keras 3 (Rescaling, "
          "an adapted Normalization, the random layers, Resizing, CenterCrop, RandomCrop, GaussianNoise, "
          "GaussianDropout, SpatialDropout2D, AlphaDropout, ActivityRegularization) predict as Keras") {
  check_keras_file("augment_tf_keras", "augment_tf_keras");
  check_keras_file("augment_keras3", "augment_keras3");
}

TEST_CASE("load_model: channels_first models of tf.keras 2.x and Keras 3 (BatchNormalization on axis 1) predict and "
          "continue training exactly") {
  check_keras_file("channels_first_tf_keras", "channels_first_tf_keras");
  check_keras_file("channels_first_keras3", "channels_first_keras3");
}

TEST_CASE("load_model: the 3-D layers of tf.keras 2.x and Keras 3 (Conv3D with groups, Conv3DTranspose, 3-D pooling, "
          "ZeroPadding3D, UpSampling3D, Cropping3D, global 3-D pooling) predict and continue training exactly") {
  check_keras_file("volume_tf_keras", "volume_tf_keras", "volume");
  check_keras_file("volume_keras3", "volume_keras3", "volume");
}

TEST_CASE("load_model: tf.keras 2.x's LocallyConnected2D and LocallyConnected1D (strided, channels_first, without "
          "bias) predict and continue training exactly") {
  check_keras_file("local_tf_keras", "local_tf_keras", "local");
}

TEST_CASE("load_model: tf.keras 2.x's LocallyConnected implementations 2 and 3 (dense masked and sparse kernels, "
          "padding same) predict, continue training, and save back in Keras's layout") {
  check_keras_file("local_impl23_tf_keras", "local_impl23_tf_keras", "local_impl23");
  // Saved again, every weight is where and as Keras wrote it (what tf.keras's load_model reads), and the
  // file loads back to the same predictions.
  TempDir dir("model");
  Model model = models::load_model(kModels + "local_impl23_tf_keras.h5");
  model.save(dir.file("again.h5"));
  auto keras = io::hdf5::File::open(kModels + "local_impl23_tf_keras.h5");
  auto ours = io::hdf5::File::open(dir.file("again.h5"));
  int compared = 0;
  for (const char* w : {"locally_connected2d/locally_connected2d/kernel:0",      // (5, 4, 2, 3, 2, 3), implementation 2
                        "locally_connected2d_1/locally_connected2d_1/kernel:0",  // (48,), implementation 3
                        "locally_connected1d/locally_connected1d/kernel:0",      // (220,), implementation 3, same
                        "locally_connected1d_1/locally_connected1d_1/kernel:0",  // (5, 8, 2, 2), implementation 2
                        "locally_connected2d/locally_connected2d/bias:0"}) {
    INFO(w);
    const std::string at = std::string("model_weights/") + w;
    const Tensor k = keras.read_dataset(at), o = ours.read_dataset(at);
    CHECK(o.shape() == k.shape());
    CHECK(values(o) == values(k));
    ++compared;
  }
  CHECK(compared == 5);
  auto data = io::hdf5::File::open(kModels + "local_impl23_tf_keras_data.h5");
  const auto x = inputs_of(data);
  check_close("saved again", models::load_model(dir.file("again.h5")).predict(x)[0], data.read_dataset("predict"), 1e-5,
              1e-6);
}

TEST_CASE("load_model: recurrent models of tf.keras 2.x and Keras 3 (Bidirectional LSTM, GRU, TimeDistributed, "
          "SimpleRNN, RepeatVector, hard_sigmoid gates) predict and continue training exactly") {
  // Both files say "hard_sigmoid" for the last LSTM's gates; each means its own Keras's.
  check_keras_file("rnn_tf_keras", "rnn_tf_keras");
  check_keras_file("rnn_keras3", "rnn_keras3");
  check_keras_file("rnn_keras2_tf_keras", "rnn_keras2_tf_keras");
  Model model = models::load_model(kModels + "rnn_keras3.h5");
  const auto& lstm = dynamic_cast<const layers::LSTM&>(*model.layers().at(5));
  CHECK(*lstm.options().recurrent_activation == "hard_sigmoid_keras3");
  Model tf_keras_model = models::load_model(kModels + "rnn_tf_keras.h5");
  const auto& gru = dynamic_cast<const layers::GRU&>(*tf_keras_model.layers().at(1));
  CHECK(*gru.options().reset_after);
}

TEST_CASE("load_model: Keras 2.2's recurrent layers (hard_sigmoid, GRU without reset_after, weights without the "
          "cell's name)") {
  check_keras_file("rnn_keras2_2", "rnn_keras2_2");
}

TEST_CASE("load_model: Keras 2's CuDNNLSTM and CuDNNGRU load as LSTM and GRU, their weights converted") {
  check_keras_file("rnn_cudnn", "rnn_cudnn");
  Model model = models::load_model(kModels + "rnn_cudnn.h5");
  CHECK(model.layers().at(0)->class_name() == "LSTM");
  CHECK(model.layers().at(1)->class_name() == "GRU");
  CHECK(model.layers().at(0)->get_weights().at(2).shape() == Shape{16});
  // A GRU without reset_after cannot take cuDNN's weights.
  Model wrong = Sequential({layers::Input({6, 3}), layers::LSTM(4, {.return_sequences = true}),
                            layers::GRU(3, {.reset_after = false}), layers::Dense(2)});
  CHECK_THROWS_WITH_AS(wrong.load_weights(kModels + "rnn_cudnn.h5"), doctest::Contains("reset_after"), ValueError);
}

TEST_CASE("load_model: Keras 1.2's LSTM (12 weights, gates i, c, f, o) and GRU (9 weights)") {
  check_keras_file("keras1_rnn", "keras1_rnn");
}

TEST_CASE("load_model: a Keras multi_gpu_model file loads as its template model") {
  check_keras_file("multi_gpu_tf_keras", "multi_gpu_tf_keras", "sequential_1");
  Model model = models::load_model(kModels + "multi_gpu_tf_keras.h5");
  CHECK(model.layers().size() == 2);
  CHECK(model.layers()[0]->class_name() == "Dense");
}

TEST_CASE("load_model: a Theano-backend file has its convolution kernels flipped") {
  check_keras_file("theano_tf_keras", "theano_tf_keras");
  // The files hold different kernels (one flipped); loaded, they are the same.
  const std::string kernel = "model_weights/conv2d/conv2d/kernel:0";
  CHECK(values(io::hdf5::File::open(kModels + "cnn_tf_keras.h5").read_dataset(kernel)) !=
        values(io::hdf5::File::open(kModels + "theano_tf_keras.h5").read_dataset(kernel)));
  Model plain = models::load_model(kModels + "cnn_tf_keras.h5");
  Model theano = models::load_model(kModels + "theano_tf_keras.h5");
  CHECK(values(plain.get_weights()[0]) == values(theano.get_weights()[0]));
}

TEST_CASE("load_model: Keras 1.2's layout (list config, output_dim, dense_1_W, lr)") {
  check_keras_file("keras1_mlp", "keras1_mlp");
  Model model = models::load_model(kModels + "keras1_mlp.h5");
  REQUIRE(model.compiled());
  CHECK(model.optimizer().name() == "SGD");
  CHECK(model.optimizer().current_learning_rate() == doctest::Approx(0.01));
}

TEST_CASE("load_model: clear errors") {
  TempDir dir("model");
  clear_session();
  Model model = small_model();
  model.save_weights(dir.file("weights.h5"));
  CHECK_THROWS_WITH_AS(models::load_model(dir.file("weights.h5")),
                       doctest::Contains("holds weights only (save_weights); build the model in code and call load_weights"),
                       io::FileError);
  CHECK_THROWS_WITH_AS(models::load_model(dir.file("missing.h5")), doctest::Contains("missing.h5"), io::FileError);
  io::hdf5::write_file_atomically(dir.file("bad_json.h5"), "test", [](io::hdf5::File& f) {
    f.write_string_attr("model_config", "{\"class_name\": \"Sequential\", ");
  });
  CHECK_THROWS_WITH_AS(models::load_model(dir.file("bad_json.h5")), doctest::Contains("model_config is not valid JSON"),
                       io::FileError);
}

TEST_CASE("optimizer configs round-trip through from_config, Keras spellings included") {
  for (auto opt : {optimizers::get("sgd"), optimizers::get("rmsprop"), optimizers::get("adam"), optimizers::get("adamw"),
                   optimizers::get("adagrad"), optimizers::get("adadelta"), optimizers::get("adamax"),
                   optimizers::get("nadam"), optimizers::get("lion"), optimizers::get("ftrl"),
                   optimizers::get("adafactor")}) {
    auto again = optimizers::from_config(optimizers::to_config(*opt));
    CHECK(again->name() == opt->name());
    CHECK(again->get_config() == opt->get_config());
  }
  auto sched = std::make_shared<optimizers::ExponentialDecay>(0.1, 100, 0.5, true);
  optimizers::SGD sgd(sched, {.momentum = 0.9, .nesterov = true});
  auto again = optimizers::from_config(optimizers::to_config(sgd));
  CHECK(again->get_config() == sgd.get_config());
  // tf.keras 2.11+ "Custom>Adam"; Keras 2's lr and decay (inverse-time decay per step).
  auto adam = optimizers::from_config(
      nlohmann::json::parse(R"({"class_name": "Custom>Adam", "config": {"learning_rate": 0.002, "beta_1": 0.8}})"));
  CHECK(adam->name() == "Adam");
  CHECK(adam->get_config()["beta_1"] == 0.8);
  auto keras2 = optimizers::from_config(
      nlohmann::json::parse(R"({"class_name": "SGD", "config": {"lr": 0.1, "decay": 0.5, "momentum": 0.0}})"));
  keras2->set_iterations(2);
  CHECK(keras2->current_learning_rate() == doctest::Approx(0.1 / (1 + 0.5 * 2)));
  CHECK_THROWS_WITH_AS(optimizers::from_config(nlohmann::json::parse(R"({"class_name": "Lamb", "config": {}})")),
                       doctest::Contains("\"Lamb\" is not supported"), ValueError);
}
