// AveragePooling2D: the mean of each window (padding excluded with "same"), as Keras's AveragePooling2D.
#pragma once

#include "tower/layers/pooling/pooling2d.h"

namespace tower::layers {

// x: (batch, h, w, c) -> (batch, out_h, out_w, c).
class AveragePooling2D : public Pooling2D {
 public:
  // pool_size: one value or (height, width).
  explicit AveragePooling2D(const std::vector<std::int64_t>& pool_size = {2, 2}, const Pooling2DOptions& options = {})
      : Pooling2D("AveragePooling2D", pool_size, options) {}
  explicit AveragePooling2D(std::int64_t pool_size, const Pooling2DOptions& options = {})
      : AveragePooling2D(std::vector<std::int64_t>{pool_size}, options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<AveragePooling2D>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const override;
};

}  // namespace tower::layers
