// Pooling3D.
#include "tower/layers/pooling/pooling3d.h"

#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Pooling3D::Pooling3D(std::string class_name, const std::vector<std::int64_t>& pool_size,
                     const Pooling3DOptions& options)
    : Layer(options.name, to_snake_case(class_name)), class_name_(std::move(class_name)) {
  set_data_format(options.data_format);
  args_.pool_size = normalize_tuple(*this, "pool_size", pool_size, 3);
  args_.strides = options.strides.empty() ? args_.pool_size : normalize_tuple(*this, "strides", options.strides, 3);
  args_.padding = normalize_padding(*this, options.padding);
}

void Pooling3D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 5, "(batch, depth, height, width, channels)");
}

std::vector<SymbolicTensor> Pooling3D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, d, h, w, c)
  expect_input_rank(*this, x.shape(), 5, "(batch, depth, height, width, channels)");
  return {pool(x, args_)};  // (batch, out_d, out_h, out_w, c)
}

nlohmann::json Pooling3D::get_config() const {
  return layer_config(*this, {{"pool_size", ints_to_json(args_.pool_size)},
                              {"padding", args_.padding},
                              {"strides", ints_to_json(args_.strides)},
                              {"data_format", data_format()}});
}

Pooling3DOptions Pooling3D::options_from_config(const ConfigReader& r) {
  r.check_common();
  return {.strides = r.ints("strides", {}),
          .padding = r.padding("padding"),
          .data_format = r.data_format(),
          .name = r.name()};
}

}  // namespace tower::layers
