// Dot: Keras's batch_dot along given axes (ranks 2 and 3, mixed), normalize, against Keras 3.15's
// values and gradients; configs and errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/keras_reference.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_weightless_gradients;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::run_with_gradients;
using tower::testing::seq;

namespace {

// Printed by tests/layers/keras_reference.py dot (Keras 3.15, TF 2.21): Dot(axes, normalize)([x, y]) on
// x = seq(x_shape, 0.5, 0.1), y = seq(y_shape, 0.6, 0.7) and the gradients of sum(out * seq(out.shape,
// 0.45, 0.2)): dot1 axes=1 (2, 5)·(2, 5); dot1n the same normalized; dot12n axes=(1, 2) normalized
// (2, 3, 5)·(2, 4, 3); dotm1 axes=-1 (2, 3, 4)·(2, 5, 4); dot23 axes=(1, 2) (2, 4)·(2, 3, 4).
  const std::vector<double> dot1_y{2.0858395, 0.88187003};
  const std::vector<double> dot1_dx{0.1279863, 0.19142947, 0.1880008, 0.11889806, 0.0082608024, -0.32064962, -0.55445117, -0.594567, -0.42698339, -0.11024227};
  const std::vector<double> dot1_dy{0.019833837, 0.11217714, 0.17705557, 0.19858462, 0.17149323, 0.31197444, 0.025164051, -0.26780736, -0.4952102, -0.60136831};
  const std::vector<double> dot1n_y{0.7641052, 0.37442541};
  const std::vector<double> dot1n_dx{0.041599713, 0.040232457, 0.021687124, -0.0093645044, -0.042674698, -0.19123372, -0.23985326, -0.2051495, -0.093839325, 0.059389591};
  const std::vector<double> dot1n_dy{-0.030364491, -0.015189789, 0.0095851906, 0.037789349, 0.060394257, 0.17834799, 0.090034045, -0.028614946, -0.14914951, -0.23955242};
  const std::vector<double> dot12n_y{-0.197833, 0.67110646, 0.034229115, -0.58451533, -0.15254289, 0.99324512, -0.087647684, -0.76568568, -0.016280962, 0.75524354, -0.16497231, -0.51154292, 0.075589225, 0.37526691, -0.16449019, -0.1948691, 0.12811479, 0.073946923, -0.14406267, 0.041845165, 0.31495056, 0.12367336, -0.49076205, 0.041455075, 0.20891592, -0.033399053, -0.25760952, 0.10573924, 0.10766003, -0.15045129, -0.054348797, 0.14479896, -0.011028177, -0.26231912, 0.16899654, 0.17341062, -0.18484652, -0.38104713, 0.46954474, 0.18474257};
  const std::vector<double> dot12n_dx{-0.16193399, 0.40357777, -0.12229152, -0.35632408, 0.28072232, 0.089112245, 0.40739328, -0.18960805, -0.35789442, 0.24357069, 0.032156631, 0.38781834, -0.13768835, 0.20323239, -0.00039526075, 0.090141684, -0.062784322, -0.21544126, 0.2270477, 0.16189167, 0.11968508, 0.031072093, 0.010212928, -0.13527618, -0.040564902, -0.36993313, 0.17608263, 0.1959779, -0.18388665, 0.011155903};
  const std::vector<double> dot12n_dy{0.11302079, 0.17942801, -0.25964206, -0.21185802, 0.22434588, -0.22169632, 0.030883841, 0.10442092, -0.18550794, -0.030414067, 0.10522563, -0.056607258, -0.037346836, 0.078926101, -0.080583841, -0.1289492, 0.28266829, -0.18279134, -0.29842091, 0.44863227, -0.44679096, -0.17658341, 0.39025426, -0.27927753};
  const std::vector<double> dotm1_y{2.0499468, -2.0935442, 1.037586, 0.56332558, -1.8683715, 0.82732195, 0.15942214, -1.0624357, 1.4074448, -1.0132461, -2.7385218, 1.9608583, -0.15332757, -1.7347329, 2.7116897, 1.7977954, -1.4076899, 0.27824807, 0.99733323, -1.7491026, 0.7681393, 0.54374373, -1.5700457, 1.77174, -1.0428941, -2.437113, 0.95513546, 1.0284911, -2.4719412, 2.6170969};
  const std::vector<double> dotm1_dx{-0.17496175, -0.39839786, -0.48266217, -0.39831865, 0.6426456, 0.92779452, 0.88883793, 0.53938478, -0.63242424, -0.76723403, -0.63402694, -0.27933592, 0.21299322, 0.14649841, 0.028827511, -0.098913819, 0.033001401, 0.46261916, 0.7306307, 0.74341196, -0.25445449, -0.7277087, -0.94675338, -0.83506978};
  const std::vector<double> dotm1_dy{1.3885726, 1.4345604, 1.1293179, 0.54757887, 1.0081083, 1.3650995, 1.3878667, 1.0708358, 0.4269236, 1.0238392, 1.3700835, 1.3808832, -0.23926398, 0.47872669, 1.0795084, 1.4159888, -0.8578127, -0.16170308, 0.57399702, 1.1691626, 0.6651479, 1.1854997, 1.4155997, 1.2991116, 0.0060699279, 0.6863789, 1.1986383, 1.4174292, -0.65421665, 0.050596036, 0.74302107, 1.2535286, -1.1842448, -0.59526074, 0.13946402, 0.84004301, -1.4784831, -1.1225977, -0.49186116, 0.25930008};
  const std::vector<double> dot23_y{2.0499468, -2.0935442, 1.037586, 1.4074448, -1.0132461, 0.086877838};
  const std::vector<double> dot23_dx{-0.47563234, -0.2915647, -0.0056451531, 0.28224647, 0.38564131, 0.32019481, 0.14289506, -0.084322073};
  const std::vector<double> dot23_dy{0.019833837, 0.11217714, 0.17705557, 0.19858462, 0.060417823, 0.34171396, 0.53934658, 0.60492831, 0.08897227, 0.50321352, 0.79425055, 0.8908273, 0.86302269, 0.51538992, 0.041571669, -0.44242474, 0.78491402, 0.46874407, 0.037809189, -0.4023827, 0.55052447, 0.32876858, 0.026518678, -0.28222391};

struct Case {
  const char* name;
  layers::Dot layer;
  Shape x, y, out;
  const std::vector<double>& expected_y;
  const std::vector<double>& dx;
  const std::vector<double>& dy;
};

}  // namespace

