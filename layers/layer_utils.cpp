// Helpers shared by the layers.
#include "tower/layers/layer_utils.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "tower/core/error.h"
#include "tower/core/ops.h"

namespace tower::layers {

std::string describe(const Layer& layer) { return fmt::format("{} \"{}\"", layer.class_name(), layer.name()); }

std::vector<std::int64_t> normalize_tuple(const Layer& layer, const char* arg, const std::vector<std::int64_t>& value,
                                          std::size_t n, std::int64_t min_value) {
  bool ok = (value.size() == 1 || value.size() == n) &&
            std::all_of(value.begin(), value.end(), [&](std::int64_t v) { return v >= min_value; });
  if (!ok)
    raise<ValueError>("{}: {} must be one integer or {} integers, each >= {}, got [{}]", describe(layer), arg, n,
                      min_value, fmt::join(value, ", "));
  return value.size() == n ? value : std::vector<std::int64_t>(n, value[0]);
}

std::string normalize_padding(const Layer& layer, const std::string& padding) {
  std::string lower = padding;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower != "valid" && lower != "same")
    raise<ValueError>("{}: padding must be \"valid\" or \"same\", got \"{}\"", describe(layer), padding);
  return lower;
}

void expect_input_rank(const Layer& layer, const Shape& shape, int rank, const char* layout) {
  if (shape.rank() != rank)
    raise<ShapeError>("{}: expected an input of rank {} {}, got shape {}", describe(layer), rank, layout,
                      shape.to_string());
}

void expect_known_dim(const Layer& layer, const Shape& shape, int axis, const char* what) {
  if (shape.dim(axis) < 0)
    raise<ShapeError>("{}: the {} dimension of the input must be known, got shape {}", describe(layer), what,
                      shape.to_string());
}

SymbolicTensor reverse_first_axis(const SymbolicTensor& x) { return ops::reverse(x, 0); }

}  // namespace tower::layers
