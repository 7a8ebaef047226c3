// The attention family: MultiHeadAttention, Attention and AdditiveAttention against Keras 3.15's
// numbers (values, attention scores and gradients, with explicit, Keras and causal masks), weights,
// call arguments in models, dropout, configs and errors.
#include <doctest/doctest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "tower/core/ops.h"
#include "tower/io/hdf5.h"
#include "tower/io/keras_model.h"
#include "tower/io/keras_weights.h"
#include "tower/io/model_config.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/keras_reference.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_layer_gradients;
using tower::testing::check_weightless_gradients;
using tower::testing::contains;
using tower::testing::floats;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::run_layer;
using tower::testing::run_with_gradients;
using tower::testing::seq;
using tower::testing::TempDir;

namespace {

// ---- Keras's numbers --------------------------------------------------------------------------------
// Printed by tests/layers/keras_reference.py mha (Keras 3.15, TF 2.21 backend); inputs and weights are sin
// sequences seq(shape, a, b, s) = float32(s * sin(a * i + b)); gradients of sum(output *
// seq(output.shape, 0.45, 0.2)) by tf.GradientTape.
// MultiHeadAttention(2, 3, value_dim=2) with weight i (Keras's order) = seq(shape, 0.3 + 0.1 i, 0.2 i, 0.5),
// query seq((2,3,4),0.5,0.1), value seq((2,4,5),0.6,0.7), key seq((2,4,3),0.8,1.3), attention_mask
// kMhaMask: mha(query, value, key=key, attention_mask=mask) (mha_y and gradients, Keras's fused
// dot_product_attention path: batch 1's fully masked last query row averages every value), then with
// return_attention_scores=True (mha_scores_y, mha_scores: its Softmax path zeroes that row).
// MultiHeadAttention(2, 2) self-attention on x seq((2,4,3),0.9,0.4) carrying the Keras mask kXMask,
// mha(x, x, use_causal_mask=True) (causal_y; causal_dx the gradient for x as query and value), and with
// return_attention_scores=True (causal_scores_y, causal_scores).
  const std::vector<double> mha_y{0.60092986, 0.38450205, -0.17782961, -0.58480591, 0.59056658, 0.38018519, -0.17283313, -0.57427734, 0.62992644, 0.39921573, -0.18853381, -0.6128273, 0.59943539, 0.38349408, -0.17758827, -0.58349788, 0.54571515, 0.35846052, -0.15499026, -0.53037006, 0.59838974, 0.3840248, -0.17588282, -0.58190835};
  const std::vector<double> mha_dq{-0.0025094771, 0.00087481097, 0.0021119593, -0.0018344942, 0.00066771952, 0.00081326149, -0.0010372689, -0.0003419221, 0, 0, 0, 0, -0.0047463435, -0.0012833634, 0.0053295093, -0.0011383878, -0.00082072685, -0.00095598231, 0.0012551292, 0.00038564627, 0, 0, 0, 0};
  const std::vector<double> mha_dv{-0.068230182, 0.079404101, -0.081402473, 0.073994353, -0.05803578, 0.03975334, -0.040493973, 0.036555324, -0.028392496, 0.016948765, 0.04646378, -0.02528801, 0.0011900681, 0.023045387, -0.044617832, 0.039968345, -0.036502503, 0.028818613, -0.017804574, 0.0047331089, 0.040286086, -0.043408938, 0.041515663, -0.03482502, 0.024110164, -0.015116968, 0.014827557, -0.012824747, 0.0093399649, -0.0047758995, 0.046035308, -0.040651575, 0.030570345, -0.016956544, 0.0013833155, -0.012880596, 0.012267497, -0.010236828, 0.007023233, -0.0029980692};
  const std::vector<double> mha_dk{-0.0026124718, 0.0029359295, -0.0032006244, -0.0012683772, 0.00075066369, -0.00021792609, 0.0012930094, -0.0012964736, 0.0012739887, 0.0025878393, -0.0023901192, 0.0021445614, 0.0021329129, -0.0012186312, 0.00027995958, -0.0007536491, 0.0009673101, -0.0011616102, 6.9445073e-06, -0.0015217018, 0.0030060019, -0.0013862023, 0.0017730166, -0.0021243442};
  const std::vector<double> mha_query_kernel{-0.0006366095, 6.1552797e-05, 0.0007446442, 0.00047613127, 0.00016855884, -0.00018028292, -8.6112588e-05, 0.00054277736, 0.0010387755, -0.0031703878, -0.002882902, -0.0018895818, 0.00048546767, 0.00089111098, 0.0010785785, -0.0060406853, -0.0052285278, -0.0031362451, 0.00093818852, 0.0010212697, 0.00085430773, -0.0074320128, -0.0062940279, -0.0036150459};
  const std::vector<double> mha_query_bias{0.00025488238, 0.0010445041, 0.0015783936, -0.0071898024, -0.0065444061, -0.0042967112};
  const std::vector<double> mha_key_kernel{-0.003052322, -0.0024107399, -0.0016498677, 0.001666917, 2.427958e-05, -0.001196913, 0.0015049048, 0.0033419137, 0.0047049155, -0.00537124, -0.0080637531, -0.0088093495, 0.0051492769, 0.0070674075, 0.0082057603, -0.0091512753, -0.011260422, -0.011078153};
  const std::vector<double> mha_key_bias{-9.3132257e-10, 0, 1.193257e-09, 4.5401976e-09, 5.5879354e-09, 5.5879354e-09};
  const std::vector<double> mha_value_kernel{-0.40433067, 0.056475133, 0.30600122, -0.57865286, -0.27143186, -0.082608178, 0.45277256, -0.65572113, -0.043714106, -0.19283408, 0.44137737, -0.50372714, 0.1992743, -0.23569751, 0.27579635, -0.17576671, 0.37265044, -0.196225, 0.013871774, 0.21359402};
  const std::vector<double> mha_value_bias{0.81091142, -0.53344083, 0.14582345, 0.27190375};
  const std::vector<double> mha_attention_output_kernel{0.19843853, 0.11973599, 0.01719337, -0.08877264, 0.33078277, 0.25773877, 0.13337751, -0.017540053, 0.24268205, 0.21592319, 0.14617276, 0.047318459, 0.0040593538, 0.036765683, 0.062151745, 0.075163051};
  const std::vector<double> mha_attention_output_bias{0.98644024, 0.89355332, 0.62275463, 0.2279619};
  const std::vector<double> mha_scores_y{0.60092986, 0.38450205, -0.17782961, -0.58480591, 0.59056658, 0.38018519, -0.17283314, -0.57427734, 0.62992644, 0.39921573, -0.18853381, -0.6128273, 0.59943539, 0.38349408, -0.17758825, -0.58349788, 0.54571515, 0.35846052, -0.15499026, -0.53037006, 0.49272487, 0.3377316, -0.12777056, -0.47580105};
  const std::vector<double> mha_scores{0.33435369, 0.33383071, 0, 0.33181557, 0, 0.28911567, 0.34404323, 0.36684108, 1, 0, 0, 0, 0.35134763, 0.31720445, 0, 0.3314479, 0, 0.27502757, 0.40336052, 0.32161188, 1, 0, 0, 0, 0.2546365, 0.24469979, 0.24730377, 0.25335997, 0.47471461, 0, 0.52528536, 0, 0, 0, 0, 0, 0.24514104, 0.26065648, 0.2385018, 0.25570068, 0.52247107, 0, 0.47752896, 0, 0, 0, 0, 0};
  const std::vector<double> causal_y{0.54681522, 0.41738605, -0.082832918, 0.5576818, 0.45572928, -0.046030372, 0.5529415, 0.44268161, -0.057511248, 0.56025934, 0.4529942, -0.052008249, 0.50755286, 0.36150435, -0.11304379, 0.56534946, 0.46473682, -0.042499676, 0.5454545, 0.42606035, -0.070688128, 0.5454545, 0.42606035, -0.070688128};
  const std::vector<double> causal_dx{0.072571918, 0.041636463, -0.14373493, 0.034275737, -0.036880735, 0.053713404, -0.032345176, -0.022016957, 0.045363419, -0.028587263, -0.0023070539, 0.032934781, -0.062686697, 0.047421314, -0.014480099, 0.13520302, 0.0068817725, -0.091251105, 0.010996505, -0.013578861, 0.014592113, 0.010996505, -0.013578861, 0.014592113};
  const std::vector<double> causal_scores_y{0.54681522, 0.41738605, -0.082832918, 0.5576818, 0.45572928, -0.046030372, 0.5529415, 0.44268161, -0.057511248, 0.49272487, 0.3377316, -0.12777056, 0.50755286, 0.36150435, -0.11304379, 0.56534946, 0.46473682, -0.042499676, 0.49272487, 0.3377316, -0.12777056, 0.49272487, 0.3377316, -0.12777056};
  const std::vector<double> causal_scores{1, 0, 0, 0, 0.5492937, 0.4507063, 0, 0, 0.32727399, 0.45300174, 0.21972434, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0.46575838, 0.53424168, 0, 0, 0.28897864, 0.48170227, 0.22931901, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0.27350008, 0.72649992, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0.22661191, 0.77338809, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

// Printed by tests/layers/keras_reference.py attention (Keras 3.15): query seq((2,3,4),0.5,0.1), value
// seq((2,4,4),0.6,0.7), key seq((2,4,4),0.8,1.3), masks kQueryMask, kValueMask.
// dot_*: Attention(use_scale=True), scale 0.7, ([query, value, key], mask=[query_mask, value_mask],
// return_attention_scores=True). concat_*: Attention(use_scale=True, score_mode="concat"), scale 0.8,
// concat_score_weight 1.3, ([query, value], mask=[None, value_mask], use_causal_mask=True,
// return_attention_scores=True). add_*: AdditiveAttention(), scale seq((4,),0.9,0.3), ([query, value,
// key], mask=[query_mask, value_mask], return_attention_scores=True). add_causal_y:
// AdditiveAttention(use_scale=False)([query, value], use_causal_mask=True).
  const std::vector<double> dot_y{0.33757219, 0.5533058, 0.57575375, 0.3970744, 0.019860936, 0.40815496, 0.65386873, 0.67116731, 0, 0, 0, 0, 0.018351583, 0.16986841, 0.26204529, 0.26268223, -0.1060521, -0.44848457, -0.6342485, -0.59845114, 0.053004622, 0.14446479, 0.18545923, 0.16166741};
  const std::vector<double> dot_scores{0.36658758, 0, 0.31172639, 0.32168606, 0.46854949, 0, 0.47690445, 0.054546114, 0.11131158, 0, 0.12898996, 0.75969839, 0.22248892, 0.58214426, 0.19536681, 0, 0.48894322, 0.051628262, 0.45942855, 0, 0.21358447, 0.5302428, 0.25617275, 0};
  const std::vector<double> dot_dq{0.27057478, 0.23099825, 0.051301289, -0.15951435, -0.10312029, -0.053353734, 0.028776484, 0.093451262, 0, 0, 0, 0, -0.30954364, -0.20340325, 0.026118822, 0.23979756, -0.27095047, -0.21528572, -0.029031558, 0.17483278, 0.95555526, 0.64725572, -0.053660505, -0.722027};
  const std::vector<double> dot_dv{0.49888054, 0.52067816, 0.4388057, 0.26956448, 0, 0, 0, 0, 0.49557847, 0.49280539, 0.39191192, 0.21298651, 0.11350779, 0.22946762, 0.29973909, 0.31033081, 0.3465732, 0.3898288, 0.35546726, 0.25033006, -0.20290376, -0.20130806, -0.15963078, -0.086170085, 0.34666193, 0.35707074, 0.29638475, 0.17668682, 0, 0, 0, 0};
  const std::vector<double> dot_dk{0.30662596, 0.29207602, 0.20601566, 0.069515489, 0, 0, 0, 0, -0.334079, -0.23823094, -0.084055647, 0.090699404, 0.027452989, -0.053845115, -0.12196004, -0.16021492, -0.54281992, -0.49185413, -0.32046521, -0.070615269, 0.40185654, 0.58898216, 0.63190442, 0.52011436, 0.14096345, -0.097128034, -0.31143919, -0.44949913, 0, 0, 0, 0};
  const std::vector<double> dot_dscale{-1.2521756};
  const std::vector<double> concat_y{0.64421767, 0.9635582, 0.94630009, 0.59847212, 0.64421767, 0.9635582, 0.94630009, 0.59847212, 0.49830076, 0.83969897, 0.88776606, 0.62571096, -0.76768583, -0.99543625, -0.87545216, -0.44964746, 0.12648648, 0.65710318, 0.95817477, 0.92452836, 0.14777316, 0.5836339, 0.8156144, 0.76267743};
  const std::vector<double> concat_scores{1, 0, 0, 0, 1, 0, 0, 0, 0.89189404, 0, 0.10810596, 0, 1, 0, 0, 0, 0.0074874382, 0.99251258, 0, 0, 0.021140214, 0.90217167, 0.076688141, 0};
  const std::vector<double> concat_dq{0, 0, 0, 0, 0, 0, 0, 0, -0.14876264, -0.11729664, -0.033669919, -0.0063886046, 0, 0, 0, 0, -0.018381745, -0.0236631, -0.016487673, -0.0031702276, 0.0030428022, -0.1127, -0.19017103, -0.19101317};
  const std::vector<double> concat_dv{0.34936655, 0.2277991, 0.021646932, -0.23185922, 0, 0, 0, 0, -0.002020292, 0.0028660446, 0.075216599, 0.11258574, 0, 0, 0, 0, -0.63977182, -0.25678396, 0.18592677, 0.59429193, 0.89003879, 0.55616838, 0.088452175, -0.42326748, 0.22472544, 0.10984395, 0.011183571, -0.024361063, 0, 0, 0, 0};
  const std::vector<double> concat_dscale{-0.41425216};
  const std::vector<double> concat_dweight{-0.71854764};
  const std::vector<double> add_y{0.09310507, 0.44779092, 0.64605051, 0.61862612, 0.11342471, 0.46321431, 0.65118986, 0.61168611, 0, 0, 0, 0, -0.10359532, -0.38155347, -0.52622408, -0.48706946, -0.088042043, -0.30708981, -0.41886222, -0.38431406, -0.09022294, -0.31534734, -0.43031189, -0.39495608};
  const std::vector<double> add_scores{0.46176639, 0, 0.43534461, 0.10288908, 0.47187808, 0, 0.42131892, 0.10680304, 0.44956416, 0, 0.40062001, 0.1498159, 0.46559781, 0.11738682, 0.41701531, 0, 0.43322504, 0.18083976, 0.38593528, 0, 0.43704265, 0.17414853, 0.38880879, 0};
  const std::vector<double> add_dq{-0.0016442053, -0.062548563, -0.027305521, 0.0056971628, 0.03203376, 0.066792168, -0.01431074, 0.013155138, 0, 0, 0, 0, -0.0066949315, 0.025147185, -0.028281614, -0.012421884, 0.16074811, 0.44501987, -0.004469797, 0.018023048, 0.084320635, 0.2871592, -0.024707057, -0.04634735};
  const std::vector<double> add_dv{0.52081633, 0.5804019, 0.5244261, 0.36403403, 0, 0, 0, 0, 0.46959382, 0.53216696, 0.48878258, 0.34807876, 0.11755663, 0.13038227, 0.11724806, 0.080769069, 0.19283888, 0.22803071, 0.2178203, 0.16424055, 0.12723573, 0.1148215, 0.079545662, 0.028431809, 0.17025687, 0.20273936, 0.19485532, 0.14817442, 0, 0, 0, 0};
  const std::vector<double> add_dk{0.046769716, 0.14561526, 0.42095846, 0.060752738, 0, 0, 0, 0, -0.039431736, -0.17374875, -0.52807802, -0.056455955, 0.023051577, 0.032377094, 0.065503292, 0.014555516, 0.058454391, 0.078534283, -0.41256055, -0.018407997, 0.16596986, 0.56998348, 0.33739626, 0.0072198324, 0.013949566, 0.1088085, 0.017705806, -0.029558022, 0, 0, 0, 0};
  const std::vector<double> add_dscale{-0.2354283, -0.36628908, 0.055644736, 0.59123445};
  const std::vector<double> add_causal_y{0.64421767, 0.9635582, 0.94630009, 0.59847212, 0.62832874, 0.92418379, 0.8971948, 0.55678988, 0.43651268, 0.75477803, 0.80937773, 0.58123845, -0.76768583, -0.99543625, -0.87545216, -0.44964746, 0.12121408, 0.64735919, 0.94736302, 0.9164257, 0.14582871, 0.52736306, 0.72467422, 0.66883588};

const Tensor kMhaMask = floats({2, 3, 4}, {1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0});
const Tensor kXMask = floats({2, 4}, {1, 1, 1, 0, 1, 1, 0, 0});
const Tensor kQueryMask = floats({2, 3}, {1, 1, 0, 1, 1, 1});
const Tensor kValueMask = floats({2, 4}, {1, 0, 1, 1, 1, 1, 1, 0});

// Keras's weights of the scripts: weight i = seq(shape, 0.3 + 0.1 i, 0.2 i, 0.5).
void set_script_weights(Layer& layer) {
  std::vector<Tensor> values;
  const auto weights = layer.weights();
  for (std::size_t i = 0; i < weights.size(); ++i)
    values.push_back(seq(weights[i]->shape(), 0.3 + 0.1 * static_cast<double>(i), 0.2 * static_cast<double>(i), 0.5));
  layer.set_weights(values);
}

Tensor add(const Tensor& a, const Tensor& b) {
  auto x = a.to_vector<float>(), y = b.to_vector<float>();
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
  return Tensor::from_vector<float>(a.shape(), x);
}

std::vector<std::string> weight_names(const Layer& layer) {
  std::vector<std::string> names;
  for (const auto& w : layer.weights()) names.push_back(w->name());
  return names;
}

}  // namespace

// ---- MultiHeadAttention -------------------------------------------------------------------------------

TEST_CASE("MultiHeadAttention: Keras's weight names, shapes and order; output shapes") {
  clear_session();
  layers::MultiHeadAttention mha(2, 3, {.value_dim = 2});
  CHECK(mha.name() == "multi_head_attention");
  auto q = layers::Input({3, 4}), v = layers::Input({4, 5}), k = layers::Input({4, 6});
  auto outs = mha.call_multi(q, v, {.key = k, .return_attention_scores = true});
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].shape() == Shape{-1, 3, 4});
  CHECK(outs[1].shape() == Shape{-1, 2, 3, 4});
  CHECK(weight_names(mha) == std::vector<std::string>{
                                 "multi_head_attention/query/kernel:0", "multi_head_attention/query/bias:0",
                                 "multi_head_attention/key/kernel:0", "multi_head_attention/key/bias:0",
                                 "multi_head_attention/value/kernel:0", "multi_head_attention/value/bias:0",
                                 "multi_head_attention/attention_output/kernel:0",
                                 "multi_head_attention/attention_output/bias:0"});
  const std::vector<Shape> shapes{{4, 2, 3}, {2, 3}, {6, 2, 3}, {2, 3}, {5, 2, 2}, {2, 2}, {2, 2, 4}, {4}};
  for (std::size_t i = 0; i < shapes.size(); ++i) CHECK(mha.weights()[i]->shape() == shapes[i]);
  CHECK(mha.count_params() == 24 + 6 + 36 + 6 + 20 + 4 + 16 + 4);
  CHECK(mha.call_multi({q, v, k}).at(0).shape() == Shape{-1, 3, 4});

  // No biases; an output_shape of several dimensions.
  layers::MultiHeadAttention plain(3, 2, {.use_bias = false, .output_shape = {2, 5}, .name = "plain"});
  CHECK(plain(q, q).shape() == Shape{-1, 3, 2, 5});
  CHECK(weight_names(plain) == std::vector<std::string>{"plain/query/kernel:0", "plain/key/kernel:0",
                                                        "plain/value/kernel:0", "plain/attention_output/kernel:0"});
  CHECK(plain.weights()[3]->shape() == Shape{3, 2, 2, 5});
}

