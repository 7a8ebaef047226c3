// RandomFlip.
#include "tower/layers/preprocessing/random_flip.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

RandomFlip::RandomFlip(const std::string& mode, const RandomFlipOptions& options)
    : Layer(options.name, "random_flip"),
      mode_(mode),
      seed_(options.seed ? *options.seed : next_seed()),
      seed_given_(options.seed.has_value()) {
  if (mode != "horizontal" && mode != "vertical" && mode != "horizontal_and_vertical")
    raise<ValueError>("{}: mode must be \"horizontal\", \"vertical\" or \"horizontal_and_vertical\", got \"{}\"",
                      describe(*this), mode);
}

void RandomFlip::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 4, "(batch, height, width, channels)");
}

std::vector<SymbolicTensor> RandomFlip::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor x = inputs.at(0);  // (batch, h, w, c)
  expect_input_rank(*this, x.shape(), 4, "(batch, height, width, channels)");
  if (!is_floating(x.dtype())) x = ops::cast(x, DType::float32);
  if (!ctx.training) return {x};
  // flip (batch, 1, 1, 1): 1 where u <= 0.5.
  const SymbolicTensor u =
      ops::random_uniform(x, 0.0, 1.0, seed_, ctx.replica ? ctx.replica->first_row : SymbolicTensor(), {-1, 1, 1, 1});
  const SymbolicTensor flip = ops::less_equal(u, ops::fill_like(u, 0.5));
  const SymbolicTensor keep = ops::subtract(ops::ones_like(flip), flip);
  auto flipped_along = [&](const SymbolicTensor& image, int axis) {
    return ops::add(ops::multiply(ops::reverse(image, axis), flip), ops::multiply(image, keep));
  };
  if (mode_ != "vertical") x = flipped_along(x, 2);
  if (mode_ != "horizontal") x = flipped_along(x, 1);
  return {x};
}

nlohmann::json RandomFlip::get_config() const {
  return layer_config(*this, {{"mode", mode_},
                              {"seed", seed_given_ ? nlohmann::json(seed_) : nlohmann::json(nullptr)},
                              {"data_format", "channels_last"}});
}

LayerPtr RandomFlip::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "RandomFlip");
  r.check_common();
  RandomFlipOptions options{.name = r.name()};
  if (r.has("seed")) options.seed = static_cast<std::uint64_t>(r.integer("seed"));
  return r.finish(RandomFlip(r.string("mode", "horizontal_and_vertical"), options));
}

}  // namespace tower::layers
