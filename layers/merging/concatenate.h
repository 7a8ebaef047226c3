// Concatenate: joins its inputs along one axis, as Keras's Concatenate.
#pragma once

#include <string>

#include "tower/layers/merging/merge.h"

namespace tower::layers {

struct ConcatenateOptions {
  int axis = -1;  // 0 is the batch axis (as Keras's multi_gpu_model merges its towers)
  std::string name;
};

// inputs: same rank, same sizes except along axis -> sizes along axis added. No weights.
class Concatenate : public Merge {
 public:
  explicit Concatenate(const ConcatenateOptions& options = {});

  std::shared_ptr<Layer> share() const override { return std::make_shared<Concatenate>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  int axis() const { return axis_; }

 protected:
  void check_shapes(const std::vector<Shape>& shapes) const override;
  SymbolicTensor merge(const std::vector<SymbolicTensor>& inputs) const override;

 private:
  int axis_;
};

}  // namespace tower::layers
