// Keras's losses, built from core ops (so autodiff differentiates them), with Keras 3's numerics on
// the TensorFlow backend: clipping to [epsilon, 1 - epsilon], and the fused logits path when y_pred
// comes straight out of a softmax or sigmoid.
#include "tower/layers/losses/losses.h"

#include <cctype>
#include <map>
#include <mutex>

#include "tower/core/error.h"
#include "tower/core/ops.h"
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

// Keras's "sum over batch size" reduction of the full values gives the same total.
SymbolicTensor per_sample(const SymbolicTensor& values) {
  if (values.rank() <= 1) return values;
  ops::Ints axes;
  for (int a = 1; a < values.rank(); ++a) axes.push_back(a);
  return ops::reduce_mean(values, axes);
}

SymbolicTensor masked_per_sample(SymbolicTensor values, const SymbolicTensor& mask) {
  if (mask.defined() && mask.rank() == values.rank()) {
    // values · mask · (steps / unmasked steps): their mean over everything is the unmasked steps' mean.
    const SymbolicTensor m = mask.dtype() == values.dtype() ? mask : ops::cast(mask, values.dtype());
    const SymbolicTensor count = ops::reduce_sum(ops::ones_like(m));
    const SymbolicTensor kept = ops::maximum(ops::reduce_sum(m), ops::ones_like(count));
    values = ops::multiply(values, ops::multiply(m, ops::divide(count, kept)));
  }
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

SymbolicTensor binary_crossentropy(const std::string& loss, const LossOptions& o, SymbolicTensor y_true,
                                   SymbolicTensor y_pred) {
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
  SymbolicTensor bce;
  if (x.defined()) {
    // TF's sigmoid_cross_entropy_with_logits: max(x, 0) - x z + log(1 + exp(-|x|)); min(-x, x) is
    // -|x| with TF's gradient at 0.
    auto neg_abs = ops::minimum(ops::negative(x), x);
    auto softplus = ops::log(ops::add(constant_like(x, 1.0), ops::exp(neg_abs)));
    bce = ops::add(ops::subtract(ops::maximum(x, constant_like(x, 0.0)), ops::multiply(x, z)), softplus);
  } else {
    auto p = clip(y_pred, kEpsilon, 1.0 - kEpsilon);
    auto one = constant_like(p, 1.0);
    bce = ops::negative(
        ops::add(ops::multiply(z, ops::log(p)), ops::multiply(ops::subtract(one, z), ops::log(ops::subtract(one, p)))));
  }
  return bce;
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

using Impl = SymbolicTensor (*)(const std::string&, const LossOptions&, SymbolicTensor, SymbolicTensor);
const std::map<std::string, Impl> kLosses = {{"binary_crossentropy", binary_crossentropy},
                                             {"categorical_crossentropy", categorical_crossentropy},
                                             {"huber", huber},
                                             {"mean_absolute_error", mean_absolute_error},
                                             {"mean_squared_error", mean_squared_error},
                                             {"sparse_categorical_crossentropy", sparse_categorical_crossentropy}};

// Keras's to_snake_case ("MeanSquaredError" -> "mean_squared_error"), then the aliases.
std::string canonical(const std::string& name) {
  static const std::map<std::string, std::string> aliases = {
      {"mse", "mean_squared_error"},  {"MSE", "mean_squared_error"},  {"mae", "mean_absolute_error"},
      {"MAE", "mean_absolute_error"}, {"bce", "binary_crossentropy"}, {"BCE", "binary_crossentropy"},
      {"huber_loss", "huber"}};
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
        function_ = r->second;
        return;
      }
    }
    std::string known;
    for (const auto& entry : kLosses) known += entry.first + ", ";
    raise<ValueError>(
        "Unknown loss \"{}\". Known losses: {}and the aliases mse, mae, bce, huber_loss (or pass a "
        "C++ function: Loss(function, name)). If \"{}\" is your own loss (say, in a saved training_config), "
        "pass it as custom_objects (models::load_model(path, {{.losses = {{{{\"{}\", function}}}}}})) or "
        "register it once with losses::register_loss(\"{}\", function)",
        name, known, name, name, name);
  }
  if (options.label_smoothing < 0.0 || options.label_smoothing > 1.0)
    raise<ValueError>("{}: label_smoothing must be in [0, 1], got {}", name_, options.label_smoothing);
  if (options.label_smoothing != 0.0 && name_ != "categorical_crossentropy" && name_ != "binary_crossentropy")
    raise<ValueError>(
        "{}: label_smoothing is not supported (as in Keras; for sparse labels use "
        "categorical_crossentropy with one-hot labels)",
        name_);
  function_ = [impl = it->second, n = name_, o = options](const SymbolicTensor& t, const SymbolicTensor& p) {
    return impl(n, o, t, p);
  };
}

Loss::Loss(Function function, std::string name) : name_(std::move(name)), function_(std::move(function)) {
  if (!function_) raise<ValueError>("Loss \"{}\": the function is empty", name_);
}

SymbolicTensor Loss::operator()(const SymbolicTensor& y_true, const SymbolicTensor& y_pred,
                                const SymbolicTensor& mask) const {
  if (!y_true.defined() || !y_pred.defined()) raise<ValueError>("{}: y_true and y_pred must be defined tensors", name_);
  if (!is_floating(y_pred.dtype()))
    raise<DTypeError>("{}: y_pred must be float, got {} of shape {}", name_, dtype_name(y_pred.dtype()),
                      y_pred.shape().to_string());
  auto values = function_(y_true, y_pred);
  // A function that already averaged over the batch (a scalar) counts for every sample, as in Keras.
  if (values.rank() == 0) {
    const SymbolicTensor ones = ops::ones_like(per_sample(y_pred));  // (batch,)
    return ops::multiply(ones.dtype() == values.dtype() ? ones : ops::cast(ones, values.dtype()), values);
  }
  return internal::masked_per_sample(values, mask);
}

}  // namespace tower::losses
