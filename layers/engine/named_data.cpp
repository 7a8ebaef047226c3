// Model's arrays by name (Keras's dicts of inputs and outputs): fit, evaluate and predict on TensorMaps,
// mapped onto the positional calls by the Input and output layers' names.
#include <set>

#include "tower/core/error.h"
#include "tower/layers/engine/model_internal.h"

namespace tower {

namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "\"" : ", \"") + n + "\"";
  return s.empty() ? "(none)" : s;
}

// arrays[name] for every name, in order; an unknown or missing name is a ValueError listing `names`.
std::vector<Tensor> by_name(const TensorMap& arrays, const std::vector<std::string>& names, const std::string& model,
                            const char* where, const char* what) {
  const std::set<std::string> known(names.begin(), names.end());
  for (const auto& [name, array] : arrays)
    if (!known.contains(name))
      raise<ValueError>("Model \"{}\": {}: \"{}\" is not one of the model's {} names; they are: {}", model, where, name,
                        what, quoted_list(names));
  std::vector<Tensor> out;
  std::vector<std::string> missing;
  for (const auto& name : names) {
    auto it = arrays.find(name);
    if (it == arrays.end()) missing.push_back(name);
    else out.push_back(it->second);
  }
  if (!missing.empty())
    raise<ValueError>("Model \"{}\": {}: no array for the {} {} (every one needs an array); the model's {} names are: {}",
                      model, where, what, quoted_list(missing), what, quoted_list(names));
  return out;
}

}  // namespace

std::vector<std::string> Model::input_names() const {
  std::vector<std::string> names;
  for (const auto& x : data_->inputs) names.push_back(x.layer().name());
  return names;
}

std::vector<Tensor> Model::inputs_by_name(const TensorMap& x, const char* where) const {
  if (!has_graph())
    raise<ValueError>("Model \"{}\": {}: arrays by name need the model's Input layers; this Sequential has none yet "
                      "(give it an Input, or pass the arrays in order)", name(), where);
  return by_name(x, input_names(), name(), where, "input");
}

std::vector<Tensor> Model::outputs_by_name(const TensorMap& y, const char* where) const {
  if (!has_graph())
    raise<ValueError>("Model \"{}\": {}: arrays by name need the model's layers; this Sequential has no Input yet "
                      "(give it an Input, or pass the arrays in order)", name(), where);
  return by_name(y, output_names(), name(), where, "output");
}

FitOptions Model::with_positional_validation(const FitOptions& options) const {
  if (options.validation_data)
    raise<ValueError>("fit: give validation_data or validation_data_by_name, not both");
  FitOptions positional = options;
  positional.validation_data = std::make_pair(inputs_by_name(options.validation_data_by_name->first, "fit(validation_data_by_name)"),
                                              outputs_by_name(options.validation_data_by_name->second, "fit(validation_data_by_name)"));
  positional.validation_data_by_name.reset();
  return positional;
}

History Model::fit(const TensorMap& x, const TensorMap& y, const FitOptions& options) {
  return fit(inputs_by_name(x, "fit(x)"), outputs_by_name(y, "fit(y)"), options);
}

Logs Model::evaluate(const TensorMap& x, const TensorMap& y, const EvaluateOptions& options) {
  return evaluate(inputs_by_name(x, "evaluate(x)"), outputs_by_name(y, "evaluate(y)"), options);
}

TensorMap Model::predict(const TensorMap& x, const PredictOptions& options) {
  const std::vector<Tensor> outputs = predict(inputs_by_name(x, "predict(x)"), options);
  const std::vector<std::string> names = output_names();
  TensorMap out;
  for (std::size_t i = 0; i < outputs.size() && i < names.size(); ++i) out.emplace(names[i], outputs[i]);
  return out;
}

}  // namespace tower
