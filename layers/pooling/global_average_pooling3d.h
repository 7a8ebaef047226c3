// GlobalAveragePooling3D: the mean of each channel over depth, height and width, as Keras's GlobalAveragePooling3D.
#pragma once

#include "tower/layers/pooling/global_pooling3d.h"

namespace tower::layers {

// x: (batch, d, h, w, c) -> (batch, c), or (batch, 1, 1, 1, c) with keepdims.
class GlobalAveragePooling3D : public GlobalPooling3D {
 public:
  explicit GlobalAveragePooling3D(const GlobalPooling3DOptions& options = {}) : GlobalPooling3D("GlobalAveragePooling3D", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<GlobalAveragePooling3D>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor reduce(const SymbolicTensor& x, bool keepdims) const override;
};

}  // namespace tower::layers
