// UpSampling3D: repeats each voxel along depth, height and width, as Keras's UpSampling3D.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

struct UpSampling3DOptions {
  std::string data_format = "channels_last";  // or "channels_first" (Layer::data_format)
  std::string name;
};

// x: (batch, d, h, w, c) -> (batch, d·size_d, h·size_h, w·size_w, c). No weights. d, h, w and c must be known.
class UpSampling3D : public Layer {
 public:
  // size: one value or (size_d, size_h, size_w).
  explicit UpSampling3D(const std::vector<std::int64_t>& size = {2, 2, 2}, const UpSampling3DOptions& options = {});
  explicit UpSampling3D(std::int64_t size, const UpSampling3DOptions& options = {})
      : UpSampling3D(std::vector<std::int64_t>{size}, options) {}

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<UpSampling3D>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "UpSampling3D"; }

  const std::vector<std::int64_t>& size() const { return size_; }  // (size_d, size_h, size_w)

 private:
  std::vector<std::int64_t> size_;
};

}  // namespace tower::layers
