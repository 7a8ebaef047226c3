// ZeroPadding1D: adds steps of zeros at the start and end of (batch, steps, channels) sequences, as Keras's
// ZeroPadding1D.
#pragma once

#include <cstdint>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct ZeroPadding1DOptions {
  std::string name;
};

// x: (batch, steps, c) -> (batch, left + steps + right, c). No weights.
class ZeroPadding1D : public Layer {
 public:
  // Keras's two forms: one int for both ends, or (left, right).
  explicit ZeroPadding1D(std::int64_t padding = 1, const ZeroPadding1DOptions& options = {});
  explicit ZeroPadding1D(const std::vector<std::int64_t>& padding, const ZeroPadding1DOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<ZeroPadding1D>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "ZeroPadding1D"; }

  const std::vector<std::int64_t>& padding() const { return padding_; }  // (left, right)

 private:
  std::vector<std::int64_t> padding_;
};

}  // namespace tower::layers
