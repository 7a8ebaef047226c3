// CenterCrop: the centred (height, width) crop of each image, as Keras's; an image smaller than that is
// resized to it instead (Keras's smart_resize: centred crop to the aspect ratio, then bilinear).
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct CenterCropOptions {
  std::string name;
};

// x: (batch, h, w, c), h and w known -> (batch, height, width, c). No weights.
class CenterCrop : public Layer {
 public:
  CenterCrop(std::int64_t height, std::int64_t width, const CenterCropOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<CenterCrop>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "CenterCrop"; }

  std::int64_t height() const { return height_; }
  std::int64_t width() const { return width_; }

 private:
  std::int64_t height_, width_;
};

}  // namespace tower::layers
