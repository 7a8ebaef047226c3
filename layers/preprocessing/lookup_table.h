// LookupTable: the vocabulary of Keras's IntegerLookup and StringLookup (keras/src/layers/preprocessing/
// index_lookup.py), for int64 or std::string tokens: adapt() counts tokens, get_vocabulary() and
// index()/token() follow Keras's table layout.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tower/core/error.h"

namespace tower::layers {

template <typename T>
struct LookupOptions {
  std::optional<std::int64_t> max_tokens;  // the vocabulary's size, special tokens included; unset: all
  std::int64_t num_oov_indices = 1;        // 0 or 1 (Keras's floormod hashing over several is refused)
  std::optional<T> mask_token;             // index 0 when set
  T oov_token{};                           // what invert() gives for an out-of-vocabulary index
  std::vector<T> vocabulary;               // given instead of adapt(); special tokens excluded
  bool invert = false;                     // indices -> tokens
  std::string output_mode = "int";         // "int", "one_hot", "multi_hot", "count"
  std::string name;
};

// Keras's table: [mask_token] [oov_token]*num_oov_indices vocabulary..., each token's index its position.
// An out-of-vocabulary token gets the OOV index (mask ? 1 : 0), or -1 without OOV indices (Keras then
// raises; tower's in-graph lookup cannot).
template <typename T>
class LookupTable {
 public:
  LookupTable(const LookupOptions<T>& options, const std::string& where) : options_(options), where_(where) {
    if (options.num_oov_indices < 0 || options.num_oov_indices > 1)
      raise<ValueError>("{}: num_oov_indices must be 0 or 1 in tower, got {} (Keras hashes out-of-vocabulary "
                        "tokens over several indices; tower does not)",
                        where, options.num_oov_indices);
    if (options.max_tokens && *options.max_tokens <= special_tokens())
      raise<ValueError>("{}: max_tokens ({}) must be larger than the {} special token(s)", where, *options.max_tokens,
                        special_tokens());
    set_vocabulary(options.vocabulary);
  }

  // Keras's adapt: the tokens by frequency, most frequent first, ties by the token's value descending;
  // at most max_tokens - special tokens of them. The mask and OOV tokens are not counted.
  void adapt(const std::vector<T>& data) {
    std::map<T, std::int64_t> counts;
    for (const T& t : data)
      if (!(options_.mask_token && t == *options_.mask_token) && !(options_.num_oov_indices && t == options_.oov_token))
        ++counts[t];
    std::vector<std::pair<T, std::int64_t>> sorted(counts.begin(), counts.end());
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first > b.first;
    });
    std::vector<T> tokens;
    for (const auto& entry : sorted) tokens.push_back(entry.first);
    if (options_.max_tokens && static_cast<std::int64_t>(tokens.size()) > *options_.max_tokens - special_tokens())
      tokens.resize(static_cast<std::size_t>(*options_.max_tokens - special_tokens()));
    set_vocabulary(tokens);
  }

  void set_vocabulary(const std::vector<T>& tokens) {
    index_.clear();
    for (std::size_t i = 0; i < tokens.size(); ++i)
      if (!index_.emplace(tokens[i], static_cast<std::int64_t>(i) + special_tokens()).second)
        raise<ValueError>("{}: the vocabulary holds a token twice (position {})", where_, i);
    tokens_ = tokens;
  }

  // Keras's get_vocabulary(include_special_tokens).
  std::vector<T> get_vocabulary(bool include_special_tokens = true) const {
    std::vector<T> out;
    if (include_special_tokens) {
      if (options_.mask_token) out.push_back(*options_.mask_token);
      for (std::int64_t i = 0; i < options_.num_oov_indices; ++i) out.push_back(options_.oov_token);
    }
    out.insert(out.end(), tokens_.begin(), tokens_.end());
    return out;
  }
  std::int64_t vocabulary_size() const { return special_tokens() + static_cast<std::int64_t>(tokens_.size()); }

  std::int64_t index(const T& token) const {
    if (options_.mask_token && token == *options_.mask_token) return 0;
    auto it = index_.find(token);
    if (it != index_.end()) return it->second;
    return options_.num_oov_indices ? oov_index() : -1;
  }
  // The token of an index: the mask token for 0 (with one), the OOV token for an OOV or unknown index.
  T token(std::int64_t index) const {
    if (options_.mask_token && index == 0) return *options_.mask_token;
    const std::int64_t i = index - special_tokens();
    if (i < 0 || i >= static_cast<std::int64_t>(tokens_.size())) return options_.oov_token;
    return tokens_[static_cast<std::size_t>(i)];
  }

  std::int64_t special_tokens() const { return (options_.mask_token ? 1 : 0) + options_.num_oov_indices; }
  std::int64_t oov_index() const { return options_.mask_token ? 1 : 0; }
  const std::vector<T>& tokens() const { return tokens_; }  // the vocabulary without special tokens
  const LookupOptions<T>& options() const { return options_; }

 private:
  LookupOptions<T> options_;
  std::string where_;
  std::vector<T> tokens_;
  std::map<T, std::int64_t> index_;
};

}  // namespace tower::layers
