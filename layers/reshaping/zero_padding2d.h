// ZeroPadding2D: adds rows and columns of zeros around NHWC images, as Keras's ZeroPadding2D.
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct ZeroPadding2DOptions {
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, h, w, c) -> (batch, top + h + bottom, left + w + right, c). No weights.
class ZeroPadding2D : public Layer {
 public:
  // Keras's three forms: one int for every side, (symmetric_height, symmetric_width), or
  // ((top, bottom), (left, right)).
  explicit ZeroPadding2D(std::int64_t padding = 1, const ZeroPadding2DOptions& options = {});
  explicit ZeroPadding2D(const std::vector<std::int64_t>& padding, const ZeroPadding2DOptions& options = {});
  explicit ZeroPadding2D(const std::vector<std::vector<std::int64_t>>& padding,
                         const ZeroPadding2DOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<ZeroPadding2D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "ZeroPadding2D"; }

  const std::vector<std::int64_t>& padding() const { return padding_; }  // (top, bottom, left, right)

 private:
  std::vector<std::int64_t> padding_;
};

}  // namespace tower::layers
