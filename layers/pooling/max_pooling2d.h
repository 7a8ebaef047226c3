// MaxPooling2D: the largest value of each window, as Keras's MaxPooling2D.
#pragma once

#include "tower/layers/pooling/pooling2d.h"

namespace tower::layers {

// x: (batch, h, w, c) -> (batch, out_h, out_w, c).
class MaxPooling2D : public Pooling2D {
 public:
  // pool_size: one value or (height, width).
  explicit MaxPooling2D(const std::vector<std::int64_t>& pool_size = {2, 2}, const Pooling2DOptions& options = {})
      : Pooling2D("MaxPooling2D", pool_size, options) {}
  explicit MaxPooling2D(std::int64_t pool_size, const Pooling2DOptions& options = {})
      : MaxPooling2D(std::vector<std::int64_t>{pool_size}, options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<MaxPooling2D>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const override;
};

}  // namespace tower::layers
