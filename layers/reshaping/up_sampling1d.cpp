// UpSampling1D.
#include "tower/layers/reshaping/up_sampling1d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

UpSampling1D::UpSampling1D(std::int64_t size, const UpSampling1DOptions& options)
    : Layer(options.name, "up_sampling1d"), size_(size) {
  if (size <= 0)
    raise<ValueError>("{}: size must be positive (the times each step repeats), got {}", describe(*this), size);
}

void UpSampling1D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 3, "(batch, steps, channels)");
}

std::vector<SymbolicTensor> UpSampling1D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, steps, c)
  expect_input_rank(*this, x.shape(), 3, "(batch, steps, channels)");
  const std::int64_t steps = x.shape().dim(1), channels = x.shape().dim(2);
  if (steps < 0 || channels < 0)
    raise<ShapeError>("{}: needs known steps and channels, got input {}; give the Input its length", describe(*this),
                      x.shape().to_string());
  if (size_ == 1) return {x};
  // (batch, steps, 1, c) side by side `size` times -> (batch, steps, size, c): step t's copies are adjacent.
  const SymbolicTensor x4 = ops::reshape(x, {-1, steps, 1, channels});
  const SymbolicTensor repeated = ops::concat(std::vector<SymbolicTensor>(static_cast<std::size_t>(size_), x4), 2);
  return {ops::reshape(repeated, {-1, steps * size_, channels})};  // (batch, steps * size, c)
}

nlohmann::json UpSampling1D::get_config() const { return layer_config(*this, {{"size", size_}}); }

LayerPtr UpSampling1D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "UpSampling1D");
  r.check_common();
  return r.finish(UpSampling1D(r.integer("size", 2), {.name = r.name()}));
}

}  // namespace tower::layers
