// UpSampling3D.
#include "tower/layers/reshaping/up_sampling3d.h"

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"

namespace tower::layers {

UpSampling3D::UpSampling3D(const std::vector<std::int64_t>& size, const UpSampling3DOptions& options)
    : Layer(options.name, "up_sampling3d") {
  set_data_format(options.data_format);
  size_ = normalize_tuple(*this, "size", size, 3);
}

void UpSampling3D::build(const std::vector<Shape>& input_shapes) {
  expect_input_rank(*this, input_shapes.at(0), 5, "(batch, depth, height, width, channels)");
}

std::vector<SymbolicTensor> UpSampling3D::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  SymbolicTensor x = inputs.at(0);  // (batch, d, h, w, c)
  expect_input_rank(*this, x.shape(), 5, "(batch, depth, height, width, channels)");
  std::vector<std::int64_t> dims = x.shape().dims();
  for (int axis = 1; axis <= 4; ++axis)
    if (dims[axis] < 0)
      raise<ShapeError>("{}: needs a known depth, height, width and channels, got input {}; give the Input its size",
                        describe(*this), x.shape().to_string());
  dims[0] = -1;
  // As Keras's repeat along each axis: (..., n, 1, rest) side by side `size` times -> (..., n, size, rest),
  // so the copies of each position are adjacent, then merged into (..., n·size, rest).
  for (int axis = 1; axis <= 3; ++axis) {
    const std::int64_t s = size_[static_cast<std::size_t>(axis - 1)];
    if (s == 1) continue;
    std::vector<std::int64_t> split = dims;
    split.insert(split.begin() + axis + 1, 1);
    const SymbolicTensor parts = ops::reshape(x, split);
    x = ops::concat(std::vector<SymbolicTensor>(static_cast<std::size_t>(s), parts), axis + 1);
    dims[axis] *= s;
    x = ops::reshape(x, dims);
  }
  return {x};  // (batch, d·size_d, h·size_h, w·size_w, c)
}

nlohmann::json UpSampling3D::get_config() const {
  return layer_config(*this, {{"size", ints_to_json(size_)}, {"data_format", data_format()}});
}

LayerPtr UpSampling3D::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "UpSampling3D");
  r.check_common();
  return r.finish(UpSampling3D(r.ints("size", {2, 2, 2}), {.data_format = r.data_format(), .name = r.name()}));
}

}  // namespace tower::layers