TEST_CASE("MultiHeadAttention: values, scores and gradients as Keras 3, with an attention mask") {
  clear_session();
  layers::MultiHeadAttention mha(2, 3, {.value_dim = 2});
  const Tensor q = seq({2, 3, 4}, 0.5, 0.1), v = seq({2, 4, 5}, 0.6, 0.7), k = seq({2, 4, 3}, 0.8, 1.3);
  mha.ensure_built({{-1, 3, 4}, {-1, 4, 5}, {-1, 4, 3}});
  set_script_weights(mha);
  auto run = run_with_gradients(mha, {q, v, k, kMhaMask});
  REQUIRE(run.outputs.size() == 1);
  check_close(run.outputs[0], mha_y, 1e-5, 1e-6);
  check_close(run.input_grads[0], mha_dq, 1e-4, 1e-6);
  check_close(run.input_grads[1], mha_dv, 1e-4, 1e-6);
  check_close(run.input_grads[2], mha_dk, 1e-4, 1e-6);
  const std::vector<const std::vector<double>*> weight_grads{
      &mha_query_kernel, &mha_query_bias, &mha_key_kernel, &mha_key_bias, &mha_value_kernel,
      &mha_value_bias, &mha_attention_output_kernel, &mha_attention_output_bias};
  for (std::size_t i = 0; i < weight_grads.size(); ++i) {
    CAPTURE(i);
    check_close(run.weight_grads[i], *weight_grads[i], 1e-4, 1e-6);
  }
  // With the scores, Keras 3 takes its Softmax path: the fully masked row gets zero probabilities.
  auto scores = mha.with_call_args({.return_attention_scores = true});
  auto with_scores = run_layer(*scores, {q, v, k, kMhaMask});
  REQUIRE(with_scores.size() == 2);
  check_close(with_scores[0], mha_scores_y, 1e-5, 1e-6);
  check_close(with_scores[1], mha_scores, 1e-5, 1e-6);
  CHECK(with_scores[1].shape() == Shape{2, 2, 3, 4});
  // A mask for every head, (batch, heads, T_q, T_v), reads the same.
  std::vector<float> per_head;
  auto m = kMhaMask.to_vector<float>();
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 2; ++h) per_head.insert(per_head.end(), m.begin() + b * 12, m.begin() + (b + 1) * 12);
  check_close(run_layer(mha, {q, v, k, floats({2, 2, 3, 4}, per_head)})[0], mha_y, 1e-5, 1e-6);
}

