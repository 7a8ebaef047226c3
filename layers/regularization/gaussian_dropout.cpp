// GaussianDropout.
#include "tower/layers/regularization/gaussian_dropout.h"

#include <cmath>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

GaussianDropout::GaussianDropout(double rate, const GaussianDropoutOptions& options)
    : Layer(options.name, "gaussian_dropout"),
      rate_(rate),
      seed_(options.seed ? *options.seed : next_seed()),
      seed_given_(options.seed.has_value()) {
  // Keras accepts rate = 1, but then the noise's standard deviation sqrt(rate / (1 - rate)) is infinite.
  if (!(rate >= 0.0 && rate < 1.0))
    raise<ValueError>("{}: rate must be in [0, 1) (the noise's variance is rate / (1 - rate)), got {}", describe(*this),
                      rate);
}

std::vector<SymbolicTensor> GaussianDropout::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  if (!ctx.training || rate_ == 0.0) return {x};
  const double stddev = std::sqrt(rate_ / (1.0 - rate_));
  return {ops::multiply(
      x, ops::random_normal(x, 1.0, stddev, seed_, ctx.replica ? ctx.replica->first_row : SymbolicTensor()))};
}

nlohmann::json GaussianDropout::get_config() const {
  return layer_config(*this,
                      {{"rate", rate_}, {"seed", seed_given_ ? nlohmann::json(seed_) : nlohmann::json(nullptr)}});
}

LayerPtr GaussianDropout::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GaussianDropout");
  r.check_common();
  if (!r.has("rate")) r.fail("field \"rate\" is missing (the fraction Dropout would drop)");
  GaussianDropoutOptions options{.name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(GaussianDropout(r.number("rate", 0.0), options));
}

}  // namespace tower::layers
