// Wrapper.
#include "tower/layers/core/wrapper.h"

#include <nlohmann/json.hpp>

#include "tower/layers/engine/model.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

Wrapper::Wrapper(const Layer& layer, const std::string& name, const std::string& default_base)
    : Layer(name, default_base), layer_(layer.share()) {}

std::vector<VariablePtr> Wrapper::trainable_weights() const {
  std::vector<VariablePtr> out;
  if (!trainable()) return out;
  for (const auto& layer : sublayers())
    for (auto& w : layer->trainable_weights()) out.push_back(std::move(w));
  return out;
}

std::vector<VariablePtr> Wrapper::non_trainable_weights() const {
  std::vector<VariablePtr> out;
  for (const auto& layer : sublayers())
    for (auto& w : trainable() ? layer->non_trainable_weights() : layer->weights()) out.push_back(std::move(w));
  return out;
}

std::vector<SymbolicTensor> Wrapper::regularization_losses(Graph& graph) const {
  std::vector<SymbolicTensor> out;
  for (const auto& layer : sublayers())
    for (auto& loss : layer->regularization_losses(graph)) out.push_back(std::move(loss));
  return out;
}

void Wrapper::set_trainable(bool trainable) {
  Layer::set_trainable(trainable);
  layer_->set_trainable(trainable);
  for (const auto& layer : sublayers())
    if (!layer->same_layer(*layer_)) layer->set_trainable(trainable);
}

nlohmann::json Wrapper::get_config() const { return layer_config(*this, {{"layer", serialize_layer(*layer_)}}); }

nlohmann::json serialize_layer(const Layer& layer) {
  return {{"module", dynamic_cast<const Model*>(&layer) ? "keras" : "keras.layers"},
          {"class_name", layer.class_name()},
          {"config", layer.get_config()},
          {"registered_name", nullptr}};
}

}  // namespace tower::layers
