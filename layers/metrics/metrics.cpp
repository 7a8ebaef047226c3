// Keras's metrics as per-sample values, and the resolution of "accuracy" (keras/src/trainers/
// compile_utils.py: get_metric).
#include "tower/layers/metrics/metrics.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <cctype>
#include <map>
#include <mutex>

#include "tower/core/error.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/layers/losses/losses.h"
#include "tower/layers/layer.h"
#include "tower/layers/losses/losses_internal.h"
#include "tower/layers/metrics/stateful_metrics.h"
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
  if (kind == "equal_accuracy")  // keras.metrics.Accuracy
    return [](SymbolicTensor y_true, SymbolicTensor y_pred) {
      match_ranks(y_true, y_pred);
      if (!same_shape(y_true.shape(), y_pred.shape()))
        raise<ShapeError>("Accuracy: y_true and y_pred must have the same shape, got y_true {} and y_pred {}",
                          y_true.shape().to_string(), y_pred.shape().to_string());
      auto equal = ops::equal(as_dtype(y_true, y_pred.dtype()), y_pred);
      return equal.rank() > 1 ? ops::reduce_mean(equal, {-1}) : equal;
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
    function_ = with_matched_ranks(*custom);
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
        function_ = with_matched_ranks(r->second);
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
    : name_(std::move(name)), kind_(name_), function_(with_matched_ranks(std::move(function))) {
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
  if (stateful_)
    raise<ValueError>("{}: a stateful metric ({}) has no per-sample values; use statistics() and result_of(), or "
                      "update_state() and result()", name_, class_name());
  if (!y_true.defined() || !y_pred.defined()) raise<ValueError>("{}: y_true and y_pred must be defined tensors", name_);
  check_float(name_, y_pred);
  if (loss_) return as_dtype((*loss_)(y_true, y_pred, mask), y_pred.dtype());
  auto values = function_(y_true, y_pred);
  if (values.rank() == 0)
    raise<ShapeError>("{}: the metric must give one value per sample (batch,), got a scalar", name_);
  return as_dtype(masked_per_sample(values, mask), y_pred.dtype());
}

SymbolicTensor Metric::weighted_per_sample(const SymbolicTensor& y_true, const SymbolicTensor& y_pred,
                                           const SymbolicTensor& sample_weight) const {
  check_float(name_, y_pred);
  if (loss_) return (*loss_)(y_true, y_pred, {}, sample_weight);
  return masked_per_sample(function_(y_true, y_pred), {}, sample_weight);
}

// ---- stateful metrics and Keras's classes ----------------------------------------------------------------

Metric::Metric(std::shared_ptr<const internal::Stateful> stateful, std::string name)
    : name_(std::move(name)), kind_("stateful"), stateful_(std::move(stateful)) {
  if (!stateful_) raise<ValueError>("Metric \"{}\": the stateful metric is null", name_);
  if (name_.empty()) raise<ValueError>("Metric: a stateful metric needs a name (Keras's name=)");
}

Metric Metric::renamed(std::string name) const {
  if (name.empty()) raise<ValueError>("Metric \"{}\": renamed to an empty name", name_);
  Metric m = *this;
  m.name_ = std::move(name);
  return m;
}

SymbolicTensor Metric::statistics(const SymbolicTensor& y_true, const SymbolicTensor& y_pred,
                                  const SymbolicTensor& sample_weight) const {
  if (!y_pred.defined() || (!y_true.defined() && !(stateful_ && stateful_->takes_values())))
    raise<ValueError>("{}: y_true and y_pred must be defined tensors", name_);
  if (stateful_) return stateful_->statistics(name_, y_true, y_pred, sample_weight);
  if (kind_ == "accuracy") return resolve(y_true.shape(), y_pred.shape()).statistics(y_true, y_pred, sample_weight);
  // Keras's MeanMetricWrapper: the weighted sum of the values and the sum of the weights. With one weight
  // per time step (batch, time), the per-sample values are the means of the weighted steps, so their sum
  // is the weighted sum divided by the steps per sample.
  auto w = sample_weight.defined() ? ops::cast(sample_weight, DType::float64) : SymbolicTensor();
  auto values = ops::cast(w.defined() && w.rank() > 1 ? weighted_per_sample(y_true, y_pred, w)
                                                      : (*this)(y_true, y_pred), DType::float64);  // (batch,)
  if (!w.defined()) w = ops::ones_like(values);
  SymbolicTensor sum = ops::reduce_sum(w.rank() > 1 ? values : ops::multiply(values, w));
  if (w.rank() > 1) sum = ops::multiply(sum, ops::divide(ops::reduce_sum(ops::ones_like(w)), ops::reduce_sum(ops::ones_like(values))));
  return ops::concat({ops::reshape(sum, {1}), ops::reshape(ops::reduce_sum(w), {1})}, 0);
}

std::vector<double> Metric::result_of(const std::vector<double>& state) const {
  if (stateful_) return stateful_->result(state);
  return {state.size() == 2 && state[1] != 0.0 ? state[0] / state[1] : 0.0};
}

bool Metric::scalar_result() const { return !stateful_ || stateful_->scalar_result(); }

void Metric::update_state(const Tensor& values) { update_state(Tensor(), values, Tensor()); }

void Metric::update_state(const Tensor& a, const Tensor& b) {
  if (stateful_ && stateful_->takes_values()) update_state(Tensor(), a, b);  // (values, sample_weight)
  else update_state(a, b, Tensor());                                          // (y_true, y_pred)
}

void Metric::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  if (!y_pred.defined()) raise<ValueError>("{}.update_state: y_pred (or the values) is undefined", name_);
  if (sample_weight.defined() && (sample_weight.shape().rank() != 1 || y_pred.shape().rank() == 0 ||
                                  sample_weight.shape()[0] != y_pred.shape()[0]))
    raise<ShapeError>("{}.update_state: sample_weight must be one weight per sample ({},), got {}", name_,
                      y_pred.shape().rank() ? y_pred.shape()[0] : 1, sample_weight.shape().to_string());
  Graph graph;
  const auto t = y_true.defined() ? graph.constant(y_true.to(cpu_device())) : SymbolicTensor();
  const auto p = graph.constant(y_pred.to(cpu_device()));
  const auto w = sample_weight.defined() ? graph.constant(sample_weight.to(cpu_device())) : SymbolicTensor();
  const Tensor stats = Executor().run({}, {statistics(t, p, w)})[0].to(cpu_device());
  const double* s = stats.data<double>();
  if (state_.empty()) state_.assign(static_cast<std::size_t>(stats.num_elements()), 0.0);
  if (state_.size() != static_cast<std::size_t>(stats.num_elements()))
    raise<ShapeError>("{}.update_state: this batch has {} classes' statistics, the batches before {}; call "
                      "reset_state() between data of different shapes", name_, stats.num_elements(), state_.size());
  for (std::size_t i = 0; i < state_.size(); ++i) state_[i] += s[i];
}

