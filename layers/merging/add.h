// Add: the sum of its inputs, as Keras's Add.
#pragma once

#include "tower/layers/merging/merge.h"

namespace tower::layers {

// inputs: (batch, ...) each, matching as Merge describes -> their broadcast shape.
class Add : public Merge {
 public:
  explicit Add(const MergeOptions& options = {}) : Merge("Add", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<Add>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor merge(const std::vector<SymbolicTensor>& inputs) const override;
};

}  // namespace tower::layers
