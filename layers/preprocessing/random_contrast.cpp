// RandomContrast.
#include "tower/layers/preprocessing/random_contrast.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

RandomContrast::RandomContrast(const std::vector<double>& factor, const RandomContrastOptions& options)
    : Layer(options.name, "random_contrast"),
      value_range_(options.value_range),
      seed_(options.seed ? *options.seed : next_seed()),
      seed_given_(options.seed.has_value()) {
  if (factor.size() != 1 && factor.size() != 2)
    raise<ValueError>("{}: factor must be one number or (lower, upper), got {} values", describe(*this),
                      factor.size());
  lower_ = factor[0];
  upper_ = factor.back();
  if (!(lower_ >= 0 && lower_ <= 1 && upper_ >= 0 && upper_ <= 1))
    raise<ValueError>("{}: factor ({}, {}) must lie in [0, 1]: the contrast is scaled by [1 - lower, 1 + upper]",
                      describe(*this), lower_, upper_);
  if (value_range_.size() != 2 || !(value_range_[0] < value_range_[1]))
    raise<ValueError>("{}: value_range must be (low, high) with low < high", describe(*this));
}

void RandomContrast::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 4, "(batch, height, width, channels)");
}

std::vector<SymbolicTensor> RandomContrast::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor x = inputs.at(0);  // (batch, h, w, c)
  expect_input_rank(*this, x.shape(), 4, "(batch, height, width, channels)");
  if (!is_floating(x.dtype())) x = ops::cast(x, DType::float32);
  if (!ctx.training) return {x};
  const SymbolicTensor factor = ops::random_uniform(x, 1.0 - lower_, 1.0 + upper_, seed_,
                                                    ctx.replica ? ctx.replica->first_row : SymbolicTensor(),
                                                    {-1, 1, 1, 1});               // (batch, 1, 1, 1)
  const SymbolicTensor mean = ops::reduce_mean(x, {1, 2}, /*keepdims=*/true);  // (batch, 1, 1, c)
  const SymbolicTensor y = ops::add(ops::multiply(ops::subtract(x, mean), factor), mean);
  return {ops::minimum(ops::maximum(y, ops::fill_like(y, value_range_[0])), ops::fill_like(y, value_range_[1]))};
}

nlohmann::json RandomContrast::get_config() const {
  return layer_config(*this, {{"factor", {lower_, upper_}},
                              {"value_range", value_range_},
                              {"seed", seed_given_ ? nlohmann::json(seed_) : nlohmann::json(nullptr)}});
}

LayerPtr RandomContrast::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "RandomContrast");
  r.check_common();
  if (!r.has("factor")) r.fail("field \"factor\" is missing (the contrast range)");
  const auto& f = config["factor"];
  std::vector<double> factor;
  if (f.is_number()) factor = {f.get<double>()};
  else if (f.is_array() && f.size() == 2 && f[0].is_number() && f[1].is_number()) factor = f.get<std::vector<double>>();
  else r.fail("field \"factor\" must be a number or (lower, upper), got " + f.dump());
  RandomContrastOptions options{.name = r.name()};
  if (r.has("value_range")) options.value_range = config["value_range"].get<std::vector<double>>();
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(RandomContrast(factor, options));
}

}  // namespace tower::layers
