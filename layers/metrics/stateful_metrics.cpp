// Keras 3's stateful metrics (keras/src/metrics/confusion_metrics.py, f_score_metrics.py, iou_metrics.py,
// reduction_metrics.py): each batch's statistics composed of existing ops, summed in float64; result()
// on the host in double from the sums over the batches (and towers).
#include "tower/layers/metrics/stateful_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/tensor.h"
#include "tower/layers/losses/losses_internal.h"
#include "tower/layers/metrics/metrics.h"

namespace tower::metrics {

using namespace losses::internal;
using json = nlohmann::json;
using internal::Stateful;
using ops::Ints;

namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon()
constexpr double kNegInf = -1e10;  // metrics_utils.NEG_INF

double no_nan(double a, double b) { return b == 0.0 ? 0.0 : a / b; }  // ops.divide_no_nan

SymbolicTensor f64(const SymbolicTensor& x) { return as_dtype(x, DType::float64); }
// A float32 constant of these values.
SymbolicTensor constant_f32(Graph& graph, Shape shape, const std::vector<double>& values) {
  return graph.constant(Tensor::from_vector<float>(std::move(shape), std::vector<float>(values.begin(), values.end())));
}
SymbolicTensor as_vector(const SymbolicTensor& scalar) { return ops::reshape(scalar, {1}); }

// sample_weight (batch,) broadcast over values (batch, ...), or ones; float32.
SymbolicTensor weights_like(const SymbolicTensor& sample_weight, const SymbolicTensor& values) {
  if (!sample_weight.defined()) return ops::ones_like(values);
  Ints dims(static_cast<std::size_t>(std::max(values.rank(), 1)), 1);
  dims[0] = -1;
  return ops::multiply(ops::reshape(as_dtype(sample_weight, values.dtype()), dims), ops::ones_like(values));
}

// Keras's _filter_top_k: x (..., classes) with all but each row's top k set to NEG_INF (ties: the lower
// index first, as tf.math.top_k).
SymbolicTensor filter_top_k(const SymbolicTensor& x, int k) {
  const std::int64_t c = x.shape().dim(-1);
  auto flat = ops::reshape(x, {-1, c});
  auto a = ops::reshape(flat, {-1, c, 1}), b = ops::reshape(flat, {-1, 1, c});  // [n][j][i]: x_j, x_i
  std::vector<double> lower(static_cast<std::size_t>(c * c), 0.0);                // [j][i] = i < j
  for (std::int64_t j = 0; j < c; ++j)
    for (std::int64_t i = 0; i < j; ++i) lower[static_cast<std::size_t>(j * c + i)] = 1.0;
  auto lower_t = constant_f32(x.graph(), {1, c, c}, lower);  // x is float32
  auto ahead = ops::add(ops::greater(b, a), ops::multiply(ops::equal(b, a), lower_t));  // x_i ranks before x_j
  auto in = ops::less(ops::reduce_sum(ahead, {2}), constant_like(flat, static_cast<double>(k)));
  auto out = ops::add(ops::multiply(flat, in), ops::scale(ops::subtract(constant_like(in, 1.0), in), kNegInf));
  return ops::reshape_like(out, x);
}

// ---- confusion counts: TruePositives ... Recall, AUC ---------------------------------------------------

class Confusion : public Stateful {
 public:
  enum class Kind { tp, fp, tn, fn, precision, recall, auc };
  Kind kind;
  std::vector<double> thresholds;  // as Keras uses them (AUC: with the ends at -eps and 1 + eps)
  std::vector<double> given;       // as given (config); empty: the default
  bool evenly = false, with_epsilon = false;
  std::optional<int> top_k, class_id;
  // AUC
  int num_thresholds = 200;
  std::string curve = "ROC", summation = "interpolation";
  bool from_logits = false;
  bool multi_label = false;
  std::optional<int> num_labels;

  std::string class_name() const override {
    switch (kind) {
      case Kind::tp: return "TruePositives";
      case Kind::fp: return "FalsePositives";
      case Kind::tn: return "TrueNegatives";
      case Kind::fn: return "FalseNegatives";
      case Kind::precision: return "Precision";
      case Kind::recall: return "Recall";
      case Kind::auc: return "AUC";
    }
    return "";
  }

