// Cropping1D.
#include "tower/layers/reshaping/cropping1d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Cropping1D::Cropping1D(const std::vector<std::int64_t>& cropping, const Cropping1DOptions& options)
    : Layer(options.name, "cropping1d") {
  cropping_ = normalize_tuple(*this, "cropping", cropping, 2, /*min_value=*/0);  // (left, right)
}

void Cropping1D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 3, "(batch, steps, channels)");
}

std::vector<SymbolicTensor> Cropping1D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, steps, c)
  expect_input_rank(*this, x.shape(), 3, "(batch, steps, channels)");
  const std::int64_t steps = x.shape().dim(1), left = cropping_[0], right = cropping_[1];
  if (steps < 0 && right > 0)
    raise<ShapeError>("{}: cropping at the end needs a known number of steps, got input {}; give the Input its length",
                      describe(*this), x.shape().to_string());
  if (steps >= 0 && left + right >= steps)  // as Keras: nothing would be left
    raise<ShapeError>("{}: cropping ({}, {}) must be smaller than the input length, got input {}", describe(*this),
                      left, right, x.shape().to_string());
  return {ops::slice(x, {0, left, 0}, {-1, steps < 0 ? -1 : steps - left - right, -1})};
}

nlohmann::json Cropping1D::get_config() const { return layer_config(*this, {{"cropping", ints_to_json(cropping_)}}); }

LayerPtr Cropping1D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Cropping1D");
  r.check_common();
  auto cropping = r.ints("cropping", {1, 1});
  if (cropping.size() != 1 && cropping.size() != 2)
    r.fail("field \"cropping\" must be an integer or (left, right), got " + config["cropping"].dump());
  return r.finish(Cropping1D(cropping, {.name = r.name()}));
}

}  // namespace tower::layers
