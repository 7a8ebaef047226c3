// GlobalAveragePooling2D: the mean of each channel over height and width, as Keras's GlobalAveragePooling2D.
#pragma once

#include "tower/layers/pooling/global_pooling2d.h"

namespace tower::layers {

// x: (batch, h, w, c) -> (batch, c), or (batch, 1, 1, c) with keepdims.
class GlobalAveragePooling2D : public GlobalPooling2D {
 public:
  explicit GlobalAveragePooling2D(const GlobalPooling2DOptions& options = {})
      : GlobalPooling2D("GlobalAveragePooling2D", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<GlobalAveragePooling2D>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor reduce(const SymbolicTensor& x, bool keepdims) const override;
};

}  // namespace tower::layers
