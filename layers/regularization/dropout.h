// Dropout: while training, zeroes a random fraction `rate` of the inputs and scales the rest by
// 1 / (1 - rate); the identity at inference. As Keras's Dropout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct DropoutOptions {
  // The mask's seed; unset draws one from tower::next_seed() when the layer is made, so a run
  // after set_random_seed(s) is reproducible. Each training step still gets a fresh mask.
  std::optional<std::uint64_t> seed;
  std::string name;
};

// x: any shape -> the same shape. No weights.
class Dropout : public Layer {
 public:
  // rate: the fraction of inputs to drop, in [0, 1).
  explicit Dropout(double rate, const DropoutOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Dropout>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Dropout"; }

  double rate() const { return rate_; }
  std::uint64_t seed() const { return seed_; }

 private:
  double rate_;
  std::uint64_t seed_;
  bool seed_given_ = false;  // the user's seed (written by get_config), not one drawn
};

}  // namespace tower::layers