TEST_CASE("MultiHeadAttention: use_causal_mask with the inputs' Keras masks, as Keras 3") {
  clear_session();
  layers::MultiHeadAttention mha(2, 2);
  const Tensor x = seq({2, 4, 3}, 0.9, 0.4);
  mha.ensure_built({{-1, 4, 3}, {-1, 4, 3}});
  set_script_weights(mha);
  auto causal = mha.with_call_args({.use_causal_mask = true});
  auto run = run_with_gradients(*causal, {x, x}, {kXMask, kXMask});
  check_close(run.outputs[0], causal_y, 1e-5, 1e-6);
  check_close(add(run.input_grads[0], run.input_grads[1]), causal_dx, 1e-4, 1e-6);  // x is query and value
  auto scores = mha.with_call_args({.return_attention_scores = true, .use_causal_mask = true});
  auto with_scores = run_with_gradients(*scores, {x, x}, {kXMask, kXMask});
  check_close(with_scores.outputs[0], causal_scores_y, 1e-5, 1e-6);
  check_close(with_scores.outputs[1], causal_scores, 1e-5, 1e-6);
  // The output keeps the query's mask; the scores get none.
  Graph g;
  auto qm = g.placeholder({-1, 4}), vm = g.placeholder({-1, 4});
  auto masks = scores->compute_mask({}, {qm, vm});
  REQUIRE(!masks.empty());
  CHECK(masks[0].node() == qm.node());
  CHECK((masks.size() < 2 || !masks[1].defined()));

  // The same as an explicit padding mask (query_mask[:, :, None] & value_mask[:, None, :]) plus the causal
  // flag, in a model whose two calls of one layer keep their own call arguments.
  std::vector<float> padding;
  auto xm = kXMask.to_vector<float>();
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) padding.push_back(xm[static_cast<std::size_t>(b * 4 + i)] * xm[static_cast<std::size_t>(b * 4 + j)]);
  auto in = layers::Input({4, 3}, {.name = "x"});
  auto mask_in = layers::Input({4, 4}, {.name = "padding"});
  auto masked = mha.call_multi(in, in, {.attention_mask = mask_in, .return_attention_scores = true, .use_causal_mask = true});
  auto plain = mha(in, in);
  Model model({in, mask_in}, {masked[0], masked[1], plain}, "causal_model");
  auto predicted = model.predict(std::vector<Tensor>{x, floats({2, 4, 4}, padding)});
  check_close(predicted[0], causal_scores_y, 1e-5, 1e-6);
  check_close(predicted[1], causal_scores, 1e-5, 1e-6);
  check_close(predicted[2], run_layer(mha, {x, x})[0], 1e-6, 1e-7);
}

