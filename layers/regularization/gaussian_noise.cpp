// GaussianNoise.
#include "tower/layers/regularization/gaussian_noise.h"

#include <cmath>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

GaussianNoise::GaussianNoise(double stddev, const GaussianNoiseOptions& options)
    : Layer(options.name, "gaussian_noise"),
      stddev_(stddev),
      seed_(options.seed ? *options.seed : next_seed()),
      seed_given_(options.seed.has_value()) {
  if (!(stddev >= 0.0 && std::isfinite(stddev)))
    raise<ValueError>("{}: stddev must be a finite number >= 0 (the noise's standard deviation), got {}",
                      describe(*this), stddev);
}

std::vector<SymbolicTensor> GaussianNoise::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  if (!ctx.training || stddev_ == 0.0) return {x};
  // The replica's row offset: towers draw between them the noise one device draws for the batch.
  return {
      ops::add(x, ops::random_normal(x, 0.0, stddev_, seed_, ctx.replica ? ctx.replica->first_row : SymbolicTensor()))};
}

nlohmann::json GaussianNoise::get_config() const {
  return layer_config(*this,
                      {{"stddev", stddev_}, {"seed", seed_given_ ? nlohmann::json(seed_) : nlohmann::json(nullptr)}});
}

LayerPtr GaussianNoise::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "GaussianNoise");
  r.check_common();
  if (!r.has("stddev")) r.fail("field \"stddev\" is missing (the noise's standard deviation)");
  GaussianNoiseOptions options{.name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(GaussianNoise(r.number("stddev", 0.0), options));
}

}  // namespace tower::layers
