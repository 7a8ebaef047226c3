// Normalization: y = (x - mean) / max(sqrt(variance), 1e-7) per feature, with mean and variance given or
// learned from data by adapt(), as Keras's (a preprocessing layer inside the model).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tower/core/tensor.h"
#include "tower/layers/layer.h"

namespace tower::layers {

struct NormalizationOptions {
  std::vector<std::int64_t> axis = {-1};  // the axes that keep their own mean and variance; {} = one for all
  std::optional<std::vector<double>> mean, variance;  // given: no weights and no adapt(); one value or per feature
  bool invert = false;                                // y = mean + x · max(sqrt(variance), 1e-7)
  std::string name;
};

// x: any rank with the kept axes known -> same shape. Without a given mean and variance the weights are
// mean (zeros) and variance (ones), shaped like the kept axes, and count (int64, kept 0 as Keras 3 does),
// all non-trainable: adapt() sets them.
class Normalization : public Layer {
 public:
  explicit Normalization(const NormalizationOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Normalization>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Normalization"; }

  // Keras's adapt: the mean and (population) variance of `data` over every axis but the kept ones,
  // computed in double. The batches form computes them batch by batch with Keras's running update.
  // Builds the layer from data's shape if needed; ValueError for a given mean/variance or a shape whose
  // kept axes differ from the built ones.
  void adapt(const Tensor& data);
  void adapt(const std::vector<Tensor>& batches);

  const NormalizationOptions& options() const { return options_; }

 private:
  // The kept axes of an input of `rank`, ascending and non-negative.
  std::vector<int> kept_axes(int rank) const;
  NormalizationOptions options_;
  std::shared_ptr<Shape> built_shape_;  // the input shape build() saw (shared by handles)
};

}  // namespace tower::layers
