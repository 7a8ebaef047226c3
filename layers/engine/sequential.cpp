// Sequential: a stack of layers; its functional graph is rebuilt whenever the stack changes.
#include "tower/layers/engine/sequential.h"

#include "tower/core/error.h"
#include "tower/layers/core/input_layer.h"

namespace tower {

Sequential::Sequential(const std::vector<LayerRef>& layers, const std::string& name)
    : Model(name, "sequential"), stack_(std::make_shared<Stack>()) {
  mark_sequential();
  for (const auto& layer : layers) add(layer);
}

void Sequential::add(const LayerRef& ref) {
  const LayerPtr& layer = ref.get();
  if (auto* input = dynamic_cast<InputLayer*>(layer.get())) {
    if (stack_->input.defined() || !stack_->layers.empty())
      raise<ValueError>("Sequential \"{}\": an Input can only be the first entry (got \"{}\" after other layers)",
                        name(), layer->name());
    stack_->input = ref.input().defined() ? ref.input() : input->make_output();
    return;
  }
  for (const auto& existing : stack_->layers)
    if (existing->same_layer(*layer))
      raise<ValueError>("Sequential \"{}\": layer \"{}\" is already in the model", name(), layer->name());
  // A first layer that is already built (or a model) fixes the input shape, as Keras does.
  if (!stack_->input.defined() && stack_->layers.empty() && layer->built() && !layer->build_input_specs().empty()) {
    auto spec = layer->build_input_specs()[0];
    auto dims = spec.shape.dims();
    dims.erase(dims.begin());
    stack_->input = layers::Input(Shape(dims), {.dtype = spec.dtype});
  }
  stack_->layers.push_back(layer);
  try {
    rebuild();
  } catch (...) {
    stack_->layers.pop_back();  // leave the model as it was
    rebuild();
    throw;
  }
}

void Sequential::pop() {
  if (stack_->layers.empty()) raise<ValueError>("Sequential \"{}\": pop() on a model without layers", name());
  stack_->layers.pop_back();
  rebuild();
}

std::vector<LayerPtr> Sequential::layers() const { return stack_->layers; }

void Sequential::rebuild() {
  if (!stack_->input.defined() || stack_->layers.empty()) {
    reset_functions();
    return;
  }
  KerasTensor x = stack_->input;
  for (const auto& layer : stack_->layers) {
    auto outputs = layer->call_multi({x});
    if (outputs.size() != 1)
      raise<ValueError>("Sequential \"{}\": layer \"{}\" returns {} outputs; Sequential needs one per layer "
                        "(use the functional Model)",
                        name(), layer->name(), outputs.size());
    x = outputs[0];
  }
  set_graph({stack_->input}, {x});
}

void Sequential::build_from_data(const std::vector<Tensor>& x) {
  if (has_graph()) return;
  if (stack_->layers.empty()) raise<ValueError>("Sequential \"{}\": the model has no layers; add some first", name());
  if (x.size() != 1) raise<ValueError>("Sequential \"{}\": expects one input array, got {}", name(), x.size());
  auto dims = x[0].shape().dims();
  dims.erase(dims.begin());
  stack_->input = layers::Input(Shape(dims), {.dtype = x[0].dtype()});
  rebuild();
}

}  // namespace tower
