// Concatenate.
#include "tower/layers/merging/concatenate.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Concatenate::Concatenate(const ConcatenateOptions& options)
    : Merge("Concatenate", {.name = options.name}), axis_(options.axis) {}

void Concatenate::check_shapes(const std::vector<Shape>& shapes) const {
  if (shapes.empty()) raise<ValueError>("{}: needs a list of at least one input, got none", describe(*this));
  const Shape& first = shapes[0];
  if (axis_ < -first.rank() || axis_ >= first.rank())
    raise<ValueError>("{}: axis {} is out of range for inputs of rank {} ({})", describe(*this), axis_, first.rank(),
                      first.to_string());
  const int axis = axis_ < 0 ? axis_ + first.rank() : axis_;
  for (std::size_t i = 1; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    bool match = s.rank() == first.rank();
    for (int d = 0; match && d < s.rank(); ++d)
      if (d != axis && s[d] >= 0 && first[d] >= 0 && s[d] != first[d]) match = false;
    if (!match)
      raise<ShapeError>(
          "{}: inputs need the same shape except along axis {}, but input 0 has shape {} and input {} "
          "has shape {}",
          describe(*this), axis_, first.to_string(), i, s.to_string());
  }
}

SymbolicTensor Concatenate::merge(const std::vector<SymbolicTensor>& inputs) const {
  return ops::concat(inputs, axis_);
}

nlohmann::json Concatenate::get_config() const { return layer_config(*this, {{"axis", axis_}}); }

LayerPtr Concatenate::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Concatenate");
  r.check_common();
  return r.finish(Concatenate({.axis = r.axis(r.integer("axis", -1), "axis"), .name = r.name()}));
}

}  // namespace tower::layers
