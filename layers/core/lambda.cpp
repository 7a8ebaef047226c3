// Lambda.
#include "tower/layers/core/lambda.h"

#include "tower/core/error.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Lambda::Lambda(Function function, const LambdaOptions& options)
    : Layer(options.name, "lambda"), function_(std::move(function)), output_shape_(options.output_shape) {
  if (!function_) raise<ValueError>("{}: the function is empty", describe(*this));
}

namespace {
// An empty function stays empty, so that the main constructor reports it.
Lambda::Function wrap_unary(Lambda::UnaryFunction f) {
  if (!f) return {};
  return [f = std::move(f)](const std::vector<SymbolicTensor>& inputs) {
    return std::vector<SymbolicTensor>{f(inputs[0])};
  };
}
}  // namespace

Lambda::Lambda(UnaryFunction function, const LambdaOptions& options)
    : Lambda(wrap_unary(std::move(function)), options) {
  unary_ = true;
}

std::vector<SymbolicTensor> Lambda::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  if (unary_ && inputs.size() != 1)
    raise<ValueError>("{}: its function takes one input, got {}", describe(*this), inputs.size());
  auto outputs = function_(inputs);
  if (outputs.empty()) raise<ValueError>("{}: the function returned no tensors", describe(*this));
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined()) raise<ValueError>("{}: the function's output {} is undefined", describe(*this), i);
  if (output_shape_) {
    std::vector<Shape> shapes;
    for (const auto& x : inputs) shapes.push_back(x.shape());
    Shape expected = output_shape_(shapes);
    if (outputs.size() != 1)
      raise<ValueError>("{}: output_shape describes one output but the function returned {}", describe(*this),
                        outputs.size());
    if (!outputs[0].shape().compatible_with(expected))
      raise<ShapeError>(
          "{}: the function returned shape {} but output_shape says {}; fix the function or "
          "output_shape",
          describe(*this), outputs[0].shape().to_string(), expected.to_string());
  }
  return outputs;
}

nlohmann::json Lambda::get_config() const {
  // Keras's Lambda keys; the function is C++ code, which Keras shows by name and can only rebuild
  // from custom_objects={"tower_cpp_function": ...}.
  return layer_config(*this, {{"function", "tower_cpp_function"},
                              {"function_type", "function"},
                              {"module", "tower (C++ code, not serializable)"},
                              {"output_shape", nullptr},
                              {"output_shape_type", "raw"},
                              {"output_shape_module", nullptr},
                              {"arguments", nlohmann::json::object()}});
}

LayerPtr Lambda::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Lambda");
  raise<ValueError>("Lambda \"{}\" holds code that a file cannot carry; rebuild the model in C++ (with your "
                    "Lambda) and load_weights",
                    r.name());
}

}  // namespace tower::layers
