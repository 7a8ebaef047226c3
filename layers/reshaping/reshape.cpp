// Reshape.
#include "tower/layers/reshaping/reshape.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>

#include "tower/core/checked.h"
#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Reshape::Reshape(const std::vector<std::int64_t>& target_shape, const ReshapeOptions& options)
    : Layer(options.name, "reshape"), target_shape_(target_shape) {
  bool dims_ok =
      std::all_of(target_shape.begin(), target_shape.end(), [](std::int64_t d) { return d >= 1 || d == -1; });
  if (!dims_ok || std::count(target_shape.begin(), target_shape.end(), -1) > 1)
    raise<ValueError>("{}: target_shape [{}] must hold positive sizes and at most one -1 (inferred)", describe(*this),
                      fmt::join(target_shape, ", "));
}

std::vector<SymbolicTensor> Reshape::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, ...)
  const Shape& shape = x.shape();
  if (shape.rank() < 1) raise<ShapeError>("{}: expected an input with a batch axis, got a scalar", describe(*this));
  std::vector<std::int64_t> target = target_shape_;
  auto inferred = std::find(target.begin(), target.end(), -1);
  std::vector<std::int64_t> given;  // the target's sizes but the inferred one
  std::copy_if(target.begin(), target.end(), std::back_inserter(given), [](std::int64_t d) { return d != -1; });
  const std::int64_t target_size = checked_product(
      given,
      [&] { return fmt::format("{}: the elements of target_shape [{}]", describe(*this), fmt::join(target_shape_, ", ")); },
      "no tensor can be that large");

  Shape sample(std::vector<std::int64_t>(shape.dims().begin() + 1, shape.dims().end()));
  if (sample.is_fully_known()) {
    const std::int64_t size = sample.num_elements();
    bool fits = inferred != target.end() ? size % target_size == 0 : size == target_size;
    if (!fits)
      raise<ShapeError>(
          "{}: the total size must be unchanged: the input {} has {} elements per sample, which "
          "target_shape [{}] cannot hold",
          describe(*this), shape.to_string(), size, fmt::join(target_shape_, ", "));
    if (inferred != target.end()) *inferred = size / target_size;
  } else if (inferred != target.end()) {
    raise<ShapeError>("{}: cannot infer the -1 of target_shape [{}] from the input {} whose size is unknown",
                      describe(*this), fmt::join(target_shape_, ", "), shape.to_string());
  }
  target.insert(target.begin(), -1);
  return {ops::reshape(x, target)};  // (batch, target_shape...)
}

nlohmann::json Reshape::get_config() const { return layer_config(*this, {{"target_shape", ints_to_json(target_shape_)}}); }

LayerPtr Reshape::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Reshape");
  r.check_common();
  return r.finish(Reshape(r.ints("target_shape"), {.name = r.name()}));
}

}  // namespace tower::layers
