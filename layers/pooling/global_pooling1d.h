// GlobalPooling1D: the base of GlobalAveragePooling1D and GlobalMaxPooling1D (a reduction over the steps).
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct GlobalPooling1DOptions {
  bool keepdims = false;  // keep the steps axis as 1: (batch, 1, c)
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, steps, c) -> (batch, c), or (batch, 1, c) with keepdims. No weights.
class GlobalPooling1D : public Layer {
 public:
  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::string class_name() const override { return class_name_; }
  // Keras's get_config() (tf.keras 2's spelling).
  nlohmann::json get_config() const override;

  bool keepdims() const { return keepdims_; }

 protected:
  // class_name: Keras's ("GlobalMaxPooling1D"); the default name is its snake case.
  GlobalPooling1D(std::string class_name, const GlobalPooling1DOptions& options);
  // The reduction of x (batch, steps, c) over axis 1; mask (batch, steps) or undefined: the Keras mask
  // of x (a reduction that honours it leaves the masked steps out).
  virtual SymbolicTensor reduce(const SymbolicTensor& x, bool keepdims, const SymbolicTensor& mask) const = 0;

 private:
  std::string class_name_;
  bool keepdims_;
};

}  // namespace tower::layers
