// Layer configs: get_config -> layer_from_config -> get_config for every registered layer, the
// initializer/regularizer/activation forms of every Keras version, Keras 1 aliases, and errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <set>

#include "tower/io/model_config.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"

using namespace tower;
using namespace tower::layers;
using nlohmann::json;
using tower::testing::contains;
using tower::testing::message_of;

using tower::testing::entry;

namespace {

// One layer of every registered class, with arguments other than the defaults where they exist, and
// the input shape (without batch) to call it on.
struct Sample {
  LayerPtr layer;
  std::vector<Shape> inputs;
};

std::vector<Sample> samples() {
  std::vector<Sample> out;
  auto add = [&](const Layer& layer, std::vector<Shape> inputs) { out.push_back({layer.share(), std::move(inputs)}); };
  add(Activation("tanh", {.name = "act"}), {{5}});
  add(Add({.name = "add"}), {{4}, {4}});
  add(AdditiveAttention({.use_scale = false, .dropout = 0.1, .seed = 3, .name = "add_att"}), {{3, 4}, {5, 4}});
  add(Average({.name = "avg"}), {{4}, {4}, {4}});
  add(Attention({.use_scale = true, .score_mode = "concat", .dropout = 0.2, .name = "att"}), {{3, 4}, {5, 2}, {5, 4}});
  add(AveragePooling1D(3, {.strides = 1, .padding = "same", .name = "avg_pool1d"}), {{6, 2}});
  add(AveragePooling2D({3, 2}, {.strides = {1, 2}, .padding = "same", .name = "avg_pool"}), {{6, 6, 2}});
  add(BatchNormalization({.momentum = 0.9, .epsilon = 1e-4, .center = false,
                          .gamma_initializer = Initializer::random_normal(1.0, 0.1),
                          .gamma_regularizer = regularizers::l2(0.5), .name = "bn"}),
      {{3, 3, 4}});
  add(Bidirectional(GRU(2, {.return_sequences = true, .name = "bi_gru"}),
                    {.merge_mode = "sum", .backward_layer = LSTM(2, {.return_sequences = true, .go_backwards = true,
                                                                     .name = "bi_lstm"}),
                     .name = "bi"}),
      {{4, 3}});
  add(CenterCrop(3, 2, {.name = "center_crop"}), {{5, 4, 2}});
  add(Concatenate({.axis = 1, .name = "cat"}), {{2, 3}, {4, 3}});
  add(Conv1D(3, 2, {.padding = "causal", .dilation_rate = 2, .activation = "relu",
                    .kernel_regularizer = regularizers::l2(0.01), .name = "conv1d"}),
      {{7, 2}});
  add(Conv2D(3, {3, 2}, {.strides = {2, 1}, .padding = "same", .dilation_rate = {1, 1}, .activation = "relu",
                         .use_bias = false, .kernel_initializer = "he_normal",
                         .kernel_regularizer = regularizers::l1_l2(0.01, 0.02), .name = "conv"}),
      {{7, 7, 2}});
  add(Conv2DTranspose(3, {3, 3}, {.strides = {2, 1}, .padding = "same", .output_padding = {1, 0},
                                  .activation = "relu", .kernel_constraint = constraints::max_norm(2.0),
                                  .name = "tconv"}),
      {{4, 4, 2}});
  add(Cropping2D(std::vector<std::vector<std::int64_t>>{{1, 0}, {2, 1}}, {.name = "crop2d"}), {{4, 5, 2}});
  add(Conv3D(4, {3, 2, 2}, {.strides = {1, 2, 1}, .padding = "same", .groups = 2, .activation = "relu",
                            .kernel_initializer = "he_normal", .kernel_regularizer = regularizers::l2(0.01),
                            .bias_constraint = constraints::non_neg(), .name = "conv3d"}),
      {{4, 5, 4, 2}});
  add(Conv3DTranspose(3, {3, 3, 3}, {.strides = {2, 2, 1}, .padding = "same", .output_padding = {1, 0, 0},
                                     .activation = "tanh", .use_bias = false,
                                     .kernel_constraint = constraints::max_norm(2.0), .name = "tconv3d"}),
      {{2, 3, 3, 2}});
  add(Cropping3D(std::vector<std::vector<std::int64_t>>{{1, 0}, {0, 2}, {1, 1}}, {.name = "crop3d"}), {{3, 4, 4, 2}});
  add(MaxPooling3D({2, 2, 1}, {.strides = {1, 2, 1}, .padding = "same", .name = "max_pool3d"}), {{4, 4, 3, 2}});
  add(AveragePooling3D({2, 1, 2}, {.name = "avg_pool3d"}), {{4, 4, 4, 1}});
  add(GlobalAveragePooling3D({.keepdims = true, .name = "gap3d"}), {{2, 3, 2, 2}});
  add(GlobalMaxPooling3D({.name = "gmp3d"}), {{2, 3, 2, 2}});
  add(UpSampling3D({2, 1, 3}, {.name = "up3d"}), {{2, 2, 2, 1}});
  add(ZeroPadding3D(std::vector<std::vector<std::int64_t>>{{1, 2}, {0, 1}, {2, 0}}, {.name = "pad3d"}), {{2, 2, 2, 1}});
  add(DepthwiseConv2D({3, 3}, {.strides = {2}, .padding = "same", .depth_multiplier = 2,
                               .depthwise_regularizer = regularizers::l2(0.1), .name = "dw"}),
      {{5, 5, 3}});
  add(Normalization({.axis = {-1}, .name = "norm"}), {{3, 2}});
  add(Normalization({.axis = {1, 2}, .mean = std::vector<double>{0.5}, .variance = std::vector<double>{2.0},
                     .invert = true, .name = "norm_given"}),
      {{3, 2}});
  add(RandomContrast(std::vector<double>{0.1, 0.3}, {.value_range = {0, 1}, .seed = 2, .name = "contrast"}),
      {{4, 4, 3}});
  add(RandomFlip("horizontal", {.seed = 9, .name = "flip"}), {{4, 4, 3}});
  add(RandomCrop(3, 2, {.seed = 4, .name = "random_crop"}), {{5, 4, 3}});
  add(RandomRotation(std::vector<double>{-0.2, 0.1},
                     {.fill_mode = "constant", .interpolation = "nearest", .seed = 5, .fill_value = 0.5, .name = "rot"}),
      {{4, 5, 3}});
  add(RandomTranslation(std::vector<double>{0.2}, std::vector<double>{-0.1, 0.3},
                        {.fill_mode = "wrap", .seed = 6, .name = "shift"}),
      {{4, 5, 3}});
  add(RandomZoom(std::vector<double>{-0.3, 0.2}, std::nullopt, {.fill_mode = "nearest", .name = "zoom"}), {{4, 5, 3}});
  add(Rescaling(0.5, {.offset = 1.0, .name = "rescale"}), {{3}});
  add(CategoryEncoding(6, {.output_mode = "count", .name = "cat_enc"}), {{3}});
  add(Hashing(7, {.mask_value = 0, .salt = std::array<std::int64_t, 2>{3, 4}, .name = "hashing"}), {{3}});
  {
    IntegerLookupOptions lookup;
    lookup.vocabulary = {7, 3, 12};
    lookup.mask_token = 0;
    lookup.name = "integer_lookup";
    add(IntegerLookup(lookup), {{3}});
  }
  add(Resizing(4, 6, {.interpolation = "nearest", .crop_to_aspect_ratio = true, .name = "resize"}), {{5, 5, 1}});
  add(Resizing(4, 6, {.pad_to_aspect_ratio = true, .fill_value = 0.5, .name = "resize_pad"}), {{5, 5, 1}});
  add(SeparableConv2D(4, {2, 3}, {.padding = "same", .depth_multiplier = 2, .activation = "tanh",
                                  .pointwise_constraint = constraints::non_neg(), .name = "sep"}),
      {{5, 5, 3}});
  add(UpSampling2D({2, 3}, {.interpolation = "bilinear", .name = "up2d"}), {{3, 2, 1}});
  add(Conv2D(2, 3, {.kernel_constraint = constraints::unit_norm({0, 1, 2}),
                    .bias_constraint = constraints::min_max_norm(0.5, 2.0, 0.5), .name = "conv_constrained"}),
      {{5, 5, 2}});
  add(Cropping1D({1, 2}, {.name = "crop1d"}), {{6, 2}});
  add(Dense(6, {.activation = "softmax", .kernel_initializer = Initializer::variance_scaling(2.0, "fan_out", "uniform"),
                .bias_initializer = Initializer::constant(0.25), .kernel_regularizer = regularizers::l2(0.01),
                .bias_regularizer = regularizers::l1(0.003), .name = "dense"}),
      {{5}});
  add(Dense(4, {.kernel_constraint = constraints::max_norm(1.5, {0, 1}), .bias_constraint = constraints::non_neg(),
                .name = "dense_constrained"}),
      {{5}});
  add(Dot({1, 2}, {.normalize = true, .name = "dot"}), {{3, 5}, {4, 3}});
  add(Dropout(0.3, {.seed = 42, .name = "drop"}), {{5}});
  add(Dropout(0.3, {.noise_shape = {-1, 1, 2}, .name = "drop_noise_shape"}), {{4, 2}});
  add(ActivityRegularization(0.01, 0.02, {.name = "activity_reg"}), {{5}});
  add(AlphaDropout(0.2, {.noise_shape = {-1, 1, 2}, .seed = 3, .name = "alpha_drop"}), {{4, 2}});
  add(GaussianDropout(0.2, {.seed = 4, .name = "gauss_drop"}), {{5}});
  add(GaussianNoise(0.1, {.name = "gauss_noise"}), {{5}});
  add(SpatialDropout2D(0.3, {.name = "sdrop2d"}), {{4, 4, 2}});
  add(SpatialDropout3D(0.3, {.seed = 1, .name = "sdrop3d"}), {{2, 3, 4, 2}});
  add(Dense(3, {.activity_regularizer = regularizers::l1_l2(0.01, 0.02), .name = "dense_activity_reg"}), {{5}});
  add(ELU(0.7, "elu"), {{5}});
  add(Embedding(11, 3, {.embeddings_initializer = Initializer::random_uniform(-0.1, 0.2), .mask_zero = true,
                         .name = "embed"}),
      {{4}});
  add(Flatten({.name = "flat"}), {{2, 3, 4}});
  add(GlobalAveragePooling1D({.keepdims = true, .name = "gap1d"}), {{4, 3}});
  add(GlobalAveragePooling2D({.keepdims = true, .name = "gap"}), {{4, 4, 3}});
  add(GlobalMaxPooling1D({.name = "gmp1d"}), {{4, 3}});
  add(GlobalMaxPooling2D({.name = "gmp"}), {{4, 4, 3}});
  add(InputLayer(Shape({7, 2}), DType::int32, "input_x"), {});
  add(ConvLSTM2D(2, {3, 3}, {.padding = "same", .return_sequences = true, .name = "clstm"}), {{3, 5, 5, 2}});
  add(GRU(3, {.recurrent_activation = "hard_sigmoid", .reset_after = false, .go_backwards = true, .name = "gru"}),
      {{4, 2}});
  add(LSTM(3, {.use_bias = false, .unit_forget_bias = false, .return_sequences = true, .return_state = true,
               .dropout = 0.1, .recurrent_dropout = 0.2, .seed = 5, .name = "lstm"}),
      {{4, 2}});
  add(LayerNormalization({.axis = {1, 2}, .epsilon = 1e-2, .center = false,
                          .gamma_regularizer = regularizers::l2(0.1), .name = "ln"}),
      {{3, 4}});
  add(LeakyReLU(0.15, "leaky"), {{5}});
  add(LocallyConnected1D(3, 2, {.strides = 2, .activation = "relu", .kernel_constraint = constraints::max_norm(2.0),
                                .data_format = "channels_first", .name = "local1d"}),
      {{2, 7}});
  add(LocallyConnected2D(2, {3, 2}, {.strides = {2, 1}, .use_bias = false, .kernel_regularizer = regularizers::l2(0.01),
                                     .name = "local2d"}),
      {{6, 5, 2}});
  // Implementations 2 (dense masked kernel) and 3 (sparse kernel), padding "same".
  add(LocallyConnected1D(2, 3, {.strides = 2, .padding = "same", .data_format = "channels_first", .implementation = 3,
                                .name = "local1d_sparse"}),
      {{2, 7}});
  add(LocallyConnected2D(2, {2, 3}, {.padding = "same", .activation = "tanh", .implementation = 2,
                                     .name = "local2d_dense"}),
      {{4, 5, 2}});
  add(LocallyConnected2D(3, 2, {.data_format = "channels_first", .implementation = 3, .name = "local2d_sparse"}),
      {{2, 4, 3}});
  add(Masking(-1.0, {.name = "masking"}), {{4, 2}});
  add(MaxPooling1D(3, {.strides = 2, .name = "max_pool1d"}), {{7, 2}});
  add(MaxPooling2D({2, 2}, {.strides = {1, 1}, .name = "max_pool"}), {{5, 5, 2}});
  add(Maximum({.name = "max"}), {{4}, {4}});
  add(Minimum({.name = "min"}), {{4}, {4}});
  add(MultiHeadAttention(2, 3, {.value_dim = 4, .dropout = 0.1, .use_bias = false, .output_shape = {5},
                                .kernel_initializer = "he_normal", .kernel_regularizer = regularizers::l2(0.01),
                                .name = "mha"}),
      {{3, 4}, {5, 6}});
  add(Multiply({.name = "mul"}), {{4}, {4}});
  add(PReLU({.alpha_initializer = Initializer::constant(0.25), .alpha_regularizer = regularizers::l2(0.01),
             .alpha_constraint = constraints::max_norm(1.0), .shared_axes = {1}, .name = "prelu"}),
      {{3, 4}});
  add(Permute({3, 1, 2}, {.name = "permute"}), {{2, 3, 4}});
  add(ReLU({.max_value = 6.0, .negative_slope = 0.1, .threshold = 0.5, .name = "relu"}), {{5}});
  add(RepeatVector(3, {.name = "repeat"}), {{4}});
  add(Reshape({3, -1}, {.name = "reshape"}), {{6}});
  add(SimpleRNN(2, {.activation = "relu", .kernel_regularizer = regularizers::l2(0.01), .name = "rnn"}), {{4, 2}});
  add(Softmax({.axis = 1, .name = "softmax"}), {{3, 4}});
  add(SpatialDropout1D(0.3, {.seed = 42, .name = "sdrop1d"}), {{5, 2}});
  add(Subtract({.name = "sub"}), {{4}, {4}});
  add(ThresholdedReLU({.theta = 0.4, .name = "thresholded"}), {{5}});
  add(TimeDistributed(Dense(3, {.activation = "relu", .name = "td_dense"}), {.name = "td"}), {{5, 4}});
  add(UpSampling1D(3, {.name = "up1d"}), {{4, 2}});
  add(ZeroPadding1D({2, 1}, {.name = "pad1d"}), {{3, 2}});
  add(ZeroPadding2D(std::vector<std::vector<std::int64_t>>{{1, 2}, {0, 3}}, {.name = "pad"}), {{3, 3, 1}});
  return out;
}

// Calls `layer` on Inputs of these shapes (so it builds, as in a model).
void call_on(const Layer& layer, const std::vector<Shape>& shapes) {
  std::vector<KerasTensor> inputs;
  for (const auto& s : shapes) inputs.push_back(Input(s));
  layer.call_multi(inputs);
}

}  // namespace

