// Resizing: images resized to (height, width) by tf.image.resize's sampling, as Keras's; also
// crop_to_aspect_ratio, which CenterCrop shares (Keras's smart_resize), and pad_to_aspect_ratio.
#pragma once

#include <string>

#include "tower/layers/layer.h"

namespace tower::layers {

struct ResizingOptions {
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  bool crop_to_aspect_ratio = false;       // first the largest centred crop with the target's aspect ratio
  bool pad_to_aspect_ratio = false;        // or first padded with fill_value to the target's aspect ratio
  std::string fill_mode = "constant";      // Keras's only fill_mode
  double fill_value = 0.0;
  std::string name;
};

// x: (batch, h, w, c), h and w known -> (batch, height, width, c). No weights.
class Resizing : public Layer {
 public:
  Resizing(std::int64_t height, std::int64_t width, const ResizingOptions& options = {});

  void build(const std::vector<Shape>& input_shapes) override;
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Resizing>(*this); }
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string class_name() const override { return "Resizing"; }

  std::int64_t height() const { return height_; }
  std::int64_t width() const { return width_; }
  const ResizingOptions& options() const { return options_; }

 private:
  std::int64_t height_, width_;
  ResizingOptions options_;
};

// x (batch, h, w, c) with known h and w resized to (batch, height, width, c), after Keras's centred crop
// to the target's aspect ratio when crop_to_aspect_ratio, or after Keras's padding to it with fill_value
// when pad_to_aspect_ratio (the same number of rows, or columns, on both sides). `layer` names errors.
SymbolicTensor resize_images(const Layer& layer, const SymbolicTensor& x, std::int64_t height, std::int64_t width,
                             const std::string& interpolation, bool crop_to_aspect_ratio,
                             bool pad_to_aspect_ratio = false, double fill_value = 0.0);

}  // namespace tower::layers