  void add_config(json& c) const override {
    const json th = given.empty() ? json() : given.size() == 1 && kind != Kind::auc ? json(given[0]) : json(given);
    if (kind == Kind::auc) {
      c["num_thresholds"] = num_thresholds;
      c["curve"] = curve;
      c["summation_method"] = summation;
      c["multi_label"] = multi_label;
      c["num_labels"] = num_labels ? json(*num_labels) : json();
      c["label_weights"] = nullptr;
      c["from_logits"] = from_logits;
      if (!given.empty()) c["thresholds"] = th;
      return;
    }
    c["thresholds"] = th;
    if (kind == Kind::precision || kind == Kind::recall) {
      c["top_k"] = top_k ? json(*top_k) : json();
      c["class_id"] = class_id ? json(*class_id) : json();
    }
  }

  bool scalar_result() const override { return kind == Kind::auc || thresholds.size() == 1; }

  SymbolicTensor statistics(const std::string& metric, SymbolicTensor y_true, SymbolicTensor y_pred,
                            const SymbolicTensor& sample_weight) const override {
    auto yp = as_dtype(y_pred, DType::float32), yt = as_dtype(y_true, DType::float32);
    if (from_logits) yp = ops::sigmoid(yp);
    match_ranks(yt, yp);
    if (!same_shape(yt.shape(), yp.shape()))
      raise<ShapeError>("{}: y_true and y_pred must have the same shape, got y_true {} and y_pred {}", metric,
                        y_true.shape().to_string(), y_pred.shape().to_string());
    auto w = weights_like(sample_weight, yp);
    if (top_k) {
      if (yp.rank() < 2)
        raise<ShapeError>("{}: top_k needs y_pred (batch, ..., classes), got {}", metric, y_pred.shape().to_string());
      yp = filter_top_k(yp, *top_k);
    }
    if (class_id) {
      const std::int64_t classes = yp.rank() >= 2 ? yp.shape().dim(-1) : 0;
      if (yp.rank() < 2 || *class_id >= classes)
        raise<ShapeError>("{}: class_id {} needs y_pred (batch, classes) with more than {} classes, got {}", metric,
                          *class_id, *class_id, y_pred.shape().to_string());
      auto pick = [&](const SymbolicTensor& x) {
        Ints begin(static_cast<std::size_t>(x.rank()), 0), size(static_cast<std::size_t>(x.rank()), -1);
        begin.back() = *class_id;
        size.back() = 1;
        return ops::slice(x, begin, size);
      };
      yp = pick(yp);
      yt = pick(yt);
      w = pick(w);
    }
    // (n, labels, 1): one label (everything flattened), or AUC's multi_label: each column its own.
    std::int64_t labels = 1;
    if (multi_label) {
      if (yp.rank() != 2)
        raise<ShapeError>("{}: multi_label needs y_true and y_pred (batch, labels), got {}", metric,
                          y_pred.shape().to_string());
      labels = yp.shape().dim(-1);
      if (num_labels && *num_labels != labels)
        raise<ShapeError>("{}: num_labels is {} but y_pred has {} labels ({})", metric, *num_labels, labels,
                          y_pred.shape().to_string());
    }
    yp = ops::reshape(yp, {-1, labels, 1});
    auto label = ops::reshape(ops::subtract(constant_like(yt, 1.0), ops::equal(yt, constant_like(yt, 0.0))), {-1, labels, 1});
    w = ops::reshape(w, {-1, labels, 1});
    auto true_w = f64(ops::multiply(label, w)), false_w = f64(ops::multiply(ops::subtract(constant_like(label, 1.0), label), w));
    Graph& g = yp.graph();
    SymbolicTensor positive;  // (n, labels, thresholds): 1 where the prediction counts as positive
    const auto n = static_cast<std::int64_t>(thresholds.size());
    auto row = [&](const std::vector<double>& values) { return constant_f32(g, {1, 1, n}, values); };
    if (evenly) {  // Keras's bucketing: ceil(p (n - 1)) - 1 >= i, i.e. p (n - 1) > i (threshold 0: always, with eps)
      auto clipped = ops::maximum(ops::minimum(yp, constant_like(yp, 1.0)), constant_like(yp, 0.0));
      std::vector<double> steps(static_cast<std::size_t>(n));
      std::iota(steps.begin(), steps.end(), 0.0);
      if (with_epsilon) steps[0] = -1.0;
      positive = ops::greater(ops::scale(clipped, static_cast<double>(n - 1)), row(steps));
    } else {
      positive = ops::greater(yp, row(thresholds));
    }
    positive = f64(positive);
    auto sum_rows = [&](const SymbolicTensor& x) { return ops::reshape(ops::reduce_sum(x, {0}), {-1}); };
    return ops::concat({sum_rows(ops::multiply(positive, true_w)), sum_rows(ops::multiply(positive, false_w)),
                        sum_rows(true_w), sum_rows(false_w)},
                       0);
  }