TEST_CASE("layer configs: every registered layer survives get_config -> layer_from_config -> get_config") {
  std::set<std::string> covered;
  for (const auto& [layer, shapes] : samples()) {
    CAPTURE(layer->class_name());
    covered.insert(layer->class_name());
    for (int built = 0; built < 2; ++built) {
      if (built && !shapes.empty()) call_on(*layer, shapes);
      const json config = entry(*layer);
      LayerPtr rebuilt = layer_from_config(config);
      CHECK(rebuilt->class_name() == layer->class_name());
      CHECK(rebuilt->name() == layer->name());
      CHECK(rebuilt->get_config().dump() == layer->get_config().dump());
      if (built && !shapes.empty()) {  // built from the config, called the same way: still identical
        call_on(*rebuilt, shapes);
        CHECK(rebuilt->get_config().dump() == layer->get_config().dump());
        CHECK(rebuilt->count_params() == layer->count_params());
      }
    }
  }
  // Every class of the table has a sample here (models and Lambda have their own tests).
  for (const auto& name : registered_layer_names()) {
    static const std::set<std::string> elsewhere{"Sequential", "Functional", "Model", "Lambda", "Merge",
                                                 "Convolution2D", "MaxPool2D", "AvgPool2D", "GlobalAvgPool2D",
                                                 "Convolution1D", "MaxPool1D", "AvgPool1D", "GlobalAvgPool1D",
                                                 "GlobalMaxPool1D", "CuDNNLSTM", "CuDNNGRU",
                                                 "GlobalMaxPool2D", "Convolution2DTranspose", "Deconvolution2D",
                                                 "SeparableConvolution2D", "Convolution3D", "Convolution3DTranspose",
                                                 "Deconvolution3D", "MaxPool3D", "AvgPool3D", "GlobalAvgPool3D",
                                                 "GlobalMaxPool3D"};
    if (!elsewhere.count(name)) CHECK_MESSAGE(covered.count(name), "no round-trip sample for " << name);
  }
}

