// Categorical preprocessing: the hash functions (reference vectors), CategoryEncoding and Hashing
// against Keras 3's numbers (tests/golden/make_categorical.py -> files/categorical.json), configs, errors.
#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tower/core/hash.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"

using namespace tower;
using nlohmann::json;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::run1;
using tower::testing::run_layer;

using tower::testing::entry;

namespace {

const json& golden() {
  static const json data = [] {
    std::ifstream in(std::string(TOWER_GOLDEN_DIR) + "/files/categorical.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return data;
}

// A nested JSON list of integers as an int64 tensor, and its shape.
Tensor int_tensor(const json& rows) {
  std::vector<std::int64_t> values;
  std::vector<std::int64_t> dims{static_cast<std::int64_t>(rows.size())};
  if (!rows.empty() && rows[0].is_array()) {
    dims.push_back(static_cast<std::int64_t>(rows[0].size()));
    for (const auto& r : rows)
      for (const auto& v : r) values.push_back(v.get<std::int64_t>());
  } else {
    for (const auto& v : rows) values.push_back(v.get<std::int64_t>());
  }
  return Tensor::from_vector<std::int64_t>(Shape(dims), values);
}

std::vector<double> flat(const json& nested) {
  std::vector<double> out;
  if (!nested.is_array()) return {nested.get<double>()};
  for (const auto& v : nested)
    for (double d : flat(v)) out.push_back(d);
  return out;
}

}  // namespace

TEST_CASE("Hash functions: SipHash-2-4 and FarmHash Fingerprint64 reference vectors, TF's buckets") {
  // SipHash-2-4's reference vector (Aumasson and Bernstein's paper, appendix A): key 00..0f, message 00..0e.
  char message[15];
  for (int i = 0; i < 15; ++i) message[i] = static_cast<char>(i);
  CHECK(hash::siphash24(0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, message, 15) == 0xa129ca6149be45e5ULL);
  CHECK(hash::siphash24(0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL, message, 0) == 0x726fdb47dd0e0e31ULL);
  // Full 64-bit Fingerprint64 values as tf.fingerprint (TF 2.21) gives them (its 8 bytes, little-endian).
  CHECK(hash::fingerprint64("a", 1) == 12917804110809363939ULL);
  CHECK(hash::fingerprint64(std::string(17, 'x').data(), 17) == 11306081951414300581ULL);
  CHECK(hash::fingerprint64("abcdefghijklmnopqrst", 20) == 7349542659848948094ULL);
  // Every length 0..130 (each FarmHash path) against TF 2.21's to_hash_bucket_fast/strong (mod 2^63 - 1).
  const json& raw = golden()["hashing"]["raw"];
  const std::uint64_t big = (1ULL << 63) - 1;
  const auto key0 = raw["strong_key"][0].get<std::uint64_t>(), key1 = raw["strong_key"][1].get<std::uint64_t>();
  for (std::size_t i = 0; i < raw["strings"].size(); ++i) {
    const std::string s = raw["strings"][i];
    CAPTURE(s.size());
    CHECK(std::to_string(hash::fingerprint64(s.data(), s.size()) % big) == raw["fast"][i].get<std::string>());
    CHECK(std::to_string(hash::siphash24(key0, key1, s.data(), s.size()) % big) == raw["strong"][i].get<std::string>());
  }
  char buf[21];
  CHECK(std::string(buf, hash::int64_to_decimal(INT64_MIN, buf)) == "-9223372036854775808");
  CHECK(std::string(buf, hash::int64_to_decimal(0, buf)) == "0");
}

TEST_CASE("CategoryEncoding: Keras 3's one_hot, multi_hot and count outputs") {
  clear_session();
  const json& g = golden()["category_encoding"];
  for (const auto& c : g["cases"]) {
    CAPTURE(c["mode"].get<std::string>());
    CAPTURE(c["input"].dump());
    layers::CategoryEncoding layer(c["num_tokens"].get<std::int64_t>(), {.output_mode = c["mode"]});
    const Tensor y = run1(layer, int_tensor(c["input"]));
    CHECK(y.dtype() == DType::float32);
    CHECK(y.to_vector<double>() == flat(c["output"]));
  }
  // count_weights: the second input.
  const json& w = g["weighted"];
  layers::CategoryEncoding count(4, {.output_mode = "count"});
  std::vector<float> weights;
  for (double d : flat(w["count_weights"])) weights.push_back(static_cast<float>(d));
  const Tensor y = run_layer(count, {int_tensor(w["input"]), Tensor::from_vector<float>(Shape{2, 4}, weights)}).at(0);
  CHECK(y.to_vector<double>() == flat(w["output"]));
  // Keras 3's config reads back and writes the same fields.
  const LayerPtr read = layers::layer_from_config({{"class_name", "CategoryEncoding"}, {"config", g["config"]}});
  CHECK(read->get_config()["num_tokens"] == 7);
  CHECK(read->get_config()["output_mode"] == "count");
  CHECK(read->name() == "ce");
  CHECK(layers::layer_from_config(entry(*read))->get_config().dump() == read->get_config().dump());
  // In a model: Input int64 (batch, 3) -> (batch, 5).
  auto x = layers::Input({3}, {.dtype = DType::int64});
  CHECK(layers::CategoryEncoding(5)(x).shape() == Shape{-1, 5});
  CHECK(layers::CategoryEncoding(5, {.output_mode = "one_hot"})(x).shape() == Shape{-1, 3, 5});
}

TEST_CASE("CategoryEncoding: errors") {
  clear_session();
  CHECK(contains(message_of<ValueError>([] { layers::CategoryEncoding(0); }), "num_tokens must be >= 1"));
  CHECK(contains(message_of<ValueError>([] { layers::CategoryEncoding(3, {.output_mode = "tf_idf"}); }),
                 "invalid output_mode \"tf_idf\""));
  CHECK(contains(message_of<ValueError>([] { layers::CategoryEncoding(3, {.sparse = true}); }), "sparse"));
  CHECK(contains(message_of<ValueError>([] {
                   layers::layer_from_config(json::parse(R"({"class_name": "CategoryEncoding", "config": {}})"));
                 }),
                 "num_tokens"));
  layers::CategoryEncoding enc(3);
  CHECK(contains(message_of<ShapeError>([&] { enc(layers::Input({2, 2}, {.dtype = DType::int64})); }), "rank 1"));
  layers::CategoryEncoding multi(3);
  const Tensor x = Tensor::from_vector<std::int64_t>(Shape{1, 2}, {0, 1});
  CHECK(contains(message_of<ValueError>([&] { run_layer(multi, {x, Tensor::from_vector<float>(Shape{1, 2}, {1, 1})}); }),
                 "count_weights"));
}

TEST_CASE("Hashing: Keras 3's bins of integers (negative, large) and strings, with and without salt") {
  clear_session();
  const json& g = golden()["hashing"];
  std::vector<std::int64_t> ints;
  for (const auto& s : g["ints"]) ints.push_back(std::stoll(s.get<std::string>()));
  const Tensor x = Tensor::from_vector<std::int64_t>(Shape{static_cast<std::int64_t>(ints.size())}, ints);
  std::vector<std::string> strings = g["strings"];
  for (const auto& c : g["cases"]) {
    CAPTURE(c["kwargs"].dump());
    // Keras 3's config builds the layer: num_bins, salt ([a, b]), mask_value, dtype int64.
    const LayerPtr layer = layers::layer_from_config({{"class_name", "Hashing"}, {"config", c["config"]}});
    const Tensor bins = run1(*layer, x);
    CHECK(bins.dtype() == DType::int64);
    const auto got = bins.to_vector<std::int64_t>();
    const auto want = c["int_bins"].get<std::vector<std::int64_t>>();
    for (std::size_t i = 0; i < ints.size(); ++i) {
      CAPTURE(ints[i]);
      CHECK(got[i] == want[i]);
    }
    if (c.contains("string_bins")) {
      const auto sgot = static_cast<const layers::Hashing&>(*layer).hash(strings).to_vector<std::int64_t>();
      const auto swant = c["string_bins"].get<std::vector<std::int64_t>>();
      for (std::size_t i = 0; i < strings.size(); ++i) {
        CAPTURE(strings[i]);
        CHECK(sgot[i] == swant[i]);
      }
    }
    CHECK(layers::layer_from_config(entry(*layer))->get_config().dump() == layer->get_config().dump());
    // Floats are truncated to int64 first, as Keras does.
    const Tensor xf = Tensor::from_vector<double>(Shape{3}, {7.9, -1.2, 42.0});
    CHECK(run1(*layer, xf).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{bins.to_vector<std::int64_t>()[3], bins.to_vector<std::int64_t>()[2],
                                    bins.to_vector<std::int64_t>()[4]});
  }
  const json& sm = g["string_mask"];
  layers::Hashing masked(sm["num_bins"].get<std::int64_t>(), {.string_mask_value = sm["mask_value"].get<std::string>()});
  const auto mgot = masked.hash(strings).to_vector<std::int64_t>();
  for (std::size_t i = 0; i < strings.size(); ++i)
    CHECK(mgot[i] == sm["bins"][i].get<std::int64_t>());
  CHECK(masked.get_config()["mask_value"] == "");
  for (const auto& c : g["encoded"]) {
    CAPTURE(c["mode"].get<std::string>());
    layers::Hashing layer(4, {.output_mode = c["mode"]});
    CHECK(run1(layer, int_tensor(c["input"])).to_vector<double>() == flat(c["output"]));
  }
}

TEST_CASE("Hashing: configs and errors") {
  clear_session();
  layers::Hashing h(10, {.salt = std::array<std::int64_t, 2>{5, 5}});
  CHECK(h.get_config()["salt"] == json::array({5, 5}));
  CHECK(h.get_config()["dtype"] == "int64");
  const auto from_int_salt = layers::layer_from_config(
      json::parse(R"({"class_name": "Hashing", "config": {"num_bins": 10, "salt": 5, "dtype": "int64"}})"));
  CHECK(from_int_salt->get_config()["salt"] == json::array({5, 5}));
  CHECK(contains(message_of<ValueError>([] { layers::Hashing(0); }), "num_bins must be a positive integer"));
  CHECK(contains(message_of<ValueError>([] { layers::Hashing(3, {.output_mode = "tf_idf"}); }), "invalid output_mode"));
  CHECK(contains(message_of<ValueError>([] {
                   layers::layer_from_config(json::parse(
                       R"({"class_name": "Hashing", "config": {"num_bins": 3, "salt": [1, 2, 3]}})"));
                 }),
                 "salt"));
  CHECK(contains(message_of<ValueError>([] {
                   layers::layer_from_config(json::parse(
                       R"({"class_name": "Hashing", "config": {"num_bins": 3, "dtype": "float32"}})"));
                 }),
                 "int64 bins"));
  CHECK(contains(message_of<ValueError>([] { layers::Hashing(3, {.mask_value = 0}).hash({"a"}); }), "string_mask_value"));
  CHECK(contains(message_of<ValueError>([] { layers::Hashing(3, {.output_mode = "count"}).hash({"a"}); }),
                 "int bins"));
}

namespace {
// Keras's kwargs of a lookup case as tower's options (fields the cases use).
template <typename Options>
Options lookup_options(const json& kwargs, Options options) {
  if (kwargs.contains("max_tokens")) options.max_tokens = kwargs["max_tokens"].get<std::int64_t>();
  if (kwargs.contains("num_oov_indices")) options.num_oov_indices = kwargs["num_oov_indices"].get<std::int64_t>();
  if (kwargs.contains("mask_token")) options.mask_token = kwargs["mask_token"];
  if (kwargs.contains("oov_token")) options.oov_token = kwargs["oov_token"];
  if (kwargs.contains("output_mode")) options.output_mode = kwargs["output_mode"].get<std::string>();
  if (kwargs.contains("oov_method")) options.oov_method = kwargs["oov_method"].get<std::string>();
  if (kwargs.contains("salt")) options.salt = kwargs["salt"].get<std::array<std::int64_t, 2>>();
  return options;
}

// Keras's float32 tf_idf values (an idf's mean in float32 may differ in the last bit); others exactly.
void check_values(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(1e-6));
}

std::vector<std::string> strings(const json& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows)
    for (const auto& v : r) out.push_back(v.get<std::string>());
  return out;
}
}  // namespace

