// Cropping3D.
#include "tower/layers/reshaping/cropping3d.h"

#include <fmt/ranges.h>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

Cropping3D::Cropping3D(std::int64_t cropping, const Cropping3DOptions& options)
    : Cropping3D(std::vector<std::vector<std::int64_t>>{{cropping, cropping}, {cropping, cropping}, {cropping, cropping}},
                 options) {}

Cropping3D::Cropping3D(const std::vector<std::int64_t>& cropping, const Cropping3DOptions& options)
    : Layer(options.name, "cropping3d") {
  set_data_format(options.data_format);
  auto dhw = normalize_tuple(*this, "cropping", cropping, 3, /*min_value=*/0);
  cropping_ = {dhw[0], dhw[0], dhw[1], dhw[1], dhw[2], dhw[2]};
}

Cropping3D::Cropping3D(const std::vector<std::vector<std::int64_t>>& cropping, const Cropping3DOptions& options)
    : Layer(options.name, "cropping3d") {
  set_data_format(options.data_format);
  bool ok = cropping.size() == 3;
  for (const auto& pair : cropping) {
    ok = ok && pair.size() == 2;
    cropping_.insert(cropping_.end(), pair.begin(), pair.end());
  }
  for (auto p : cropping_) ok = ok && p >= 0;
  if (!ok)
    raise<ValueError>("{}: cropping must be ((front, back), (top, bottom), (left, right)) of non-negative integers, "
                      "got [{}]",
                      describe(*this), fmt::join(cropping_, ", "));
}

void Cropping3D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 5, "(batch, depth, height, width, channels)");
}

std::vector<SymbolicTensor> Cropping3D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  const SymbolicTensor& x = inputs.at(0);  // (batch, d, h, w, c)
  expect_input_rank(*this, x.shape(), 5, "(batch, depth, height, width, channels)");
  std::vector<std::int64_t> sizes{-1, -1, -1, -1, -1};
  static constexpr const char* kNames[3] = {"depth", "height", "width"};
  for (int axis = 1; axis <= 3; ++axis) {
    const std::int64_t n = x.shape().dim(axis), before = cropping_[2 * (axis - 1)], after = cropping_[2 * axis - 1];
    const char* name = kNames[axis - 1];
    if (n < 0 && after > 0)
      raise<ShapeError>("{}: cropping at the end of the {} needs it known, got input {}; give the Input its size",
                        describe(*this), name, x.shape().to_string());
    if (n >= 0 && before + after >= n)  // as Keras: nothing would be left
      raise<ShapeError>("{}: cropping ({}, {}) must be smaller than the input {}, got input {}", describe(*this), before,
                        after, name, x.shape().to_string());
    sizes[axis] = n < 0 ? -1 : n - before - after;
  }
  return {ops::slice(x, {0, cropping_[0], cropping_[2], cropping_[4], 0}, sizes)};
}

nlohmann::json Cropping3D::get_config() const {
  const auto& p = cropping_;
  return layer_config(*this,
                      {{"cropping", {{p[0], p[1]}, {p[2], p[3]}, {p[4], p[5]}}}, {"data_format", data_format()}});
}

LayerPtr Cropping3D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Cropping3D");
  r.check_common();
  Cropping3DOptions options{.data_format = r.data_format(), .name = r.name()};
  if (!r.has("cropping")) return r.finish(Cropping3D(1, options));
  const auto& p = config["cropping"];
  if (p.is_number_integer()) return r.finish(Cropping3D(p.get<std::int64_t>(), options));
  if (p.is_array() && p.size() == 3 && p[0].is_array())  // ((front, back), (top, bottom), (left, right))
    return r.finish(Cropping3D(p.get<std::vector<std::vector<std::int64_t>>>(), options));
  auto flat = r.ints("cropping");
  if (flat.size() != 3)
    r.fail("field \"cropping\" must be an int, (depth, height, width) or ((front, back), (top, bottom), (left, "
           "right)), got " + p.dump());
  return r.finish(Cropping3D(flat, options));
}

}  // namespace tower::layers