TEST_CASE("layer configs: tf.keras 2's spelling") {
  Dense dense(10, {.activation = "relu", .kernel_regularizer = regularizers::l2(0.01), .name = "dense_1"});
  json c = dense.get_config();
  CHECK(c["name"] == "dense_1");
  CHECK(c["trainable"] == true);
  CHECK(c["dtype"] == "float32");
  CHECK(c["units"] == 10);
  CHECK(c["activation"] == "relu");
  CHECK(c["kernel_initializer"]["class_name"] == "GlorotUniform");
  CHECK(c["kernel_initializer"]["config"] == json{{"seed", nullptr}});
  CHECK(c["bias_initializer"]["class_name"] == "Zeros");
  CHECK(c["kernel_regularizer"]["class_name"] == "L2");
  CHECK(c["kernel_regularizer"]["config"]["l2"].get<double>() == 0.009999999776482582);  // float32, as Keras
  CHECK(c["bias_regularizer"].is_null());
  CHECK(c["activity_regularizer"].is_null());
  CHECK(Dense(3, {.name = "d"}).get_config()["activation"] == "linear");

  // BatchNormalization's axis: -1 until built, then [rank - 1] as tf.keras writes it.
  BatchNormalization bn({.name = "bn_axis"});
  CHECK(bn.get_config()["axis"] == -1);
  call_on(bn, {{4, 4, 3}});
  CHECK(bn.get_config()["axis"] == json::array({3}));

  // A frozen layer comes back frozen.
  Dense frozen(2, {.name = "frozen"});
  frozen.set_trainable(false);
  CHECK_FALSE(layer_from_config(entry(frozen))->trainable());

  // A Dropout without a seed writes null (its drawn seed is not the user's).
  CHECK(Dropout(0.5, {.name = "d0"}).get_config()["seed"].is_null());
}