  std::vector<double> result(const std::vector<double>& state) const override {
    const std::size_t n = thresholds.size();
    const std::size_t labels = state.empty() ? 1 : state.size() / (2 * n + 2);
    double auc_sum = 0.0;
    std::vector<double> out(n, 0.0);
    for (std::size_t l = 0; l < labels; ++l) {  // labels > 1: AUC's multi_label, the mean of the labels' AUCs
      std::vector<double> tp(n, 0.0), fp(n, 0.0), tn(n, 0.0), fn(n, 0.0);
      if (!state.empty())
        for (std::size_t i = 0; i < n; ++i) {
          tp[i] = state[l * n + i];
          fp[i] = state[(labels + l) * n + i];
          fn[i] = state[2 * labels * n + l] - tp[i];
          tn[i] = state[2 * labels * n + labels + l] - fp[i];
        }
      switch (kind) {
        case Kind::tp: return tp;
        case Kind::fp: return fp;
        case Kind::tn: return tn;
        case Kind::fn: return fn;
        case Kind::precision:
          for (std::size_t i = 0; i < n; ++i) out[i] = no_nan(tp[i], tp[i] + fp[i]);
          return out;
        case Kind::recall:
          for (std::size_t i = 0; i < n; ++i) out[i] = no_nan(tp[i], tp[i] + fn[i]);
          return out;
        case Kind::auc: auc_sum += auc(tp, fp, tn, fn);
      }
    }
    return {auc_sum / static_cast<double>(labels)};
  }

  double auc(const std::vector<double>& tp, const std::vector<double>& fp, const std::vector<double>& tn,
             const std::vector<double>& fn) const {
    const std::size_t n = tp.size();
    double sum = 0.0;
    if (curve == "PR" && summation == "interpolation") {  // interpolate_pr_auc (Davis & Goadrich 2006)
      for (std::size_t i = 0; i + 1 < n; ++i) {
        const double dtp = tp[i] - tp[i + 1];
        const double p0 = tp[i] + fp[i], p1 = tp[i + 1] + fp[i + 1];
        const double slope = no_nan(dtp, std::max(p0 - p1, 0.0));
        const double intercept = tp[i + 1] - slope * p1;
        const double ratio = p0 > 0 && p1 > 0 ? no_nan(p0, std::max(p1, 0.0)) : 1.0;
        sum += no_nan(slope * (dtp + intercept * std::log(ratio)), std::max(tp[i + 1] + fn[i + 1], 0.0));
      }
      return sum;
    }
    std::vector<double> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double recall = no_nan(tp[i], tp[i] + fn[i]);
      if (curve == "ROC") {
        x[i] = no_nan(fp[i], fp[i] + tn[i]);
        y[i] = recall;
      } else {
        x[i] = recall;
        y[i] = no_nan(tp[i], tp[i] + fp[i]);
      }
    }
    for (std::size_t i = 0; i + 1 < n; ++i) {
      const double h = summation == "interpolation" ? (y[i] + y[i + 1]) / 2.0
                       : summation == "minoring"    ? std::min(y[i], y[i + 1])
                                                    : std::max(y[i], y[i + 1]);
      sum += (x[i] - x[i + 1]) * h;
    }
    return sum;
  }
};

void check_thresholds(const std::string& metric, const std::vector<double>& thresholds) {
  for (double t : thresholds)
    if (!(t >= 0.0 && t <= 1.0))
      raise<ValueError>("{}: threshold values must be in [0, 1], got {} (for logits, apply a sigmoid first or pass "
                        "probabilities)", metric, t);
}

// metrics_utils.is_evenly_distributed_thresholds: at least 3, equal to i / (n - 1) within epsilon.
bool evenly_distributed(const std::vector<double>& t) {
  if (t.size() < 3) return false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const double even = static_cast<double>(static_cast<float>(i) / static_cast<float>(t.size() - 1));
    if (std::abs(t[i] - even) > kEpsilon + 1e-5 * std::abs(even)) return false;  // np.allclose(atol=eps)
  }
  return true;
}

