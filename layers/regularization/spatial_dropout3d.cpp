// SpatialDropout3D.
#include "tower/layers/regularization/spatial_dropout3d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

SpatialDropout3D::SpatialDropout3D(double rate, const SpatialDropout3DOptions& options)
    : Layer(options.name, "spatial_dropout3d"),
      rate_(rate),
      seed_(options.seed ? *options.seed : next_seed()),
      seed_given_(options.seed.has_value()) {
  set_data_format(options.data_format);
  if (!(rate >= 0.0 && rate < 1.0))
    raise<ValueError>("{}: rate must be in [0, 1) (the fraction of channels to drop), got {}", describe(*this), rate);
}

void SpatialDropout3D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 5, "(batch, dim1, dim2, dim3, channels)");
}

std::vector<SymbolicTensor> SpatialDropout3D::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, d1, d2, d3, c)
  expect_input_rank(*this, x.shape(), 5, "(batch, dim1, dim2, dim3, channels)");
  if (!ctx.training || rate_ == 0.0 || x.shape().dim(1) == 0) return {x};
  // The dropout op on ones (batch, 1, 1, 1, channels) gives the mask: the same generator and replica row offsets as
  // Dropout, with one row per sample, so towers draw between them what one device draws for the batch.
  // (batch, 1, 1, 1, channels)
  const SymbolicTensor ones = ops::ones_like(ops::slice(x, {0, 0, 0, 0, 0}, {-1, 1, 1, 1, -1}));
  const SymbolicTensor mask =
      ops::stop_gradient(ops::dropout(ones, rate_, seed_, ctx.replica ? ctx.replica->first_row : SymbolicTensor())[0]);
  return {ops::multiply(x, mask)};  // every voxel of a channel kept or dropped together
}

nlohmann::json SpatialDropout3D::get_config() const {
  return layer_config(*this, {{"rate", rate_},
                              {"noise_shape", nullptr},
                              {"seed", seed_given_ ? nlohmann::json(seed_) : nlohmann::json(nullptr)},
                              {"data_format", data_format()}});
}

LayerPtr SpatialDropout3D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "SpatialDropout3D");
  r.check_common();
  r.expect("noise_shape", nullptr, "SpatialDropout3D's noise shape is always (batch, 1, 1, 1, channels)");
  SpatialDropout3DOptions options{.data_format = r.data_format(), .name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(SpatialDropout3D(r.number("rate", 0.0), options));
}

}  // namespace tower::layers
