// Cropping2D.
#include "tower/layers/reshaping/cropping2d.h"

#include <fmt/ranges.h>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Cropping2D::Cropping2D(std::int64_t cropping, const Cropping2DOptions& options)
    : Cropping2D(std::vector<std::vector<std::int64_t>>{{cropping, cropping}, {cropping, cropping}}, options) {}

Cropping2D::Cropping2D(const std::vector<std::int64_t>& cropping, const Cropping2DOptions& options)
    : Layer(options.name, "cropping2d") {
  set_data_format(options.data_format);
  auto hw = normalize_tuple(*this, "cropping", cropping, 2, /*min_value=*/0);
  cropping_ = {hw[0], hw[0], hw[1], hw[1]};
}

Cropping2D::Cropping2D(const std::vector<std::vector<std::int64_t>>& cropping, const Cropping2DOptions& options)
    : Layer(options.name, "cropping2d") {
  set_data_format(options.data_format);
  for (const auto& pair : cropping) cropping_.insert(cropping_.end(), pair.begin(), pair.end());
  bool ok = cropping.size() == 2 && cropping[0].size() == 2 && cropping[1].size() == 2;
  for (auto p : cropping_) ok = ok && p >= 0;
  if (!ok)
    raise<ValueError>("{}: cropping must be ((top, bottom), (left, right)) of non-negative integers, got [{}]",
                      describe(*this), fmt::join(cropping_, ", "));
}

void Cropping2D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 4, "(batch, height, width, channels)");
}

std::vector<SymbolicTensor> Cropping2D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, h, w, c)
  expect_input_rank(*this, x.shape(), 4, "(batch, height, width, channels)");
  std::vector<std::int64_t> sizes{-1, -1, -1, -1};
  for (int axis = 1; axis <= 2; ++axis) {
    const std::int64_t n = x.shape().dim(axis), before = cropping_[2 * (axis - 1)], after = cropping_[2 * axis - 1];
    const char* name = axis == 1 ? "height" : "width";
    if (n < 0 && after > 0)
      raise<ShapeError>("{}: cropping at the end of the {} needs it known, got input {}; give the Input its size",
                        describe(*this), name, x.shape().to_string());
    if (n >= 0 && before + after >= n)  // as Keras: nothing would be left
      raise<ShapeError>("{}: cropping ({}, {}) must be smaller than the input {}, got input {}", describe(*this), before,
                        after, name, x.shape().to_string());
    sizes[axis] = n < 0 ? -1 : n - before - after;
  }
  return {ops::slice(x, {0, cropping_[0], cropping_[2], 0}, sizes)};
}

nlohmann::json Cropping2D::get_config() const {
  return layer_config(*this, {{"cropping", {{cropping_[0], cropping_[1]}, {cropping_[2], cropping_[3]}}},
                              {"data_format", data_format()}});
}

LayerPtr Cropping2D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Cropping2D");
  r.check_common();
  Cropping2DOptions options{.data_format = r.data_format(), .name = r.name()};
  if (!r.has("cropping")) return r.finish(Cropping2D(0, options));
  const auto& p = config["cropping"];
  if (p.is_number_integer()) return r.finish(Cropping2D(p.get<std::int64_t>(), options));
  if (p.is_array() && p.size() == 2 && p[0].is_array() && p[1].is_array())  // ((top, bottom), (left, right))
    return r.finish(Cropping2D(p.get<std::vector<std::vector<std::int64_t>>>(), options));
  auto flat = r.ints("cropping");
  if (flat.size() != 2)
    r.fail("field \"cropping\" must be an int, (height, width) or ((top, bottom), (left, right)), got " + p.dump());
  return r.finish(Cropping2D(flat, options));
}

}  // namespace tower::layers
