// InputLayer and layers::Input.
#include "layers/input_layer.h"

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

namespace layers {

KerasTensor Input(const Shape& shape, const InputOptions& options) {
  auto kt = InputLayer(shape, options.dtype, options.name).make_output();
  if (options.batch_size > 0) {
    auto dims = kt.shape().dims();
    dims[0] = options.batch_size;
    kt.node()->outputs[0].shape = Shape(dims);
  }
  return kt;
}

}  // namespace layers
}  // namespace tower