std::shared_ptr<Confusion> confusion(Confusion::Kind kind, const std::string& metric, std::vector<double> thresholds,
                                     std::optional<int> top_k = {}, std::optional<int> class_id = {}) {
  check_thresholds(metric, thresholds);
  if (top_k && *top_k <= 0) raise<ValueError>("{}: top_k must be positive, got {}", metric, *top_k);
  if (class_id && *class_id < 0) raise<ValueError>("{}: class_id must be >= 0, got {}", metric, *class_id);
  auto c = std::make_shared<Confusion>();
  c->kind = kind;
  c->given = thresholds;
  c->top_k = top_k;
  c->class_id = class_id;
  c->thresholds = thresholds.empty() ? std::vector<double>{top_k ? kNegInf : 0.5} : thresholds;
  c->evenly = evenly_distributed(c->thresholds);
  return c;
}

// ---- F-scores ---------------------------------------------------------------------------------------------

class FBeta : public Stateful {
 public:
  std::string average;  // "" = None
  double beta = 1.0;
  std::optional<double> threshold;
  bool f1 = false;

  std::string class_name() const override { return f1 ? "F1Score" : "FBetaScore"; }
  void add_config(json& c) const override {
    c["average"] = average.empty() ? json() : json(average);
    if (!f1) c["beta"] = beta;
    c["threshold"] = threshold ? json(*threshold) : json();
  }
  bool scalar_result() const override { return !average.empty(); }

  SymbolicTensor statistics(const std::string& metric, SymbolicTensor y_true, SymbolicTensor y_pred,
                            const SymbolicTensor& sample_weight) const override {
    if (y_pred.rank() != 2 || !same_shape(y_true.shape(), y_pred.shape()))
      raise<ShapeError>("{}: y_true and y_pred must both be (batch, classes), got y_true {} and y_pred {}", metric,
                        y_true.shape().to_string(), y_pred.shape().to_string());
    auto yp = as_dtype(y_pred, DType::float32), yt = as_dtype(y_true, DType::float32);
    SymbolicTensor pred;
    if (threshold) {
      pred = ops::greater(yp, constant_like(yp, *threshold));
    } else {  // each row's largest (ties: all of them), unless it is 0
      pred = ops::multiply(ops::greater_equal(yp, ops::reduce_max(yp, {-1}, true)),
                           ops::greater(ops::abs(yp), constant_like(yp, 1e-9)));
    }
    auto w = weights_like(sample_weight, yp);
    auto one = constant_like(yp, 1.0);
    auto sum = [&](const SymbolicTensor& v) { return ops::reduce_sum(f64(ops::multiply(v, w)), {0}); };
    return ops::concat({sum(ops::multiply(pred, yt)), sum(ops::multiply(pred, ops::subtract(one, yt))),
                        sum(ops::multiply(ops::subtract(one, pred), yt)), sum(yt)},
                       0);
  }

  std::vector<double> result(const std::vector<double>& state) const override {
    const std::size_t c = state.size() / 4;
    std::vector<double> tp(state.begin(), state.begin() + c), fp(state.begin() + c, state.begin() + 2 * c),
        fn(state.begin() + 2 * c, state.begin() + 3 * c), iw(state.begin() + 3 * c, state.end());
    if (average == "micro") {
      tp = {std::accumulate(tp.begin(), tp.end(), 0.0)};
      fp = {std::accumulate(fp.begin(), fp.end(), 0.0)};
      fn = {std::accumulate(fn.begin(), fn.end(), 0.0)};
    }
    const double b2 = beta * beta;
    std::vector<double> f(tp.size());
    for (std::size_t i = 0; i < tp.size(); ++i) {
      const double precision = tp[i] / (tp[i] + fp[i] + kEpsilon), recall = tp[i] / (tp[i] + fn[i] + kEpsilon);
      f[i] = precision * recall / (b2 * precision + recall + kEpsilon) * (1.0 + b2);
    }
    if (average.empty()) return f;
    if (average == "weighted") {
      const double total = std::accumulate(iw.begin(), iw.end(), 0.0) + kEpsilon;
      double s = 0.0;
      for (std::size_t i = 0; i < f.size(); ++i) s += f[i] * iw[i] / total;
      return {s};
    }
    return {f.empty() ? 0.0 : std::accumulate(f.begin(), f.end(), 0.0) / static_cast<double>(f.size())};
  }
};