std::vector<double> Metric::result_values() const { return result_of(state_); }

double Metric::result() const {
  const auto values = result_values();
  if (values.size() != 1)
    raise<ValueError>("{}.result(): the metric has {} values (one per threshold or class); use result_values()",
                      name_, values.size());
  return values[0];
}

namespace {
// Keras's classes of the per-sample metrics, by tower's function name.
const std::map<std::string, std::string>& class_names() {
  static const std::map<std::string, std::string> table = {
      {"binary_accuracy", "BinaryAccuracy"},
      {"categorical_accuracy", "CategoricalAccuracy"},
      {"sparse_categorical_accuracy", "SparseCategoricalAccuracy"},
      {"top_k_categorical_accuracy", "TopKCategoricalAccuracy"},
      {"sparse_top_k_categorical_accuracy", "SparseTopKCategoricalAccuracy"},
      {"equal_accuracy", "Accuracy"}};
  return table;
}
}  // namespace

std::string Metric::class_name() const {
  if (stateful_) return stateful_->class_name();
  auto it = class_names().find(kind_);
  return it != class_names().end() ? it->second : kind_;
}

nlohmann::json Metric::get_config() const {
  nlohmann::json c = {{"name", name_}, {"dtype", "float32"}};
  if (stateful_) {
    stateful_->add_config(c);
    if (class_name() == "MeanIoU") c["dtype"] = "int64";  // Keras's MeanIoU default
  } else if (kind_ == "binary_accuracy") {
    c["threshold"] = threshold_;
  } else if (kind_ == "top_k_categorical_accuracy" || kind_ == "sparse_top_k_categorical_accuracy") {
    c["k"] = k_;
  }
  return c;
}

