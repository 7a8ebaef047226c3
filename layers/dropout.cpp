// Dropout.
#include "layers/dropout.h"

#include "core/error.h"
#include "core/ops.h"
#include "core/random.h"
#include "layers/layer_utils.h"

namespace tower::layers {

Dropout::Dropout(double rate, const DropoutOptions& options)
    : Layer(options.name, "dropout"), rate_(rate), seed_(options.seed ? *options.seed : next_seed()) {
  // Keras accepts rate = 1, but then no input survives and the scale 1 / (1 - rate) is infinite.
  if (!(rate >= 0.0 && rate < 1.0))
    raise<ValueError>("{}: rate must be in [0, 1) (the fraction of inputs to drop), got {}", describe(*this), rate);
}

std::vector<SymbolicTensor> Dropout::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  if (!ctx.training || rate_ == 0.0) return {x};
  return {ops::dropout(x, rate_, seed_)[0]};
}

}  // namespace tower::layers
