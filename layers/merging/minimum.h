// Minimum: the elementwise minimum of its inputs, as Keras's Minimum.
#pragma once

#include "tower/layers/merging/merge.h"

namespace tower::layers {

// inputs: (batch, ...) each, matching as Merge describes -> their broadcast shape.
class Minimum : public Merge {
 public:
  explicit Minimum(const MergeOptions& options = {}) : Merge("Minimum", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<Minimum>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor merge(const std::vector<SymbolicTensor>& inputs) const override;
};

}  // namespace tower::layers
