// Bidirectional.
#include "tower/layers/rnn/bidirectional.h"

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"
#include "tower/layers/registry.h"
#include "tower/layers/rnn/recurrent.h"

namespace tower::layers {

namespace {

const Recurrent& recurrent(const Layer& self, const Layer& layer, const char* role) {
  const auto* r = dynamic_cast<const Recurrent*>(&layer);
  if (!r)
    raise<ValueError>("{}: the {} must be a recurrent layer (SimpleRNN, LSTM or GRU), got {}", describe(self), role,
                      describe(layer));
  return *r;
}

// A new layer of `source`'s class and config, but for its name and go_backwards (Keras's
// _recreate_layer_from_config).
LayerPtr copy_of(const Recurrent& source, const std::string& name, bool go_backwards) {
  nlohmann::json config = source.get_config();
  config["name"] = name;
  config["go_backwards"] = go_backwards;
  // Keras: with return_sequences, the copies' masked steps output zeros (so both directions agree).
  config["zero_output_for_mask"] = config.value("return_sequences", false);
  return layer_from_config({{"class_name", source.class_name()}, {"config", config}});
}

// "forward_lstm" -> "lstm" for prefix "forward_": Keras 3 writes the copies' configs, whose names have it.
std::string without_prefix(const std::string& name, const std::string& prefix) {
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

// A wrapped layer's config as layer_from_config reads it. Keras forces zero_output_for_mask to
// return_sequences on both copies and Keras 3 writes it; the copies get it from copy_of, so the
// wrapped layer's own stays what the user gave.
nlohmann::json inner_config(const nlohmann::json& layer) {
  nlohmann::json out = layer;
  if (out.is_object() && out.contains("config") && out["config"].is_object()) out["config"].erase("zero_output_for_mask");
  return out;
}

// y (batch, time, units) -> y[:, ::-1], the number of steps known or not.
SymbolicTensor reverse_time(const SymbolicTensor& y) { return ops::reverse(y, 1); }

}  // namespace

Bidirectional::Bidirectional(const Layer& layer, const BidirectionalOptions& options)
    : Wrapper(layer, options.name, "bidirectional"), merge_mode_(options.merge_mode) {
  if (merge_mode_ && *merge_mode_ != "concat" && *merge_mode_ != "sum" && *merge_mode_ != "mul" && *merge_mode_ != "ave")
    raise<ValueError>("{}: merge_mode \"{}\" is not one of \"concat\", \"sum\", \"mul\", \"ave\" or None (std::nullopt)",
                      describe(*this), *merge_mode_);
  const Recurrent& forward = recurrent(*this, layer, "wrapped layer");
  const bool backwards = forward.options().go_backwards;
  forward_ = copy_of(forward, name() + "/forward_" + without_prefix(layer.name(), "forward_"), backwards);
  if (options.backward_layer) {
    backward_given_ = options.backward_layer->get();
    const Recurrent& given = recurrent(*this, *backward_given_, "backward_layer");
    if (given.options().go_backwards == backwards)
      raise<ValueError>("{}: the backward_layer {} must have go_backwards = {}, the opposite of the wrapped layer's",
                        describe(*this), describe(given), !backwards);
    if (given.options().return_sequences != forward.options().return_sequences ||
        given.options().return_state != forward.options().return_state)
      raise<ValueError>("{}: the backward_layer {} must have the wrapped layer's return_sequences ({}) and "
                        "return_state ({})",
                        describe(*this), describe(given), forward.options().return_sequences,
                        forward.options().return_state);
    backward_ = copy_of(given, name() + "/backward_" + without_prefix(given.name(), "backward_"), !backwards);
  } else {
    backward_ = copy_of(forward, name() + "/backward_" + without_prefix(layer.name(), "backward_"), !backwards);
  }
  // The copies come from the registry, where a CustomObjectScope could have put another class.
  recurrent(*this, *forward_, "copy of the wrapped layer");
  recurrent(*this, *backward_, "copy of the backward layer");
}

void Bidirectional::build(const std::vector<Shape>& input_shapes) {
  forward_->ensure_built({input_shapes.at(0)});
  backward_->ensure_built({input_shapes.at(0)});
}

std::vector<SymbolicTensor> Bidirectional::call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
  const RecurrentOptions& options = static_cast<const Recurrent&>(*forward_).options();
  // Keras splits initial_state in half: the forward layer's states, then the backward layer's.
  const std::size_t states = inputs.size() - 1;
  if (states % 2 != 0)
    raise<ValueError>("{}: initial_state must hold the forward layer's states then the backward layer's (an even "
                      "number), got {}",
                      describe(*this), states);
  const auto middle = inputs.begin() + 1 + static_cast<std::ptrdiff_t>(states / 2);
  std::vector<SymbolicTensor> forward_inputs{inputs[0]}, backward_inputs{inputs[0]};
  forward_inputs.insert(forward_inputs.end(), inputs.begin() + 1, middle);
  backward_inputs.insert(backward_inputs.end(), middle, inputs.end());
  const std::vector<SymbolicTensor> forward = forward_->call(ctx, forward_inputs);
  const std::vector<SymbolicTensor> backward = backward_->call(ctx, backward_inputs);

