// Mixed precision against Keras 3 (files/mixed_precision.h5, make_mixed_precision.py): a Conv2D +
// BatchNormalization + Dense + softmax model under mixed_float16 and mixed_bfloat16 — predictions,
// training-mode outputs, loss, gradients, the weights after one SGD step, and LossScaleOptimizer's scale
// updates (an overflow skipped and the scale halved; growth after dynamic_growth_steps).
//
// Tolerances are in units of the compute dtype's precision u (2^-11 for float16, 2^-8 for bfloat16):
// both sides round every op's output to the half type, but TensorFlow's CPU kernels and tower's round
// at different points (TF's Eigen contractions may round partial sums; tower accumulates a whole GEMM
// or convolution in float32 and rounds once), so an output can differ by a few of its own ulps, and a
// difference of one ulp in a ReLU's or softmax's input moves everything after it. The bounds below are
// a few u, relative to the largest magnitude of the compared array; the measured differences are
// printed (MESSAGE) and written in docs/keras-api.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "tower/io/hdf5.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;

namespace {

const std::string kFile = std::string(TOWER_GOLDEN_DIR) + "/files/mixed_precision.h5";

struct PolicyScope {
  explicit PolicyScope(const std::string& name) { mixed_precision::set_global_policy(name); }
  ~PolicyScope() { mixed_precision::set_global_policy("float32"); }
};

Sequential make_model() {
  return Sequential({layers::Input({8, 8, 2}), layers::Conv2D(4, {3, 3}, {.activation = "relu", .name = "c"}),
                     layers::BatchNormalization({.name = "bn"}), layers::Flatten({.name = "f"}),
                     layers::Dense(3, {.name = "d"}), layers::Activation("softmax", {.name = "s"})});
}

std::string key_of(const VariablePtr& w) {  // "c/kernel:0" -> "c/kernel"
  std::string name = w->name();
  return name.substr(0, name.size() - 2);
}

void load_weights(Model& model, const hdf5::Group& group) {
  for (const auto& w : model.weights()) w->assign(group.dataset(key_of(w)).read(DType::float32).to(w->device()));
}

// max |a - b| / max(max |b|, floor): the difference relative to the array's scale.
double relative_difference(const std::vector<double>& a, const std::vector<double>& b, double floor = 1e-6) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = floor;
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(std::isfinite(a[i]));
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / scale;
}

void check_weights(const char* what, Model& model, const hdf5::Group& expected, double tolerance) {
  double worst = 0;
  for (const auto& w : model.weights())
    worst = std::max(worst, relative_difference(w->value().to_vector<double>(),
                                                expected.dataset(key_of(w)).read(DType::float64).to_vector<double>()));
  MESSAGE(what << ": weights differ by " << worst << " of their scale (tolerance " << tolerance << ")");
  CHECK(worst <= tolerance);
}

}  // namespace

TEST_CASE("golden mixed precision: Keras 3's outputs, loss, gradients and one step under both policies") {
  const auto file = hdf5::File::open(kFile);
  for (const std::string policy : {"mixed_float16", "mixed_bfloat16"}) {
    INFO(policy);
    const double u = policy == "mixed_float16" ? 0x1p-11 : 0x1p-8;
    const auto g = file.group(policy);
    clear_session();
    PolicyScope scope(policy);
    Sequential model = make_model();
    load_weights(model, g.group("weights"));
    const Tensor x = g.dataset("x").read(DType::float32), y = g.dataset("y").read(DType::int32);

    const Tensor p = model.predict(x);
    CHECK(p.dtype() == DTypePolicy(policy).compute_dtype());
    const double dp = relative_difference(p.to_vector<double>(), g.dataset("predict").read(DType::float64).to_vector<double>());
    MESSAGE(policy << ": predict differs by " << dp << " (" << dp / u << " u)");
    CHECK(dp <= 8 * u);

    // Training mode: train_on_batch reports the training-mode loss of the step (before its update).
    model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
    const auto logs = model.train_on_batch({x}, {y});
    const double loss = logs.at("loss"), expected_loss = g.dataset("train_loss").read(DType::float64).item();
    MESSAGE(policy << ": training loss " << loss << " vs Keras " << expected_loss);
    CHECK(std::fabs(loss - expected_loss) <= 16 * u * std::max(1.0, std::fabs(expected_loss)));
    // One SGD(0.1) step from the same weights: weight - 0.1 · gradient (BatchNormalization's statistics
    // move with the batch's), so this checks the gradients too, at a tenth of their scale.
    check_weights((policy + " step1").c_str(), model, g.group("step1"), 16 * u);

    if (policy != "mixed_float16") continue;
    const auto s = g.group("scale");
    const auto& lso = dynamic_cast<const optimizers::LossScaleOptimizer&>(model.optimizer());
    CHECK(lso.dynamic_scale() == static_cast<double>(s.read_int_attr("step1_scale")));
    CHECK(lso.step_counter() == s.read_int_attr("step1_counter"));
    // x · 60000 overflows float16: Keras skips the step and halves the scale; so does tower.
    Tensor huge(x.shape(), DType::float32);
    {
      auto values = x.to_vector<float>();
      for (float& v : values) v *= 60000.0f;
      huge = Tensor::from_vector<float>(x.shape(), values);
    }
    model.train_on_batch({huge}, {y});
    CHECK(lso.dynamic_scale() == static_cast<double>(s.read_int_attr("overflow_scale")));
    CHECK(lso.step_counter() == s.read_int_attr("overflow_counter"));
    check_weights("mixed_float16 after the overflow", model, g.group("overflow"), 16 * u);

    // Growth: dynamic_growth_steps = 2, two good steps double the scale.
    load_weights(model, g.group("weights"));
    model.compile(optimizers::LossScaleOptimizer(optimizers::SGD(0.1), {.dynamic_growth_steps = 2}),
                  "sparse_categorical_crossentropy");
    model.train_on_batch({x}, {y});
    model.train_on_batch({x}, {y});
    const auto& grown = dynamic_cast<const optimizers::LossScaleOptimizer&>(model.optimizer());
    CHECK(grown.dynamic_scale() == static_cast<double>(s.read_int_attr("growth_scale")));
    CHECK(grown.step_counter() == s.read_int_attr("growth_counter"));
    check_weights("mixed_float16 after growth", model, g.group("growth"), 16 * u);
  }
}
