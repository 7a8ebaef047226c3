// GlobalPooling3D.
#include "tower/layers/pooling/global_pooling3d.h"

#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

GlobalPooling3D::GlobalPooling3D(std::string class_name, const GlobalPooling3DOptions& options)
    : Layer(options.name, to_snake_case(class_name)), class_name_(std::move(class_name)), keepdims_(options.keepdims) {
  set_data_format(options.data_format);
}

void GlobalPooling3D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 5, "(batch, depth, height, width, channels)");
}

std::vector<SymbolicTensor> GlobalPooling3D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, d, h, w, c)
  expect_input_rank(*this, x.shape(), 5, "(batch, depth, height, width, channels)");
  return {reduce(x, keepdims_)};
}

nlohmann::json GlobalPooling3D::get_config() const {
  return layer_config(*this, {{"data_format", data_format()}, {"keepdims", keepdims_}});
}

}  // namespace tower::layers