TEST_CASE("layer configs: a model rebuilt from its config predicts the same after set_weights") {
  auto x = Input({6, 6, 2}, {.name = "img"});
  auto h = Conv2D(3, 3, {.padding = "same", .activation = "relu", .name = "c1"})(x);
  h = BatchNormalization({.name = "bn1"})(h);
  h = MaxPooling2D(2, {.name = "mp"})(h);
  auto a = Flatten({.name = "fl"})(h);
  auto b = GlobalAveragePooling2D({.name = "gap1"})(h);
  auto y = Dense(4, {.activation = "tanh", .name = "d1"})(Concatenate({.name = "cat1"})({a, b}));
  y = LeakyReLU(0.1, "lr")(y);
  Model model(x, Softmax({.name = "sm"})(y), "roundtrip");
  Model rebuilt = io::model_from_config(io::model_to_config(model));
  CHECK(rebuilt.count_params() == model.count_params());
  rebuilt.set_weights(model.get_weights());
  std::vector<float> data(2 * 6 * 6 * 2);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)));
  Tensor input = Tensor::from_vector<float>({2, 6, 6, 2}, data);
  auto expected = model.predict(input).to_vector<float>();
  auto got = rebuilt.predict(input).to_vector<float>();
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-6));
}

TEST_CASE("initializer configs of every Keras version") {
  // tf.keras 2 and Keras 3 (with module, registered_name and Keras 3's extra fields).
  CHECK(Initializer::from_config(json{{"class_name", "GlorotUniform"}, {"config", {{"seed", nullptr}}}}).name() ==
        "glorot_uniform");
  CHECK(Initializer::from_config(json::parse(R"({"module": "keras.initializers", "class_name": "HeNormal",
      "config": {"seed": null, "input_axes": null, "output_axes": null}, "registered_name": null})"))
            .name() == "he_normal");
  // Keras 2.0-2.2: glorot_uniform written as VarianceScaling; "normal" meant the truncated normal.
  json vs = json::parse(
      R"({"class_name": "VarianceScaling", "config": {"scale": 1.0, "mode": "fan_avg", "distribution": "uniform", "seed": null}})");
  Initializer glorot = Initializer::from_config(vs);
  CHECK(glorot.get_config()["class_name"] == "VarianceScaling");
  CHECK(glorot.get_config()["config"]["mode"] == "fan_avg");
  json vs_normal = json::parse(
      R"({"class_name": "VarianceScaling", "config": {"scale": 2.0, "mode": "fan_in", "distribution": "normal", "seed": null}})");
  CHECK(Initializer::from_config(vs_normal).get_config()["config"]["distribution"] == "truncated_normal");
  // Keras 1: a plain name.
  CHECK(Initializer::from_config("glorot_uniform").name() == "glorot_uniform");
  CHECK(Initializer::from_config("zero").name() == "zeros");
  // Parameters and seeds survive.
  json rn = Initializer::from_config(json::parse(R"({"class_name": "RandomNormal", "config": {"mean": 0.5, "stddev": 0.2, "seed": 7}})"))
                .get_config();
  CHECK(rn["config"] == json{{"mean", 0.5}, {"stddev", 0.2}, {"seed", 7}});
  json k = Initializer::from_config(json::parse(R"({"class_name": "Constant", "config": {"value": 0.1}})")).get_config();
  CHECK(k["config"]["value"] == 0.1);
  // A seeded initializer draws the same values every time, as Keras's.
  Initializer seeded = Initializer::from_config(json::parse(R"({"class_name": "GlorotUniform", "config": {"seed": 3}})"));
  CHECK(seeded({3, 4}).to_vector<float>() == seeded({3, 4}).to_vector<float>());
  // Unsupported.
  auto msg = message_of<ValueError>([] { Initializer::from_config(json{{"class_name", "Identity"}, {"config", json::object()}}); });
  CHECK(contains(msg, "Identity"));
  auto in_layer = message_of<ValueError>([] {
    layer_from_config(json::parse(R"({"class_name": "Dense", "config": {"name": "d_ident", "units": 2,
        "kernel_initializer": {"class_name": "Identity", "config": {}}}})"));
  });
  CHECK(contains(in_layer, "Dense \"d_ident\""));
  CHECK(contains(in_layer, "kernel_initializer"));
}

