// Reshape: gives each sample a new shape with the same number of elements, as Keras's Reshape.
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct ReshapeOptions {
  std::string name;
};

// x: (batch, ...) -> (batch, target_shape...). No weights.
class Reshape : public Layer {
 public:
  // target_shape: without the batch; may hold one -1, inferred from the input's size.
  explicit Reshape(const std::vector<std::int64_t>& target_shape, const ReshapeOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Reshape>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Reshape"; }

  const std::vector<std::int64_t>& target_shape() const { return target_shape_; }

 private:
  std::vector<std::int64_t> target_shape_;
};

}  // namespace tower::layers
