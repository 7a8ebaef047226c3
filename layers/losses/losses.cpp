// Keras's losses, built from core ops (so autodiff differentiates them), with Keras 3's numerics on
// the TensorFlow backend: clipping to [epsilon, 1 - epsilon], and the fused logits path when y_pred
// comes straight out of a softmax or sigmoid.
#include "tower/layers/losses/losses.h"

#include <cctype>
#include <map>
#include <mutex>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layer.h"
#include "tower/layers/losses/losses_internal.h"
#include "tower/layers/registry.h"

namespace tower::losses {

namespace internal {

SymbolicTensor constant_like(const SymbolicTensor& x, double value) {
  return x.graph().constant(Tensor::scalar(value, x.dtype()));
}

SymbolicTensor as_dtype(const SymbolicTensor& x, DType dtype) { return x.dtype() == dtype ? x : ops::cast(x, dtype); }

SymbolicTensor squeeze_last(const SymbolicTensor& x) {
  auto dims = x.shape().dims();
  dims.pop_back();
  return ops::reshape(x, dims);
}

SymbolicTensor expand_last(const SymbolicTensor& x) {
  auto dims = x.shape().dims();
  dims.push_back(1);
  return ops::reshape(x, dims);
}

void match_ranks(SymbolicTensor& y_true, SymbolicTensor& y_pred) {
  const int rt = y_true.rank(), rp = y_pred.rank();
  if (rt == rp + 1 && y_true.shape().dim(-1) == 1) {
    if (rp == 1)
      y_pred = expand_last(y_pred);
    else
      y_true = squeeze_last(y_true);
  } else if (rp == rt + 1 && y_pred.shape().dim(-1) == 1) {
    if (rt == 1)
      y_true = expand_last(y_true);
    else
      y_pred = squeeze_last(y_pred);
  }
}

std::function<SymbolicTensor(const SymbolicTensor&, const SymbolicTensor&)> with_matched_ranks(
    std::function<SymbolicTensor(const SymbolicTensor&, const SymbolicTensor&)> function) {
  if (!function) return function;
  return [f = std::move(function)](const SymbolicTensor& y_true, const SymbolicTensor& y_pred) {
    SymbolicTensor t = y_true, p = y_pred;
    match_ranks(t, p);
    return f(t, p);
  };
}

// Keras's "sum over batch size" reduction of the full values gives the same total.
SymbolicTensor per_sample(const SymbolicTensor& values) {
  if (values.rank() <= 1) return values;
  ops::Ints axes;
  for (int a = 1; a < values.rank(); ++a) axes.push_back(a);
  return ops::reduce_mean(values, axes);
}

namespace {
// Keras's squeeze_or_expand_to_same_rank for sample weights: (batch,) -> (batch, 1, ...) against values of
// higher rank; a trailing 1 dropped; any other rank than the values' is an error.
SymbolicTensor weights_like(const SymbolicTensor& values, const SymbolicTensor& sample_weight) {
  SymbolicTensor w = as_dtype(sample_weight, values.dtype());
  if (w.rank() == values.rank() + 1 && w.shape().dim(-1) == 1) w = squeeze_last(w);
  if (w.rank() > values.rank() || w.rank() == 0)
    raise<ShapeError>("sample_weight of shape {} does not fit the loss values of shape {}: give one weight per sample "
                      "(batch,), or one per time step (batch, time) for an output of shape (batch, time, ...)",
                      sample_weight.shape().to_string(), values.shape().to_string());
  while (w.rank() < values.rank()) w = expand_last(w);
  return w;
}
}  // namespace

SymbolicTensor masked_per_sample(SymbolicTensor values, const SymbolicTensor& mask, const SymbolicTensor& sample_weight) {
  if (mask.defined() && mask.rank() == values.rank()) {
    // values · mask · (steps / unmasked steps): their mean over everything is the unmasked steps' mean.
    const SymbolicTensor m = mask.dtype() == values.dtype() ? mask : ops::cast(mask, values.dtype());
    const SymbolicTensor count = ops::reduce_sum(ops::ones_like(m));
    const SymbolicTensor kept = ops::maximum(ops::reduce_sum(m), ops::ones_like(count));
    values = ops::multiply(values, ops::multiply(m, ops::divide(count, kept)));
  }
  if (sample_weight.defined()) values = ops::multiply(values, weights_like(values, sample_weight));
  return per_sample(values);
}

bool same_shape(const Shape& a, const Shape& b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  return true;
}

}  // namespace internal

using namespace internal;

namespace {

constexpr double kEpsilon = 1e-7;  // keras.backend.epsilon()

SymbolicTensor clip(const SymbolicTensor& x, double lo, double hi) {
  return ops::minimum(ops::maximum(x, constant_like(x, lo)), constant_like(x, hi));
}

void check_same_shape(const std::string& loss, const SymbolicTensor& y_true, const SymbolicTensor& y_pred,
                      const char* hint = "") {
  if (!same_shape(y_true.shape(), y_pred.shape()))
    raise<ShapeError>("{}: y_true and y_pred must have the same shape, got y_true {} and y_pred {}{}", loss,
                      y_true.shape().to_string(), y_pred.shape().to_string(), hint);
}

// The input of y_pred's producing node when that node is `op` over the last axis (Keras's
// _get_logits: the loss then works on logits, which is stabler and gives the fused gradient).
SymbolicTensor logits_of(const SymbolicTensor& y_pred, const char* op) {
  const Node* node = y_pred.node();
  if (node->op() != op || node->inputs().size() != 1) return {};
  const auto axis = static_cast<int>(node->attrs().get_int("axis", -1));  // softmax's; sigmoid has none
  if (y_pred.shape().normalize_axis(axis, op) != y_pred.rank() - 1) return {};
  return node->inputs()[0];
}

// Applies a (rows, classes) cross-entropy op to logits of any rank >= 2, giving (batch, ...).
template <typename Op>
SymbolicTensor over_rows(const SymbolicTensor& logits, const SymbolicTensor& labels, Op op) {
  if (logits.rank() == 2) return op(logits, labels);
  auto lead = logits.shape().dims();
  const std::int64_t classes = lead.back();
  lead.pop_back();
  auto label_dims = labels.rank() == logits.rank() ? ops::Ints{-1, classes} : ops::Ints{-1};
  return ops::reshape(op(ops::reshape(logits, {-1, classes}), ops::reshape(labels, label_dims)), lead);
}

SymbolicTensor categorical_crossentropy(const std::string& loss, const LossOptions& o, SymbolicTensor y_true,
                                        SymbolicTensor y_pred) {
  if (y_pred.rank() < 2)
    raise<ShapeError>("{}: y_pred must be (batch, ..., classes), got {}", loss, y_pred.shape().to_string());
  check_same_shape(loss, y_true, y_pred,
                   " (for integer class ids use sparse_categorical_crossentropy, or one-hot encode the labels)");
  y_true = as_dtype(y_true, y_pred.dtype());
  if (o.label_smoothing > 0.0) {
    const auto classes = static_cast<double>(y_pred.shape().dim(-1));
    y_true = ops::add(ops::scale(y_true, 1.0 - o.label_smoothing), constant_like(y_true, o.label_smoothing / classes));
  }
  SymbolicTensor logits = logits_of(y_pred, "softmax");
  if (!logits.defined() && o.from_logits) logits = y_pred;
  if (logits.defined()) return over_rows(logits, y_true, ops::softmax_cross_entropy);
  // Probabilities: renormalised so each row sums to 1, then clipped away from 0 and 1.
  auto p = clip(ops::divide(y_pred, ops::reduce_sum(y_pred, {-1}, true)), kEpsilon, 1.0 - kEpsilon);
  return ops::negative(ops::reduce_sum(ops::multiply(y_true, ops::log(p)), {-1}));
}

SymbolicTensor sparse_categorical_crossentropy(const std::string& loss, const LossOptions& o, SymbolicTensor y_true,
                                               SymbolicTensor y_pred) {
  if (y_pred.rank() < 2)
    raise<ShapeError>("{}: y_pred must be (batch, ..., classes), got {}", loss, y_pred.shape().to_string());
  if (y_true.rank() == y_pred.rank() && y_true.shape().dim(-1) == 1) y_true = squeeze_last(y_true);
  auto lead = y_pred.shape().dims();
  lead.pop_back();
  if (!same_shape(y_true.shape(), Shape(lead)))
    raise<ShapeError>(
        "{}: y_true must hold one class id per sample, of shape {} or {} + (1,), got y_true {} for "
        "y_pred {} (for one-hot labels use categorical_crossentropy)",
        loss, Shape(lead).to_string(), Shape(lead).to_string(), y_true.shape().to_string(), y_pred.shape().to_string());
  if (y_true.dtype() != DType::int32 && y_true.dtype() != DType::int64) y_true = ops::cast(y_true, DType::int32);
  SymbolicTensor logits = logits_of(y_pred, "softmax");
  if (!logits.defined()) logits = o.from_logits ? y_pred : ops::log(clip(y_pred, kEpsilon, 1.0 - kEpsilon));
  return over_rows(logits, y_true, ops::sparse_softmax_cross_entropy);
}

// y_true, y_pred of binary_crossentropy, ranks matched and (batch,) made (batch, 1); y_true smoothed
// and of y_pred's dtype; logits: y_pred's logits when known (from_logits, or y_pred out of a sigmoid).
struct BinaryInputs {
  SymbolicTensor y_true, y_pred, logits;
};

BinaryInputs binary_inputs(const std::string& loss, const LossOptions& o, SymbolicTensor y_true, SymbolicTensor y_pred) {
  SymbolicTensor x = logits_of(y_pred, "sigmoid");  // looked for before any reshape of y_pred
  if (!x.defined() && o.from_logits) x = y_pred;
  match_ranks(y_true, y_pred);
  check_same_shape(loss, y_true, y_pred);
  if (y_pred.rank() == 1) {  // (batch,): one probability per sample
    y_true = expand_last(y_true);
    y_pred = expand_last(y_pred);
  }
  if (x.defined() && x.rank() != y_pred.rank()) x = ops::reshape(x, y_pred.shape().dims());
  auto z = as_dtype(y_true, y_pred.dtype());
  if (o.label_smoothing > 0.0)
    z = ops::add(ops::scale(z, 1.0 - o.label_smoothing), constant_like(z, 0.5 * o.label_smoothing));
  return {z, y_pred, x};
}

// Keras's backend binary_crossentropy, elementwise: (batch, ..., n).
SymbolicTensor binary_crossentropy_values(const BinaryInputs& in) {
  const SymbolicTensor& z = in.y_true;
  if (const SymbolicTensor& x = in.logits; x.defined()) {
    // TF's sigmoid_cross_entropy_with_logits: max(x, 0) - x z + log(1 + exp(-|x|)); min(-x, x) is
    // -|x| with TF's gradient at 0.
    auto neg_abs = ops::minimum(ops::negative(x), x);
    auto softplus = ops::log(ops::add(constant_like(x, 1.0), ops::exp(neg_abs)));
    return ops::add(ops::subtract(ops::maximum(x, constant_like(x, 0.0)), ops::multiply(x, z)), softplus);
  }
  auto p = clip(in.y_pred, kEpsilon, 1.0 - kEpsilon);
  auto one = constant_like(p, 1.0);
  return ops::negative(
      ops::add(ops::multiply(z, ops::log(p)), ops::multiply(ops::subtract(one, z), ops::log(ops::subtract(one, p)))));
}

SymbolicTensor binary_crossentropy(const std::string& loss, const LossOptions& o, SymbolicTensor y_true,
                                   SymbolicTensor y_pred) {
  return binary_crossentropy_values(binary_inputs(loss, o, y_true, y_pred));
}

// x ** gamma for x >= 0 (Keras's ops.power): whole powers by products (exact as TF's pow for 2);
// others as exp(gamma log x) with x kept >= 1e-30 so that the gradient at x = 0 is 0, not NaN.
SymbolicTensor power(const SymbolicTensor& x, double gamma) {
  if (gamma == 0.0) return ops::ones_like(x);
  if (gamma > 0.0 && gamma <= 16.0 && gamma == static_cast<double>(static_cast<int>(gamma))) {
    SymbolicTensor result, base = x;
    for (int n = static_cast<int>(gamma);; n >>= 1) {
      if (n & 1) result = result.defined() ? ops::multiply(result, base) : base;
      if (n <= 1) break;
      base = ops::square(base);
    }
    return result;
  }
  return ops::exp(ops::scale(ops::log(ops::maximum(x, constant_like(x, 1e-30))), gamma));
}

// Keras's binary_focal_crossentropy: (1 - p_t)^gamma · bce, p_t the probability of the true class,
// weighted by alpha (1s) / 1 - alpha (0s) with apply_class_balancing; the bce on the logits when
// known, as Keras (its sigmoid carries them).
SymbolicTensor binary_focal_crossentropy(const std::string& loss, const LossOptions& o, SymbolicTensor y_true,
                                         SymbolicTensor y_pred) {
  BinaryInputs in = binary_inputs(loss, o, y_true, y_pred);
  // Keras's ops.sigmoid(y_pred) carries y_pred itself as the logits, even when y_pred is a sigmoid's.
  if (o.from_logits) in.logits = in.y_pred;
  const SymbolicTensor& z = in.y_true;
  const SymbolicTensor p = o.from_logits ? ops::sigmoid(in.y_pred) : in.y_pred;  // (batch, ..., n)
  auto one = constant_like(p, 1.0);
  auto one_minus_z = ops::subtract(one, z);
  auto p_t = ops::add(ops::multiply(z, p), ops::multiply(one_minus_z, ops::subtract(one, p)));
  auto focal = ops::multiply(power(ops::subtract(one, p_t), o.gamma), binary_crossentropy_values(in));
  if (o.apply_class_balancing)
    focal = ops::multiply(ops::add(ops::scale(z, o.alpha), ops::scale(one_minus_z, 1.0 - o.alpha)), focal);
  return ops::reduce_mean(focal, {-1});
}

// Keras's categorical_focal_crossentropy: sum over classes of alpha (1 - p)^gamma · -y log p, with p
// the renormalised, clipped probabilities (softmax of y_pred when from_logits; never the fused path).
SymbolicTensor categorical_focal_crossentropy(const std::string& loss, const LossOptions& o, SymbolicTensor y_true,
                                              SymbolicTensor y_pred) {
  if (y_pred.rank() < 2)
    raise<ShapeError>("{}: y_pred must be (batch, ..., classes), got {}", loss, y_pred.shape().to_string());
  check_same_shape(loss, y_true, y_pred, " (one-hot labels; for integer class ids one-hot encode them first)");
  y_true = as_dtype(y_true, y_pred.dtype());
  if (o.label_smoothing > 0.0) {
    const auto classes = static_cast<double>(y_pred.shape().dim(-1));
    y_true = ops::add(ops::scale(y_true, 1.0 - o.label_smoothing), constant_like(y_true, o.label_smoothing / classes));
  }
  if (o.from_logits) y_pred = ops::softmax(y_pred);
  auto p = clip(ops::divide(y_pred, ops::reduce_sum(y_pred, {-1}, true)), kEpsilon, 1.0 - kEpsilon);  // (batch, ..., classes)
  auto cce = ops::negative(ops::multiply(y_true, ops::log(p)));
  auto weight = ops::scale(power(ops::subtract(constant_like(p, 1.0), p), o.gamma), o.alpha);
  return ops::reduce_sum(ops::multiply(weight, cce), {-1});
}

// Elementwise losses: ranks matched as Keras, (batch,) treated as (batch, 1); f gives the mean over
// the last axis.
template <typename F>
SymbolicTensor elementwise(const std::string& loss, SymbolicTensor y_true, SymbolicTensor y_pred, F f) {
  match_ranks(y_true, y_pred);
  check_same_shape(loss, y_true, y_pred);
  if (y_pred.rank() == 1) {
    y_true = expand_last(y_true);
    y_pred = expand_last(y_pred);
  }
  return f(as_dtype(y_true, y_pred.dtype()), y_pred);
}

SymbolicTensor mean_squared_error(const std::string& loss, const LossOptions&, SymbolicTensor y_true,
                                  SymbolicTensor y_pred) {
  return elementwise(loss, y_true, y_pred, ops::mean_squared_error);
}

SymbolicTensor mean_absolute_error(const std::string& loss, const LossOptions&, SymbolicTensor y_true,
                                   SymbolicTensor y_pred) {
  return elementwise(loss, y_true, y_pred, ops::mean_absolute_error);
}

SymbolicTensor huber(const std::string& loss, const LossOptions& o, SymbolicTensor y_true, SymbolicTensor y_pred) {
  return elementwise(loss, y_true, y_pred, [delta = o.delta](const SymbolicTensor& t, const SymbolicTensor& p) {
    auto error = ops::subtract(p, t);
    auto abs_error = ops::abs(error);
    auto quadratic = ops::scale(ops::square(error), 0.5);
    auto linear = ops::subtract(ops::scale(abs_error, delta), constant_like(abs_error, 0.5 * delta * delta));
    // Keras's where(|e| <= delta, quadratic, linear) as a 0/1 mask (no gradient through the mask).
    auto inside = ops::less_equal(abs_error, constant_like(abs_error, delta));
    auto outside = ops::subtract(constant_like(inside, 1.0), inside);
    return ops::reduce_mean(ops::add(ops::multiply(inside, quadratic), ops::multiply(outside, linear)), {-1});
  });
}

SymbolicTensor log_cosh(const std::string& loss, const LossOptions&, SymbolicTensor y_true, SymbolicTensor y_pred) {
  return elementwise(loss, y_true, y_pred, [](const SymbolicTensor& t, const SymbolicTensor& p) {
    // Keras's log(cosh(e)) = e + softplus(-2 e) - log 2.
    auto e = ops::subtract(p, t);
    return ops::reduce_mean(
        ops::subtract(ops::add(e, apply_activation("softplus", ops::scale(e, -2.0))), constant_like(e, 0.69314718055994530942)), {-1});
  });
}

SymbolicTensor kl_divergence(const std::string& loss, const LossOptions&, SymbolicTensor y_true,
                             SymbolicTensor y_pred) {
  // Keras sums over the last axis; a (batch,) pair counts as (batch, 1) here (Keras would sum the batch).
  return elementwise(loss, y_true, y_pred, [](const SymbolicTensor& t, const SymbolicTensor& p) {
    auto tc = clip(t, kEpsilon, 1.0), pc = clip(p, kEpsilon, 1.0);
    return ops::reduce_sum(ops::multiply(tc, ops::log(ops::divide(tc, pc))), {-1});
  });
}

SymbolicTensor poisson(const std::string& loss, const LossOptions&, SymbolicTensor y_true, SymbolicTensor y_pred) {
  return elementwise(loss, y_true, y_pred, [](const SymbolicTensor& t, const SymbolicTensor& p) {
    return ops::reduce_mean(ops::subtract(p, ops::multiply(t, ops::log(ops::add(p, constant_like(p, kEpsilon))))), {-1});
  });
}

// Keras's convert_binary_labels_to_hinge: 2 y - 1 when every label of the batch is 0 or 1, else y.
SymbolicTensor hinge_labels(const SymbolicTensor& y) {
  auto is_binary = ops::add(ops::equal(y, constant_like(y, 0.0)), ops::equal(y, constant_like(y, 1.0)));
  auto all_binary = ops::subtract(constant_like(y, 1.0), ops::reduce_max(ops::subtract(constant_like(y, 1.0), is_binary)));
  return ops::add(y, ops::multiply(all_binary, ops::subtract(y, constant_like(y, 1.0))));  // y + b (y - 1)
}

// max(1 - y_true y_pred, 0), y_true in {-1, 1} (or {0, 1}, converted).
SymbolicTensor hinge_margin(const SymbolicTensor& t, const SymbolicTensor& p) {
  return ops::relu(ops::subtract(constant_like(p, 1.0), ops::multiply(hinge_labels(t), p)));
}

SymbolicTensor hinge(const std::string& loss, const LossOptions&, SymbolicTensor y_true, SymbolicTensor y_pred) {
  return elementwise(loss, y_true, y_pred, [](const SymbolicTensor& t, const SymbolicTensor& p) {
    return ops::reduce_mean(hinge_margin(t, p), {-1});
  });
}

SymbolicTensor squared_hinge(const std::string& loss, const LossOptions&, SymbolicTensor y_true,
                             SymbolicTensor y_pred) {
  return elementwise(loss, y_true, y_pred, [](const SymbolicTensor& t, const SymbolicTensor& p) {
    return ops::reduce_mean(ops::square(hinge_margin(t, p)), {-1});
  });
}

SymbolicTensor categorical_hinge(const std::string& loss, const LossOptions&, SymbolicTensor y_true,
                                 SymbolicTensor y_pred) {
  return elementwise(loss, y_true, y_pred, [](const SymbolicTensor& t, const SymbolicTensor& p) {
    // max(neg - pos + 1, 0): pos = sum(y_true y_pred), neg = max((1 - y_true) y_pred) over the classes.
    auto pos = ops::reduce_sum(ops::multiply(t, p), {-1});
    auto neg = ops::reduce_max(ops::multiply(ops::subtract(constant_like(t, 1.0), t), p), {-1});
    return ops::relu(ops::add(ops::subtract(neg, pos), constant_like(pos, 1.0)));
  });
}

SymbolicTensor mean_absolute_percentage_error(const std::string& loss, const LossOptions&, SymbolicTensor y_true,
                                              SymbolicTensor y_pred) {
  return elementwise(loss, y_true, y_pred, [](const SymbolicTensor& t, const SymbolicTensor& p) {
    auto diff = ops::abs(ops::divide(ops::subtract(t, p), ops::maximum(ops::abs(t), constant_like(t, kEpsilon))));
    return ops::scale(ops::reduce_mean(diff, {-1}), 100.0);
  });
}

SymbolicTensor mean_squared_logarithmic_error(const std::string& loss, const LossOptions&, SymbolicTensor y_true,
                                              SymbolicTensor y_pred) {
  return elementwise(loss, y_true, y_pred, [](const SymbolicTensor& t, const SymbolicTensor& p) {
    auto log1 = [](const SymbolicTensor& v) {
      return ops::log(ops::add(ops::maximum(v, constant_like(v, kEpsilon)), constant_like(v, 1.0)));
    };
    return ops::reduce_mean(ops::square(ops::subtract(log1(p), log1(t))), {-1});
  });
}

// Keras's normalize: x · min(rsqrt(sum x²), 1/epsilon) along axis; as x / sqrt(max(sum x², eps²)),
// the same values, with a zero gradient (not NaN) for a zero vector.
SymbolicTensor l2_normalize(const SymbolicTensor& x, int axis) {
  auto squares = ops::reduce_sum(ops::square(x), {axis}, true);
  return ops::divide(x, ops::sqrt(ops::maximum(squares, constant_like(squares, kEpsilon * kEpsilon))));
}

SymbolicTensor cosine_similarity(const std::string& loss, const LossOptions& o, SymbolicTensor y_true,
                                 SymbolicTensor y_pred) {
  match_ranks(y_true, y_pred);
  check_same_shape(loss, y_true, y_pred);
  if (y_pred.rank() == 1) {
    y_true = expand_last(y_true);
    y_pred = expand_last(y_pred);
  }
  const int axis = y_pred.shape().normalize_axis(o.axis, loss.c_str());
  if (axis == 0)
    raise<ValueError>("{}: axis {} is the batch axis of y_pred {}; give an axis after it (Keras's default is -1)", loss,
                      o.axis, y_pred.shape().to_string());
  auto t = as_dtype(y_true, y_pred.dtype());
  // -sum(normalize(y_true) · normalize(y_pred)) along axis: (batch, ...) without that axis.
  return ops::negative(ops::reduce_sum(ops::multiply(l2_normalize(t, axis), l2_normalize(y_pred, axis)), {axis}));
}

using Impl = SymbolicTensor (*)(const std::string&, const LossOptions&, SymbolicTensor, SymbolicTensor);
const std::map<std::string, Impl> kLosses = {
    {"binary_crossentropy", binary_crossentropy},
    {"binary_focal_crossentropy", binary_focal_crossentropy},
    {"categorical_crossentropy", categorical_crossentropy},
    {"categorical_focal_crossentropy", categorical_focal_crossentropy},
    {"categorical_hinge", categorical_hinge},
    {"cosine_similarity", cosine_similarity},
    {"hinge", hinge},
    {"huber", huber},
    {"kl_divergence", kl_divergence},
    {"log_cosh", log_cosh},
    {"mean_absolute_error", mean_absolute_error},
    {"mean_absolute_percentage_error", mean_absolute_percentage_error},
    {"mean_squared_error", mean_squared_error},
    {"mean_squared_logarithmic_error", mean_squared_logarithmic_error},
    {"poisson", poisson},
    {"sparse_categorical_crossentropy", sparse_categorical_crossentropy},
    {"squared_hinge", squared_hinge}};

// Keras's to_snake_case ("MeanSquaredError" -> "mean_squared_error"), then the aliases.
std::string canonical(const std::string& name) {
  static const std::map<std::string, std::string> aliases = {
      {"mse", "mean_squared_error"},  {"MSE", "mean_squared_error"},  {"mae", "mean_absolute_error"},
      {"MAE", "mean_absolute_error"}, {"bce", "binary_crossentropy"}, {"BCE", "binary_crossentropy"},
      {"huber_loss", "huber"},
      // Keras 3's aliases, and tf.keras 2's (logcosh, kullback_leibler_divergence) for its files.
      {"kld", "kl_divergence"},  {"KLD", "kl_divergence"},  {"kullback_leibler_divergence", "kl_divergence"},
      {"mape", "mean_absolute_percentage_error"},  {"MAPE", "mean_absolute_percentage_error"},
      {"msle", "mean_squared_logarithmic_error"},  {"MSLE", "mean_squared_logarithmic_error"},
      {"logcosh", "log_cosh"}};
  if (auto it = aliases.find(name); it != aliases.end()) return it->second;
  return to_snake_case(name);
}

// The user's losses given to register_loss, by name.
std::mutex registered_mutex;
std::map<std::string, Loss::Function>& registered() {
  static std::map<std::string, Loss::Function> table;
  return table;
}

}  // namespace

bool internal::is_builtin_loss(const std::string& name) { return kLosses.count(canonical(name)) > 0; }

void register_loss(const std::string& name, Loss::Function function) {
  if (name.empty()) raise<ValueError>("register_loss: the name is empty");
  if (!function) raise<ValueError>("register_loss(\"{}\"): the function is empty", name);
  if (kLosses.count(canonical(name)))
    raise<ValueError>("register_loss(\"{}\"): \"{}\" is one of tower's own losses; register yours under another "
                      "name",
                      name, name);
  std::lock_guard lock(registered_mutex);
  if (!registered().emplace(name, std::move(function)).second)
    raise<ValueError>("register_loss(\"{}\"): a loss of that name is already registered", name);
}

Loss::Loss(const std::string& name, const LossOptions& options) : name_(canonical(name)), options_(options) {
  if (const auto* custom = tower::internal::scoped_custom_loss(name)) {  // custom_objects win, as in Keras
    *this = Loss(*custom, name);
    return;
  }
  auto it = kLosses.find(name_);
  if (it == kLosses.end()) {
    {
      std::lock_guard lock(registered_mutex);
      if (auto r = registered().find(name); r != registered().end()) {
        name_ = name;
        options_ = {};  // the options of tower's losses mean nothing to the user's function
        function_ = internal::with_matched_ranks(r->second);
        return;
      }
    }
    std::string known;
    for (const auto& entry : kLosses) known += entry.first + ", ";
    raise<ValueError>(
        "Unknown loss \"{}\". Known losses: {}and the aliases mse, mae, bce, huber_loss, logcosh, kld, kullback_leibler_divergence, mape, msle (or pass a "
        "C++ function: Loss(function, name)). If \"{}\" is your own loss (say, in a saved training_config), "
        "pass it as custom_objects (models::load_model(path, {{.losses = {{{{\"{}\", function}}}}}})) or "
        "register it once with losses::register_loss(\"{}\", function)",
        name, known, name, name, name);
  }
  if (options.label_smoothing < 0.0 || options.label_smoothing > 1.0)
    raise<ValueError>("{}: label_smoothing must be in [0, 1], got {}", name_, options.label_smoothing);
  const bool smoothable = name_ == "categorical_crossentropy" || name_ == "binary_crossentropy" ||
                          name_ == "binary_focal_crossentropy" || name_ == "categorical_focal_crossentropy";
  if (options.label_smoothing != 0.0 && !smoothable)
    raise<ValueError>(
        "{}: label_smoothing is not supported (as in Keras, where only the categorical, binary and focal "
        "crossentropies take it; for sparse labels use categorical_crossentropy with one-hot labels)",
        name_);
  if (options.axis != -1 && name_ != "cosine_similarity")
    raise<ValueError>("{}: axis {} is not supported; tower's losses work on the last axis (-1), except "
                      "cosine_similarity, which takes any axis after the batch",
                      name_, options.axis);
  function_ = [impl = it->second, n = name_, o = options](const SymbolicTensor& t, const SymbolicTensor& p) {
    return impl(n, o, t, p);
  };
}

Loss::Loss(Function function, std::string name)
    : name_(std::move(name)), function_(internal::with_matched_ranks(std::move(function))) {
  if (!function_) raise<ValueError>("Loss \"{}\": the function is empty", name_);
}

SymbolicTensor Loss::operator()(const SymbolicTensor& y_true, const SymbolicTensor& y_pred, const SymbolicTensor& mask,
                                const SymbolicTensor& sample_weight) const {
  if (!y_true.defined() || !y_pred.defined()) raise<ValueError>("{}: y_true and y_pred must be defined tensors", name_);
  if (!is_floating(y_pred.dtype()))
    raise<DTypeError>("{}: y_pred must be float, got {} of shape {}", name_, dtype_name(y_pred.dtype()),
                      y_pred.shape().to_string());
  auto values = function_(y_true, y_pred);
  // A function that already averaged over the batch (a scalar) counts for every sample, as in Keras.
  if (values.rank() == 0) {
    const SymbolicTensor ones = ops::ones_like(per_sample(y_pred));  // (batch,)
    values = ops::multiply(ones.dtype() == values.dtype() ? ones : ops::cast(ones, values.dtype()), values);
    return internal::masked_per_sample(values, {}, sample_weight);
  }
  return internal::masked_per_sample(values, mask, sample_weight);
}

}  // namespace tower::losses
