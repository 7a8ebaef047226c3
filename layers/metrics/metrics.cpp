// Keras's metrics as per-sample values, and the resolution of "accuracy" (keras/src/trainers/
// compile_utils.py: get_metric).
#include "tower/layers/metrics/metrics.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/losses/losses.h"
#include "tower/layers/layer.h"
#include "tower/layers/losses/losses_internal.h"
#include "tower/layers/registry.h"

namespace tower::metrics {

using namespace losses::internal;

namespace {

const std::vector<std::string> kNames = {"accuracy",
                                         "binary_accuracy",
                                         "categorical_accuracy",
                                         "sparse_categorical_accuracy",
                                         "top_k_categorical_accuracy",
                                         "sparse_top_k_categorical_accuracy"};

void check_float(const std::string& metric, const SymbolicTensor& y_pred) {
  if (!is_floating(y_pred.dtype()))
    raise<DTypeError>("{}: y_pred must be float, got {} of shape {}", metric, dtype_name(y_pred.dtype()),
                      y_pred.shape().to_string());
}

// One-hot metrics want y_true and y_pred of one shape (batch, ..., classes).
void check_one_hot(const std::string& metric, const SymbolicTensor& y_true, const SymbolicTensor& y_pred) {
  if (y_pred.rank() < 2 || !same_shape(y_true.shape(), y_pred.shape()))
    raise<ShapeError>(
        "{}: y_true and y_pred must both be (batch, ..., classes), got y_true {} and y_pred {} (for "
        "integer class ids use sparse_{})",
        metric, y_true.shape().to_string(), y_pred.shape().to_string(), metric);
}

// Sparse metrics: class ids (batch, ...) or (batch, ..., 1) for y_pred (batch, ..., classes).
SymbolicTensor sparse_ids(const std::string& metric, SymbolicTensor y_true, const SymbolicTensor& y_pred) {
  if (y_pred.rank() >= 2 && y_true.rank() == y_pred.rank() && y_true.shape().dim(-1) == 1)
    y_true = squeeze_last(y_true);
  auto lead = y_pred.shape().dims();
  if (!lead.empty()) lead.pop_back();
  if (y_pred.rank() < 2 || !same_shape(y_true.shape(), Shape(lead)))
    raise<ShapeError>(
        "{}: y_true must hold one class id per sample for y_pred (batch, ..., classes), got y_true {} "
        "and y_pred {}",
        metric, y_true.shape().to_string(), y_pred.shape().to_string());
  return y_true;
}

// 1 where the prediction's argmax is the class id (ids in y_pred's float dtype).
SymbolicTensor argmax_matches(const SymbolicTensor& ids, const SymbolicTensor& y_pred) {
  return ops::equal(as_dtype(ids, y_pred.dtype()), ops::cast(ops::argmax(y_pred, -1), y_pred.dtype()));
}

// TF's in_top_k: the class is in the top k when fewer than k classes score strictly higher (ties
// at the boundary all count as in).
SymbolicTensor in_top_k(SymbolicTensor ids, const SymbolicTensor& y_pred, int k) {
  if (ids.dtype() != DType::int32 && ids.dtype() != DType::int64) ids = ops::cast(ids, DType::int32);
  auto hot = ops::one_hot(ids, y_pred.shape().dim(-1), y_pred.dtype());   // (batch, ..., classes)
  auto target = ops::reduce_sum(ops::multiply(y_pred, hot), {-1}, true);  // (batch, ..., 1)
  auto higher = ops::reduce_sum(ops::greater(y_pred, target), {-1});      // (batch, ...)
  return ops::less(higher, constant_like(higher, static_cast<double>(k)));
}

Metric::Function make_function(const std::string& kind, int k, double threshold) {
  if (kind == "binary_accuracy")
    return [threshold](SymbolicTensor y_true, SymbolicTensor y_pred) {
      match_ranks(y_true, y_pred);
      if (!same_shape(y_true.shape(), y_pred.shape()))
        raise<ShapeError>("binary_accuracy: y_true and y_pred must have the same shape, got y_true {} and y_pred {}",
                          y_true.shape().to_string(), y_pred.shape().to_string());
      auto predicted = ops::greater(y_pred, constant_like(y_pred, threshold));
      return ops::equal(as_dtype(y_true, y_pred.dtype()), predicted);
    };
  if (kind == "categorical_accuracy")
    return [](const SymbolicTensor& y_true, const SymbolicTensor& y_pred) {
      check_one_hot("categorical_accuracy", y_true, y_pred);
      return argmax_matches(ops::argmax(as_dtype(y_true, y_pred.dtype()), -1), y_pred);
    };
  if (kind == "sparse_categorical_accuracy")
    return [](const SymbolicTensor& y_true, const SymbolicTensor& y_pred) {
      return argmax_matches(sparse_ids("sparse_categorical_accuracy", y_true, y_pred), y_pred);
    };
  if (kind == "top_k_categorical_accuracy")
    return [k](const SymbolicTensor& y_true, const SymbolicTensor& y_pred) {
      check_one_hot("top_k_categorical_accuracy", y_true, y_pred);
      return in_top_k(ops::argmax(as_dtype(y_true, y_pred.dtype()), -1), y_pred, k);
    };
  if (kind == "sparse_top_k_categorical_accuracy")
    return [k](const SymbolicTensor& y_true, const SymbolicTensor& y_pred) {
      return in_top_k(sparse_ids("sparse_top_k_categorical_accuracy", y_true, y_pred), y_pred, k);
    };
  return losses::Loss(kind);  // mse, mae, crossentropies: the loss as a metric
}

// Keras's resolution of "accuracy" from the label and prediction shapes.
std::string resolve_accuracy(const Shape& y_true, const Shape& y_pred) {
  if (y_true.rank() == 0 || y_pred.rank() == 0) return "binary_accuracy";
  const bool binary = y_pred.dim(-1) == 1;
  const bool sparse = y_true.rank() < y_pred.rank() || (y_true.dim(-1) == 1 && y_pred.dim(-1) > 1);
  return binary ? "binary_accuracy" : sparse ? "sparse_categorical_accuracy" : "categorical_accuracy";
}

bool is_accuracy(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower == "accuracy" || lower == "acc";
}

// The user's metrics given to register_metric, by name.
std::mutex registered_mutex;
std::map<std::string, Metric::Function>& registered() {
  static std::map<std::string, Metric::Function> table;
  return table;
}

}  // namespace

void register_metric(const std::string& name, Metric::Function function) {
  if (name.empty()) raise<ValueError>("register_metric: the name is empty");
  if (!function) raise<ValueError>("register_metric(\"{}\"): the function is empty", name);
  if (is_accuracy(name) || std::find(kNames.begin(), kNames.end(), to_snake_case(name)) != kNames.end() ||
      losses::internal::is_builtin_loss(name))
    raise<ValueError>("register_metric(\"{}\"): \"{}\" is one of tower's own metrics or losses; register yours "
                      "under another name",
                      name, name);
  std::lock_guard lock(registered_mutex);
  if (!registered().emplace(name, std::move(function)).second)
    raise<ValueError>("register_metric(\"{}\"): a metric of that name is already registered", name);
}

Metric::Metric(const std::string& name) : name_(name) {
  if (const auto* custom = tower::internal::scoped_custom_metric(name)) {  // custom_objects win, as in Keras
    kind_ = name;
    function_ = *custom;
    return;
  }
  if (is_accuracy(name)) {
    kind_ = "accuracy";  // resolved per output by resolve()
    return;
  }
  kind_ = to_snake_case(name);
  if (std::find(kNames.begin(), kNames.end(), kind_) == kNames.end()) {
    {
      std::lock_guard lock(registered_mutex);
      if (auto r = registered().find(name); r != registered().end()) {
        kind_ = name;
        function_ = r->second;
        return;
      }
    }
    try {
      loss_ = losses::Loss(name);
      kind_ = loss_->name();
    } catch (const ValueError&) {
      std::string known;
      for (const auto& n : kNames) known += n + ", ";
      raise<ValueError>(
          "Unknown metric \"{}\". Known metrics: acc, {}mse, mae, and the loss names "
          "(binary_crossentropy, categorical_crossentropy, sparse_categorical_crossentropy, "
          "mean_squared_error, mean_absolute_error, huber), or pass a C++ function: "
          "Metric(function, name). If \"{}\" is your own metric (say, in a saved training_config), pass it as "
          "custom_objects (models::load_model(path, {{.metrics = {{{{\"{}\", function}}}}}})) or register it "
          "once with metrics::register_metric(\"{}\", function)",
          name, known, name, name, name);
    }
  }
  function_ = make_function(kind_, k_, threshold_);
}

Metric::Metric(Function function, std::string name)
    : name_(std::move(name)), kind_(name_), function_(std::move(function)) {
  if (!function_) raise<ValueError>("Metric \"{}\": the function is empty", name_);
}

Metric Metric::TopKCategoricalAccuracy(int k) {
  if (k <= 0) raise<ValueError>("TopKCategoricalAccuracy: k must be positive, got {}", k);
  Metric m("top_k_categorical_accuracy");
  m.k_ = k;
  m.function_ = make_function(m.kind_, k, m.threshold_);
  return m;
}

Metric Metric::SparseTopKCategoricalAccuracy(int k) {
  if (k <= 0) raise<ValueError>("SparseTopKCategoricalAccuracy: k must be positive, got {}", k);
  Metric m("sparse_top_k_categorical_accuracy");
  m.k_ = k;
  m.function_ = make_function(m.kind_, k, m.threshold_);
  return m;
}

Metric Metric::BinaryAccuracy(double threshold) {
  Metric m("binary_accuracy");
  m.threshold_ = threshold;
  m.function_ = make_function(m.kind_, m.k_, threshold);
  return m;
}

Metric Metric::resolve(const Shape& y_true, const Shape& y_pred) const {
  if (kind_ != "accuracy") return *this;
  Metric m = *this;
  m.kind_ = resolve_accuracy(y_true, y_pred);
  m.function_ = make_function(m.kind_, k_, threshold_);
  return m;
}

SymbolicTensor Metric::operator()(const SymbolicTensor& y_true, const SymbolicTensor& y_pred,
                                  const SymbolicTensor& mask) const {
  if (kind_ == "accuracy") return resolve(y_true.shape(), y_pred.shape())(y_true, y_pred, mask);
  if (!y_true.defined() || !y_pred.defined()) raise<ValueError>("{}: y_true and y_pred must be defined tensors", name_);
  check_float(name_, y_pred);
  if (loss_) return as_dtype((*loss_)(y_true, y_pred, mask), y_pred.dtype());
  auto values = function_(y_true, y_pred);
  if (values.rank() == 0)
    raise<ShapeError>("{}: the metric must give one value per sample (batch,), got a scalar", name_);
  return as_dtype(masked_per_sample(values, mask), y_pred.dtype());
}

}  // namespace tower::metrics
