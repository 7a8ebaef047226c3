// ZeroPadding2D.
#include "tower/layers/reshaping/zero_padding2d.h"

#include <fmt/ranges.h>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

ZeroPadding2D::ZeroPadding2D(std::int64_t padding, const ZeroPadding2DOptions& options)
    : ZeroPadding2D(std::vector<std::vector<std::int64_t>>{{padding, padding}, {padding, padding}}, options) {}

ZeroPadding2D::ZeroPadding2D(const std::vector<std::int64_t>& padding, const ZeroPadding2DOptions& options)
    : Layer(options.name, "zero_padding2d") {
  set_data_format(options.data_format);
  auto hw = normalize_tuple(*this, "padding", padding, 2, /*min_value=*/0);
  padding_ = {hw[0], hw[0], hw[1], hw[1]};
}

ZeroPadding2D::ZeroPadding2D(const std::vector<std::vector<std::int64_t>>& padding, const ZeroPadding2DOptions& options)
    : Layer(options.name, "zero_padding2d") {
  set_data_format(options.data_format);
  for (const auto& pair : padding) padding_.insert(padding_.end(), pair.begin(), pair.end());
  bool ok = padding.size() == 2 && padding[0].size() == 2 && padding[1].size() == 2;
  for (auto p : padding_) ok = ok && p >= 0;
  if (!ok)
    raise<ValueError>("{}: padding must be ((top, bottom), (left, right)) of non-negative integers, got [{}]",
                      describe(*this), fmt::join(padding_, ", "));
}

void ZeroPadding2D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 4, "(batch, height, width, channels)");
}

std::vector<SymbolicTensor> ZeroPadding2D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, h, w, c)
  expect_input_rank(*this, x.shape(), 4, "(batch, height, width, channels)");
  return {ops::pad(x, {0, 0, padding_[0], padding_[1], padding_[2], padding_[3], 0, 0})};
}

nlohmann::json ZeroPadding2D::get_config() const {
  return layer_config(*this, {{"padding", {{padding_[0], padding_[1]}, {padding_[2], padding_[3]}}},
                              {"data_format", data_format()}});
}

LayerPtr ZeroPadding2D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "ZeroPadding2D");
  r.check_common();
  ZeroPadding2DOptions options{.data_format = r.data_format(), .name = r.name()};
  if (!r.has("padding")) return r.finish(ZeroPadding2D(1, options));
  const auto& p = config["padding"];
  if (p.is_number_integer()) return r.finish(ZeroPadding2D(p.get<std::int64_t>(), options));
  if (p.is_array() && p.size() == 2 && p[0].is_array() && p[1].is_array())  // ((top, bottom), (left, right))
    return r.finish(ZeroPadding2D(p.get<std::vector<std::vector<std::int64_t>>>(), options));
  auto flat = r.ints("padding");
  if (flat.size() == 2) return r.finish(ZeroPadding2D(flat, options));
  if (flat.size() == 4)  // Keras 1: (top, bottom, left, right)
    return r.finish(ZeroPadding2D(std::vector<std::vector<std::int64_t>>{{flat[0], flat[1]}, {flat[2], flat[3]}}, options));
  r.fail("field \"padding\" must be an integer, (height, width) or ((top, bottom), (left, right)), got " + p.dump());
}

}  // namespace tower::layers
