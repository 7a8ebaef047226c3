// GlobalMaxPooling1D: the largest value of each channel over the steps, as Keras's GlobalMaxPooling1D.
#pragma once

#include "tower/layers/pooling/global_pooling1d.h"

namespace tower::layers {

// x: (batch, steps, c) -> (batch, c), or (batch, 1, c) with keepdims.
class GlobalMaxPooling1D : public GlobalPooling1D {
 public:
  explicit GlobalMaxPooling1D(const GlobalPooling1DOptions& options = {})
      : GlobalPooling1D("GlobalMaxPooling1D", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<GlobalMaxPooling1D>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor reduce(const SymbolicTensor& x, bool keepdims, const SymbolicTensor& mask) const override;
};

}  // namespace tower::layers
