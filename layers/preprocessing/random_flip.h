// RandomFlip: in training, each image flipped left-right and/or upside down, as Keras 3's RandomFlip.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct RandomFlipOptions {
  std::optional<std::uint64_t> seed;  // unset: one from tower::next_seed() when the layer is made
  std::string name;
};

// x: (batch, h, w, c) -> the same shape. Training: one uniform draw u per image; u <= 0.5 flips it (with
// "horizontal_and_vertical", both ways at once, as Keras 3 uses the same draw for both). Inference:
// x unchanged. Towers draw between them what one device draws for the batch. No weights.
class RandomFlip : public Layer {
 public:
  // mode: "horizontal", "vertical" or "horizontal_and_vertical".
  explicit RandomFlip(const std::string& mode = "horizontal_and_vertical", const RandomFlipOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<RandomFlip>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "RandomFlip"; }

  const std::string& mode() const { return mode_; }

 private:
  std::string mode_;
  std::uint64_t seed_;
  bool seed_given_;
};

}  // namespace tower::layers