// ---- MeanIoU ------------------------------------------------------------------------------------------------

class IoU : public Stateful {
 public:
  int num_classes = 0;
  std::optional<int> ignore_class;
  bool sparse_y_true = true, sparse_y_pred = true;

  std::string class_name() const override { return "MeanIoU"; }
  void add_config(json& c) const override {
    c["num_classes"] = num_classes;
    c["ignore_class"] = ignore_class ? json(*ignore_class) : json();
    c["sparse_y_true"] = sparse_y_true;
    c["sparse_y_pred"] = sparse_y_pred;
    c["axis"] = -1;
  }

  SymbolicTensor statistics(const std::string& metric, SymbolicTensor y_true, SymbolicTensor y_pred,
                            const SymbolicTensor& sample_weight) const override {
    // Class ids as Keras's int64 metric dtype takes them (truncated), flattened.
    auto ids = [](const SymbolicTensor& x, bool sparse) {
      return sparse ? ops::cast(x, DType::int32) : ops::cast(ops::argmax(x, -1), DType::int32);
    };
    auto t = ids(y_true, sparse_y_true), p = ids(y_pred, sparse_y_pred);
    match_ranks(t, p);
    if (!same_shape(t.shape(), p.shape()))
      raise<ShapeError>("{}: y_true and y_pred must hold one class id per element alike, got y_true {} and y_pred {}{}",
                        metric, y_true.shape().to_string(), y_pred.shape().to_string(),
                        sparse_y_pred ? " (for probabilities use MeanIoU(n, {.sparse_y_pred = false}))" : "");
    // Weights: int64 in Keras's MeanIoU (truncated), broadcast over each sample's elements.
    const auto t_float = ops::cast(t, DType::float32);
    auto w = ops::cast(ops::cast(weights_like(sample_weight, t_float), DType::int32), DType::float32);
    if (ignore_class)  // its labels weigh 0
      w = ops::multiply(w, ops::subtract(constant_like(w, 1.0), ops::equal(t_float, constant_like(w, *ignore_class))));
    auto t_hot = ops::one_hot(ops::reshape(t, {-1}), num_classes);  // out-of-range ids: a row of zeros
    auto p_hot = ops::one_hot(ops::reshape(p, {-1}), num_classes);
    auto cm = ops::matmul(ops::multiply(t_hot, ops::reshape(w, {-1, 1})), p_hot, true);  // [true][pred]
    return f64(ops::reshape(cm, {static_cast<std::int64_t>(num_classes) * num_classes}));
  }

  std::vector<double> result(const std::vector<double>& cm) const override {
    const auto c = static_cast<std::size_t>(num_classes);
    if (cm.size() != c * c) return {0.0};
    double sum = 0.0, valid = 0.0;
    for (std::size_t k = 0; k < c; ++k) {
      double predicted = 0.0, actual = 0.0;
      for (std::size_t j = 0; j < c; ++j) {
        predicted += cm[j * c + k];
        actual += cm[k * c + j];
      }
      const double denominator = predicted + actual - cm[k * c + k];
      if (denominator != 0.0) valid += 1.0;
      sum += no_nan(cm[k * c + k], denominator);
    }
    return {no_nan(sum, valid)};
  }
};

// ---- Mean, Sum ----------------------------------------------------------------------------------------------

class Reduction : public Stateful {
 public:
  bool mean = true;
  std::string class_name() const override { return mean ? "Mean" : "Sum"; }
  void add_config(json&) const override {}
  bool takes_values() const override { return true; }
  SymbolicTensor statistics(const std::string&, SymbolicTensor, SymbolicTensor values,
                            const SymbolicTensor& sample_weight) const override {
    auto v = f64(values);
    auto w = f64(weights_like(sample_weight, as_dtype(values, DType::float32)));
    auto total = as_vector(ops::reduce_sum(ops::multiply(v, w)));
    return mean ? ops::concat({total, as_vector(ops::reduce_sum(w))}, 0) : total;
  }
  std::vector<double> result(const std::vector<double>& s) const override {
    if (s.empty()) return {0.0};
    return {mean ? no_nan(s[0], s[1]) : s[0]};
  }
};

