// Maximum: the elementwise maximum of its inputs, as Keras's Maximum.
#pragma once

#include "tower/layers/merging/merge.h"

namespace tower::layers {

// inputs: (batch, ...) each, matching as Merge describes -> their broadcast shape.
class Maximum : public Merge {
 public:
  explicit Maximum(const MergeOptions& options = {}) : Merge("Maximum", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<Maximum>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor merge(const std::vector<SymbolicTensor>& inputs) const override;
};

}  // namespace tower::layers
