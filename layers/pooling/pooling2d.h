// Pooling2D: the base of MaxPooling2D and AveragePooling2D (window, strides, padding), as Keras's BasePooling.
#pragma once

#include <string>

#include "tower/core/ops.h"
#include "tower/layers/layer.h"

namespace tower::layers {

class ConfigReader;

struct Pooling2DOptions {
  std::vector<std::int64_t> strides;  // one value or (height, width); empty = pool_size (Keras's None)
  std::string padding = "valid";      // "valid" or "same"
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, h, w, c) -> (batch, out_h, out_w, c). No weights.
class Pooling2D : public Layer {
 public:
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  void build(const std::vector<Shape>& input_shapes) override;
  std::string class_name() const override { return class_name_; }
  // Keras's get_config() (tf.keras 2's spelling).
  nlohmann::json get_config() const override;
  // The options a MaxPooling2D/AveragePooling2D config describes.
  static Pooling2DOptions options_from_config(const ConfigReader& reader);

  const std::vector<std::int64_t>& pool_size() const { return args_.pool_size; }  // (ph, pw)
  const std::vector<std::int64_t>& strides() const { return args_.strides; }      // (sh, sw), resolved
  const std::string& padding() const { return args_.padding; }

 protected:
  // class_name: Keras's ("MaxPooling2D"); the default name is its snake case.
  Pooling2D(std::string class_name, const std::vector<std::int64_t>& pool_size, const Pooling2DOptions& options);
  // The pooling op on x (batch, h, w, c).
  virtual SymbolicTensor pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const = 0;

 private:
  std::string class_name_;
  ops::Pool2DArgs args_;
};

}  // namespace tower::layers
