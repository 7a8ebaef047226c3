// GlobalMaxPooling3D: the largest value of each channel over depth, height and width, as Keras's GlobalMaxPooling3D.
#pragma once

#include "tower/layers/pooling/global_pooling3d.h"

namespace tower::layers {

// x: (batch, d, h, w, c) -> (batch, c), or (batch, 1, 1, 1, c) with keepdims.
class GlobalMaxPooling3D : public GlobalPooling3D {
 public:
  explicit GlobalMaxPooling3D(const GlobalPooling3DOptions& options = {}) : GlobalPooling3D("GlobalMaxPooling3D", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<GlobalMaxPooling3D>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor reduce(const SymbolicTensor& x, bool keepdims) const override;
};

}  // namespace tower::layers
