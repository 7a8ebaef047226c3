// UpSampling1D: repeats each step `size` times along the steps axis, as Keras's UpSampling1D.
#pragma once

#include <cstdint>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct UpSampling1DOptions {
  std::string name;
};

// x: (batch, steps, c) -> (batch, steps * size, c); y[:, t] = x[:, t / size]. No weights.
// The number of steps must be known.
class UpSampling1D : public Layer {
 public:
  explicit UpSampling1D(std::int64_t size = 2, const UpSampling1DOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<UpSampling1D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "UpSampling1D"; }

  std::int64_t size() const { return size_; }

 private:
  std::int64_t size_;
};

}  // namespace tower::layers