TEST_CASE("IntegerLookup: adapt, lookup, encodings and invert as Keras 3") {
  clear_session();
  const json& g = golden()["integer_lookup"];
  const Tensor data = int_tensor(g["adapt_data"]);
  for (const auto& c : g["cases"]) {
    INFO(c["kwargs"].dump());
    const auto options = lookup_options(c["kwargs"], layers::IntegerLookupOptions());
    layers::IntegerLookup lookup(options);
    lookup.adapt(data);
    CHECK(json(lookup.get_vocabulary()) == c["vocabulary"]);
    const Tensor y = run1(lookup, int_tensor(c["query"]));
    check_values(y.to_vector<double>(), flat(c["output"]));
    // The config (with the vocabulary, and idf_weights for tf_idf, inline) rebuilds the same lookup.
    auto rebuilt = layers::layer_from_config(entry(lookup));
    check_values(run1(*rebuilt, int_tensor(c["query"])).to_vector<double>(), flat(c["output"]));
    if (c.contains("inverted")) {
      auto inverse_options = options;
      inverse_options.max_tokens.reset();
      inverse_options.invert = true;
      inverse_options.vocabulary = lookup.get_vocabulary(false);
      layers::IntegerLookup inverse(inverse_options);
      CHECK(flat(json(run1(inverse, y).to_vector<double>())) == flat(c["inverted"]));
    }
  }
  // A given vocabulary keeps its order; the config carries it and rebuilds the same layer.
  const json& given = g["given"];
  layers::IntegerLookupOptions options;
  options.vocabulary = given["vocabulary"].get<std::vector<std::int64_t>>();
  layers::IntegerLookup lookup(options);
  CHECK(flat(json(run1(lookup, int_tensor(given["query"])).to_vector<double>())) == flat(given["output"]));
  const json config = lookup.get_config();
  for (const char* key : {"invert", "max_tokens", "num_oov_indices", "oov_token", "mask_token", "output_mode",
                          "vocabulary", "vocabulary_size"})
    CHECK(config[key] == given["config"][key]);
  auto rebuilt = layers::layer_from_config(entry(lookup));
  CHECK(json(dynamic_cast<layers::IntegerLookup&>(*rebuilt).get_vocabulary()) ==
        json(lookup.get_vocabulary()));
  // Keras 3's own config of an adapted layer (vocabulary null) loads: the vocabulary is empty, as in Keras.
  auto keras = layers::layer_from_config({{"class_name", "IntegerLookup"}, {"config", g["cases"][0]["config"]}});
  CHECK(dynamic_cast<layers::IntegerLookup&>(*keras).vocabulary_size() == 1);
  // tf_idf with given weights: the OOV index weighs their mean.
  const json& idf = g["given_idf"];
  layers::IntegerLookupOptions idf_options;
  idf_options.vocabulary = idf["vocabulary"].get<std::vector<std::int64_t>>();
  idf_options.idf_weights = idf["idf_weights"].get<std::vector<double>>();
  idf_options.output_mode = "tf_idf";
  layers::IntegerLookup weighted(idf_options);
  check_values(run1(weighted, int_tensor(idf["query"])).to_vector<double>(), flat(idf["output"]));
  // Errors.
  layers::IntegerLookupOptions negative;
  negative.num_oov_indices = -1;
  CHECK(contains(message_of<ValueError>([&] { layers::IntegerLookup{negative}; }), "num_oov_indices"));
  layers::IntegerLookupOptions salted;
  salted.salt = std::array<std::int64_t, 2>{1, 2};
  CHECK(contains(message_of<ValueError>([&] { layers::IntegerLookup{salted}; }), "farmhash"));
  layers::IntegerLookupOptions unweighted = idf_options;
  unweighted.idf_weights.clear();
  CHECK(contains(message_of<ValueError>([&] { layers::IntegerLookup{unweighted}; }), "idf_weights"));
  layers::IntegerLookupOptions small;
  small.max_tokens = 1;
  CHECK(contains(message_of<ValueError>([&] { layers::IntegerLookup{small}; }), "max_tokens"));
  CHECK(contains(message_of<DTypeError>([&] { lookup.adapt(Tensor::zeros({2}, DType::float32)); }), "integer"));
}

