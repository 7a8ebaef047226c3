// Masking: Keras's layer that masks the time steps whose features all equal mask_value.
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct MaskingOptions {
  std::string name;
};

// x: (batch, time, features) -> x with the masked steps zeroed, and the Keras mask (batch, time): 1
// where any feature differs from mask_value. Layers after it that take masks (the recurrent layers,
// GlobalAveragePooling1D, attention, the losses) skip or leave out the masked steps.
class Masking : public Layer {
 public:
  explicit Masking(double mask_value = 0.0, const MaskingOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Masking>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Masking"; }

  double mask_value() const { return mask_value_; }

 private:
  // (batch, time) (or (batch, time, 1) with keepdims) in x's dtype: 1 where some feature of the step
  // is not mask_value.
  SymbolicTensor step_mask(const SymbolicTensor& x, bool keepdims) const;
  double mask_value_;
};

}  // namespace tower::layers
