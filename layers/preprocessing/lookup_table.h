// LookupTable: the vocabulary of Keras's IntegerLookup and StringLookup (keras/src/layers/preprocessing/
// index_lookup.py), for int64 or std::string tokens: adapt() counts tokens, get_vocabulary() and
// index()/token() follow Keras's table layout.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/core/hash.h"
#include "tower/layers/layer_config.h"

namespace tower::layers {

template <typename T>
struct LookupOptions {
  std::optional<std::int64_t> max_tokens;  // the vocabulary's size, special tokens included; unset: all
  std::int64_t num_oov_indices = 1;        // >= 0; with several, out-of-vocabulary tokens are spread over them
  // How tokens are spread over several OOV indices: integers by "floormod" (token mod num_oov_indices,
  // Keras's default) or "farmhash" (the token in decimal, hashed); strings always by hash. The hash is
  // FarmHash Fingerprint64, or SipHash-2-4 keyed by `salt` when given (Keras's salt, one int or two).
  std::string oov_method = "floormod";
  std::optional<std::array<std::int64_t, 2>> salt;
  std::optional<T> mask_token;             // index 0 in output_mode "int"; left out of the other modes
  T oov_token{};                           // what invert() gives for an out-of-vocabulary index
  std::vector<T> vocabulary;               // given instead of adapt(); special tokens excluded
  std::vector<double> idf_weights;         // "tf_idf" with a given vocabulary: one weight per token
  bool invert = false;                     // indices -> tokens
  std::string output_mode = "int";         // "int", "one_hot", "multi_hot", "count", "tf_idf"
  std::string name;
};

// Keras's table: [mask_token] [oov_token]*num_oov_indices vocabulary..., each token's index its position
// (the mask token only in output_mode "int": the other modes leave masked tokens out). An out-of-
// vocabulary token gets an OOV index (the first, or its bucket among several), or -1 without OOV
// indices (Keras then raises; tower's in-graph lookup cannot). With output_mode "tf_idf", idf_weights()
// holds Keras's inverse document frequencies, one per index.
template <typename T>
class LookupTable {
 public:
  LookupTable(const LookupOptions<T>& options, const std::string& where) : options_(options), where_(where) {
    if (options.num_oov_indices < 0)
      raise<ValueError>("{}: num_oov_indices must be >= 0, got {}", where, options.num_oov_indices);
    if (options.oov_method != "floormod" && options.oov_method != "farmhash")
      raise<ValueError>("{}: oov_method must be \"floormod\" or \"farmhash\", got \"{}\"", where, options.oov_method);
    if (options.max_tokens && *options.max_tokens <= special_tokens())
      raise<ValueError>("{}: max_tokens ({}) must be larger than the {} special token(s)", where, *options.max_tokens,
                        special_tokens());
    if (!options.idf_weights.empty() && options.output_mode != "tf_idf")
      raise<ValueError>("{}: idf_weights are for output_mode \"tf_idf\", got output_mode \"{}\"", where,
                        options.output_mode);
    if (options.output_mode == "tf_idf" && !options.vocabulary.empty() && options.idf_weights.empty())
      raise<ValueError>("{}: output_mode \"tf_idf\" with a given vocabulary needs its idf_weights", where);
    set_vocabulary(options.vocabulary, options.idf_weights);
  }