TEST_CASE("regularizer configs of every Keras version") {
  CHECK(Regularizer{}.get_config().is_null());
  CHECK(regularizers::l1(0.5).get_config()["class_name"] == "L1");
  CHECK(regularizers::l1_l2(0.5, 0.25).get_config()["config"] == json{{"l1", 0.5}, {"l2", 0.25}});
  Regularizer tf2 = Regularizer::from_config(json::parse(R"({"class_name": "L2", "config": {"l2": 0.009999999776482582}})"));
  CHECK(tf2.l1 == 0.0);
  CHECK(tf2.l2 == doctest::Approx(0.01));
  Regularizer k3 = Regularizer::from_config(json::parse(
      R"({"module": "keras.regularizers", "class_name": "L1L2", "config": {"l1": 0.1, "l2": 0.2}, "registered_name": null})"));
  CHECK(k3.l1 == 0.1);
  CHECK(k3.l2 == 0.2);
  Regularizer k1 = Regularizer::from_config(json::parse(R"({"name": "WeightRegularizer", "l1": 0.0, "l2": 0.01})"));
  CHECK(k1.l2 == 0.01);
  CHECK(Regularizer::from_config(nullptr).defined() == false);
  CHECK_THROWS_AS(Regularizer::from_config(json{{"class_name", "OrthogonalRegularizer"}, {"config", json::object()}}),
                  ValueError);
}

