// SpatialDropout2D: while training, drops whole channels of each sample (the same at every position) with
// probability `rate` and scales the rest by 1 / (1 - rate); the identity at inference. As Keras's
// SpatialDropout2D.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct SpatialDropout2DOptions {
  // The mask's seed; unset draws one from tower::next_seed() when the layer is made (as Dropout).
  std::optional<std::uint64_t> seed;
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, rows, cols, c) -> the same shape. No weights. One mask entry per (sample, channel): Keras's
// noise_shape (batch, 1, 1, channels).
class SpatialDropout2D : public Layer {
 public:
  // rate: the fraction of channels to drop, in [0, 1).
  explicit SpatialDropout2D(double rate, const SpatialDropout2DOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<SpatialDropout2D>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "SpatialDropout2D"; }

  double rate() const { return rate_; }
  std::uint64_t seed() const { return seed_; }

 private:
  double rate_;
  std::uint64_t seed_;
  bool seed_given_ = false;  // the user's seed (written by get_config), not one drawn
};

}  // namespace tower::layers