  // Keras's adapt: the tokens by frequency, most frequent first, ties by the token's value descending;
  // at most max_tokens - special tokens of them. The mask and OOV tokens are not counted. For "tf_idf",
  // `documents` rows of equal length (Keras: the data's first axis; a 1-D input is one document) give
  // each kept token's idf = log(1 + documents / (1 + documents holding it)).
  void adapt(const std::vector<T>& data, std::int64_t documents = 1) {
    std::map<T, std::int64_t> counts, in_documents;
    const std::size_t row = documents > 0 ? data.size() / static_cast<std::size_t>(documents) : data.size();
    for (std::size_t start = 0; start < data.size(); start += std::max<std::size_t>(row, 1)) {
      std::set<T> seen;  // this document's tokens so far
      for (std::size_t i = start; i < std::min(data.size(), start + std::max<std::size_t>(row, 1)); ++i) {
        const T& t = data[i];
        if ((options_.mask_token && t == *options_.mask_token) || (options_.num_oov_indices && t == options_.oov_token))
          continue;
        ++counts[t];
        if (seen.insert(t).second) ++in_documents[t];
      }
    }
    std::vector<std::pair<T, std::int64_t>> sorted(counts.begin(), counts.end());
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first > b.first;
    });
    std::vector<T> tokens;
    for (const auto& entry : sorted) tokens.push_back(entry.first);
    if (options_.max_tokens && static_cast<std::int64_t>(tokens.size()) > *options_.max_tokens - special_tokens())
      tokens.resize(static_cast<std::size_t>(*options_.max_tokens - special_tokens()));
    std::vector<double> idf;
    if (options_.output_mode == "tf_idf")
      for (const T& t : tokens)
        idf.push_back(std::log(1.0 + static_cast<double>(documents) / (1.0 + static_cast<double>(in_documents[t]))));
    set_vocabulary(tokens, idf);
  }

  // The vocabulary (special tokens excluded) and, for "tf_idf", a weight per token; the special indices
  // weigh the tokens' mean, in float32 as Keras pads them.
  void set_vocabulary(const std::vector<T>& tokens, const std::vector<double>& idf = {}) {
    if (options_.output_mode == "tf_idf" && idf.size() != tokens.size())
      raise<ValueError>("{}: idf_weights must be as long as the vocabulary: {} weights for {} tokens", where_,
                        idf.size(), tokens.size());
    index_.clear();
    for (std::size_t i = 0; i < tokens.size(); ++i)
      if (!index_.emplace(tokens[i], static_cast<std::int64_t>(i) + special_tokens()).second)
        raise<ValueError>("{}: the vocabulary holds a token twice (position {})", where_, i);
    tokens_ = tokens;
    idf_weights_.clear();
    if (options_.output_mode != "tf_idf") return;
    float sum = 0;  // Keras averages the float32 weights
    for (double w : idf) sum += static_cast<float>(w);
    const float mean = idf.empty() ? 0.0f : sum / static_cast<float>(idf.size());
    idf_weights_.assign(static_cast<std::size_t>(special_tokens()), mean);
    for (double w : idf) idf_weights_.push_back(static_cast<float>(w));
  }

  // Keras's get_vocabulary(include_special_tokens).
  std::vector<T> get_vocabulary(bool include_special_tokens = true) const {
    std::vector<T> out;
    if (include_special_tokens) {
      if (mask_indexed()) out.push_back(*options_.mask_token);
      for (std::int64_t i = 0; i < options_.num_oov_indices; ++i) out.push_back(options_.oov_token);
    }
    out.insert(out.end(), tokens_.begin(), tokens_.end());
    return out;
  }
  std::int64_t vocabulary_size() const { return special_tokens() + static_cast<std::int64_t>(tokens_.size()); }

  // A token's index: 0 for the mask token ("int"; -1, left out, in the other modes), its vocabulary
  // index, or its OOV index.
  std::int64_t index(const T& token) const {
    if (options_.mask_token && token == *options_.mask_token) return mask_indexed() ? 0 : -1;
    auto it = index_.find(token);
    if (it != index_.end()) return it->second;
    return options_.num_oov_indices ? oov_index() + oov_bucket(token) : -1;
  }
  // The token of an index: the mask token for 0 (with one), the OOV token for an OOV or unknown index.
  T token(std::int64_t index) const {
    if (mask_indexed() && index == 0) return *options_.mask_token;
    const std::int64_t i = index - special_tokens();
    if (i < 0 || i >= static_cast<std::int64_t>(tokens_.size())) return options_.oov_token;
    return tokens_[static_cast<std::size_t>(i)];
  }

  // Which of the OOV indices an out-of-vocabulary token takes (0 with one OOV index).
  std::int64_t oov_bucket(const T& token) const {
    const std::int64_t n = options_.num_oov_indices;
    if (n <= 1) return 0;
    if constexpr (std::is_integral_v<T>) {
      if (options_.oov_method == "floormod") return ((token % n) + n) % n;
      return hash::hashing_bin(token, n, false, 0, options_.salt.has_value(), static_cast<std::uint64_t>(salt()[0]),
                               static_cast<std::uint64_t>(salt()[1]));
    } else {
      const std::uint64_t h = options_.salt ? hash::siphash24(static_cast<std::uint64_t>(salt()[0]),
                                                              static_cast<std::uint64_t>(salt()[1]), token.data(),
                                                              token.size())
                                            : hash::fingerprint64(token.data(), token.size());
      return static_cast<std::int64_t>(h % static_cast<std::uint64_t>(n));
    }
  }

  bool mask_indexed() const { return options_.mask_token.has_value() && options_.output_mode == "int"; }
  std::int64_t special_tokens() const { return (mask_indexed() ? 1 : 0) + options_.num_oov_indices; }
  std::int64_t oov_index() const { return mask_indexed() ? 1 : 0; }  // the first OOV index
  const std::vector<T>& tokens() const { return tokens_; }  // the vocabulary without special tokens
  // "tf_idf": one weight per index (special ones the mean), float32 as Keras keeps them; else empty.
  const std::vector<float>& idf_weights() const { return idf_weights_; }
  const LookupOptions<T>& options() const { return options_; }
  std::array<std::int64_t, 2> salt() const { return options_.salt.value_or(std::array<std::int64_t, 2>{0, 0}); }

 private:
  LookupOptions<T> options_;
  std::string where_;
  std::vector<T> tokens_;
  std::vector<float> idf_weights_;
  std::map<T, std::int64_t> index_;
};

