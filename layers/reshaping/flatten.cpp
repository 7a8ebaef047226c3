// Flatten.
#include "tower/layers/reshaping/flatten.h"

#include <algorithm>

#include "tower/core/checked.h"
#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Flatten::Flatten(const FlattenOptions& options) : Layer(options.name, "flatten") { set_data_format(options.data_format); }

std::vector<SymbolicTensor> Flatten::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, d1, ..., dk)
  const Shape& shape = x.shape();
  if (shape.rank() < 1) raise<ShapeError>("{}: expected an input with a batch axis, got a scalar", describe(*this));
  std::vector<std::int64_t> sample(shape.dims().begin() + 1, shape.dims().end());
  if (std::any_of(sample.begin(), sample.end(), [](std::int64_t d) { return d < 0; }))
    raise<ShapeError>("{}: every dimension but the batch must be known to flatten, got {}", describe(*this),
                      shape.to_string());
  const std::int64_t features = checked_product(
      sample, [&] { return fmt::format("{}: the features of {}", describe(*this), shape.to_string()); },
      "no tensor can be that large");
  return {ops::reshape(x, {-1, features})};  // (batch, features)
}

nlohmann::json Flatten::get_config() const { return layer_config(*this, {{"data_format", data_format()}}); }

LayerPtr Flatten::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Flatten");
  r.check_common();
  return r.finish(Flatten({.data_format = r.data_format(), .name = r.name()}));
}

}  // namespace tower::layers
