// Pooling1D.
#include "tower/layers/pooling/pooling1d.h"

#include "tower/core/error.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Pooling1D::Pooling1D(std::string class_name, std::int64_t pool_size, const Pooling1DOptions& options)
    : Layer(options.name, to_snake_case(class_name)), class_name_(std::move(class_name)) {
  set_data_format(options.data_format);
  const std::int64_t p = normalize_tuple(*this, "pool_size", {pool_size}, 1)[0];
  const std::int64_t s = options.strides ? normalize_tuple(*this, "strides", {*options.strides}, 1)[0] : p;
  args_ = {.pool_size = {1, p}, .strides = {1, s}, .padding = normalize_padding(*this, options.padding)};
}

void Pooling1D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 3, "(batch, steps, channels)");
}

std::vector<SymbolicTensor> Pooling1D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, steps, c)
  expect_input_rank(*this, x.shape(), 3, "(batch, steps, channels)");
  const std::int64_t steps = x.shape().dim(1), channels = x.shape().dim(2);
  if (steps < 0 || channels < 0)
    raise<ShapeError>("{}: needs known steps and channels, got input {}; give the Input its length", describe(*this),
                      x.shape().to_string());
  if (args_.padding == "valid" && steps < pool_size())
    raise<ShapeError>(
        "{}: input {} has {} steps, fewer than pool_size {} with \"valid\" padding; use padding "
        "\"same\" or a longer input",
        describe(*this), x.shape().to_string(), steps, pool_size());
  SymbolicTensor y = pool(ops::reshape(x, {-1, 1, steps, channels}), args_);  // (batch, 1, out, c)
  return {ops::reshape(y, {-1, y.shape().dim(2), channels})};                 // (batch, out, c)
}

nlohmann::json Pooling1D::get_config() const {
  return layer_config(*this, {{"strides", ints_to_json({strides()})},
                              {"pool_size", ints_to_json({pool_size()})},
                              {"padding", args_.padding},
                              {"data_format", data_format()}});
}

Pooling1DOptions Pooling1D::options_from_config(const ConfigReader& r) {
  r.check_common();
  Pooling1DOptions options{.padding = r.padding("padding"), .data_format = r.data_format(), .name = r.name()};
  if (r.has("strides")) options.strides = r.one_int("strides", 0);
  return options;
}

std::int64_t Pooling1D::pool_size_from_config(const ConfigReader& r) { return r.one_int("pool_size", 2); }

}  // namespace tower::layers