TEST_CASE("MultiHeadAttention: dropout on the probabilities while training; finite differences") {
  clear_session();
  layers::MultiHeadAttention mha(2, 3, {.dropout = 0.5, .seed = 7});
  const Tensor q = seq({2, 3, 4}, 0.5, 0.1), v = seq({2, 4, 5}, 0.6, 0.7);
  mha.ensure_built({{-1, 3, 4}, {-1, 4, 5}});
  auto scores = mha.with_call_args({.return_attention_scores = true});
  auto inference = run_layer(*scores, {q, v});
  auto training = run_layer(*scores, {q, v}, /*training=*/true);
  CHECK(training[0].to_vector<float>() != inference[0].to_vector<float>());
  check_close(training[1], inference[1], 1e-6, 1e-7);  // the returned probabilities are before dropout
  // Each row of probabilities sums to 1.
  auto p = inference[1].to_vector<double>();
  for (std::size_t r = 0; r < p.size() / 4; ++r) CHECK(p[r * 4] + p[r * 4 + 1] + p[r * 4 + 2] + p[r * 4 + 3] == doctest::Approx(1.0).epsilon(1e-5));

  layers::MultiHeadAttention small(2, 2, {.value_dim = 3, .kernel_initializer = Initializer::random_normal(0.0, 0.5),
                                          .bias_initializer = Initializer::random_normal(0.0, 0.5)});
  check_layer_gradients(small, {{2, 3, 4}, {2, 2, 5}, {2, 2, 3}});
}