// Config readers.
std::vector<double> thresholds_of(const json& c) {
  const json t = c.value("thresholds", json());
  if (t.is_null()) return {};
  if (t.is_number()) return {t.get<double>()};
  return t.get<std::vector<double>>();
}
std::optional<int> optional_int(const json& c, const char* key) {
  const json v = c.value(key, json());
  return v.is_null() ? std::nullopt : std::optional<int>(v.get<int>());
}


std::shared_ptr<Stateful> make_auc(const AUCOptions& o) {
  if (o.curve != "ROC" && o.curve != "PR")
    raise<ValueError>("AUC: curve must be \"ROC\" or \"PR\", got \"{}\"", o.curve);
  if (o.summation_method != "interpolation" && o.summation_method != "minoring" && o.summation_method != "majoring")
    raise<ValueError>("AUC: summation_method must be \"interpolation\", \"minoring\" or \"majoring\", got \"{}\"",
                      o.summation_method);
  if (o.num_labels && (!o.multi_label || *o.num_labels <= 0))
    raise<ValueError>("AUC: num_labels ({}) needs multi_label = true and must be positive", *o.num_labels);
  if (o.thresholds.empty() && o.num_thresholds <= 1)
    raise<ValueError>("AUC: num_thresholds must be an integer > 1, got {}", o.num_thresholds);
  check_thresholds("AUC", o.thresholds);
  auto c = std::make_shared<Confusion>();
  c->kind = Confusion::Kind::auc;
  c->curve = o.curve;
  c->summation = o.summation_method;
  c->from_logits = o.from_logits;
  c->multi_label = o.multi_label;
  c->num_labels = o.num_labels;
  c->given = o.thresholds;
  std::vector<double> inner = o.thresholds;
  if (inner.empty()) {
    c->num_thresholds = o.num_thresholds;
    for (int i = 0; i < o.num_thresholds - 2; ++i) inner.push_back((i + 1) * 1.0 / (o.num_thresholds - 1));
    c->evenly = true;
  } else {
    std::sort(inner.begin(), inner.end());
    c->num_thresholds = static_cast<int>(inner.size()) + 2;
    std::vector<double> ends = inner;
    ends.insert(ends.begin(), 0.0);
    ends.push_back(1.0);
    c->evenly = evenly_distributed(ends);
  }
  c->with_epsilon = true;
  c->thresholds = inner;
  c->thresholds.insert(c->thresholds.begin(), 0.0 - kEpsilon);
  c->thresholds.push_back(1.0 + kEpsilon);
  return c;
}

std::shared_ptr<Stateful> make_fbeta(const FBetaOptions& o, bool f1) {
  const char* metric = f1 ? "F1Score" : "FBetaScore";
  if (o.average != "" && o.average != "micro" && o.average != "macro" && o.average != "weighted")
    raise<ValueError>("{}: average must be empty (None: one score per class), \"micro\", \"macro\" or \"weighted\", "
                      "got \"{}\"", metric, o.average);
  if (!(o.beta > 0.0)) raise<ValueError>("{}: beta must be > 0, got {}", metric, o.beta);
  if (f1 && o.beta != 1.0) raise<ValueError>("F1Score: beta is 1; for another beta use FBetaScore({{.beta = {}}})", o.beta);
  if (o.threshold && !(*o.threshold > 0.0 && *o.threshold <= 1.0))
    raise<ValueError>("{}: threshold must be in (0, 1], got {}", metric, *o.threshold);
  auto c = std::make_shared<FBeta>();
  c->average = o.average;
  c->beta = o.beta;
  c->threshold = o.threshold;
  c->f1 = f1;
  return c;
}

std::shared_ptr<Stateful> make_iou(int num_classes, const MeanIoUOptions& o) {
  if (num_classes <= 0) raise<ValueError>("MeanIoU: num_classes must be positive, got {}", num_classes);
  auto c = std::make_shared<IoU>();
  c->num_classes = num_classes;
  c->ignore_class = o.ignore_class;
  c->sparse_y_true = o.sparse_y_true;
  c->sparse_y_pred = o.sparse_y_pred;
  return c;
}

std::shared_ptr<Stateful> make_reduction(bool mean) {
  auto c = std::make_shared<Reduction>();
  c->mean = mean;
  return c;
}

std::string or_default(const std::string& name, const char* fallback) { return name.empty() ? fallback : name; }

}  // namespace

// ---- Keras's classes --------------------------------------------------------------------------------------

