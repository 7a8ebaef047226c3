// UpSampling2D: repeats rows and columns (nearest) or interpolates them (bilinear), as Keras's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct UpSampling2DOptions {
  std::string interpolation = "nearest";  // "nearest" or "bilinear" (tf.image.resize's, half-pixel centers)
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, h, w, c) -> (batch, h·size_h, w·size_w, c). No weights. Height and width must be known.
class UpSampling2D : public Layer {
 public:
  // size: one value or (size_h, size_w).
  explicit UpSampling2D(const std::vector<std::int64_t>& size = {2, 2}, const UpSampling2DOptions& options = {});
  explicit UpSampling2D(std::int64_t size, const UpSampling2DOptions& options = {})
      : UpSampling2D(std::vector<std::int64_t>{size}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<UpSampling2D>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "UpSampling2D"; }

  const std::vector<std::int64_t>& size() const { return size_; }  // (size_h, size_w)
  const std::string& interpolation() const { return interpolation_; }

 private:
  std::vector<std::int64_t> size_;
  std::string interpolation_;
};

}  // namespace tower::layers
