// Hashing.
#include "tower/layers/preprocessing/hashing.h"

#include "tower/core/error.h"
#include "tower/core/hash.h"
#include "tower/core/ops.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layer_utils.h"
#include "tower/layers/preprocessing/category_encoding.h"

namespace tower::layers {

namespace {

// The dtype name of a config ("int64", or a Keras 3 DTypePolicy's name); "" when absent.
std::string config_dtype(const nlohmann::json& config) {
  if (!config.contains("dtype") || config["dtype"].is_null()) return "";
  const auto& d = config["dtype"];
  if (d.is_string()) return d.get<std::string>();
  if (d.is_object() && d.contains("config") && d["config"].is_object() && d["config"].contains("name"))
    return d["config"]["name"].get<std::string>();
  if (d.is_object() && d.contains("name") && d["name"].is_string()) return d["name"].get<std::string>();
  return d.dump();
}

}  // namespace

Hashing::Hashing(std::int64_t num_bins, const HashingOptions& options)
    : Layer(options.name, "hashing"), num_bins_(num_bins), options_(options) {
  if (num_bins <= 0)
    raise<ValueError>("{}: num_bins must be a positive integer, got {}", describe(*this), num_bins);
  check_output_mode(*this, options_.output_mode, {"int", "one_hot", "multi_hot", "count"});
  if (options_.sparse)
    raise<ValueError>("{}: sparse=True is not supported (tower has no sparse tensors)", describe(*this));
  if (options_.mask_value && options_.string_mask_value)
    raise<ValueError>("{}: give mask_value or string_mask_value, not both", describe(*this));
}

std::vector<SymbolicTensor> Hashing::call(CallContext&, const std::vector<SymbolicTensor>& inputs) {
  if (inputs.size() != 1) raise<ValueError>("{}: expected one input, got {}", describe(*this), inputs.size());
  if (options_.string_mask_value)
    raise<ValueError>("{}: a string mask_value applies to hash(strings) only; tensors hold numbers", describe(*this));
  const SymbolicTensor& x = inputs[0];
  const auto salt = options_.salt.value_or(std::array<std::int64_t, 2>{0, 0});
  SymbolicTensor bins = ops::hashing_bins(x, num_bins_, options_.mask_value.has_value(),
                                          options_.mask_value.value_or(0), options_.salt.has_value(), salt[0], salt[1]);
  if (options_.output_mode == "int") return {bins};
  return {encode_categorical(*this, bins, options_.output_mode, num_bins_)};
}

std::int64_t Hashing::bin(const std::string& value) const {
  std::int64_t bins = num_bins_;
  const bool masking = options_.string_mask_value.has_value() && num_bins_ > 1;
  if (masking) {
    if (value == *options_.string_mask_value) return 0;
    bins -= 1;
  }
  const std::uint64_t h =
      options_.salt ? hash::siphash24(static_cast<std::uint64_t>((*options_.salt)[0]),
                                      static_cast<std::uint64_t>((*options_.salt)[1]), value.data(), value.size())
                    : hash::fingerprint64(value.data(), value.size());
  return static_cast<std::int64_t>(h % static_cast<std::uint64_t>(bins)) + (masking ? 1 : 0);
}

Tensor Hashing::hash(const std::vector<std::string>& values) const {
  if (options_.output_mode != "int")
    raise<ValueError>("{}: hash(strings) gives the int bins; encode them with CategoryEncoding({}, ...)",
                      describe(*this), num_bins_);
  if (options_.mask_value)
    raise<ValueError>("{}: mask_value {} is an integer; strings need string_mask_value", describe(*this),
                      *options_.mask_value);
  std::vector<std::int64_t> out;
  out.reserve(values.size());
  for (const auto& v : values) out.push_back(bin(v));
  return Tensor::from_vector<std::int64_t>(Shape{static_cast<std::int64_t>(values.size())}, out);
}

nlohmann::json Hashing::get_config() const {
  nlohmann::json mask = nullptr, salt = nullptr;
  if (options_.mask_value) mask = *options_.mask_value;
  if (options_.string_mask_value) mask = *options_.string_mask_value;
  if (options_.salt) salt = {(*options_.salt)[0], (*options_.salt)[1]};
  nlohmann::json config = layer_config(*this, {{"num_bins", num_bins_},
                                               {"salt", salt},
                                               {"mask_value", mask},
                                               {"output_mode", options_.output_mode},
                                               {"sparse", false}});
  if (options_.output_mode == "int") config["dtype"] = "int64";  // Keras: the bins' dtype
  return config;
}

LayerPtr Hashing::from_config(const nlohmann::json& config) {
  const std::string mode = config.value("output_mode", std::string("int"));
  const std::string dtype = config_dtype(config);
  nlohmann::json rest = config;
  if (mode == "int") {
    if (!dtype.empty() && dtype != "int64" && dtype != "int32")
      ConfigReader(config, "Hashing").fail("field \"dtype\" = \"" + dtype + "\": output_mode \"int\" gives int64 bins");
    rest.erase("dtype");
  }
  ConfigReader r(rest, "Hashing");
  r.check_common();
  if (!r.has("num_bins")) r.fail("the config has no field \"num_bins\", which this layer needs");
  HashingOptions options{.output_mode = mode, .sparse = r.boolean("sparse", false), .name = r.name()};
  if (r.has("mask_value")) {
    const auto& m = config["mask_value"];
    if (m.is_number_integer()) options.mask_value = m.get<std::int64_t>();
    else if (m.is_string()) options.string_mask_value = m.get<std::string>();
    else r.fail("field \"mask_value\" must be an integer or a string, got " + m.dump());
  }
  if (r.has("salt")) {
    const auto& s = config["salt"];
    if (s.is_number_integer()) options.salt = std::array<std::int64_t, 2>{s.get<std::int64_t>(), s.get<std::int64_t>()};
    else if (s.is_array() && s.size() == 2 && s[0].is_number_integer() && s[1].is_number_integer())
      options.salt = std::array<std::int64_t, 2>{s[0].get<std::int64_t>(), s[1].get<std::int64_t>()};
    else r.fail("field \"salt\" must be an integer or a list of 2 integers, got " + s.dump());
  }
  return r.finish(Hashing(r.integer("num_bins"), options));
}

}  // namespace tower::layers