TEST_CASE("Dot: batch_dot values and gradients as Keras 3, with and without normalize") {
  clear_session();
  std::vector<Case> cases;
  cases.push_back({"dot1", layers::Dot(1), {2, 5}, {2, 5}, {2, 1}, dot1_y, dot1_dx, dot1_dy});
  cases.push_back({"dot1n", layers::Dot(1, {.normalize = true}), {2, 5}, {2, 5}, {2, 1}, dot1n_y, dot1n_dx, dot1n_dy});
  cases.push_back({"dot12n", layers::Dot({1, 2}, {.normalize = true}), {2, 3, 5}, {2, 4, 3}, {2, 5, 4}, dot12n_y,
                   dot12n_dx, dot12n_dy});
  cases.push_back({"dotm1", layers::Dot(-1), {2, 3, 4}, {2, 5, 4}, {2, 3, 5}, dotm1_y, dotm1_dx, dotm1_dy});
  cases.push_back({"dot23", layers::Dot({1, 2}), {2, 4}, {2, 3, 4}, {2, 3}, dot23_y, dot23_dx, dot23_dy});
  for (auto& c : cases) {
    CAPTURE(c.name);
    auto drop_batch = [](const Shape& s) { return Shape(std::vector<std::int64_t>(s.dims().begin() + 1, s.dims().end())); };
    auto out_shape = c.layer({layers::Input(drop_batch(c.x)), layers::Input(drop_batch(c.y))}).shape();
    CHECK(out_shape == tower::testing::with_unknown_batch(c.out));
    auto run = run_with_gradients(c.layer, {seq(c.x, 0.5, 0.1), seq(c.y, 0.6, 0.7)});
    CHECK(run.outputs[0].shape() == c.out);
    check_close(run.outputs[0], c.expected_y, 1e-5, 1e-6);
    check_close(run.input_grads[0], c.dx, 1e-4, 1e-6);
    check_close(run.input_grads[1], c.dy, 1e-4, 1e-6);
  }
  // Finite differences in float64, rank 3 by rank 3 and rank 2 by rank 3.
  layers::Dot dot({2, 1}, {.normalize = true});
  check_weightless_gradients(dot, {{2, 3, 4}, {2, 4, 2}});
  layers::Dot mixed({1, 2});
  check_weightless_gradients(mixed, {{2, 4}, {2, 3, 4}});
  // A zero vector normalizes to zero (no NaN), as Keras's epsilon keeps it.
  layers::Dot cosine(1, {.normalize = true});
  auto zero = run_with_gradients(cosine, {Tensor::zeros({1, 3}), seq({1, 3}, 0.6, 0.7)});
  check_close(zero.outputs[0], {0.0});
  check_close(zero.input_grads[1], {0.0, 0.0, 0.0});
}

TEST_CASE("Dot: masks dropped, configs, errors") {
  clear_session();
  layers::Dot dot({1, 2}, {.name = "d"});
  CHECK_FALSE(dot.supports_masking());
  CHECK(dot.get_config() == nlohmann::json::parse(R"({"name": "d", "trainable": true, "dtype": "float32",
      "axes": [1, 2], "normalize": false})"));
  CHECK(layers::Dot(-1, {.normalize = true, .name = "e"}).get_config()["axes"] == -1);
  auto back = layers::Dot::from_config(layers::Dot(2, {.name = "f"}).get_config());
  CHECK(back->get_config()["axes"] == 2);
  // Keras 3's config.
  auto k3 = nlohmann::json::parse(R"({"name": "dot", "trainable": true, "dtype": {"module": "keras",
      "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "axes": 1,
      "normalize": false})");
  CHECK(layers::Dot::from_config(k3)->get_config()["axes"] == 1);

  auto a = layers::Input({3, 4}), b = layers::Input({5, 4});
  CHECK(contains(message_of<ShapeError>([&] { dot({a, b}); }), "axis 1 of"));
  CHECK(contains(message_of<ValueError>([&] { layers::Dot(0)({a, b}); }), "batch axis"));
  CHECK(contains(message_of<ValueError>([&] { layers::Dot(-1)({a}); }), "2 inputs"));
  CHECK_THROWS_AS(layers::Dot(std::vector<int>{1, 2, 3}), ValueError);
}
