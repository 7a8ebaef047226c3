// Mixed precision against Keras 3 (files/mixed_precision.h5, make_mixed_precision.py): a Conv2D +
// BatchNormalization + Dense + softmax model under mixed_float16 and mixed_bfloat16 — predictions,
// training-mode outputs, loss, gradients, the weights after one SGD step, and LossScaleOptimizer's scale
// updates (an overflow skipped and the scale halved; growth after dynamic_growth_steps).
//
// Tolerances are in units of the compute dtype's precision u (2^-11 for float16, 2^-8 for bfloat16):
// both sides round every op's output to the half type, but TensorFlow's CPU kernels and tower's round
// at different points (TF's Eigen contractions may round partial sums; tower accumulates a whole GEMM
// or convolution in float32 and rounds once), so an output can differ by a few of its own ulps, and a
// difference of one ulp in a ReLU's or softmax's input moves everything after it. The bounds
// (tolerances() below) are set from the measured differences, relative to the largest magnitude of the
// compared array, and checked to reject the other half type's results; the measured differences are
// printed (MESSAGE) and written in docs/keras-api.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tower/io/hdf5.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/policy_scope.h"

using namespace tower;
using tower::testing::PolicyScope;
namespace hdf5 = tower::io::hdf5;

namespace {

const std::string kFile = std::string(TOWER_GOLDEN_DIR) + "/files/mixed_precision.h5";

Sequential make_model() {
  return Sequential({layers::Input({8, 8, 2}), layers::Conv2D(4, {3, 3}, {.activation = "relu", .name = "c"}),
                     layers::BatchNormalization({.name = "bn"}), layers::Flatten({.name = "f"}),
                     layers::Dense(3, {.name = "d"}), layers::Activation("softmax", {.name = "s"})});
}

std::string key_of(const VariablePtr& w) {  // "c/kernel:0" -> "c/kernel"
  std::string name = w->name();
  return name.substr(0, name.size() - 2);
}

std::vector<double> golden(const hdf5::Group& group, const std::string& key) {
  return group.dataset(key).read(DType::float64).to_vector<double>();
}

void assign_weights(Model& model, const hdf5::Group& group) {
  for (const auto& w : model.weights()) w->assign(group.dataset(key_of(w)).read(DType::float32).to(w->device()));
}

// max |a - b| / max(max |b|, floor): the difference relative to the array's scale. Where b is not
// finite (Keras's BatchNormalization statistics after an overflow), a must be the same value.
double relative_difference(const std::vector<double>& a, const std::vector<double>& b, double floor = 1e-12) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = floor;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(b[i])) {
      CHECK(((std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i]));
      continue;
    }
    REQUIRE(std::isfinite(a[i]));
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / scale;
}

std::vector<double> minus(std::vector<double> a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] -= b[i];
  return a;
}

// The worst difference, over every weight, between tower's change from `from` and Keras's change from
// `from` to `expected`, relative to the scale of Keras's change: an SGD step's change is -0.1 · gradient,
// so this compares the gradients at their own scale (comparing the weights would hide a wrong gradient
// behind the weight's larger magnitude); BatchNormalization's statistics move with the batch's.
double worst_change_difference(Model& model, const hdf5::Group& from, const hdf5::Group& expected) {
  double worst = 0;
  for (const auto& w : model.weights()) {
    INFO(key_of(w));
    const auto before = golden(from, key_of(w));
    worst = std::max(worst, relative_difference(minus(w->value().to_vector<double>(), before),
                                                minus(golden(expected, key_of(w)), before)));
  }
  return worst;
}

double unit_roundoff(const std::string& policy) { return policy == "mixed_float16" ? 0x1p-11 : 0x1p-8; }

