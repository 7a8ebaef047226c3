// InputLayer and layers::Input: the entry points of a model's Keras graph.
#pragma once

#include <optional>
#include <string>

#include "tower/layers/layer.h"

namespace tower {

// Holds a model input's spec; call() passes its input through.
class InputLayer : public Layer {
 public:
  // shape: without the batch dimension, as Keras's Input(shape=...).
  InputLayer(const Shape& shape, DType dtype = floatx(), const std::string& name = "");

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<InputLayer>(*this); }
  std::string class_name() const override { return "InputLayer"; }
  // {"batch_input_shape": [null, ...], "dtype", "sparse", "ragged", "name"} as tf.keras 2 writes it;
  // from_config also reads Keras 3's "batch_shape" and Keras 1's "input_dtype".
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);

  const TensorSpec& spec() const { return spec_; }  // (None, shape...)
  // A KerasTensor standing for this input (a new call node of this layer).
  KerasTensor make_output() const;

 private:
  TensorSpec spec_;
};

namespace layers {

struct InputOptions {
  std::optional<DType> dtype;  // unset: floatx() (float32 unless set_floatx)
  std::string name;
  std::int64_t batch_size = -1;  // a fixed batch dimension; -1 leaves it unknown
};

// keras.Input(shape=...): a KerasTensor of shape (None, shape...).
KerasTensor Input(const Shape& shape, const InputOptions& options = {});

}  // namespace layers
}  // namespace tower