  SymbolicTensor y = forward[0];       // (batch, units) or (batch, time, units)
  SymbolicTensor y_rev = backward[0];  // likewise, its steps last first with return_sequences
  if (options.return_sequences) y_rev = reverse_time(y_rev);
  std::vector<SymbolicTensor> outputs;
  if (!merge_mode_) {
    outputs = {y, y_rev};
  } else if (*merge_mode_ == "concat") {
    outputs = {ops::concat({y, y_rev}, y.rank() - 1)};
  } else {
    if (y.shape() != y_rev.shape())
      raise<ShapeError>("{}: merge_mode \"{}\" needs forward and backward outputs of one shape, got {} and {}",
                        describe(*this), *merge_mode_, y.shape().to_string(), y_rev.shape().to_string());
    if (*merge_mode_ == "sum") outputs = {ops::add(y, y_rev)};
    else if (*merge_mode_ == "mul") outputs = {ops::multiply(y, y_rev)};
    else outputs = {ops::scale(ops::add(y, y_rev), 0.5)};  // "ave"
  }
  if (options.return_state) {
    outputs.insert(outputs.end(), forward.begin() + 1, forward.end());
    outputs.insert(outputs.end(), backward.begin() + 1, backward.end());
  }
  return outputs;
}

std::vector<SymbolicTensor> Bidirectional::compute_mask(const std::vector<SymbolicTensor>&,
                                                        const std::vector<SymbolicTensor>& masks) const {
  const RecurrentOptions& options = static_cast<const Recurrent&>(*forward_).options();
  const SymbolicTensor mask = masks.empty() || !options.return_sequences ? SymbolicTensor() : masks[0];
  std::vector<SymbolicTensor> out(merge_mode_ ? 1 : 2, mask);  // the states that follow get none
  return out;
}

nlohmann::json Bidirectional::get_config() const {
  nlohmann::json config = Wrapper::get_config();
  config["merge_mode"] = merge_mode_ ? nlohmann::json(*merge_mode_) : nlohmann::json(nullptr);
  if (backward_given_) config["backward_layer"] = serialize_layer(*backward_given_);
  return config;
}

LayerPtr Bidirectional::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "Bidirectional");
  r.check_common();
  if (!r.has("layer")) r.fail("needs \"layer\": the wrapped layer's {\"class_name\", \"config\"}");
  BidirectionalOptions options{.name = r.name()};
  if (config.contains("merge_mode"))
    options.merge_mode = config["merge_mode"].is_null() ? std::nullopt
                                                        : std::optional<std::string>(r.string("merge_mode", "concat"));
  if (r.has("backward_layer")) options.backward_layer = layer_from_config(inner_config(config.at("backward_layer")));
  return r.finish(Bidirectional(*layer_from_config(inner_config(config.at("layer"))), options));
}

}  // namespace tower::layers
