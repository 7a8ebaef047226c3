// ZeroPadding3D.
#include "tower/layers/reshaping/zero_padding3d.h"

#include <fmt/ranges.h>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

ZeroPadding3D::ZeroPadding3D(std::int64_t padding, const ZeroPadding3DOptions& options)
    : ZeroPadding3D(std::vector<std::vector<std::int64_t>>{{padding, padding}, {padding, padding}, {padding, padding}},
                    options) {}

ZeroPadding3D::ZeroPadding3D(const std::vector<std::int64_t>& padding, const ZeroPadding3DOptions& options)
    : Layer(options.name, "zero_padding3d") {
  set_data_format(options.data_format);
  auto dhw = normalize_tuple(*this, "padding", padding, 3, /*min_value=*/0);
  padding_ = {dhw[0], dhw[0], dhw[1], dhw[1], dhw[2], dhw[2]};
}

ZeroPadding3D::ZeroPadding3D(const std::vector<std::vector<std::int64_t>>& padding, const ZeroPadding3DOptions& options)
    : Layer(options.name, "zero_padding3d") {
  set_data_format(options.data_format);
  bool ok = padding.size() == 3;
  for (const auto& pair : padding) {
    ok = ok && pair.size() == 2;
    padding_.insert(padding_.end(), pair.begin(), pair.end());
  }
  for (auto p : padding_) ok = ok && p >= 0;
  if (!ok)
    raise<ValueError>("{}: padding must be ((front, back), (top, bottom), (left, right)) of non-negative integers, "
                      "got [{}]",
                      describe(*this), fmt::join(padding_, ", "));
}

void ZeroPadding3D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 5, "(batch, depth, height, width, channels)");
}

std::vector<SymbolicTensor> ZeroPadding3D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, d, h, w, c)
  expect_input_rank(*this, x.shape(), 5, "(batch, depth, height, width, channels)");
  const auto& p = padding_;
  return {ops::pad(x, {0, 0, p[0], p[1], p[2], p[3], p[4], p[5], 0, 0})};
}

nlohmann::json ZeroPadding3D::get_config() const {
  const auto& p = padding_;
  return layer_config(*this, {{"padding", {{p[0], p[1]}, {p[2], p[3]}, {p[4], p[5]}}}, {"data_format", data_format()}});
}

LayerPtr ZeroPadding3D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "ZeroPadding3D");
  r.check_common();
  ZeroPadding3DOptions options{.data_format = r.data_format(), .name = r.name()};
  if (!r.has("padding")) return r.finish(ZeroPadding3D(1, options));
  const auto& p = config["padding"];
  if (p.is_number_integer()) return r.finish(ZeroPadding3D(p.get<std::int64_t>(), options));
  if (p.is_array() && p.size() == 3 && p[0].is_array())  // ((front, back), (top, bottom), (left, right))
    return r.finish(ZeroPadding3D(p.get<std::vector<std::vector<std::int64_t>>>(), options));
  auto flat = r.ints("padding");
  if (flat.size() != 3)
    r.fail("field \"padding\" must be an integer, (depth, height, width) or ((front, back), (top, bottom), (left, "
           "right)), got " + p.dump());
  return r.finish(ZeroPadding3D(flat, options));
}

}  // namespace tower::layers
