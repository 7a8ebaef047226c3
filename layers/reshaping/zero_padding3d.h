// ZeroPadding3D: adds zeros around each of depth, height and width of NDHWC volumes, as Keras's ZeroPadding3D.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct ZeroPadding3DOptions {
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, d, h, w, c) -> (batch, front + d + back, top + h + bottom, left + w + right, c). No weights.
class ZeroPadding3D : public Layer {
 public:
  // Keras's three forms: one int for every side, (symmetric_depth, symmetric_height, symmetric_width), or
  // ((front, back), (top, bottom), (left, right)). Keras's default is 1 on every side.
  explicit ZeroPadding3D(std::int64_t padding = 1, const ZeroPadding3DOptions& options = {});
  explicit ZeroPadding3D(const std::vector<std::int64_t>& padding, const ZeroPadding3DOptions& options = {});
  explicit ZeroPadding3D(const std::vector<std::vector<std::int64_t>>& padding, const ZeroPadding3DOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<ZeroPadding3D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "ZeroPadding3D"; }

  // (front, back, top, bottom, left, right)
  const std::vector<std::int64_t>& padding() const { return padding_; }

 private:
  std::vector<std::int64_t> padding_;
};

}  // namespace tower::layers
