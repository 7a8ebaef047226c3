// GlobalPooling3D: the base of GlobalAveragePooling3D and GlobalMaxPooling3D (a reduction over depth,
// height and width).
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct GlobalPooling3DOptions {
  bool keepdims = false;  // keep depth, height and width as 1: (batch, 1, 1, 1, c)
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, d, h, w, c) -> (batch, c), or (batch, 1, 1, 1, c) with keepdims. No weights.
class GlobalPooling3D : public Layer {
 public:
  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::string class_name() const override { return class_name_; }
  // Keras's get_config() (tf.keras 2's spelling).
  nlohmann::json get_config() const override;

  bool keepdims() const { return keepdims_; }

 protected:
  // class_name: Keras's ("GlobalMaxPooling3D"); the default name is its snake case.
  GlobalPooling3D(std::string class_name, const GlobalPooling3DOptions& options);
  // The reduction of x (batch, d, h, w, c) over axes 1, 2 and 3.
  virtual SymbolicTensor reduce(const SymbolicTensor& x, bool keepdims) const = 0;

 private:
  std::string class_name_;
  bool keepdims_;
};

}  // namespace tower::layers
