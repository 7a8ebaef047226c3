// StringLookup.
#include "tower/layers/preprocessing/string_lookup.h"

#include "tower/layers/layer_config.h"

namespace tower::layers {

StringLookup::StringLookup(const StringLookupOptions& options) : table_(options, "StringLookup") {
  if (options.output_mode != "int")
    raise<ValueError>("StringLookup: output_mode \"{}\" is not supported; StringLookup gives int indices (encode "
                      "them inside the model with CategoryEncoding)",
                      options.output_mode);
  if (options.invert)
    raise<ValueError>("StringLookup: invert=True is not supported; call invert(indices) on the lookup instead");
}

Tensor StringLookup::operator()(const std::vector<std::string>& tokens, const Shape& shape) const {
  std::vector<std::int64_t> indices;
  indices.reserve(tokens.size());
  for (const auto& t : tokens) indices.push_back(table_.index(t));
  const Shape out = shape.rank() == 0 ? Shape{static_cast<std::int64_t>(tokens.size())} : shape;
  if (out.num_elements() != static_cast<std::int64_t>(tokens.size()))
    raise<ShapeError>("StringLookup: shape {} does not hold the {} tokens given", out.to_string(), tokens.size());
  return Tensor::from_vector<std::int64_t>(out, indices);
}

std::vector<std::string> StringLookup::invert(const Tensor& indices) const {
  if (is_floating(indices.dtype()))
    raise<DTypeError>("StringLookup::invert: indices must be integers, got {}", dtype_name(indices.dtype()));
  std::vector<std::string> out;
  for (std::int64_t i : indices.to_vector<std::int64_t>()) out.push_back(table_.token(i));
  return out;
}

nlohmann::json StringLookup::get_config() const {
  const auto& o = table_.options();
  return {{"name", o.name.empty() ? "string_lookup" : o.name},
          {"trainable", true},
          {"dtype", "string"},
          {"invert", false},
          {"max_tokens", o.max_tokens ? nlohmann::json(*o.max_tokens) : nlohmann::json(nullptr)},
          {"num_oov_indices", o.num_oov_indices},
          {"oov_token", o.oov_token},
          {"mask_token", o.mask_token ? nlohmann::json(*o.mask_token) : nlohmann::json(nullptr)},
          {"output_mode", "int"},
          {"sparse", false},
          {"pad_to_max_tokens", false},
          {"idf_weights", nullptr},
          {"vocabulary", table_.tokens()},
          {"vocabulary_size", table_.vocabulary_size()},
          {"oov_method", o.oov_method},
          {"salt", o.salt ? nlohmann::json(*o.salt) : nlohmann::json(nullptr)},
          {"encoding", "utf-8"}};
}

StringLookup StringLookup::from_config(const nlohmann::json& config) {
  ConfigReader r(config, "StringLookup");
  r.expect("encoding", "utf-8", "encodings other than UTF-8");
  StringLookupOptions options;
  read_lookup_options(r, config, options);
  return StringLookup(options);
}

}  // namespace tower::layers