TEST_CASE("MultiHeadAttention: configs as tf.keras 2 writes them, and Keras 3's") {
  clear_session();
  layers::MultiHeadAttention mha(2, 3, {.dropout = 0.1, .output_shape = {7}, .kernel_regularizer = regularizers::l2(0.01),
                                        .name = "mha"});
  auto c = mha.get_config();
  CHECK(c["num_heads"] == 2);
  CHECK(c["key_dim"] == 3);
  CHECK(c["value_dim"] == 3);
  CHECK(c["output_shape"] == 7);
  CHECK(c["attention_axes"].is_null());
  CHECK(c["query_shape"].is_null());
  CHECK(c["softmax_robust_masking"] == false);
  CHECK_FALSE(c.contains("seed"));  // tf.keras 2's MultiHeadAttention has none
  mha(layers::Input({3, 4}), layers::Input({5, 6}));
  c = mha.get_config();
  CHECK(c["attention_axes"] == nlohmann::json::array({1}));
  CHECK(c["query_shape"] == nlohmann::json::parse("[null, 3, 4]"));
  CHECK(c["value_shape"] == nlohmann::json::parse("[null, 5, 6]"));
  CHECK(c["key_shape"] == nlohmann::json::parse("[null, 5, 6]"));
  // As tf.keras, the config's shapes build the layer.
  auto rebuilt = layers::layer_from_config({{"class_name", "MultiHeadAttention"}, {"config", c}});
  CHECK(rebuilt->built());
  CHECK(rebuilt->count_params() == mha.count_params());
  CHECK(rebuilt->get_config().dump() == c.dump());

  // tf.keras 2.21's config of MultiHeadAttention(2, 3) called on (4, 6) and (5, 3), and Keras 3.15's.
  auto tfk = nlohmann::json::parse(R"({"name": "mha", "trainable": true, "dtype": "float32", "num_heads": 2,
      "key_dim": 3, "value_dim": 3, "dropout": 0.0, "use_bias": true, "output_shape": null, "attention_axes": [1],
      "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null},
      "registered_name": null}, "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros",
      "config": {}, "registered_name": null}, "kernel_regularizer": null, "bias_regularizer": null,
      "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null, "query_shape": [null, 4, 6],
      "key_shape": [null, 5, 3], "value_shape": [null, 5, 3], "softmax_robust_masking": false})");
  auto from_tfk = layers::MultiHeadAttention::from_config(tfk);
  CHECK(from_tfk->count_params() == 6 * 6 + 6 + 3 * 6 + 6 + 3 * 6 + 6 + 6 * 6 + 6);
  auto k3 = nlohmann::json::parse(R"({"name": "mha3", "trainable": true, "dtype": {"module": "keras",
      "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "num_heads": 2,
      "key_dim": 3, "value_dim": 3, "dropout": 0.0, "use_bias": true, "use_gate": false, "output_shape": null,
      "attention_axes": [1], "sliding_window": null, "kernel_initializer": {"module": "keras.initializers",
      "class_name": "GlorotUniform", "config": {"seed": null, "input_axes": null, "output_axes": null},
      "registered_name": null}, "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros",
      "config": {}, "registered_name": null}, "kernel_regularizer": null, "bias_regularizer": null,
      "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null, "seed": 5})");
  auto from_k3 = layers::MultiHeadAttention::from_config(k3);
  CHECK_FALSE(from_k3->built());
  CHECK(from_k3->call_multi({layers::Input({4, 6}), layers::Input({5, 3})}).at(0).shape() == Shape{-1, 4, 6});
  k3["use_gate"] = true;
  CHECK(contains(message_of<ValueError>([&] { layers::MultiHeadAttention::from_config(k3); }), "use_gate"));
  k3["use_gate"] = false;
  k3["attention_axes"] = nlohmann::json::array({2});
  CHECK(contains(message_of<ValueError>([&] { layers::MultiHeadAttention::from_config(k3); }), "attention_axes"));
}

TEST_CASE("MultiHeadAttention: errors name the layer, the shapes and the fix") {
  clear_session();
  CHECK(contains(message_of<ValueError>([] { layers::MultiHeadAttention(2, 3, {.attention_axes = {2}}); }),
                 "only attention over the sequence axis"));
  CHECK_NOTHROW(layers::MultiHeadAttention(2, 3, {.attention_axes = {-2}}));
  CHECK_THROWS_AS(layers::MultiHeadAttention(0, 3), ValueError);
  CHECK_THROWS_AS(layers::MultiHeadAttention(2, 3, {.dropout = 1.0}), ValueError);
  layers::MultiHeadAttention mha(2, 3, {.name = "att"});
  auto q = layers::Input({3, 4}), v = layers::Input({5, 4});
  CHECK(contains(message_of<ValueError>([&] { mha(q, v, {.return_attention_scores = true}); }), "call_multi"));
  CHECK(contains(message_of<ShapeError>([&] { mha(q, v, {.key = layers::Input({6, 4})}); }), "same shape except"));
  CHECK(contains(message_of<ShapeError>([&] { mha(layers::Input({4}), v); }), "MultiHeadAttention \"att\""));
  CHECK(contains(message_of<ShapeError>([&] { mha(q, v, {.attention_mask = layers::Input({3, 4})}); }),
                 "attention_mask must be (batch, 3, 5)"));
  CHECK(contains(message_of<ValueError>([&] { mha.call_multi({q}); }), "[query, value]"));
  mha(q, v);
  CHECK(contains(message_of<ShapeError>([&] { mha(layers::Input({3, 8}), v); }), "built for 4 features"));
}

// ---- Attention and AdditiveAttention ----------------------------------------------------------------

TEST_CASE("Attention: dot scores with use_scale and masks, as Keras 3") {
  clear_session();
  const Tensor q = seq({2, 3, 4}, 0.5, 0.1), v = seq({2, 4, 4}, 0.6, 0.7), k = seq({2, 4, 4}, 0.8, 1.3);
  layers::Attention att({.use_scale = true});
  CHECK(att.name() == "attention");
  CHECK(att.call_multi({layers::Input({3, 4}), layers::Input({4, 4}), layers::Input({4, 4})}).at(0).shape() ==
        Shape{-1, 3, 4});
  REQUIRE(att.weights().size() == 1);
  CHECK(att.weights()[0]->name() == "attention/scale:0");
  CHECK(att.weights()[0]->shape() == Shape{});
  att.set_weights({Tensor::scalar(0.7)});
  auto scores = att.with_call_args({.return_attention_scores = true});
  auto run = run_with_gradients(*scores, {q, v, k}, {kQueryMask, kValueMask});
  REQUIRE(run.outputs.size() == 2);
  check_close(run.outputs[0], dot_y, 1e-5, 1e-6);
  check_close(run.outputs[1], dot_scores, 1e-5, 1e-6);
  check_close(run.input_grads[0], dot_dq, 1e-4, 1e-6);
  check_close(run.input_grads[1], dot_dv, 1e-4, 1e-6);
  check_close(run.input_grads[2], dot_dk, 1e-4, 1e-6);
  check_close(run.weight_grads[0], dot_dscale, 1e-4, 1e-6);
  // The output keeps the query's mask.
  Graph g;
  auto qm = g.placeholder({-1, 3});
  CHECK(att.compute_mask({}, {qm, g.placeholder({-1, 4})}).at(0).node() == qm.node());

  // Without weights, in float64: finite differences.
  layers::Attention plain;
  check_weightless_gradients(plain, {{2, 3, 4}, {2, 5, 4}});
}

