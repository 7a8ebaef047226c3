// Dropout.
#include "tower/layers/regularization/dropout.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Dropout::Dropout(double rate, const DropoutOptions& options)
    : Layer(options.name, "dropout"), rate_(rate), seed_(options.seed ? *options.seed : next_seed()),
      seed_given_(options.seed.has_value()) {
  // Keras accepts rate = 1, but then no input survives and the scale 1 / (1 - rate) is infinite.
  if (!(rate >= 0.0 && rate < 1.0))
    raise<ValueError>("{}: rate must be in [0, 1) (the fraction of inputs to drop), got {}", describe(*this), rate);
}

std::vector<SymbolicTensor> Dropout::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  if (!ctx.training || rate_ == 0.0) return {x};
  return {ops::dropout(x, rate_, seed_, ctx.replica ? ctx.replica->first_row : SymbolicTensor())[0]};
}

nlohmann::json Dropout::get_config() const {
  return layer_config(*this, {{"rate", rate_},
                              {"noise_shape", nullptr},
                              {"seed", seed_given_ ? nlohmann::json(seed_) : nlohmann::json(nullptr)}});
}

LayerPtr Dropout::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Dropout");
  r.check_common();
  r.expect("noise_shape", nullptr, "dropout masks shared along axes");
  DropoutOptions options{.name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(Dropout(r.number("rate", 0.0), options));
}

}  // namespace tower::layers
