// Dropout: while training, zeroes a random fraction `rate` of the inputs and scales the rest by
// 1 / (1 - rate); the identity at inference. As Keras's Dropout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

class ConfigReader;

struct DropoutOptions {
  // Keras's noise_shape: the mask's shape, one entry per input axis, -1 (None) for the input's size on
  // that axis, 1 to share the mask along it (noise_shape (None, 1, None): the same for every step).
  // Empty: the input's shape.
  std::vector<std::int64_t> noise_shape;
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
  const std::vector<std::int64_t>& noise_shape() const { return noise_shape_; }

 private:
  double rate_;
  std::vector<std::int64_t> noise_shape_;
  std::uint64_t seed_;
  bool seed_given_ = false;  // the user's seed (written by get_config), not one drawn
};

// noise_shape helpers, shared with AlphaDropout. Throws ValueError naming `layer` for an entry that is
// neither -1 nor positive.
void check_noise_shape(const Layer& layer, const std::vector<std::int64_t>& noise_shape);
// The mask's shape for input x (batch, ...): -1 where it takes x's size, 1 where it is shared (1 or,
// on axis 0, any size: the batch is only known when the model runs). Empty noise_shape: all -1.
// Throws ValueError naming `layer` when the ranks differ or an entry is neither 1 nor x's size.
std::vector<std::int64_t> noise_mask_shape(const Layer& layer, const Shape& x,
                                           const std::vector<std::int64_t>& noise_shape);
// Config field "noise_shape" (null or a list of integers and nulls) <-> the vector (null: -1).
std::vector<std::int64_t> read_noise_shape(const ConfigReader& r);
nlohmann::json noise_shape_to_json(const std::vector<std::int64_t>& noise_shape);

}  // namespace tower::layers