TEST_CASE("activation configs") {
  CHECK(activation_from_config("linear") == "");
  CHECK(activation_from_config("relu") == "relu");
  CHECK(activation_from_config("softmax_v2") == "softmax");
  CHECK(activation_from_config(json::parse(
            R"({"module": "keras.activations", "class_name": "function", "config": "tanh", "registered_name": "function"})")) ==
        "tanh");
  CHECK(activation_to_config("") == "linear");
  auto msg = message_of<ValueError>([] {
    layer_from_config(json::parse(R"({"class_name": "Dense", "config": {"name": "d_act", "units": 2, "activation": "mish"}})"));
  });
  CHECK(contains(msg, "Dense \"d_act\""));
  CHECK(contains(msg, "activation"));
  CHECK(contains(msg, "mish"));
}

TEST_CASE("Keras 1 class names and argument names") {
  LayerPtr conv = layer_from_config(json::parse(R"({"class_name": "Convolution2D", "config": {
      "name": "convolution2d_1", "trainable": true, "nb_filter": 8, "nb_row": 3, "nb_col": 5, "init": "he_normal",
      "activation": "relu", "border_mode": "same", "subsample": [2, 1], "dim_ordering": "tf",
      "W_regularizer": {"name": "WeightRegularizer", "l1": 0.0, "l2": 0.01}, "b_regularizer": null,
      "activity_regularizer": null, "W_constraint": null, "b_constraint": null, "bias": false}})"));
  REQUIRE(dynamic_cast<Conv2D*>(conv.get()));
  const auto& c2 = dynamic_cast<Conv2D&>(*conv);
  CHECK(c2.filters() == 8);
  CHECK(c2.kernel_size() == std::vector<std::int64_t>{3, 5});
  CHECK(c2.options().strides == std::vector<std::int64_t>{2, 1});
  CHECK(c2.options().padding == "same");
  CHECK_FALSE(c2.options().use_bias);
  CHECK(c2.options().kernel_regularizer.l2 == 0.01);
  CHECK(c2.options().kernel_initializer.name() == "he_normal");

  LayerPtr conv3d = layer_from_config(json::parse(R"({"class_name": "Convolution3D", "config": {
      "name": "convolution3d_1", "trainable": true, "nb_filter": 4, "kernel_dim1": 2, "kernel_dim2": 3,
      "kernel_dim3": 1, "init": "glorot_uniform", "activation": "linear", "border_mode": "valid",
      "subsample": [1, 2, 1], "dim_ordering": "tf", "W_regularizer": null, "b_regularizer": null,
      "activity_regularizer": null, "W_constraint": null, "b_constraint": null, "bias": true}})"));
  REQUIRE(dynamic_cast<Conv3D*>(conv3d.get()));
  const auto& c3 = dynamic_cast<Conv3D&>(*conv3d);
  CHECK(c3.filters() == 4);
  CHECK(c3.kernel_size() == std::vector<std::int64_t>{2, 3, 1});
  CHECK(c3.options().strides == std::vector<std::int64_t>{1, 2, 1});
  CHECK(c3.options().padding == "valid");
  LayerPtr pool3d = layer_from_config(json::parse(R"({"class_name": "MaxPooling3D", "config": {"name": "maxpooling3d_1",
      "pool_size": [2, 2, 2], "strides": null, "border_mode": "same", "dim_ordering": "tf", "trainable": true}})"));
  CHECK(dynamic_cast<MaxPooling3D&>(*pool3d).strides() == std::vector<std::int64_t>{2, 2, 2});

  LayerPtr dense = layer_from_config(json::parse(R"({"class_name": "Dense", "config": {"name": "dense_1",
      "output_dim": 7, "init": "glorot_uniform", "activation": "linear", "bias": true, "input_dim": 3,
      "W_regularizer": null, "b_regularizer": null, "activity_regularizer": null, "W_constraint": null,
      "b_constraint": null, "trainable": true}})"));
  CHECK(dynamic_cast<Dense&>(*dense).units() == 7);

  LayerPtr drop = layer_from_config(json::parse(R"({"class_name": "Dropout", "config": {"name": "dropout_1", "p": 0.4}})"));
  CHECK(dynamic_cast<Dropout&>(*drop).rate() == 0.4);

  LayerPtr pool = layer_from_config(json::parse(R"({"class_name": "MaxPooling2D", "config": {"name": "maxpooling2d_1",
      "pool_size": [3, 3], "strides": null, "border_mode": "valid", "dim_ordering": "tf", "trainable": true}})"));
  CHECK(dynamic_cast<MaxPooling2D&>(*pool).strides() == std::vector<std::int64_t>{3, 3});

  LayerPtr emb = layer_from_config(json::parse(R"({"class_name": "Embedding", "config": {"name": "embedding_1",
      "input_dim": 20, "output_dim": 4, "init": "uniform", "W_regularizer": null, "mask_zero": false,
      "input_length": 5, "dropout": 0.0, "trainable": true}})"));
  CHECK(dynamic_cast<Embedding&>(*emb).output_dim() == 4);

  // Merge modes -> the Keras 2 merge classes.
  for (auto [mode, cls] : std::vector<std::pair<std::string, std::string>>{
           {"sum", "Add"}, {"mul", "Multiply"}, {"ave", "Average"}, {"max", "Maximum"}, {"concat", "Concatenate"}}) {
    json merge = {{"class_name", "Merge"},
                  {"config", {{"name", "merge_1"}, {"mode", mode}, {"concat_axis", -1}, {"dot_axes", -1},
                              {"output_shape", nullptr}, {"output_shape_type", "raw"}, {"output_mask", nullptr},
                              {"output_mask_type", "raw"}, {"arguments", nullptr}, {"mode_type", "raw"}}}};
    CHECK(layer_from_config(merge)->class_name() == cls);
  }
  json dot = {{"class_name", "Merge"}, {"config", {{"name", "merge_dot"}, {"mode", "dot"}}}};
  CHECK(contains(message_of<ValueError>([&] { layer_from_config(dot); }), "\"dot\""));

  // dim_ordering "th" is channels_first with Keras 1's own kernel layout: refused.
  auto th = message_of<ValueError>([] {
    layer_from_config(json::parse(R"({"class_name": "Convolution2D", "config": {"name": "conv_th", "nb_filter": 2,
        "nb_row": 3, "nb_col": 3, "dim_ordering": "th"}})"));
  });
  CHECK(contains(th, "Conv2D \"conv_th\""));
  CHECK(contains(th, "channels_first"));
}

