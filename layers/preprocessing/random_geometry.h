// What RandomTranslation, RandomRotation, RandomZoom and RandomCrop share: their options, Keras's factor
// ranges, the per-image draws and the (batch, 8) transforms they hand to ops::image_transform.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tower/layers/layer.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

struct RandomGeometryOptions {
  std::string fill_mode = "reflect";       // "reflect", "wrap", "constant" (with fill_value) or "nearest"
  std::string interpolation = "bilinear";  // or "nearest"
  std::optional<std::uint64_t> seed;       // unset: one from tower::next_seed() when the layer is made
  double fill_value = 0.0;
  std::string name;
};

namespace geometry {

// Keras's _set_factor: one value f gives (-|f|, |f|), two give (lower, upper) sorted; each value within
// [min, 1] ((min, 1] when !min_inclusive). ValueError naming the layer and the argument otherwise.
std::pair<double, double> factor_range(const Layer& layer, const std::vector<double>& factor, const char* name,
                                       double min, bool min_inclusive);
// The factor as Keras's config holds it: a number when one was given, else the pair.
nlohmann::json factor_json(const std::vector<double>& factor);
// A factor field of a config (number or pair).
std::vector<double> factor_from_config(const ConfigReader& r, const char* key);
void check_modes(const Layer& layer, const std::string& fill_mode, const std::string& interpolation);
// Reads the options every geometric layer shares from a config.
RandomGeometryOptions options_from_config(const ConfigReader& r);
// The fields every geometric layer writes.
nlohmann::json options_json(const RandomGeometryOptions& options, std::uint64_t seed, bool seed_given);
// (height, width) of x (batch, h, w, c); ShapeError unless both are known.
std::pair<std::int64_t, std::int64_t> image_size(const Layer& layer, const Shape& x);
// u (batch, columns) uniform in [0, 1), in x's dtype, drawn per image with the replica row offset, so
// towers draw what one device draws for the batch.
SymbolicTensor draw(CallContext& ctx, const SymbolicTensor& x, std::uint64_t seed, std::int64_t columns);
// Column j of u (batch, columns), mapped to [lo, hi): (batch, 1).
SymbolicTensor column(const SymbolicTensor& u, std::int64_t j, double lo, double hi);
// (batch, 8) from eight (batch, 1) columns; a double entry is that constant.
struct Entry {
  SymbolicTensor column;
  double constant = 0.0;
  Entry(SymbolicTensor c) : column(std::move(c)) {}  // NOLINT: implicit by design
  Entry(double v) : constant(v) {}                   // NOLINT
};
SymbolicTensor transforms(const SymbolicTensor& like, const std::vector<Entry>& entries);

}  // namespace geometry

}  // namespace tower::layers
