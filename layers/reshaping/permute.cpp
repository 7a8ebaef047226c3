// Permute.
#include "tower/layers/reshaping/permute.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Permute::Permute(const std::vector<std::int64_t>& dims, const PermuteOptions& options)
    : Layer(options.name, "permute"), dims_(dims) {
  std::vector<std::int64_t> sorted = dims, expected(dims.size());
  std::sort(sorted.begin(), sorted.end());
  std::iota(expected.begin(), expected.end(), 1);
  if (dims.empty() || sorted != expected)
    raise<ValueError>("{}: dims [{}] must be a permutation of 1..{} (the axes after the batch, 1-based, as in Keras: "
                      "Permute({{2, 1}}) swaps the first two)",
                      describe(*this), fmt::join(dims, ", "), std::max<std::size_t>(dims.size(), 1));
}

std::vector<SymbolicTensor> Permute::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, d1, ..., dk)
  if (x.rank() != static_cast<int>(dims_.size()) + 1)
    raise<ShapeError>("{}: dims [{}] permute {} axes after the batch, but the input {} has {}", describe(*this),
                      fmt::join(dims_, ", "), dims_.size(), x.shape().to_string(), x.rank() - 1);
  std::vector<std::int64_t> perm{0};
  perm.insert(perm.end(), dims_.begin(), dims_.end());
  return {ops::transpose(x, perm)};  // (batch, d_dims[0], ...)
}

nlohmann::json Permute::get_config() const { return layer_config(*this, {{"dims", ints_to_json(dims_)}}); }

LayerPtr Permute::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Permute");
  r.check_common();
  return r.finish(Permute(r.ints("dims"), {.name = r.name()}));
}

}  // namespace tower::layers
