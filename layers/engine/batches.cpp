// Batch preparation: arrays checked and converted for the engine graphs.
#include "tower/layers/engine/batches.h"

#include <algorithm>
#include <cmath>

#include "tower/core/error.h"

namespace tower::engine {

std::int64_t num_samples(const std::vector<Tensor>& arrays, const std::string& where) {
  std::int64_t n = -1;
  for (const auto& a : arrays) {
    if (a.shape().rank() == 0) raise<ShapeError>("{}: arrays need a batch dimension, got a scalar", where);
    if (n >= 0 && a.shape()[0] != n) {
      std::string sizes;
      for (const auto& b : arrays) sizes += (sizes.empty() ? "" : ", ") + std::to_string(b.shape()[0]);
      raise<ShapeError>("{}: all arrays must have the same number of samples, got {}", where, sizes);
    }
    n = a.shape()[0];
  }
  return n;
}

Tensor take_rows(const Tensor& src, const std::int64_t* idx, std::int64_t n) {
  Tensor out;
  gather_rows(src, idx, n, out);
  return out;
}

Tensor row_range(const Tensor& t, std::int64_t first, std::int64_t count) {
  auto dims = t.shape().dims();
  if (dims.empty() || first < 0 || count < 0 || first + count > dims[0])
    raise<ValueError>("row_range: rows [{}, {}) of an array of shape {}", first, first + count, t.shape().to_string());
  const std::size_t row_bytes = dims[0] ? t.nbytes() / static_cast<std::size_t>(dims[0]) : 0;
  dims[0] = count;
  return Tensor(Shape(dims), t.dtype(), t.storage(), t.offset() + static_cast<std::size_t>(first) * row_bytes);
}

Tensor to_dtype(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor src = t.to(cpu_device());
  Tensor out = Tensor::zeros(src.shape(), dtype);
  const std::int64_t n = src.num_elements();
  dispatch_any(src.dtype(), "cast", [&]<typename S>() {
    dispatch_any(dtype, "cast", [&]<typename D>() {
      const S* s = src.data<S>();
      D* d = out.data<D>();
      for (std::int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
    });
  });
  return out;
}

std::vector<Tensor> prepare_inputs(const std::vector<Tensor>& x, const std::vector<KerasTensor>& inputs) {
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < x.size(); ++i) out.push_back(to_dtype(x[i], inputs[i].dtype()));
  return out;
}

std::vector<Tensor> prepare_labels(const std::vector<Tensor>& y) {
  std::vector<Tensor> out;
  for (const auto& t : y) out.push_back(t.dtype() == DType::uint8 ? to_dtype(t, DType::int32) : t);
  return out;
}

void check_sample_weight(const Tensor& weights, std::int64_t n, const std::vector<Tensor>& y, const std::string& where) {
  const Shape& s = weights.shape();
  if (s == Shape{n}) return;
  bool temporal = s.rank() == 2 && s[0] == n;
  for (const auto& labels : y) temporal = temporal && labels.shape().rank() >= 2 && labels.shape()[1] == s[1];
  if (!temporal)
    raise<ShapeError>("{}: sample_weight must have shape ({},) (one weight per sample), or ({}, time) (one per time "
                      "step) for labels of shape ({}, time, ...); got {} for labels {}", where, n, n, n, s.to_string(),
                      y.empty() ? std::string("none") : y[0].shape().to_string());
}

void apply_class_weight(const std::map<std::int64_t, double>& class_weight, const Tensor& y, Tensor& weights) {
  if (weights.shape().rank() != 1)
    raise<ValueError>("class_weight together with per-time-step sample weights (shape {}) is not supported; multiply "
                      "the class weights into sample_weight instead", weights.shape().to_string());
  const std::int64_t n = weights.shape()[0];
  auto labels = to_dtype(y, DType::float64);
  const std::int64_t per = labels.shape().rank() > 1 && n ? labels.num_elements() / n : 1;
  const double* l = labels.data<double>();
  float* w = weights.data<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t cls = per == 1 ? static_cast<std::int64_t>(l[i])
                                : std::max_element(l + i * per, l + (i + 1) * per) - (l + i * per);
    auto it = class_weight.find(cls);
    if (it != class_weight.end()) w[i] *= static_cast<float>(it->second);
  }
}

void check_class_weight(const std::map<std::int64_t, double>& class_weight, std::int64_t classes,
                        const std::string& where) {
  bool keys_ok = true;
  std::string found;  // as Python prints the dict
  for (const auto& [cls, weight] : class_weight) {
    keys_ok &= cls >= 0 && cls < classes;
    found += fmt::format("{}{}: {}", found.empty() ? "" : ", ", cls, weight);
  }
  if (!keys_ok)
    raise<ValueError>("{}: Expected `class_weight` to be a dict with keys from 0 to one less than the number of "
                      "classes, found {{{}}}; the model has {} classes, so the keys must be among 0 to {}", where,
                      found, classes, classes - 1);
  for (const auto& [cls, weight] : class_weight)
    if (!(std::isfinite(weight) && weight >= 0))
      raise<ValueError>("{}: class_weight[{}] is {}; class weights must be finite and >= 0 (they multiply the loss of "
                        "the class's samples)", where, cls, weight);
}

StepBatches::StepBatches(const std::vector<KerasTensor>& inputs, std::string where, bool labels,
                         const std::map<std::int64_t, double>* class_weight)
    : inputs_(inputs),
      where_(std::move(where)),
      batch_where_(where_ + ": a batch"),
      labels_(labels),
      class_weight_(class_weight) {}

StepBatch StepBatches::make(const DataElement& e) {
  StepBatch b;
  b.x = prepare_inputs(e.x, inputs_);
  if (labels_) b.y = prepare_labels(e.y);
  all_.assign(b.x.begin(), b.x.end());  // a member: its capacity is kept from step to step
  all_.insert(all_.end(), b.y.begin(), b.y.end());
  b.size = num_samples(all_, batch_where_);
  if (!labels_) return b;
  if (e.sample_weight) {
    b.sample_weight = to_dtype(*e.sample_weight, DType::float32);
    check_sample_weight(b.sample_weight, b.size, b.y, where_ + ": a batch's");
  }
  if (class_weight_ && !class_weight_->empty()) {
    if (b.y.size() != 1) raise<ValueError>("{}: class_weight needs a model with one output, got {}", where_, b.y.size());
    b.sample_weight = b.sample_weight.defined() ? b.sample_weight.clone() : Tensor::full({b.size}, 1.0);
    apply_class_weight(*class_weight_, b.y[0], b.sample_weight);
  }
  if (!b.sample_weight.defined()) {
    auto& ones = ones_[b.size];
    if (!ones.defined()) ones = Tensor::full({b.size}, 1.0);
    b.sample_weight = ones;
  }
  return b;
}

}  // namespace tower::engine
