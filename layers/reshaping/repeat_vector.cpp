// RepeatVector.
#include "tower/layers/reshaping/repeat_vector.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

RepeatVector::RepeatVector(std::int64_t n, const RepeatVectorOptions& options)
    : Layer(options.name, "repeat_vector"), n_(n) {
  if (n < 1) raise<ValueError>("{}: n (the number of repetitions) must be at least 1, got {}", describe(*this), n);
}

std::vector<SymbolicTensor> RepeatVector::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, features)
  expect_input_rank(*this, x.shape(), 2, "(batch, features)");
  expect_known_dim(*this, x.shape(), 1, "features");
  // Keras: repeat(expand_dims(x, 1), n, axis=1). n copies of (batch, 1, features) side by side; the
  // gradient of concat sums the n slices back into x.
  const SymbolicTensor column = ops::reshape(x, {-1, 1, x.shape().dim(1)});  // (batch, 1, features)
  if (n_ == 1) return {column};
  return {ops::concat(std::vector<SymbolicTensor>(static_cast<std::size_t>(n_), column), 1)};  // (batch, n, features)
}

nlohmann::json RepeatVector::get_config() const { return layer_config(*this, {{"n", n_}}); }

LayerPtr RepeatVector::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "RepeatVector");
  r.check_common();
  return r.finish(RepeatVector(r.integer("n"), {.name = r.name()}));
}

}  // namespace tower::layers
