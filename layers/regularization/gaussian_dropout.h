// GaussianDropout: while training, multiplies the inputs by normal noise of mean 1 and standard
// deviation sqrt(rate / (1 - rate)); the identity at inference. As Keras's GaussianDropout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct GaussianDropoutOptions {
  // The noise's seed; unset draws one from tower::next_seed() when the layer is made (as Dropout).
  // Each training step still draws fresh noise.
  std::optional<std::uint64_t> seed;
  std::string name;
};

// x: any shape -> the same shape. No weights.
class GaussianDropout : public Layer {
 public:
  // rate: as Dropout's, in [0, 1): the noise's variance is rate / (1 - rate).
  explicit GaussianDropout(double rate, const GaussianDropoutOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<GaussianDropout>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "GaussianDropout"; }

  double rate() const { return rate_; }
  std::uint64_t seed() const { return seed_; }

 private:
  double rate_;
  std::uint64_t seed_;
  bool seed_given_ = false;  // the user's seed (written by get_config), not one drawn
};

}  // namespace tower::layers