TEST_CASE("layer configs: errors name the class, the layer and the field") {
  auto unknown = message_of<NotFoundError>([] {
    layer_from_config(json::parse(R"({"class_name": "MyWarp", "config": {"name": "my_warp_1", "filters": 4}})"));
  });
  CHECK(contains(unknown, "\"MyWarp\""));
  CHECK(contains(unknown, "\"my_warp_1\""));
  CHECK(contains(unknown, "Dense"));  // the list of supported classes

  CHECK(contains(message_of<ValueError>([] { layer_from_config(json{{"config", {{"name", "x"}}}}); }), "class_name"));
  CHECK(contains(message_of<ValueError>([] { layer_from_config(json{{"class_name", "Dense"}}); }), "\"config\""));
  CHECK(contains(message_of<ValueError>([] { layer_from_config(json{{"class_name", "Dense"}, {"config", {{"name", "d"}}}}); }),
                 "\"units\""));

  // channels_first where tower does not take it (tests/layers/test_data_format.cpp: where it does).
  auto cf = message_of<ValueError>([] {
    layer_from_config(json::parse(R"({"class_name": "ConvLSTM2D", "config": {"name": "conv_cf", "filters": 2,
        "kernel_size": [3, 3], "data_format": "channels_first"}})"));
  });
  CHECK(contains(cf, "ConvLSTM2D \"conv_cf\""));
  CHECK(contains(cf, "data_format"));
  CHECK(contains(cf, "channels_first"));

  // Dense reads Keras's constraints (layers/constraints.h); an unknown one, or one on a layer that has
  // none wired (Embedding), is refused with the layer and the field.
  auto max_norm = layer_from_config(json::parse(R"({"class_name": "Dense", "config": {"name": "d_ok", "units": 2,
      "kernel_constraint": {"class_name": "MaxNorm", "config": {"max_value": 2}}, "bias_constraint": "non_neg"}})"));
  CHECK(max_norm->get_config()["kernel_constraint"]["class_name"] == "MaxNorm");
  CHECK(max_norm->get_config()["bias_constraint"]["class_name"] == "NonNeg");
  auto constraint = message_of<ValueError>([] {
    layer_from_config(json::parse(R"({"class_name": "Dense", "config": {"name": "d_c", "units": 2,
        "kernel_constraint": {"class_name": "RadialConstraint", "config": {}}}})"));
  });
  CHECK(contains(constraint, "Dense \"d_c\""));
  CHECK(contains(constraint, "kernel_constraint"));
  CHECK(contains(constraint, "RadialConstraint"));
  // A layer without weights to constrain refuses the field, naming it.
  auto unwired = message_of<ValueError>([] {
    layer_from_config(json::parse(R"({"class_name": "Flatten", "config": {"name": "f_c",
        "kernel_constraint": {"class_name": "MaxNorm", "config": {"max_value": 2}}}})"));
  });
  CHECK(contains(unwired, "Flatten \"f_c\""));
  CHECK(contains(unwired, "kernel_constraint"));

  auto sparse = message_of<ValueError>([] {
    layer_from_config(json::parse(R"({"class_name": "Embedding", "config": {"name": "e_m", "input_dim": 5,
        "output_dim": 2, "sparse": true}})"));
  });
  CHECK(contains(sparse, "Embedding \"e_m\""));
  CHECK(contains(sparse, "sparse"));

  // Mixed policies are read now (test_mixed_precision); a quantized one is refused.
  auto dtype = message_of<ValueError>([] {
    layer_from_config(json::parse(R"({"class_name": "Dense", "config": {"name": "d16", "units": 2, "dtype": "int8_from_float32"}})"));
  });
  CHECK(contains(dtype, "dtype"));

  // Lambda holds C++ code: its config says so, and reading one back explains what to do.
  Lambda lambda([](const SymbolicTensor& x) { return x; }, {.name = "my_lambda"});
  json lc = lambda.get_config();
  CHECK(lc["name"] == "my_lambda");
  CHECK(lc["function"] == "tower_cpp_function");
  auto code = message_of<ValueError>([&] { layer_from_config(entry(lambda)); });
  CHECK(contains(code, "Lambda \"my_lambda\" holds code that a file cannot carry"));
  CHECK(contains(code, "load_weights"));
}
