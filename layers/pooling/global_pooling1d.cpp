// GlobalPooling1D.
#include "tower/layers/pooling/global_pooling1d.h"

#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

GlobalPooling1D::GlobalPooling1D(std::string class_name, const GlobalPooling1DOptions& options)
    : Layer(options.name, to_snake_case(class_name)), class_name_(std::move(class_name)), keepdims_(options.keepdims) {
  set_data_format(options.data_format);
}

void GlobalPooling1D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 3, "(batch, steps, channels)");
}

std::vector<SymbolicTensor> GlobalPooling1D::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, steps, c)
  expect_input_rank(*this, x.shape(), 3, "(batch, steps, channels)");
  return {reduce(x, keepdims_, input_mask(ctx, 0))};
}

nlohmann::json GlobalPooling1D::get_config() const {
  return layer_config(*this, {{"data_format", data_format()}, {"keepdims", keepdims_}});
}

}  // namespace tower::layers
