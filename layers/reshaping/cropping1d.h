// Cropping1D: removes steps at the start and end of (batch, steps, channels) sequences, as Keras's Cropping1D.
#pragma once

#include <cstdint>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct Cropping1DOptions {
  std::string name;
};

// x: (batch, steps, c) -> (batch, steps - left - right, c). No weights. The number of steps must be
// known unless right is 0, and larger than left + right.
class Cropping1D : public Layer {
 public:
  // Keras's forms: (left, right), or one int for both ends.
  explicit Cropping1D(const std::vector<std::int64_t>& cropping = {1, 1}, const Cropping1DOptions& options = {});
  explicit Cropping1D(std::int64_t cropping, const Cropping1DOptions& options = {})
      : Cropping1D(std::vector<std::int64_t>{cropping, cropping}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Cropping1D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Cropping1D"; }

  const std::vector<std::int64_t>& cropping() const { return cropping_; }  // (left, right)

 private:
  std::vector<std::int64_t> cropping_;
};

}  // namespace tower::layers
