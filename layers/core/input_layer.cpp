// InputLayer and layers::Input.
#include "tower/layers/core/input_layer.h"

#include "tower/layers/layer_config.h"

namespace tower {

InputLayer::InputLayer(const Shape& shape, DType dtype, const std::string& name)
    : Layer(name, "input") {
  std::vector<std::int64_t> dims{-1};
  dims.insert(dims.end(), shape.dims().begin(), shape.dims().end());
  spec_ = TensorSpec{Shape(dims), dtype};
  mark_built();
}

KerasTensor InputLayer::make_output() const {
  auto node = std::make_shared<KerasNode>();
  node->layer = share();
  node->outputs.push_back(spec_);
  return KerasTensor(node, 0);
}

std::vector<SymbolicTensor> InputLayer::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  return inputs;
}

nlohmann::json InputLayer::get_config() const {
  return {{"batch_input_shape", layers::shape_to_json(spec_.shape)},
          {"dtype", std::string(dtype_name(spec_.dtype))},
          {"sparse", false},
          {"ragged", false},
          {"name", name()}};
}

LayerPtr InputLayer::from_config(const nlohmann::json& config) {
  layers::ConfigReader r(config, "InputLayer");
  r.expect("sparse", false, "sparse inputs");
  r.expect("ragged", false, "ragged inputs");
  const char* key = r.has("batch_input_shape") ? "batch_input_shape" : r.has("batch_shape") ? "batch_shape" : nullptr;
  if (!key) r.fail("the config has no \"batch_input_shape\" (or Keras 3's \"batch_shape\"): the input shape is unknown");
  auto dims = r.shape(key);
  if (dims.empty()) r.fail(fmt::format("field \"{}\" must include the batch dimension, got []", key));
  dims.erase(dims.begin());
  std::string dtype = r.has("dtype") && config["dtype"].is_string() ? r.string("dtype", "float32")
                                                                    : r.string("input_dtype", "float32");
  return InputLayer(Shape(dims), layers::dtype_from_name(r, dtype), r.name()).share();
}

namespace layers {

KerasTensor Input(const Shape& shape, const InputOptions& options) {
  auto kt = InputLayer(shape, options.dtype.value_or(floatx()), options.name).make_output();
  if (options.batch_size > 0) {
    auto dims = kt.shape().dims();
    dims[0] = options.batch_size;
    kt.node()->outputs[0].shape = Shape(dims);
  }
  return kt;
}

}  // namespace layers
}  // namespace tower
