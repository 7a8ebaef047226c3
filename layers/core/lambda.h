// Lambda: wraps a function of engine tensors as a layer, as Keras's Lambda.
#pragma once

#include <functional>
#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct LambdaOptions {
  // Keras's output_shape as a function: the expected output shape (batch axis included, -1 when
  // unknown) given the input shapes. When set, call() checks the function's output against it.
  std::function<Shape(const std::vector<Shape>&)> output_shape;
  std::string name;
};

// inputs -> function(inputs). No weights. The function builds ops (core/ops.h) in its inputs' graph;
// it runs each time a model builds a graph, so it must not hold graph state.
class Lambda : public Layer {
 public:
  using Function = std::function<std::vector<SymbolicTensor>(const std::vector<SymbolicTensor>&)>;
  using UnaryFunction = std::function<SymbolicTensor(const SymbolicTensor&)>;

  explicit Lambda(Function function, const LambdaOptions& options = {});
  // One input, one output: `Lambda([](const SymbolicTensor& x) { return ops::scale(x, 2.0); })`.
  explicit Lambda(UnaryFunction function, const LambdaOptions& options = {});

  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Lambda>(*this); }
  bool supports_masking() const override { return true; }  // the mask passes on
  // Keras's get_config() (tf.keras 2's spelling) and the layer a config of any Keras version describes.
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Lambda"; }

 private:
  Function function_;
  std::function<Shape(const std::vector<Shape>&)> output_shape_;
  bool unary_ = false;  // made from a UnaryFunction: exactly one input
};

}  // namespace tower::layers