// In u of each policy, relative to each array's scale. Measured against Keras 3.15.1 + TF 2.21
// (docs/keras-api.md): mixed_float16 predict 1.01, loss 0.10, one step's changes 8.6 (two steps' 9.0);
// mixed_bfloat16 predict 0.13, loss 0.18, step 10.8. The worst changes are c/bias's, whose gradient is
// nearly 0 (BatchNormalization takes the mean out), so rounding noise is large against its scale. The
// float16 bounds exclude tower's mixed_bfloat16 results (predict 4.0 u, loss 1.9 u, step 51 u), and
// bfloat16's predict bound excludes float32 and float16 results (0.46 and 0.51 u): checked below.
struct Tolerances {
  double predict, loss, step;
};
Tolerances tolerances(const std::string& policy) {
  return policy == "mixed_float16" ? Tolerances{2, 0.5, 12} : Tolerances{0.25, 0.5, 14};
}

struct Differences {
  double predict, loss, step;  // in u of `golden_policy`
};
// Tower under `policy` against Keras's results under `golden_policy`: predict, the training loss and
// one SGD(0.1) step's changes.
Differences differences(const hdf5::File& file, const std::string& policy, const std::string& golden_policy) {
  const auto g = file.group(golden_policy);
  const double u = unit_roundoff(golden_policy);
  clear_session();
  PolicyScope scope(policy);
  Sequential model = make_model();
  assign_weights(model, g.group("weights"));
  const Tensor x = g.dataset("x").read(DType::float32);
  const Tensor y = g.dataset("y").read(DType::int32);
  Differences d{};
  d.predict = relative_difference(model.predict(x).to_vector<double>(), golden(g, "predict")) / u;
  model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  const double loss = model.train_on_batch({x}, {y}).at("loss"), expected_loss = golden(g, "train_loss").at(0);
  d.loss = std::fabs(loss - expected_loss) / std::max(1.0, std::fabs(expected_loss)) / u;
  d.step = worst_change_difference(model, g.group("weights"), g.group("step1")) / u;
  return d;
}

}  // namespace

