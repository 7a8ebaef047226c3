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

void normalize_window_2d(const Layer& layer, std::vector<std::int64_t>& strides, std::string& padding,
                         std::vector<std::int64_t>& dilation_rate) {
  strides = normalize_tuple(layer, "strides", strides, 2);
  dilation_rate = normalize_tuple(layer, "dilation_rate", dilation_rate, 2);
  padding = normalize_padding(layer, padding);
  // As Keras (and TF's kernels): a dilated kernel moves one pixel at a time.
  const bool strided = strides[0] > 1 || strides[1] > 1;
  const bool dilated = dilation_rate[0] > 1 || dilation_rate[1] > 1;
  if (strided && dilated)
    raise<ValueError>("{}: strides > 1 are not supported together with dilation_rate > 1; use one of them",
                      describe(layer));
}

void normalize_window_3d(const Layer& layer, std::vector<std::int64_t>& strides, std::string& padding,
                         std::vector<std::int64_t>& dilation_rate) {
  strides = normalize_tuple(layer, "strides", strides, 3);
  dilation_rate = normalize_tuple(layer, "dilation_rate", dilation_rate, 3);
  padding = normalize_padding(layer, padding);
  const bool strided = strides[0] > 1 || strides[1] > 1 || strides[2] > 1;
  const bool dilated = dilation_rate[0] > 1 || dilation_rate[1] > 1 || dilation_rate[2] > 1;
  if (strided && dilated)
    raise<ValueError>("{}: strides > 1 are not supported together with dilation_rate > 1; use one of them",
                      describe(layer));
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
