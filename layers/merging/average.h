// Average: the mean of its inputs, as Keras's Average.
#pragma once

#include "tower/layers/merging/merge.h"

namespace tower::layers {

// inputs: (batch, ...) each, matching as Merge describes -> their broadcast shape.
class Average : public Merge {
 public:
  explicit Average(const MergeOptions& options = {}) : Merge("Average", options) {}

  std::shared_ptr<Layer> share() const override { return std::make_shared<Average>(*this); }
  // The layer a config of any Keras version describes (layers/registry.h).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  SymbolicTensor merge(const std::vector<SymbolicTensor>& inputs) const override;
};

}  // namespace tower::layers
