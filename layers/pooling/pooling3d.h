// Pooling3D: the base of MaxPooling3D and AveragePooling3D (window, strides, padding), as Keras's BasePooling.
#pragma once

#include <string>

#include "tower/core/ops.h"
#include "tower/layers/layer.h"

namespace tower::layers {

class ConfigReader;

struct Pooling3DOptions {
  std::vector<std::int64_t> strides;  // one value or (depth, height, width); empty = pool_size (Keras's None)
  std::string padding = "valid";      // "valid" or "same"
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, d, h, w, c) -> (batch, out_d, out_h, out_w, c). No weights.
class Pooling3D : public Layer {
 public:
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  void build(const std::vector<Shape>& input_shapes) override;
  std::string class_name() const override { return class_name_; }
  // Keras's get_config() (tf.keras 2's spelling).
  nlohmann::json get_config() const override;
  // The options a MaxPooling3D/AveragePooling3D config describes.
  static Pooling3DOptions options_from_config(const ConfigReader& reader);

  const std::vector<std::int64_t>& pool_size() const { return args_.pool_size; }  // (pd, ph, pw)
  const std::vector<std::int64_t>& strides() const { return args_.strides; }      // resolved
  const std::string& padding() const { return args_.padding; }

 protected:
  // class_name: Keras's ("MaxPooling3D"); the default name is its snake case.
  Pooling3D(std::string class_name, const std::vector<std::int64_t>& pool_size, const Pooling3DOptions& options);
  // The pooling op on x (batch, d, h, w, c).
  virtual SymbolicTensor pool(const SymbolicTensor& x, const ops::Pool3DArgs& args) const = 0;

 private:
  std::string class_name_;
  ops::Pool3DArgs args_;
};

}  // namespace tower::layers