TEST_CASE("golden mixed precision: Keras 3's outputs, loss, gradients and one step under both policies") {
  const auto file = hdf5::File::open(kFile);
  for (const std::string policy : {"mixed_float16", "mixed_bfloat16"}) {
    INFO(policy);
    const double u = unit_roundoff(policy);
    const Tolerances tol = tolerances(policy);
    const auto g = file.group(policy);
    clear_session();
    PolicyScope scope(policy);
    Sequential model = make_model();
    assign_weights(model, g.group("weights"));
    const Tensor x = g.dataset("x").read(DType::float32);
    const Tensor y = g.dataset("y").read(DType::int32);

    const Tensor p = model.predict(x);
    CHECK(p.dtype() == DTypePolicy(policy).compute_dtype());
    const double dp = relative_difference(p.to_vector<double>(), golden(g, "predict"));
    MESSAGE(policy << ": predict differs by " << dp / u << " u (tolerance " << tol.predict << " u)");
    CHECK(dp <= tol.predict * u);

    // Training mode: train_on_batch reports the training-mode loss of the step (before its update).
    model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
    const auto logs = model.train_on_batch({x}, {y});
    const double loss = logs.at("loss"), expected_loss = golden(g, "train_loss").at(0);
    const double dl = std::fabs(loss - expected_loss) / std::max(1.0, std::fabs(expected_loss));
    MESSAGE(policy << ": training loss " << loss << " vs Keras " << expected_loss << ": " << dl / u << " u (tolerance "
                   << tol.loss << " u)");
    CHECK(dl <= tol.loss * u);
    // One SGD(0.1) step from the same weights.
    const double ds = worst_change_difference(model, g.group("weights"), g.group("step1"));
    MESSAGE(policy << ": one step's changes (gradients) differ by " << ds / u << " u (tolerance " << tol.step << " u)");
    CHECK(ds <= tol.step * u);

    if (policy != "mixed_float16") continue;
    const auto s = g.group("scale");
    const auto& lso = dynamic_cast<const optimizers::LossScaleOptimizer&>(model.optimizer());
    CHECK(lso.dynamic_scale() == static_cast<double>(s.read_int_attr("step1_scale")));
    CHECK(lso.step_counter() == s.read_int_attr("step1_counter"));
    // x · 60000 overflows float16: Keras skips the step and halves the scale; so does tower. The
    // trainable weights stay as they were, bit for bit; BatchNormalization's moving statistics are
    // updated by the forward pass, not the optimizer, and become inf in Keras as in tower.
    std::vector<float> values = x.to_vector<float>();
    for (float& v : values) v *= 60000.0f;
    const Tensor huge = Tensor::from_vector<float>(x.shape(), values);
    std::map<std::string, std::vector<double>> before;
    for (const auto& w : model.weights()) before[key_of(w)] = w->value().to_vector<double>();
    model.train_on_batch({huge}, {y});
    CHECK(lso.dynamic_scale() == static_cast<double>(s.read_int_attr("overflow_scale")));
    CHECK(lso.step_counter() == s.read_int_attr("overflow_counter"));
    for (const auto& w : model.weights()) {
      INFO(key_of(w));
      if (w->trainable()) {
        CHECK(w->value().to_vector<double>() == before[key_of(w)]);
      } else {
        relative_difference(w->value().to_vector<double>(), golden(g.group("overflow"), key_of(w)));
      }
    }

    // Growth: dynamic_growth_steps = 2, two good steps double the scale.
    assign_weights(model, g.group("weights"));
    model.compile(optimizers::LossScaleOptimizer(optimizers::SGD(0.1), {.dynamic_growth_steps = 2}),
                  "sparse_categorical_crossentropy");
    model.train_on_batch({x}, {y});
    model.train_on_batch({x}, {y});
    const auto& grown = dynamic_cast<const optimizers::LossScaleOptimizer&>(model.optimizer());
    CHECK(grown.dynamic_scale() == static_cast<double>(s.read_int_attr("growth_scale")));
    CHECK(grown.step_counter() == s.read_int_attr("growth_counter"));
    const double dg = worst_change_difference(model, g.group("weights"), g.group("growth"));
    MESSAGE(policy << ": two steps' changes differ by " << dg / u << " u (tolerance " << tol.step << " u)");
    CHECK(dg <= tol.step * u);
  }
}


TEST_CASE("golden mixed precision: the tolerances tell the policies apart") {
  // Tower's mixed_bfloat16 results against Keras's mixed_float16 ones fail every float16 bound: a model
  // computing in the wrong half type would not pass.
  const auto file = hdf5::File::open(kFile);
  const Tolerances f16 = tolerances("mixed_float16"), bf16 = tolerances("mixed_bfloat16");
  const Differences wrong_type = differences(file, "mixed_bfloat16", "mixed_float16");
  MESSAGE("mixed_bfloat16 vs Keras's mixed_float16: predict " << wrong_type.predict << " u, loss " << wrong_type.loss
                                                             << " u, step " << wrong_type.step << " u");
  CHECK(wrong_type.predict > f16.predict);
  CHECK(wrong_type.loss > f16.loss);
  CHECK(wrong_type.step > f16.step);
  // bfloat16's rounding is coarse enough that its predictions tell it from float32 and float16 ones.
  // (Against Keras's float16 results, a float32 model is as close as a float16 one: Keras's own
  // rounding dominates. That tower computes in the half type is checked by the op tests,
  // tests/backends/test_half_ops.cpp, and by the outputs' dtype.)
  for (const char* policy : {"float32", "mixed_float16"}) {
    INFO(policy);
    const Differences more_precise = differences(file, policy, "mixed_bfloat16");
    MESSAGE(std::string(policy) << " vs Keras's mixed_bfloat16: predict " << more_precise.predict << " u");
    CHECK(more_precise.predict > bf16.predict);
  }
}