TEST_CASE("Attention: concat scores with use_causal_mask, as Keras 3") {
  clear_session();
  const Tensor q = seq({2, 3, 4}, 0.5, 0.1), v = seq({2, 4, 4}, 0.6, 0.7);
  layers::Attention att({.use_scale = true, .score_mode = "concat"});
  att.ensure_built({{-1, 3, 4}, {-1, 4, 4}});
  CHECK(weight_names(att) == std::vector<std::string>{"attention/scale:0", "attention/concat_score_weight:0"});
  att.set_weights({Tensor::scalar(0.8), Tensor::scalar(1.3)});
  auto h = att.with_call_args({.return_attention_scores = true, .use_causal_mask = true});
  auto run = run_with_gradients(*h, {q, v}, {Tensor(), kValueMask});
  check_close(run.outputs[0], concat_y, 1e-5, 1e-6);
  check_close(run.outputs[1], concat_scores, 1e-5, 1e-6);
  check_close(run.input_grads[0], concat_dq, 1e-4, 1e-6);
  check_close(run.input_grads[1], concat_dv, 1e-4, 1e-6);
  check_close(run.weight_grads[0], concat_dscale, 1e-4, 1e-6);
  check_close(run.weight_grads[1], concat_dweight, 1e-4, 1e-6);
  layers::Attention fresh({.use_scale = true, .score_mode = "concat"});
  check_layer_gradients(fresh, {{2, 3, 4}, {2, 2, 4}});
}

TEST_CASE("AdditiveAttention: scores, masks and causal, as Keras 3") {
  clear_session();
  const Tensor q = seq({2, 3, 4}, 0.5, 0.1), v = seq({2, 4, 4}, 0.6, 0.7), k = seq({2, 4, 4}, 0.8, 1.3);
  layers::AdditiveAttention att;
  CHECK(att.name() == "additive_attention");
  att.ensure_built({{-1, 3, 4}, {-1, 4, 4}, {-1, 4, 4}});
  REQUIRE(att.weights().size() == 1);
  CHECK(att.weights()[0]->name() == "additive_attention/scale:0");
  CHECK(att.weights()[0]->shape() == Shape{4});
  att.set_weights({seq({4}, 0.9, 0.3)});
  auto h = att.with_call_args({.return_attention_scores = true});
  auto run = run_with_gradients(*h, {q, v, k}, {kQueryMask, kValueMask});
  check_close(run.outputs[0], add_y, 1e-5, 1e-6);
  check_close(run.outputs[1], add_scores, 1e-5, 1e-6);
  check_close(run.input_grads[0], add_dq, 1e-4, 1e-6);
  check_close(run.input_grads[1], add_dv, 1e-4, 1e-6);
  check_close(run.input_grads[2], add_dk, 1e-4, 1e-6);
  check_close(run.weight_grads[0], add_dscale, 1e-4, 1e-6);
}

TEST_CASE("Attention layers: causal without scale, in models, dropout, configs, errors") {
  clear_session();
  const Tensor q = seq({2, 3, 4}, 0.5, 0.1), v = seq({2, 4, 4}, 0.6, 0.7);
  layers::AdditiveAttention unscaled({.use_scale = false});
  auto causal = unscaled.with_call_args({.use_causal_mask = true});
  check_close(run_layer(*causal, {q, v})[0], add_causal_y, 1e-5, 1e-6);
  layers::AdditiveAttention fresh;
  check_layer_gradients(fresh, {{2, 3, 4}, {2, 2, 4}});

  // In a model: the call flags of each call; two outputs with the scores.
  auto qi = layers::Input({3, 4}), vi = layers::Input({4, 4});
  layers::Attention att({.name = "att"});
  auto both = att.call_multi({qi, vi}, {.return_attention_scores = true, .use_causal_mask = true});
  REQUIRE(both.size() == 2);
  CHECK(both[1].shape() == Shape{-1, 3, 4});
  auto plain = att({qi, vi});
  Model model({qi, vi}, {both[0], both[1], plain}, "attention_model");
  auto out = model.predict(std::vector<Tensor>{q, v});
  auto expected = run_layer(*att.with_call_args({.return_attention_scores = true, .use_causal_mask = true}), {q, v});
  check_close(out[0], expected[0], 1e-6, 1e-7);
  check_close(out[1], expected[1], 1e-6, 1e-7);
  check_close(out[2], run_layer(att, {q, v})[0], 1e-6, 1e-7);
  auto s = out[1].to_vector<double>();
  CHECK(s[1] == 0.0);  // row 0 attends to position 0 only
  CHECK(s[0] == doctest::Approx(1.0));

  // Dropout while training only, reproducible with a seed.
  layers::Attention dropping({.dropout = 0.5, .seed = 3});
  auto a = run_layer(dropping, {q, v}, true)[0].to_vector<float>();
  CHECK(a == run_layer(dropping, {q, v}, true)[0].to_vector<float>());
  CHECK(a != run_layer(dropping, {q, v}, false)[0].to_vector<float>());

  // tf.keras 2's spelling (no seed; AdditiveAttention without score_mode); Keras 3's reads.
  auto c = layers::Attention({.use_scale = true, .score_mode = "concat", .dropout = 0.2, .name = "a"}).get_config();
  CHECK(c == nlohmann::json::parse(R"({"name": "a", "trainable": true, "dtype": "float32", "use_scale": true,
      "score_mode": "concat", "dropout": 0.2})"));
  auto ac = layers::AdditiveAttention({.name = "b"}).get_config();
  CHECK(ac == nlohmann::json::parse(R"({"name": "b", "trainable": true, "dtype": "float32", "use_scale": true,
      "dropout": 0.0})"));
  auto k3 = nlohmann::json::parse(R"({"name": "additive_attention", "trainable": true, "dtype": {"module": "keras",
      "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "use_scale": true,
      "dropout": 0.0, "seed": null})");
  CHECK(layers::AdditiveAttention::from_config(k3)->class_name() == "AdditiveAttention");
  auto causal_config = nlohmann::json{{"name", "old"}, {"causal", true}};
  CHECK(contains(message_of<ValueError>([&] { layers::Attention::from_config(causal_config); }), "use_causal_mask"));

  CHECK(contains(message_of<ValueError>([] { layers::Attention({.score_mode = "general"}); }), "score_mode"));
  CHECK(contains(message_of<ValueError>([&] { att({qi}); }), "[query, value]"));
  CHECK(contains(message_of<ShapeError>([&] { att({qi, layers::Input({4, 5}), layers::Input({3, 4})}); }),
                 "same number of time steps"));
  CHECK(contains(message_of<ShapeError>([&] { att({qi, vi, layers::Input({4, 5})}); }), "same number of features"));
  CHECK(contains(message_of<ValueError>([&] { att({qi, vi}, {.return_attention_scores = true}); }), "call_multi"));
}

