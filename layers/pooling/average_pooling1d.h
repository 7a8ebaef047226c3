// AveragePooling1D: the mean of each window of steps (padding excluded with "same"), as Keras's AveragePooling1D.
#pragma once

#include "tower/layers/pooling/pooling1d.h"

namespace tower::layers {

// x: (batch, steps, c) -> (batch, out_steps, c).
class AveragePooling1D : public Pooling1D {
 public:
  explicit AveragePooling1D(std::int64_t pool_size = 2, const Pooling1DOptions& options = {})
      : Pooling1D("AveragePooling1D", pool_size, options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<AveragePooling1D>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const override;
};

}  // namespace tower::layers
