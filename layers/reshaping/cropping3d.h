// Cropping3D: removes voxels at the edges of depth, height and width of NDHWC volumes, as Keras's Cropping3D.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct Cropping3DOptions {
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, d, h, w, c) -> (batch, d - front - back, h - top - bottom, w - left - right, c). No weights. A
// side cropped at the end needs its size known; something must be left of each.
class Cropping3D : public Layer {
 public:
  // Keras's three forms: one int for every side, (symmetric_depth, symmetric_height, symmetric_width), or
  // ((front, back), (top, bottom), (left, right)). Keras's default is 1 on every side.
  explicit Cropping3D(std::int64_t cropping = 1, const Cropping3DOptions& options = {});
  explicit Cropping3D(const std::vector<std::int64_t>& cropping, const Cropping3DOptions& options = {});
  explicit Cropping3D(const std::vector<std::vector<std::int64_t>>& cropping, const Cropping3DOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Cropping3D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Cropping3D"; }

  // (front, back, top, bottom, left, right)
  const std::vector<std::int64_t>& cropping() const { return cropping_; }

 private:
  std::vector<std::int64_t> cropping_;
};

}  // namespace tower::layers