// ---- Keras's config fields of both lookups ----------------------------------------------------------

// The fields IntegerLookup and StringLookup share, read into `options` (tokens of type T): max_tokens,
// num_oov_indices, mask_token, oov_token, invert, output_mode, vocabulary, idf_weights, oov_method, salt.
// Refuses sparse outputs and pad_to_max_tokens.
template <typename T>
void read_lookup_options(const ConfigReader& r, const nlohmann::json& config, LookupOptions<T>& options) {
  r.expect("sparse", false, "sparse outputs");
  r.expect("pad_to_max_tokens", false, "padding to max_tokens");
  const char* kind = std::is_integral_v<T> ? "integer" : "string";
  const auto token = [&](const nlohmann::json& v, const char* field) {
    if (std::is_integral_v<T> ? !v.is_number_integer() : !v.is_string())
      r.fail(fmt::format("field \"{}\" must hold {} tokens, got {}", field, kind, v.dump()));
    return v.template get<T>();
  };
  const auto list = [&](const char* field) {
    if (!config[field].is_array()) r.fail(fmt::format("field \"{}\" must be a list or null", field));
    return config[field];
  };
  if (r.has("max_tokens")) options.max_tokens = r.integer("max_tokens");
  options.num_oov_indices = r.integer("num_oov_indices", 1);
  if (r.has("mask_token")) options.mask_token = token(config["mask_token"], "mask_token");
  if (r.has("oov_token")) options.oov_token = token(config["oov_token"], "oov_token");
  options.invert = r.boolean("invert", false);
  options.output_mode = r.string("output_mode", "int");
  options.oov_method = r.string("oov_method", "floormod");
  options.name = r.name();
  // Keras 3 writes "vocabulary": null for an adapted layer (its vocabulary is then lost with the config,
  // as in Keras); a list is the vocabulary without special tokens.
  if (r.has("vocabulary"))
    for (const auto& v : list("vocabulary")) options.vocabulary.push_back(token(v, "vocabulary"));
  if (r.has("idf_weights"))
    for (const auto& v : list("idf_weights")) {
      if (!v.is_number()) r.fail("field \"idf_weights\" must be a list of numbers, got " + v.dump());
      options.idf_weights.push_back(v.template get<double>());
    }
  if (r.has("salt")) {
    const auto& v = config["salt"];
    if (v.is_number_integer()) options.salt = std::array<std::int64_t, 2>{v.template get<std::int64_t>(), v.template get<std::int64_t>()};
    else if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer())
      options.salt = std::array<std::int64_t, 2>{v[0].template get<std::int64_t>(), v[1].template get<std::int64_t>()};
    else r.fail("field \"salt\" must be an integer or a list of 2 integers, got " + v.dump());
  }
}

// The config's idf_weights: the weights of the vocabulary's tokens (given or adapted, so that the config
// rebuilds the layer), null outside "tf_idf".
template <typename T>
nlohmann::json lookup_idf_config(const LookupTable<T>& table) {
  if (table.options().output_mode != "tf_idf") return nullptr;
  const auto& w = table.idf_weights();
  return std::vector<double>(w.begin() + table.special_tokens(), w.end());
}

}  // namespace tower::layers
