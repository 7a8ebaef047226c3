// Normalization.
#include "tower/layers/preprocessing/normalization.h"

#include <algorithm>
#include <cmath>

#include <fmt/ranges.h>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon()

// `values` as a tensor of `shape` in dtype (float32 or float64).
Tensor values_tensor(const Shape& shape, const std::vector<double>& values, DType dtype) {
  if (dtype == DType::float64) return Tensor::from_vector<double>(shape, values);
  return Tensor::from_vector<float>(shape, std::vector<float>(values.begin(), values.end()));
}

}  // namespace

Normalization::Normalization(const NormalizationOptions& options)
    : Layer(options.name, "normalization"), options_(options), built_shape_(std::make_shared<Shape>()) {
  if (options.mean.has_value() != options.variance.has_value())
    raise<ValueError>("{}: give both mean and variance, or neither (then call adapt())", describe(*this));
  if (options.mean && options.mean->size() != options.variance->size())
    raise<ValueError>("{}: mean has {} values but variance {}", describe(*this), options.mean->size(),
                      options.variance->size());
}

std::vector<int> Normalization::kept_axes(int rank) const {
  std::vector<int> kept;
  for (std::int64_t a : options_.axis) {
    if (a < -rank || a >= rank)
      raise<ValueError>("{}: axis {} is out of range for inputs of rank {}", describe(*this), a, rank);
    kept.push_back(static_cast<int>(a < 0 ? a + rank : a));
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

void Normalization::build(const std::vector<Shape>& input_shapes) {
  const Shape& in = input_shapes.at(0);
  Shape kept_shape;
  std::vector<std::int64_t> dims;
  for (int a : kept_axes(in.rank())) {
    if (in[a] < 0)
      raise<ShapeError>("{}: axis {} of the input {} must be known (it keeps its own mean and variance)",
                        describe(*this), a, in.to_string());
    dims.push_back(in[a]);
  }
  *built_shape_ = in;
  if (options_.mean) return;  // constants, no weights
  add_weight("mean", Shape(dims), "zeros", {}, /*trainable=*/false);
  add_weight("variance", Shape(dims), "ones", {}, /*trainable=*/false);
  add_weight("count", Shape{}, "zeros", {}, /*trainable=*/false, DType::int64);
}

std::vector<SymbolicTensor> Normalization::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor x = inputs.at(0);
  if (!is_floating(x.dtype())) x = ops::cast(x, DType::float32);
  const int rank = x.shape().rank();
  // mean and variance reshaped to broadcast: the kept axes' sizes, 1 elsewhere.
  std::vector<std::int64_t> broadcast(static_cast<std::size_t>(rank), 1);
  for (int a : kept_axes(rank)) broadcast[static_cast<std::size_t>(a)] = x.shape()[a];
  SymbolicTensor mean, variance;
  if (options_.mean) {
    std::int64_t n = 1;
    for (auto d : broadcast) n *= d;
    auto constant = [&](const std::vector<double>& values) {
      if (values.size() != 1 && static_cast<std::int64_t>(values.size()) != n)
        raise<ShapeError>("{}: {} mean/variance values for kept axes of {} elements", describe(*this), values.size(), n);
      std::vector<double> full = values.size() == 1 ? std::vector<double>(static_cast<std::size_t>(n), values[0]) : values;
      return ctx.graph.constant(values_tensor(Shape(broadcast), full, x.dtype()));
    };
    mean = constant(*options_.mean);
    variance = constant(*options_.variance);
  } else {
    mean = ops::reshape(ops::cast(read(ctx, weight("mean")), x.dtype()), broadcast);
    variance = ops::reshape(ops::cast(read(ctx, weight("variance")), x.dtype()), broadcast);
  }
  const SymbolicTensor scale =
      ops::maximum(ops::sqrt(variance), ctx.graph.constant(Tensor::scalar(kEpsilon, x.dtype())));
  if (options_.invert) return {ops::add(mean, ops::multiply(x, scale))};
  return {ops::divide(ops::subtract(x, mean), scale)};
}

void Normalization::adapt(const Tensor& data) { adapt(std::vector<Tensor>{data}); }

void Normalization::adapt(const std::vector<Tensor>& batches) {
  if (options_.mean)
    raise<ValueError>("{}: adapt() learns mean and variance, but this layer was given them", describe(*this));
  if (batches.empty()) raise<ValueError>("{}: adapt() needs data, got no batches", describe(*this));
  const Shape& first = batches[0].shape();
  if (!built()) ensure_built({first});
  const std::vector<int> kept = kept_axes(first.rank());
  std::int64_t features = 1;
  for (int a : kept) features *= first[a];
  std::vector<double> total_mean(static_cast<std::size_t>(features), 0.0), total_var(total_mean);
  double total_count = 0;
  for (const Tensor& batch : batches) {
    const Shape& s = batch.shape();
    bool same = s.rank() == built_shape_->rank();
    for (int a : kept) same = same && s[a] == (*built_shape_)[a];
    if (!same)
      raise<ShapeError>("{}: adapt() got data of shape {}, but the layer was built for {} (axes {} must match)",
                        describe(*this), s.to_string(), built_shape_->to_string(), fmt::join(kept, ", "));
    // Each element's feature index: its coordinates along the kept axes, row-major.
    const std::vector<double> v = batch.to_vector<double>();
    const std::int64_t count = batch.num_elements() / std::max<std::int64_t>(features, 1);
    std::vector<double> sum(static_cast<std::size_t>(features), 0.0), sq(sum);
    std::vector<std::int64_t> strides(static_cast<std::size_t>(s.rank()), 1);
    for (int a = s.rank() - 2; a >= 0; --a) strides[a] = strides[a + 1] * s[a + 1];
    auto feature_of = [&](std::int64_t e) {
      std::int64_t f = 0;
      for (int a : kept) f = f * s[a] + e / strides[a] % s[a];
      return f;
    };
    for (std::int64_t e = 0; e < batch.num_elements(); ++e) sum[feature_of(e)] += v[e];
    for (auto& m : sum) m /= static_cast<double>(count);
    for (std::int64_t e = 0; e < batch.num_elements(); ++e) {
      const double d = v[e] - sum[feature_of(e)];
      sq[feature_of(e)] += d * d;
    }
    // Keras's running update of the mean and variance with this batch's.
    total_count += static_cast<double>(count);
    const double batch_weight = static_cast<double>(count) / total_count, existing = 1.0 - batch_weight;
    for (std::size_t f = 0; f < sum.size(); ++f) {
      const double batch_var = sq[f] / static_cast<double>(count);
      const double new_mean = total_mean[f] * existing + sum[f] * batch_weight;
      total_var[f] = (total_var[f] + (total_mean[f] - new_mean) * (total_mean[f] - new_mean)) * existing +
                     (batch_var + (sum[f] - new_mean) * (sum[f] - new_mean)) * batch_weight;
      total_mean[f] = new_mean;
    }
  }
  const VariablePtr mean = weight("mean"), variance = weight("variance");
  mean->assign(values_tensor(mean->shape(), total_mean, mean->dtype()));
  variance->assign(values_tensor(variance->shape(), total_var, variance->dtype()));
}

nlohmann::json Normalization::get_config() const {
  auto values = [](const std::optional<std::vector<double>>& v) {
    if (!v) return nlohmann::json();
    return v->size() == 1 ? nlohmann::json((*v)[0]) : nlohmann::json(*v);
  };
  return layer_config(*this, {{"axis", ints_to_json(options_.axis)},
                              {"invert", options_.invert},
                              {"mean", values(options_.mean)},
                              {"variance", values(options_.variance)}});
}

LayerPtr Normalization::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Normalization");
  r.check_common();
  NormalizationOptions options{.axis = r.has("axis") ? r.ints("axis") : std::vector<std::int64_t>{},
                               .invert = r.boolean("invert", false),
                               .name = r.name()};
  auto values = [&](const char* key) -> std::optional<std::vector<double>> {
    if (!r.has(key)) return std::nullopt;
    const auto& v = config[key];
    if (v.is_number()) return std::vector<double>{v.get<double>()};
    if (v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& e) { return e.is_number(); }))
      return v.get<std::vector<double>>();
    r.fail(fmt::format("field \"{}\" must be a number or a flat list of numbers, got {}", key, v.dump()));
  };
  options.mean = values("mean");
  options.variance = values("variance");
  return r.finish(Normalization(options));
}

}  // namespace tower::layers
