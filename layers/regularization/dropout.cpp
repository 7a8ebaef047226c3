// Dropout.
#include "tower/layers/regularization/dropout.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Dropout::Dropout(double rate, const DropoutOptions& options)
    : Layer(options.name, "dropout"),
      rate_(rate),
      noise_shape_(options.noise_shape),
      seed_(options.seed ? *options.seed : next_seed()),
      seed_given_(options.seed.has_value()) {
  check_noise_shape(*this, noise_shape_);
  // Keras accepts rate = 1, but then no input survives and the scale 1 / (1 - rate) is infinite.
  if (!(rate >= 0.0 && rate < 1.0))
    raise<ValueError>("{}: rate must be in [0, 1) (the fraction of inputs to drop), got {}", describe(*this), rate);
}

std::vector<SymbolicTensor> Dropout::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);
  const std::vector<std::int64_t> mask_shape = noise_mask_shape(*this, x.shape(), noise_shape_);
  if (!ctx.training || rate_ == 0.0) return {x};
  const SymbolicTensor first_row = ctx.replica ? ctx.replica->first_row : SymbolicTensor();
  if (noise_shape_.empty()) return {ops::dropout(x, rate_, seed_, first_row)[0]};
  // The dropout op on ones of the mask's shape gives the mask (with noise_shape all None, the mask
  // plain Dropout draws); a mask shared along the batch is the same on every replica: no row offset.
  const SymbolicTensor ones =
      ops::ones_like(ops::slice(x, std::vector<std::int64_t>(mask_shape.size(), 0), mask_shape));
  const bool shared_rows = !mask_shape.empty() && mask_shape[0] == 1;
  const SymbolicTensor mask =
      ops::stop_gradient(ops::dropout(ones, rate_, seed_, shared_rows ? SymbolicTensor() : first_row)[0]);
  return {ops::multiply(x, mask)};
}

nlohmann::json Dropout::get_config() const {
  return layer_config(*this, {{"rate", rate_},
                              {"noise_shape", noise_shape_to_json(noise_shape_)},
                              {"seed", seed_given_ ? nlohmann::json(seed_) : nlohmann::json(nullptr)}});
}

LayerPtr Dropout::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Dropout");
  r.check_common();
  DropoutOptions options{.noise_shape = read_noise_shape(r), .name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(Dropout(r.number("rate", 0.0), options));
}

void check_noise_shape(const Layer& layer, const std::vector<std::int64_t>& noise_shape) {
  for (std::size_t a = 0; a < noise_shape.size(); ++a)
    if (noise_shape[a] != -1 && noise_shape[a] <= 0)
      raise<ValueError>(
          "{}: noise_shape {} has {} at index {}; give each axis a positive size (1 shares the mask "
          "along it) or -1 (None: the input's size)",
          describe(layer), noise_shape_to_json(noise_shape).dump(), noise_shape[a], a);
}

std::vector<std::int64_t> noise_mask_shape(const Layer& layer, const Shape& x,
                                           const std::vector<std::int64_t>& noise_shape) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(x.rank()), -1);
  if (noise_shape.empty()) return out;
  if (static_cast<int>(noise_shape.size()) != x.rank())
    raise<ValueError>(
        "{}: noise_shape {} has {} entries but the input {} has rank {}; give one entry per axis, "
        "batch included (None for the batch)",
        describe(layer), noise_shape_to_json(noise_shape).dump(), noise_shape.size(), x.to_string(), x.rank());
  for (int a = 0; a < x.rank(); ++a) {
    const std::int64_t n = noise_shape[static_cast<std::size_t>(a)];
    if (n == 1 && x[a] != 1)
      out[static_cast<std::size_t>(a)] = 1;
    else if (n != -1 && a > 0 && n != x[a] && x[a] >= 0)
      raise<ValueError>(
          "{}: noise_shape {} has {} on axis {} where the input {} has {}; the mask must broadcast "
          "to the input: use 1, {} or None there",
          describe(layer), noise_shape_to_json(noise_shape).dump(), n, a, x.to_string(), x[a], x[a]);
  }
  return out;
}

std::vector<std::int64_t> read_noise_shape(const ConfigReader& r) {
  if (!r.has("noise_shape")) return {};
  const nlohmann::json& j = r.json()["noise_shape"];
  if (!j.is_array()) r.fail(fmt::format("field \"noise_shape\" = {} is not a list of integers and nulls", j.dump()));
  std::vector<std::int64_t> out;
  for (const auto& e : j) {
    if (e.is_null())
      out.push_back(-1);
    else if (e.is_number_integer() && e.get<std::int64_t>() > 0)
      out.push_back(e.get<std::int64_t>());
    else
      r.fail(fmt::format("field \"noise_shape\" = {}: entries are positive integers or null", j.dump()));
  }
  return out;
}

nlohmann::json noise_shape_to_json(const std::vector<std::int64_t>& noise_shape) {
  if (noise_shape.empty()) return nullptr;
  nlohmann::json out = nlohmann::json::array();
  for (std::int64_t n : noise_shape) out.push_back(n == -1 ? nlohmann::json(nullptr) : nlohmann::json(n));
  return out;
}

}  // namespace tower::layers