Metric AUC(const AUCOptions& options) { return Metric(make_auc(options), or_default(options.name, "auc")); }
Metric Precision(const PrecisionOptions& o) {
  return Metric(confusion(Confusion::Kind::precision, "Precision", o.thresholds, o.top_k, o.class_id),
                or_default(o.name, "precision"));
}
Metric Recall(const PrecisionOptions& o) {
  return Metric(confusion(Confusion::Kind::recall, "Recall", o.thresholds, o.top_k, o.class_id), or_default(o.name, "recall"));
}
Metric TruePositives(std::vector<double> t, std::string name) {
  return Metric(confusion(Confusion::Kind::tp, "TruePositives", std::move(t)), std::move(name));
}
Metric FalsePositives(std::vector<double> t, std::string name) {
  return Metric(confusion(Confusion::Kind::fp, "FalsePositives", std::move(t)), std::move(name));
}
Metric TrueNegatives(std::vector<double> t, std::string name) {
  return Metric(confusion(Confusion::Kind::tn, "TrueNegatives", std::move(t)), std::move(name));
}
Metric FalseNegatives(std::vector<double> t, std::string name) {
  return Metric(confusion(Confusion::Kind::fn, "FalseNegatives", std::move(t)), std::move(name));
}
Metric FBetaScore(const FBetaOptions& o) { return Metric(make_fbeta(o, false), or_default(o.name, "fbeta_score")); }
Metric F1Score(const FBetaOptions& o) { return Metric(make_fbeta(o, true), or_default(o.name, "f1_score")); }
Metric MeanIoU(int num_classes, const MeanIoUOptions& o) {
  return Metric(make_iou(num_classes, o), or_default(o.name, "mean_io_u"));
}
Metric Mean(std::string name) { return Metric(make_reduction(true), std::move(name)); }
Metric Sum(std::string name) { return Metric(make_reduction(false), std::move(name)); }

namespace internal {

std::shared_ptr<const Stateful> stateful_from_config(const std::string& class_name, const json& c) {
  static const std::map<std::string, Confusion::Kind> kinds = {
      {"TruePositives", Confusion::Kind::tp}, {"FalsePositives", Confusion::Kind::fp},
      {"TrueNegatives", Confusion::Kind::tn}, {"FalseNegatives", Confusion::Kind::fn},
      {"Precision", Confusion::Kind::precision}, {"Recall", Confusion::Kind::recall}};
  if (auto k = kinds.find(class_name); k != kinds.end())
    return confusion(k->second, class_name, thresholds_of(c), optional_int(c, "top_k"), optional_int(c, "class_id"));
  if (class_name == "AUC") {
    AUCOptions o;
    o.num_thresholds = c.value("num_thresholds", 200);
    o.curve = c.value("curve", std::string("ROC"));
    o.summation_method = c.value("summation_method", std::string("interpolation"));
    o.thresholds = thresholds_of(c);
    o.multi_label = c.value("multi_label", false);
    o.num_labels = optional_int(c, "num_labels");
    o.from_logits = c.value("from_logits", false);
    if (!c.value("label_weights", json()).is_null())
      raise<ValueError>("AUC: label_weights are not supported; leave them out (null)");
    return make_auc(o);
  }
  if (class_name == "F1Score" || class_name == "FBetaScore") {
    FBetaOptions o;
    const json average = c.value("average", json());
    o.average = average.is_null() ? "" : average.get<std::string>();
    o.beta = c.value("beta", 1.0);
    const json t = c.value("threshold", json());
    if (!t.is_null()) o.threshold = t.get<double>();
    return make_fbeta(o, class_name == "F1Score");
  }
  if (class_name == "MeanIoU") {
    if (!c.contains("num_classes")) raise<ValueError>("MeanIoU: the config has no num_classes: {}", c.dump());
    MeanIoUOptions o;
    o.ignore_class = optional_int(c, "ignore_class");
    o.sparse_y_true = c.value("sparse_y_true", true);
    o.sparse_y_pred = c.value("sparse_y_pred", true);
    if (c.value("axis", -1) != -1) raise<ValueError>("MeanIoU: only axis -1 is supported, got {}", c.dump());
    return make_iou(c.at("num_classes").get<int>(), o);
  }
  if (class_name == "Mean" || class_name == "Sum") return make_reduction(class_name == "Mean");
  return nullptr;
}

}  // namespace internal

}  // namespace tower::metrics
