// The shared pieces of the random geometric preprocessing layers.
#include "tower/layers/preprocessing/random_geometry.h"

#include <algorithm>
#include <cmath>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers::geometry {

std::pair<double, double> factor_range(const Layer& layer, const std::vector<double>& factor, const char* name,
                                       double min, bool min_inclusive) {
  if (factor.size() != 1 && factor.size() != 2)
    raise<ValueError>("{}: {} must be one number or (lower, upper), got {} values", describe(layer), name,
                      factor.size());
  for (double f : factor)
    if (!std::isfinite(f) || f > 1.0 || (min_inclusive ? f < min : f <= min))
      raise<ValueError>("{}: {} must lie in {}{}, 1.0], got {}", describe(layer), name, min_inclusive ? "[" : "(", min,
                        f);
  if (factor.size() == 1) return {-std::abs(factor[0]), std::abs(factor[0])};
  return {std::min(factor[0], factor[1]), std::max(factor[0], factor[1])};
}

nlohmann::json factor_json(const std::vector<double>& factor) {
  return factor.size() == 1 ? nlohmann::json(factor[0]) : nlohmann::json(factor);
}

std::vector<double> factor_from_config(const ConfigReader& r, const char* key) {
  if (!r.has(key)) r.fail(std::string("field \"") + key + "\" is missing");
  const auto& f = r.json()[key];
  if (f.is_number()) return {f.get<double>()};
  if (f.is_array() && f.size() == 2 && f[0].is_number() && f[1].is_number()) return f.get<std::vector<double>>();
  r.fail(std::string("field \"") + key + "\" must be a number or (lower, upper), got " + f.dump());
  return {};
}

void check_modes(const Layer& layer, const std::string& fill_mode, const std::string& interpolation) {
  if (fill_mode != "reflect" && fill_mode != "wrap" && fill_mode != "constant" && fill_mode != "nearest")
    raise<ValueError>("{}: fill_mode \"{}\" is not supported; use \"reflect\", \"wrap\", \"constant\" or \"nearest\"",
                      describe(layer), fill_mode);
  if (interpolation != "bilinear" && interpolation != "nearest")
    raise<ValueError>("{}: interpolation \"{}\" is not supported; use \"bilinear\" or \"nearest\"", describe(layer),
                      interpolation);
}

RandomGeometryOptions options_from_config(const ConfigReader& r) {
  RandomGeometryOptions options{.fill_mode = r.string("fill_mode", "reflect"),
                                .interpolation = r.string("interpolation", "bilinear"),
                                .fill_value = r.number("fill_value", 0.0),
                                .name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return options;
}

nlohmann::json options_json(const RandomGeometryOptions& options, std::uint64_t seed, bool seed_given) {
  return {{"fill_mode", options.fill_mode},
          {"interpolation", options.interpolation},
          {"seed", seed_given ? nlohmann::json(seed) : nlohmann::json(nullptr)},
          {"fill_value", options.fill_value},
          {"data_format", "channels_last"}};
}

std::pair<std::int64_t, std::int64_t> image_size(const Layer& layer, const Shape& x) {
  expect_input_rank(layer, x, 4, "(batch, height, width, channels)");
  if (x[1] < 1 || x[2] < 1)
    raise<ShapeError>("{}: the input {} needs a known height and width (the transforms are built from them)",
                      describe(layer), x.to_string());
  return {x[1], x[2]};
}

SymbolicTensor draw(CallContext& ctx, const SymbolicTensor& x, std::uint64_t seed, std::int64_t columns) {
  return ops::random_uniform(x, 0.0, 1.0, seed, ctx.replica ? ctx.replica->first_row : SymbolicTensor(), {-1, columns});
}

SymbolicTensor column(const SymbolicTensor& u, std::int64_t j, double lo, double hi) {
  const SymbolicTensor c = ops::slice(u, {0, j}, {-1, 1});  // (batch, 1)
  return ops::add(ops::scale(c, hi - lo), ops::fill_like(c, lo));
}

SymbolicTensor transforms(const SymbolicTensor& like, const std::vector<Entry>& entries) {
  std::vector<SymbolicTensor> columns;
  for (const Entry& e : entries) columns.push_back(e.column.defined() ? e.column : ops::fill_like(like, e.constant));
  return ops::concat(columns, 1);
}

}  // namespace tower::layers::geometry
