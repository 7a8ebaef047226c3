// Wrapper: the base of the layers that wrap another layer (TimeDistributed, Bidirectional), as Keras's Wrapper.
#pragma once

#include <string>
#include <vector>

#include "tower/layers/layer.h"

namespace tower::layers {

// Holds the wrapped layer (Keras's .layer) and the layers whose weights the wrapper has, and gives
// their weights as its own, in Keras's order: every sublayer's trainable weights, then every
// sublayer's non-trainable ones (all non-trainable when the wrapper is frozen). Freezing the wrapper
// freezes them, as Keras's trainable setter does.
class Wrapper : public Layer {
 public:
  std::vector<VariablePtr> trainable_weights() const override;
  std::vector<VariablePtr> non_trainable_weights() const override;
  std::vector<SymbolicTensor> regularization_losses(Graph& graph) const override;
  void set_trainable(bool trainable) override;
  // The base fields and "layer": the wrapped layer serialized (serialize_layer).
  nlohmann::json get_config() const override;

  // Keras's .layer: a handle to the wrapped layer.
  const LayerPtr& layer() const { return layer_; }
  // The wrapped layers' states (a Bidirectional stateful LSTM's) are reset with the wrapper's.
  void reset_states() override {
    for (const auto& l : sublayers()) l->reset_states();
  }

 protected:
  // name: the user's, or "" for a default from default_base.
  Wrapper(const Layer& layer, const std::string& name, const std::string& default_base);
  // The layers holding the wrapper's weights, in Keras's order: the wrapped layer itself by default.
  virtual std::vector<LayerPtr> sublayers() const { return {layer_}; }

  LayerPtr layer_;
};

// A layer as tf.keras 2.15 serializes a wrapped one: {"module", "class_name", "config",
// "registered_name": null}, which layer_from_config reads back.
nlohmann::json serialize_layer(const Layer& layer);

}  // namespace tower::layers
