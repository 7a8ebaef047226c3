// Cropping2D: removes rows and columns at the edges of (batch, height, width, channels) images, as Keras's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct Cropping2DOptions {
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, h, w, c) -> (batch, h - top - bottom, w - left - right, c). No weights. A side cropped at
// the end needs its size known; something must be left of each.
class Cropping2D : public Layer {
 public:
  // Keras's forms: one int for every side, (symmetric_height, symmetric_width), or ((top, bottom),
  // (left, right)).
  explicit Cropping2D(std::int64_t cropping = 0, const Cropping2DOptions& options = {});
  explicit Cropping2D(const std::vector<std::int64_t>& cropping, const Cropping2DOptions& options = {});
  explicit Cropping2D(const std::vector<std::vector<std::int64_t>>& cropping, const Cropping2DOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Cropping2D>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Cropping2D"; }

  const std::vector<std::int64_t>& cropping() const { return cropping_; }  // (top, bottom, left, right)

 private:
  std::vector<std::int64_t> cropping_;
};

}  // namespace tower::layers
