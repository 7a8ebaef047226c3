// ZeroPadding1D.
#include "tower/layers/reshaping/zero_padding1d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

ZeroPadding1D::ZeroPadding1D(std::int64_t padding, const ZeroPadding1DOptions& options)
    : ZeroPadding1D(std::vector<std::int64_t>{padding, padding}, options) {}

ZeroPadding1D::ZeroPadding1D(const std::vector<std::int64_t>& padding, const ZeroPadding1DOptions& options)
    : Layer(options.name, "zero_padding1d") {
  padding_ = normalize_tuple(*this, "padding", padding, 2, /*min_value=*/0);  // (left, right)
}

void ZeroPadding1D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 3, "(batch, steps, channels)");
}

std::vector<SymbolicTensor> ZeroPadding1D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, steps, c)
  expect_input_rank(*this, x.shape(), 3, "(batch, steps, channels)");
  return {ops::pad(x, {0, 0, padding_[0], padding_[1], 0, 0})};
}

nlohmann::json ZeroPadding1D::get_config() const { return layer_config(*this, {{"padding", ints_to_json(padding_)}}); }

LayerPtr ZeroPadding1D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "ZeroPadding1D");
  r.check_common();
  ZeroPadding1DOptions options{.name = r.name()};
  if (!r.has("padding")) return r.finish(ZeroPadding1D(1, options));
  const auto& p = config["padding"];
  if (p.is_object()) {  // Keras 1: {"left_pad": l, "right_pad": r}, either may be missing (0)
    for (const auto& [key, value] : p.items())
      if (key != "left_pad" && key != "right_pad")
        r.fail("field \"padding\" as a dict takes only \"left_pad\" and \"right_pad\", got " + p.dump());
    ConfigReader pads(p, "ZeroPadding1D");
    return r.finish(
        ZeroPadding1D(std::vector<std::int64_t>{pads.integer("left_pad", 0), pads.integer("right_pad", 0)}, options));
  }
  auto flat = r.ints("padding");
  if (flat.size() != 1 && flat.size() != 2)
    r.fail("field \"padding\" must be an integer or (left, right), got " + p.dump());
  return r.finish(ZeroPadding1D(flat, options));
}

}  // namespace tower::layers
