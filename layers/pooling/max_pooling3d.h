// MaxPooling3D: the largest value of each window, as Keras's MaxPooling3D.
#pragma once

#include "tower/layers/pooling/pooling3d.h"

namespace tower::layers {

// x: (batch, d, h, w, c) -> (batch, out_d, out_h, out_w, c).
class MaxPooling3D : public Pooling3D {
 public:
  // pool_size: one value or (depth, height, width).
  explicit MaxPooling3D(const std::vector<std::int64_t>& pool_size = {2, 2, 2}, const Pooling3DOptions& options = {})
      : Pooling3D("MaxPooling3D", pool_size, options) {}
  explicit MaxPooling3D(std::int64_t pool_size, const Pooling3DOptions& options = {})
      : MaxPooling3D(std::vector<std::int64_t>{pool_size}, options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<MaxPooling3D>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor pool(const SymbolicTensor& x, const ops::Pool3DArgs& args) const override;
};

}  // namespace tower::layers