TEST_CASE("StringLookup: adapt, lookup and invert on the host as Keras 3") {
  const json& g = golden()["string_lookup"];
  const auto data = strings(g["adapt_data"]);
  for (const auto& c : g["cases"]) {
    INFO(c["kwargs"].dump());
    const auto options = lookup_options(c["kwargs"], layers::StringLookupOptions());
    layers::StringLookup lookup(options);
    lookup.adapt(data);
    CHECK(json(lookup.get_vocabulary()) == c["vocabulary"]);
    const Tensor y = lookup(strings(c["query"]), Shape{2, 3});
    CHECK(flat(json(y.to_vector<double>())) == flat(c["output"]));
    auto inverse_options = options;
    inverse_options.max_tokens.reset();
    inverse_options.vocabulary = lookup.get_vocabulary(false);
    CHECK(json(layers::StringLookup(inverse_options).invert(y)) == json(strings(c["inverted"])));
    // The config round-trips with the vocabulary inline.
    CHECK(json(layers::StringLookup::from_config(lookup.get_config()).get_vocabulary()) == c["vocabulary"]);
  }
  layers::StringLookupOptions encoded;
  encoded.output_mode = "one_hot";
  CHECK(contains(message_of<ValueError>([&] { layers::StringLookup{encoded}; }), "CategoryEncoding"));
  CHECK(contains(message_of<ShapeError>([&] { layers::StringLookup()({"a", "b"}, Shape{3}); }), "2 tokens"));
}
