// Sequential: a plain stack of layers, each called on the previous one's output.
#pragma once

#include <string>
#include <vector>

#include "layers/model.h"

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
