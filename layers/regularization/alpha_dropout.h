// AlphaDropout: while training, sets a random fraction `rate` of the inputs to SELU's negative
// saturation value and applies the affine map that keeps a standard-normal input's mean and variance
// (self-normalizing networks); the identity at inference. As Keras's AlphaDropout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct AlphaDropoutOptions {
  // As DropoutOptions::noise_shape: -1 (None) takes the input's size, 1 shares the mask along an axis.
  std::vector<std::int64_t> noise_shape;
  // The mask's seed; unset draws one from tower::next_seed() when the layer is made (as Dropout).
  std::optional<std::uint64_t> seed;
  std::string name;
};

// x: any shape -> the same shape. No weights. With alpha' = -1.7580993408473766 (-SELU's scale * alpha),
// kept = (u >= rate) for u uniform on [0, 1) of noise_shape, a = ((1 - rate) (1 + rate alpha'^2))^-1/2
// and b = -a alpha' rate: y = a (x kept + alpha' (1 - kept)) + b, as Keras 3 computes it.
class AlphaDropout : public Layer {
 public:
  // rate: the fraction of inputs to drop, in [0, 1).
  explicit AlphaDropout(double rate, const AlphaDropoutOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<AlphaDropout>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling, with Keras 3's noise_shape when one is set) and the
  // layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "AlphaDropout"; }

  double rate() const { return rate_; }
  std::uint64_t seed() const { return seed_; }
  const std::vector<std::int64_t>& noise_shape() const { return noise_shape_; }

 private:
  double rate_;
  std::vector<std::int64_t> noise_shape_;
  std::uint64_t seed_;
  bool seed_given_ = false;  // the user's seed (written by get_config), not one drawn
};

}  // namespace tower::layers