// ---- call arguments in model configs -----------------------------------------------------------------

namespace {

// model.to_json() of tf.keras 2.21 and Keras 3.15 for (tests/layers/keras_reference.py configs [tfk]):
//   q, v, m = Input((4, 6)), Input((5, 6)), Input((4, 5)); mha = MultiHeadAttention(2, 3, name="mha")
//   y, s = mha(q, v, key=v, attention_mask=m, use_causal_mask=True, return_attention_scores=True)
//   y2 = mha(q, v); z = Attention(name="att")([q, v], use_causal_mask=True)
//   Model([q, v, m], [y, s, y2, z], name="calls")
const char* kCallsTfKeras = R"json({"class_name": "Functional", "config": {"name": "calls", "trainable": true, "layers": [{"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_input_shape": [null, 4, 6], "dtype": "float32", "sparse": false, "ragged": false, "name": "q", "optional": false}, "registered_name": null, "name": "q", "inbound_nodes": []}, {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_input_shape": [null, 5, 6], "dtype": "float32", "sparse": false, "ragged": false, "name": "v", "optional": false}, "registered_name": null, "name": "v", "inbound_nodes": []}, {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_input_shape": [null, 4, 5], "dtype": "float32", "sparse": false, "ragged": false, "name": "m", "optional": false}, "registered_name": null, "name": "m", "inbound_nodes": []}, {"module": "keras.layers", "class_name": "MultiHeadAttention", "config": {"name": "mha", "trainable": true, "dtype": "float32", "num_heads": 2, "key_dim": 3, "value_dim": 3, "dropout": 0.0, "use_bias": true, "output_shape": null, "attention_axes": [1], "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null}, "registered_name": null}, "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null}, "kernel_regularizer": null, "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null, "query_shape": [null, 4, 6], "key_shape": [null, 5, 6], "value_shape": [null, 5, 6], "softmax_robust_masking": false}, "registered_name": null, "build_config": {"input_shape": [null, 4, 6]}, "name": "mha", "inbound_nodes": [[["q", 0, 0, {"value": ["v", 0, 0], "key": ["v", 0, 0], "attention_mask": ["m", 0, 0], "use_causal_mask": true, "return_attention_scores": true}]], [["q", 0, 0, {"value": ["v", 0, 0]}]]]}, {"module": "keras.layers", "class_name": "Attention", "config": {"name": "att", "trainable": true, "dtype": "float32", "dropout": 0.0, "use_scale": false, "score_mode": "dot"}, "registered_name": null, "build_config": {"input_shape": [[null, 4, 6], [null, 5, 6]]}, "name": "att", "inbound_nodes": [[["q", 0, 0, {"use_causal_mask": true}], ["v", 0, 0, {"use_causal_mask": true}]]]}], "input_layers": [["q", 0, 0], ["v", 0, 0], ["m", 0, 0]], "output_layers": [["mha", 0, 0], ["mha", 0, 1], ["mha", 1, 0], ["att", 0, 0]]}, "keras_version": "2.21.0", "backend": "tensorflow"})json";
const char* kCallsKeras3 = R"json({"module": "keras.src.models.functional", "class_name": "Functional", "config": {"name": "calls", "trainable": true, "layers": [{"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 4, 6], "dtype": "float32", "sparse": false, "ragged": false, "name": "q", "optional": false}, "registered_name": null, "name": "q", "inbound_nodes": []}, {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 5, 6], "dtype": "float32", "sparse": false, "ragged": false, "name": "v", "optional": false}, "registered_name": null, "name": "v", "inbound_nodes": []}, {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 4, 5], "dtype": "float32", "sparse": false, "ragged": false, "name": "m", "optional": false}, "registered_name": null, "name": "m", "inbound_nodes": []}, {"module": "keras.layers", "class_name": "MultiHeadAttention", "config": {"name": "mha", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "num_heads": 2, "key_dim": 3, "value_dim": 3, "dropout": 0.0, "use_bias": true, "use_gate": false, "output_shape": null, "attention_axes": [1], "sliding_window": null, "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null, "input_axes": null, "output_axes": null}, "registered_name": null}, "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null}, "kernel_regularizer": null, "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null, "seed": null}, "registered_name": null, "build_config": {"shapes_dict": {"query_shape": [null, 4, 6], "value_shape": [null, 5, 6], "key_shape": [null, 5, 6]}}, "name": "mha", "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 4, 6], "dtype": "float32", "keras_history": ["q", 0, 0]}}, {"class_name": "__keras_tensor__", "config": {"shape": [null, 5, 6], "dtype": "float32", "keras_history": ["v", 0, 0]}}], "kwargs": {"key": {"class_name": "__keras_tensor__", "config": {"shape": [null, 5, 6], "dtype": "float32", "keras_history": ["v", 0, 0]}}, "attention_mask": {"class_name": "__keras_tensor__", "config": {"shape": [null, 4, 5], "dtype": "float32", "keras_history": ["m", 0, 0]}}, "use_causal_mask": true, "return_attention_scores": true}}, {"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 4, 6], "dtype": "float32", "keras_history": ["q", 0, 0]}}, {"class_name": "__keras_tensor__", "config": {"shape": [null, 5, 6], "dtype": "float32", "keras_history": ["v", 0, 0]}}], "kwargs": {}}]}, {"module": "keras.layers", "class_name": "Attention", "config": {"name": "att", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "use_scale": false, "score_mode": "dot", "dropout": 0.0, "seed": null}, "registered_name": null, "build_config": {"input_shape": [[null, 4, 6], [null, 5, 6]]}, "name": "att", "inbound_nodes": [{"args": [[{"class_name": "__keras_tensor__", "config": {"shape": [null, 4, 6], "dtype": "float32", "keras_history": ["q", 0, 0]}}, {"class_name": "__keras_tensor__", "config": {"shape": [null, 5, 6], "dtype": "float32", "keras_history": ["v", 0, 0]}}]], "kwargs": {"use_causal_mask": true}}]}], "input_layers": [["q", 0, 0], ["v", 0, 0], ["m", 0, 0]], "output_layers": [["mha", 0, 0], ["mha", 0, 1], ["mha", 1, 0], ["att", 0, 0]]}, "registered_name": "Functional", "build_config": {"input_shape": null}, "compile_config": {}})json";

// The call flags of each call of `layer` in a model, in call order.
std::vector<std::pair<std::size_t, nlohmann::json>> calls_of(const Layer& layer) {
  std::vector<std::pair<std::size_t, nlohmann::json>> calls;
  for (const auto& weak : layer.inbound_nodes())
    if (auto node = weak.lock()) calls.emplace_back(node->inputs.size(), node->layer->call_kwargs());
  return calls;
}

}  // namespace

