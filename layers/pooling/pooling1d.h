// Pooling1D: the base of MaxPooling1D and AveragePooling1D (window, strides, padding over the steps axis),
// as Keras's BasePooling.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tower/core/ops.h"
#include "tower/layers/layer.h"

namespace tower::layers {

class ConfigReader;

struct Pooling1DOptions {
  std::optional<std::int64_t> strides;  // unset = pool_size (Keras's None)
  std::string padding = "valid";        // "valid" or "same"
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, steps, c) -> (batch, out_steps, c). No weights. Runs the 2-D pooling op on a
// (batch, 1, steps, c) view of x; the number of steps must be known.
class Pooling1D : public Layer {
 public:
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  void build(const std::vector<Shape>& input_shapes) override;
  std::string class_name() const override { return class_name_; }
  // Keras's get_config() (tf.keras 2's spelling).
  nlohmann::json get_config() const override;
  // The options a MaxPooling1D/AveragePooling1D config describes, and its pool_size (default 2).
  static Pooling1DOptions options_from_config(const ConfigReader& reader);
  static std::int64_t pool_size_from_config(const ConfigReader& reader);

  std::int64_t pool_size() const { return args_.pool_size[1]; }
  std::int64_t strides() const { return args_.strides[1]; }  // resolved
  const std::string& padding() const { return args_.padding; }

 protected:
  // class_name: Keras's ("MaxPooling1D"); the default name is its snake case.
  Pooling1D(std::string class_name, std::int64_t pool_size, const Pooling1DOptions& options);
  // The 2-D pooling op on x (batch, 1, steps, c).
  virtual SymbolicTensor pool(const SymbolicTensor& x, const ops::Pool2DArgs& args) const = 0;

 private:
  std::string class_name_;
  ops::Pool2DArgs args_;  // pool_size (1, p), strides (1, s), padding
};

}  // namespace tower::layers
