// Subtract: input 0 minus input 1 (exactly two inputs), as Keras's Subtract.
#pragma once

#include "tower/layers/merging/merge.h"

namespace tower::layers {

// inputs: (batch, ...) each, matching as Merge describes -> their broadcast shape.
class Subtract : public Merge {
 public:
  explicit Subtract(const MergeOptions& options = {}) : Merge("Subtract", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<Subtract>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  void check_shapes(const std::vector<Shape>& shapes) const override;
  SymbolicTensor merge(const std::vector<SymbolicTensor>& inputs) const override;
};

}  // namespace tower::layers
