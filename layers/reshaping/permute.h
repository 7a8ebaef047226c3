// Permute: reorders the axes after the batch, as Keras's Permute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct PermuteOptions {
  std::string name;
};

// x: (batch, d1, ..., dk) -> (batch, d_dims[0], ..., d_dims[k-1]). dims: a permutation of 1..k (1-based,
// the batch axis 0 stays first), as Keras: Permute({2, 1}) swaps the two axes after the batch. No weights.
class Permute : public Layer {
 public:
  explicit Permute(const std::vector<std::int64_t>& dims, const PermuteOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Permute>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Permute"; }

  const std::vector<std::int64_t>& dims() const { return dims_; }

 private:
  std::vector<std::int64_t> dims_;
};

}  // namespace tower::layers
