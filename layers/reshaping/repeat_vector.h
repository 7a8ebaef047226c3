// RepeatVector: repeats each sample's feature vector n times along a new time axis, as Keras's RepeatVector.
#pragma once

#include <cstdint>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct RepeatVectorOptions {
  std::string name;
};

// x: (batch, features) -> (batch, n, features), y[:, t, :] = x for every t. No weights.
class RepeatVector : public Layer {
 public:
  explicit RepeatVector(std::int64_t n, const RepeatVectorOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<RepeatVector>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "RepeatVector"; }

  std::int64_t n() const { return n_; }

 private:
  std::int64_t n_;
};

}  // namespace tower::layers