TEST_CASE("attention layers: call arguments in model configs of tf.keras 2, Keras 3 and tower") {
  clear_session();
  const nlohmann::json causal_scores = {{"use_causal_mask", true}, {"return_attention_scores", true}};
  const nlohmann::json causal = {{"use_causal_mask", true}};
  for (const char* text : {kCallsTfKeras, kCallsKeras3}) {
    Model model = io::model_from_json(text);
    REQUIRE(model.outputs().size() == 4);
    CHECK(model.outputs()[1].shape() == Shape{-1, 2, 4, 5});
    for (std::size_t i : {0, 2, 3}) CHECK(model.outputs()[i].shape() == Shape{-1, 4, 6});
    const auto mha = calls_of(*model.get_layer("mha"));
    REQUIRE(mha.size() == 2);
    CHECK(mha[0] == std::pair<std::size_t, nlohmann::json>{4, causal_scores});  // query, value, key, mask
    CHECK(mha[1] == std::pair<std::size_t, nlohmann::json>{2, nlohmann::json::object()});
    CHECK(calls_of(*model.get_layer("att")) == std::vector<std::pair<std::size_t, nlohmann::json>>{{2, causal}});
  }

  // tower writes the calls as tf.keras does, and reads them back.
  Model model = io::model_from_json(kCallsTfKeras);
  const auto config = io::model_to_config(model);
  for (const auto& layer : config["config"]["layers"]) {
    if (layer["name"] == "mha")
      CHECK(layer["inbound_nodes"] == nlohmann::json::parse(R"([[["q", 0, 0, {"value": ["v", 0, 0],
          "key": ["v", 0, 0], "attention_mask": ["m", 0, 0], "use_causal_mask": true,
          "return_attention_scores": true}]], [["q", 0, 0, {"value": ["v", 0, 0]}]]])"));
    if (layer["name"] == "att")
      CHECK(layer["inbound_nodes"] == nlohmann::json::parse(
                                          R"([[["q", 0, 0, {"use_causal_mask": true}], ["v", 0, 0, {"use_causal_mask": true}]]])"));
  }
  const Tensor q = seq({2, 4, 6}, 0.5, 0.1), v = seq({2, 5, 6}, 0.6, 0.7);
  std::vector<float> ones(2 * 4 * 5, 1.0f);
  ones[3] = 0.0f;
  const std::vector<Tensor> inputs{q, v, Tensor::from_vector<float>({2, 4, 5}, ones)};
  TempDir dir("attention_calls");
  const std::string path = dir / "calls.h5";
  model.compile("adam", "mse");
  model.save(path);
  Model loaded = models::load_model(path);
  const auto expected = model.predict(inputs), got = loaded.predict(inputs);
  REQUIRE(got.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) check_close(got[i], expected[i], 0, 0);
  CHECK(calls_of(*loaded.get_layer("mha"))[0].second == causal_scores);
  // The causal call attends to no later key: row 0 of every head has one nonzero probability.
  auto s = got[1].to_vector<float>();
  CHECK(s[0] > 0.0f);
  for (int j = 1; j < 5; ++j) CHECK(s[static_cast<std::size_t>(j)] == 0.0f);

  // An argument tower does not implement is refused with its name.
  auto bad = nlohmann::json::parse(kCallsTfKeras);
  bad["config"]["layers"][3]["inbound_nodes"][1][0][3]["sliding"] = 2;
  CHECK(contains(message_of<ValueError>([&] { io::model_from_config(bad); }), "sliding=2"));
}

TEST_CASE("attention layers: save_weights writes Keras's weight names; load_weights reads them back") {
  clear_session();
  // A small transformer block (checked by hand against tf.keras 2.21 and Keras 3.15: tf.keras's
  // load_model of tower's model.save file and both Kerases' load_weights predict within 4e-7).
  auto build = [] {
    auto x = layers::Input({5, 4});
    auto a = layers::MultiHeadAttention(2, 3, {.name = "mha"})(x, x, {.use_causal_mask = true});
    auto h = layers::LayerNormalization({.name = "ln"})(layers::Add()({x, a}));
    auto c = layers::Attention({.use_scale = true, .name = "att"})({h, x});
    auto s = layers::AdditiveAttention({.name = "add_att"})({h, x});
    return Model(std::vector<KerasTensor>{x}, std::vector<KerasTensor>{layers::Dot(2, {.name = "dot"})({c, s}), h}, "block");
  };
  Model model = build();
  TempDir dir("attention_weights");
  const std::string path = dir / "w.h5";
  model.save_weights(path);
  {
    io::hdf5::File file = io::hdf5::File::open(path);
    std::map<std::string, std::vector<std::string>> names;
    for (const auto& layer : io::read_weight_file_layers(io::find_weights_group(file, "test")))
      names[layer.name] = layer.weight_names;
    CHECK(names["mha"] == std::vector<std::string>{"mha/query/kernel:0", "mha/query/bias:0", "mha/key/kernel:0",
                                                   "mha/key/bias:0", "mha/value/kernel:0", "mha/value/bias:0",
                                                   "mha/attention_output/kernel:0", "mha/attention_output/bias:0"});
    CHECK(names["ln"] == std::vector<std::string>{"ln/gamma:0", "ln/beta:0"});
    CHECK(names["att"] == std::vector<std::string>{"att/scale:0"});
    CHECK(names["add_att"] == std::vector<std::string>{"add_att/scale:0"});
    CHECK(names["dot"].empty());
  }
  Model other = build();
  const Tensor x = seq({2, 5, 4}, 0.7, 0.3);
  CHECK(other.predict(std::vector<Tensor>{x})[0].to_vector<float>() != model.predict(std::vector<Tensor>{x})[0].to_vector<float>());
  other.load_weights(path);
  auto expected = model.predict(std::vector<Tensor>{x}), got = other.predict(std::vector<Tensor>{x});
  for (std::size_t i = 0; i < 2; ++i) check_close(got[i], expected[i], 0, 0);
}
