// AlphaDropout.
#include "tower/layers/regularization/alpha_dropout.h"

#include <cmath>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"
#include "tower/layers/regularization/dropout.h"

namespace tower::layers {

AlphaDropout::AlphaDropout(double rate, const AlphaDropoutOptions& options)
    : Layer(options.name, "alpha_dropout"),
      rate_(rate),
      noise_shape_(options.noise_shape),
      seed_(options.seed ? *options.seed : next_seed()),
      seed_given_(options.seed.has_value()) {
  // Keras accepts rate = 1, but then a = ((1 - rate) ...)^-1/2 is infinite.
  if (!(rate >= 0.0 && rate < 1.0))
    raise<ValueError>("{}: rate must be in [0, 1) (the fraction of inputs to drop), got {}", describe(*this), rate);
  check_noise_shape(*this, noise_shape_);
}

std::vector<SymbolicTensor> AlphaDropout::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  const std::vector<std::int64_t> mask_shape = noise_mask_shape(*this, x.shape(), noise_shape_);
  if (!ctx.training || rate_ == 0.0) return {x};
  const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  const double alpha_p = -alpha * scale;
  const double a = std::pow((1.0 - rate_) * (1.0 + rate_ * alpha_p * alpha_p), -0.5), b = -a * alpha_p * rate_;
  // u of the mask's shape, with the replica's row offset unless the mask is shared along the batch.
  const bool shared_rows = !mask_shape.empty() && mask_shape[0] == 1;
  const SymbolicTensor first_row = ctx.replica && !shared_rows ? ctx.replica->first_row : SymbolicTensor();
  const SymbolicTensor u = ops::random_uniform(x, 0.0, 1.0, seed_, first_row, mask_shape);
  const SymbolicTensor kept = ops::greater_equal(u, ops::fill_like(u, rate_));  // 1 or 0, no gradient
  // a (x kept + alpha' (1 - kept)) + b = x (a kept) + (a alpha' + b - a alpha' kept).
  const SymbolicTensor factor = ops::scale(kept, a);
  const SymbolicTensor shift = ops::add(ops::scale(kept, -a * alpha_p), ops::fill_like(kept, a * alpha_p + b));
  return {ops::add(ops::multiply(x, factor), shift)};
}

nlohmann::json AlphaDropout::get_config() const {
  nlohmann::json fields = {{"rate", rate_}, {"seed", seed_given_ ? nlohmann::json(seed_) : nlohmann::json(nullptr)}};
  if (!noise_shape_.empty()) fields["noise_shape"] = noise_shape_to_json(noise_shape_);
  return layer_config(*this, fields);
}

LayerPtr AlphaDropout::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "AlphaDropout");
  r.check_common();
  if (!r.has("rate")) r.fail("field \"rate\" is missing (the fraction of inputs to drop)");
  AlphaDropoutOptions options{.noise_shape = read_noise_shape(r), .name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(AlphaDropout(r.number("rate", 0.0), options));
}

}  // namespace tower::layers
