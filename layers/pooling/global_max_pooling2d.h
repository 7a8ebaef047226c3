// GlobalMaxPooling2D: the largest value of each channel over height and width, as Keras's GlobalMaxPooling2D.
#pragma once

#include "tower/layers/pooling/global_pooling2d.h"

namespace tower::layers {

// x: (batch, h, w, c) -> (batch, c), or (batch, 1, 1, c) with keepdims.
class GlobalMaxPooling2D : public GlobalPooling2D {
 public:
  explicit GlobalMaxPooling2D(const GlobalPooling2DOptions& options = {})
      : GlobalPooling2D("GlobalMaxPooling2D", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<GlobalMaxPooling2D>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor reduce(const SymbolicTensor& x, bool keepdims) const override;
};

}  // namespace tower::layers
