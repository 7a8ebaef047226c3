// GlobalAveragePooling1D: the mean of each channel over the steps, as Keras's GlobalAveragePooling1D.
#pragma once

#include "tower/layers/pooling/global_pooling1d.h"

namespace tower::layers {

// x: (batch, steps, c) -> (batch, c), or (batch, 1, c) with keepdims.
class GlobalAveragePooling1D : public GlobalPooling1D {
 public:
  explicit GlobalAveragePooling1D(const GlobalPooling1DOptions& options = {})
      : GlobalPooling1D("GlobalAveragePooling1D", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<GlobalAveragePooling1D>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  // With a mask: the mean over the unmasked steps (Keras).
  SymbolicTensor reduce(const SymbolicTensor& x, bool keepdims, const SymbolicTensor& mask) const override;
};

}  // namespace tower::layers
