// Sequential: a plain stack of layers, each called on the previous one's output.
#pragma once

#include <string>
#include <vector>

#include "tower/layers/engine/model.h"

namespace tower {

class Sequential : public Model {
 public:
  // layers: layers and optionally an Input first (`layers::Input({784})`). Without an input shape the
  // model is built from the first data given to fit, evaluate or predict, as Keras does.
  explicit Sequential(const std::vector<LayerRef>& layers = {}, const std::string& name = "");

  void add(const LayerRef& layer);
  // Removes the last layer; throws ValueError when there is none.
  void pop();

  // Keras's Sequential.layers: the stacked layers, without the InputLayer.
  std::vector<LayerPtr> layers() const override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Sequential>(*this); }
  // A Sequential config of any Keras version (defined in io/model_config.cpp): a list of layers
  // (Keras <= 2.2.2) or {"name", "layers"}, with or without an InputLayer first (else the first
  // layer's batch_input_shape, or Keras 3's build_input_shape, gives the input).
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  void build_from_data(const std::vector<Tensor>& x) override;

 private:
  struct Stack {
    KerasTensor input;              // undefined until the input shape is known
    std::vector<LayerPtr> layers;   // without the InputLayer
  };
  void rebuild();
  std::shared_ptr<Stack> stack_;
};

}  // namespace tower
