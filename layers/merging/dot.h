// Dot: the batchwise dot product of two inputs along one axis each, as Keras's Dot (batch_dot).
#pragma once

#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct DotOptions {
  bool normalize = false;  // L2-normalize each input along its axis first (cosine proximity)
  std::string name;
};

// [x (batch, ...), y (batch, ...)] -> Keras's batch_dot(x, y, axes): the sum over x's axis a and y's
// axis b (equal sizes), giving x's other axes followed by y's other axes after its batch, e.g.
// (batch, 3, 5) and (batch, 10, 3) with axes (1, 2) -> (batch, 5, 10); (batch, d) and (batch, d) ->
// (batch, 1). Axes count from 1 after the batch axis (0 is refused), negative from the end; known sizes
// after the batch. No weights; no output mask (Keras's Dot drops masks).
class Dot : public Layer {
 public:
  // One axis for both inputs, as Keras's Dot(axes=1).
  explicit Dot(int axes, const DotOptions& options = {});
  // {axis of x, axis of y}, as Keras's Dot(axes=(1, 2)).
  explicit Dot(std::vector<int> axes, const DotOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Dot>(*this); }
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Dot"; }

  const std::vector<int>& axes() const { return axes_; }
  bool normalize() const { return normalize_; }

 private:
  // The two axes, non-negative, for inputs of these shapes; errors name the layer and the shapes.
  std::pair<int, int> resolve_axes(const Shape& x, const Shape& y) const;

  std::vector<int> axes_;  // two entries
  bool one_axis_;          // given as one int (written back so)
  bool normalize_;
};

}  // namespace tower::layers