Metric Metric::from_config(const nlohmann::json& j) {
  if (j.is_string()) return Metric(j.get<std::string>());
  if (!j.is_object() || !j.contains("class_name"))
    raise<ValueError>("Metric::from_config: expected a name or {{\"class_name\", \"config\"}}, got {}", j.dump());
  const std::string cls = j.at("class_name").get<std::string>();
  const nlohmann::json c = j.value("config", nlohmann::json::object());
  const std::string name = c.value("name", std::string());
  if (auto stateful = internal::stateful_from_config(cls, c)) {
    const std::map<std::string, const char*> defaults = {
        {"AUC", "auc"}, {"Precision", "precision"}, {"Recall", "recall"}, {"TruePositives", "true_positives"},
        {"FalsePositives", "false_positives"}, {"TrueNegatives", "true_negatives"},
        {"FalseNegatives", "false_negatives"}, {"F1Score", "f1_score"}, {"FBetaScore", "fbeta_score"},
        {"MeanIoU", "mean_io_u"}, {"Mean", "mean"}, {"Sum", "sum"}};
    return Metric(std::move(stateful), name.empty() ? defaults.at(cls) : name);
  }
  for (const auto& [kind, class_name] : class_names())
    if (class_name == cls) {
      Metric m = kind == "equal_accuracy"          ? Accuracy()
                 : kind == "binary_accuracy"       ? Metric::BinaryAccuracy(c.value("threshold", 0.5))
                 : kind == "top_k_categorical_accuracy" ? Metric::TopKCategoricalAccuracy(c.value("k", 5))
                 : kind == "sparse_top_k_categorical_accuracy" ? Metric::SparseTopKCategoricalAccuracy(c.value("k", 5))
                                                               : Metric(kind);
      return name.empty() ? m.renamed(kind == "equal_accuracy" ? "accuracy" : kind) : m.renamed(name);
    }
  // A metric known by name (a loss class, a registered function): Keras's name for it.
  return Metric(name.empty() ? cls : name);
}

Metric Accuracy(std::string name) {
  Metric m("binary_accuracy");
  m.kind_ = "equal_accuracy";
  m.function_ = make_function(m.kind_, m.k_, m.threshold_);
  return m.renamed(std::move(name));
}
Metric BinaryAccuracy(double threshold, std::string name) { return Metric::BinaryAccuracy(threshold).renamed(std::move(name)); }
Metric CategoricalAccuracy(std::string name) { return Metric("categorical_accuracy").renamed(std::move(name)); }
Metric SparseCategoricalAccuracy(std::string name) { return Metric("sparse_categorical_accuracy").renamed(std::move(name)); }
Metric TopKCategoricalAccuracy(int k, std::string name) { return Metric::TopKCategoricalAccuracy(k).renamed(std::move(name)); }
Metric SparseTopKCategoricalAccuracy(int k, std::string name) {
  return Metric::SparseTopKCategoricalAccuracy(k).renamed(std::move(name));
}

}  // namespace tower::metrics
