// model_config JSON: Model and Sequential get_config/from_config, model_to_json and model_from_json.
#include "tower/io/model_config.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "tower/core/error.h"
#include "tower/io/keras_weights.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/registry.h"
#include "tower/layers/engine/sequential.h"

namespace tower {

using nlohmann::json;

namespace {

bool is_model(const Layer& layer) { return dynamic_cast<const Model*>(&layer) != nullptr; }
bool is_input(const Layer& layer) { return dynamic_cast<const InputLayer*>(&layer) != nullptr; }

// ---- writing -------------------------------------------------------------------------------------

// {"input_shape": ...} of the layer's first call, as tf.keras 2.13+ writes it (null when unknown).
json build_config(const Layer& layer) {
  std::vector<Shape> shapes;
  if (const auto* model = dynamic_cast<const Model*>(&layer)) {
    for (const auto& x : model->inputs()) shapes.push_back(x.shape());
  } else {
    for (const auto& spec : layer.build_input_specs()) shapes.push_back(spec.shape);
  }
  if (shapes.empty()) return nullptr;
  if (shapes.size() == 1) return {{"input_shape", layers::shape_to_json(shapes[0])}};
  json list = json::array();
  for (const auto& s : shapes) list.push_back(layers::shape_to_json(s));
  return {{"input_shape", list}};
}

// One entry of a config's "layers" list (Sequential's form; functional models add name and inbound_nodes).
json layer_entry(const Layer& layer) {
  json entry = {{"module", is_model(layer) ? "keras" : "keras.layers"},
                {"class_name", layer.class_name()},
                {"config", layer.get_config()},
                {"registered_name", nullptr}};
  if (!is_input(layer))
    if (json b = build_config(layer); !b.is_null()) entry["build_config"] = b;
  return entry;
}

json sequential_config(const Model& model) {
  json list = json::array();
  if (!model.inputs().empty()) list.push_back(layer_entry(model.inputs()[0].layer()));
  for (const auto& layer : model.layers()) list.push_back(layer_entry(*layer));
  return {{"name", model.name()}, {"layers", list}};
}

json functional_config(const Model& model) {
  // The calls that belong to this model: everything from the outputs back to the inputs.
  std::set<const KerasNode*> input_nodes, in_model;
  for (const auto& x : model.inputs()) input_nodes.insert(x.node().get());
  std::function<void(const KerasTensor&)> visit = [&](const KerasTensor& t) {
    if (!in_model.insert(t.node().get()).second || input_nodes.count(t.node().get())) return;
    for (const auto& x : t.node()->inputs) visit(x);
  };
  for (const auto& y : model.outputs()) visit(y);

  // Node numbers within this config: a layer's calls in this model, in call order. tf.keras numbers a
  // nested model's calls from 1 (its node 0 links its own inputs to its outputs).
  const auto layers = model.layers();
  std::map<const KerasNode*, int> index;
  std::map<const void*, std::vector<const KerasNode*>> kept;
  for (const auto& layer : layers) {
    if (is_input(*layer)) continue;
    int next = is_model(*layer) ? 1 : 0;
    for (const auto& weak : layer->inbound_nodes()) {
      auto node = weak.lock();
      if (!node || !in_model.count(node.get())) continue;
      index[node.get()] = next++;
      kept[layer->id()].push_back(node.get());
    }
  }
  for (const auto* node : input_nodes) index[node] = 0;
  auto ref = [&](const KerasTensor& t) { return json::array({t.layer().name(), index.at(t.node().get()), t.index()}); };

  json list = json::array();
  for (const auto& layer : layers) {
    json entry = layer_entry(*layer);
    entry["name"] = layer->name();
    json nodes = json::array();
    for (const auto* node : kept[layer->id()]) {
      // The call's keyword arguments (this call's handle has them) in every entry, as tf.keras writes
      // them; inputs Keras passes by keyword go into the first entry's (MultiHeadAttention's value, ...).
      const json kwargs = node->layer->call_kwargs();
      const auto keywords = node->layer->input_keywords();
      json args = json::array();
      if (!keywords.empty() && node->inputs.size() > 1) {
        if (node->inputs.size() - 1 > keywords.size())
          raise<ValueError>("layer \"{}\": a call with {} inputs, but the layer names only {} keyword inputs",
                            layer->name(), node->inputs.size(), keywords.size());
        json first = ref(node->inputs[0]);
        json with_inputs = kwargs;
        for (std::size_t i = 1; i < node->inputs.size(); ++i) with_inputs[keywords[i - 1]] = ref(node->inputs[i]);
        first.push_back(with_inputs);
        args.push_back(first);
      } else {
        for (const auto& x : node->inputs) {
          json r = ref(x);
          r.push_back(kwargs);
          args.push_back(r);
        }
      }
      nodes.push_back(args);
    }
    entry["inbound_nodes"] = nodes;
    list.push_back(entry);
  }
  json inputs = json::array(), outputs = json::array();
  for (const auto& x : model.inputs()) inputs.push_back(ref(x));
  for (const auto& y : model.outputs()) outputs.push_back(ref(y));
  return {{"name", model.name()},
          {"trainable", model.trainable()},
          {"layers", list},
          {"input_layers", inputs},
          {"output_layers", outputs}};
}

// ---- reading -------------------------------------------------------------------------------------

// [layer_name, node_index, tensor_index]: one tensor of a functional config.
struct Ref {
  std::string layer;
  int node = 0;
  int tensor = 0;
};

Ref parse_ref(const json& v, const std::string& where) {
  if (!v.is_array() || v.size() < 3 || !v[0].is_string() || !v[1].is_number_integer() || !v[2].is_number_integer())
    raise<ValueError>("{}: expected [layer_name, node_index, tensor_index], got {}", where, v.dump());
  // As ints, checked: get<int> wrapped 4294967296 to node 0, another tensor than the file names.
  const auto index = [&](const json& i, const char* what) {
    if (i.is_number_unsigned() ? i.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<int>::max())
                               : (i.get<std::int64_t>() < 0 || i.get<std::int64_t>() > std::numeric_limits<int>::max()))
      raise<ValueError>("{}: {} {} in {} is out of range (0 to {}); the file is damaged", where, what, i.dump(),
                        v.dump(), std::numeric_limits<int>::max());
    return static_cast<int>(i.get<std::int64_t>());
  };
  return {v[0].get<std::string>(), index(v[1], "node_index"), index(v[2], "tensor_index")};
}

bool is_keras_tensor(const json& v) {
  return v.is_object() && v.contains("class_name") && v["class_name"] == "__keras_tensor__";
}

// Keras 3's call arguments: the __keras_tensor__ entries in order (lists nest for merge layers).
void collect_tensors(const json& v, std::vector<Ref>& out, const std::string& where) {
  if (is_keras_tensor(v)) {
    if (!v.contains("config") || !v["config"].contains("keras_history"))
      raise<ValueError>("{}: a __keras_tensor__ without config.keras_history", where);
    out.push_back(parse_ref(v["config"]["keras_history"], where + ", keras_history"));
  } else if (v.is_array()) {
    for (const auto& e : v) collect_tensors(e, out, where);
  } else if (!v.is_null()) {
    raise<ValueError>("{}: a call argument that is not a tensor ({}) is not supported", where, v.dump().substr(0, 100));
  }
}

bool contains_tensor(const json& v) {
  if (is_keras_tensor(v)) return true;
  if (v.is_array() || v.is_object())
    for (const auto& e : v) if (contains_tensor(e)) return true;
  return false;
}

// One inbound node: the call's positional input tensors, those passed by keyword (the layer's
// input_keywords()) and its other keyword arguments.
struct ParsedNode {
  std::vector<Ref> args;
  std::vector<std::pair<std::string, Ref>> keyword_args;
  json kwargs = json::object();
  // Every tensor the call reads.
  std::vector<Ref> refs() const {
    std::vector<Ref> all = args;
    for (const auto& [key, r] : keyword_args) all.push_back(r);
    return all;
  }
};

struct ParsedLayer {
  std::string name;
  LayerPtr layer;
  std::vector<ParsedNode> nodes;  // inbound nodes, one per call
  int offset = 0;                 // config node number of the first call
};

// A legacy keyword argument holding a tensor: [layer_name, node_index, tensor_index] (, {kwargs}).
bool is_legacy_ref(const json& v) {
  return v.is_array() && (v.size() == 3 || v.size() == 4) && v[0].is_string() && v[1].is_number_integer() &&
         v[2].is_number_integer();
}

json get_field(const json& config, const char* key, const std::string& where) {
  if (!config.contains(key)) raise<ValueError>("{}: the config has no \"{}\"", where, key);
  return config[key];
}

LayerPtr functional_from_config(const json& config) {
  if (!config.is_object()) raise<ValueError>("functional model config: expected an object, got {}", config.dump().substr(0, 200));
  const std::string model_name = config.value("name", "");
  const std::string where = "Model \"" + model_name + "\"";
  const json layers_json = get_field(config, "layers", where);
  if (!layers_json.is_array()) raise<ValueError>("{}: \"layers\" must be a list", where);

  std::vector<ParsedLayer> parsed;
  std::map<std::string, std::size_t> by_name;
  bool keras3 = false;
  for (const auto& entry : layers_json) {
    ParsedLayer p;
    p.layer = layers::layer_from_config(entry);
    p.name = entry.contains("name") && entry["name"].is_string() ? entry["name"].get<std::string>() : p.layer->name();
    if (by_name.count(p.name)) raise<ValueError>("{}: two layers are named \"{}\"; layer names must be unique", where, p.name);
    const json nodes = entry.contains("inbound_nodes") ? entry["inbound_nodes"] : json::array();
    if (!nodes.is_array()) raise<ValueError>("{}: layer \"{}\": \"inbound_nodes\" must be a list", where, p.name);
    const auto keywords = p.layer->input_keywords();
    auto is_keyword = [&](const std::string& key) {
      return std::find(keywords.begin(), keywords.end(), key) != keywords.end();
    };
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const std::string node_where = where + ": layer \"" + p.name + "\", inbound node " + std::to_string(k);
      ParsedNode node;
      if (nodes[k].is_object()) {  // Keras 3: {"args": [...], "kwargs": {...}}
        keras3 = true;
        collect_tensors(nodes[k].value("args", json::array()), node.args, node_where);
        if (nodes[k].contains("kwargs") && nodes[k]["kwargs"].is_object())
          for (const auto& [key, value] : nodes[k]["kwargs"].items()) {
            if (is_keyword(key) && is_keras_tensor(value)) {
              std::vector<Ref> one;
              collect_tensors(value, one, node_where + ", keyword argument " + key);
              node.keyword_args.emplace_back(key, one.at(0));
            } else if (contains_tensor(value)) {
              raise<ValueError>("{}: tensors passed as keyword arguments (masks, ...) are not supported (\"{}\")",
                                node_where, key);
            } else {
              node.kwargs[key] = value;
            }
          }
      } else if (nodes[k].is_array()) {  // legacy: [[name, node, tensor, {kwargs}], ...]
        for (const auto& r : nodes[k]) {
          node.args.push_back(parse_ref(r, node_where));
          if (r.size() < 4 || !r[3].is_object()) continue;
          for (const auto& [key, value] : r[3].items()) {
            if (is_keyword(key) && is_legacy_ref(value)) {
              const std::string name = key;  // a copy: clang does not capture structured bindings
              if (std::none_of(node.keyword_args.begin(), node.keyword_args.end(),
                               [&](const auto& e) { return e.first == name; }))
                node.keyword_args.emplace_back(key, parse_ref(value, node_where + ", keyword argument " + key));
            } else {
              node.kwargs[key] = value;
            }
          }
        }
      } else {
        raise<ValueError>("{}: expected a list or an object, got {}", node_where, nodes[k].dump().substr(0, 100));
      }
      p.nodes.push_back(std::move(node));
    }
    by_name[p.name] = parsed.size();
    parsed.push_back(std::move(p));
  }

  auto parse_io = [&](const char* key) {
    const json v = get_field(config, key, where);
    std::vector<Ref> refs;
    if (!v.is_array() || v.empty()) raise<ValueError>("{}: \"{}\" must be a non-empty list", where, key);
    if (v[0].is_string()) return std::vector<Ref>{parse_ref(v, where + ", " + key)};  // Keras 3: one tensor
    for (const auto& e : v) refs.push_back(parse_ref(e, where + ", " + key));
    return refs;
  };
  const auto input_refs = parse_io("input_layers");
  const auto output_refs = parse_io("output_layers");

  // Every reference must name a layer of this config.
  auto check = [&](const Ref& r, const std::string& from) {
    if (by_name.count(r.layer)) return;
    std::string names;
    for (const auto& p : parsed) names += (names.empty() ? "" : ", ") + p.name;
    raise<ValueError>("{}: {} refers to layer \"{}\", which is not among the model's layers ({})", where, from, r.layer,
                      names);
  };
  for (const auto& p : parsed)
    for (std::size_t k = 0; k < p.nodes.size(); ++k)
      for (const auto& r : p.nodes[k].refs())
        check(r, "layer \"" + p.name + "\" (inbound node " + std::to_string(k) + ")");
  for (const auto& r : input_refs) check(r, "input_layers");
  for (const auto& r : output_refs) check(r, "output_layers");

  // Nested models in legacy configs: tf.keras numbers their calls from 1, Keras 1/2 from 0. A
  // reference to node n (one past 0-based) means 1-based; one to node 0 means 0-based; else tf.keras.
  if (!keras3) {
    std::map<std::string, std::vector<int>> uses;
    for (const auto& p : parsed)
      for (const auto& node : p.nodes)
        for (const auto& r : node.refs()) uses[r.layer].push_back(r.node);
    for (const auto& r : output_refs) uses[r.layer].push_back(r.node);
    for (auto& p : parsed) {
      if (!is_model(*p.layer)) continue;
      const int n = static_cast<int>(p.nodes.size());
      bool one_based = false, zero_based = false;
      for (int u : uses[p.name]) one_based |= u == n, zero_based |= u == 0;
      p.offset = one_based || !zero_based ? 1 : 0;
    }
  }

  // Replays the calls as Keras does: layer by layer, each layer's nodes in order, deferring a node
  // until the tensors it needs exist.
  std::vector<std::vector<std::vector<KerasTensor>>> made(parsed.size());  // per layer, per call
  std::vector<std::size_t> done(parsed.size(), 0);
  for (std::size_t i = 0; i < parsed.size(); ++i)
    if (const auto* input = dynamic_cast<const InputLayer*>(parsed[i].layer.get())) made[i].push_back({input->make_output()});
  auto lookup = [&](const Ref& r, const std::string& from, KerasTensor* out) {
    std::size_t j = by_name.at(r.layer);
    int k = is_input(*parsed[j].layer) ? 0 : r.node - parsed[j].offset;
    if (k < 0 || static_cast<std::size_t>(k) >= parsed[j].nodes.size() + (is_input(*parsed[j].layer) ? 1 : 0))
      raise<ValueError>("{}: {} refers to node {} of layer \"{}\", which has {} inbound node(s) in the config", where,
                        from, r.node, r.layer, parsed[j].nodes.size());
    if (static_cast<std::size_t>(k) >= made[j].size()) return false;
    const auto& outputs = made[j][static_cast<std::size_t>(k)];
    if (r.tensor < 0 || static_cast<std::size_t>(r.tensor) >= outputs.size())
      raise<ValueError>("{}: {} refers to output {} of layer \"{}\", which has {} output(s)", where, from, r.tensor,
                        r.layer, outputs.size());
    *out = outputs[static_cast<std::size_t>(r.tensor)];
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t i = 0; i < parsed.size(); ++i) {
      auto& p = parsed[i];
      if (is_input(*p.layer)) continue;
      while (done[i] < p.nodes.size()) {
        const std::string from = "layer \"" + p.name + "\" (inbound node " + std::to_string(done[i]) + ")";
        const ParsedNode& node = p.nodes[done[i]];
        std::vector<KerasTensor> args;
        std::map<std::string, KerasTensor> keyword_args;
        bool ready = true;
        for (const auto& r : node.args) {
          KerasTensor t;
          if (!(ready = lookup(r, from, &t))) break;
          args.push_back(t);
        }
        for (const auto& [key, r] : node.keyword_args) {
          KerasTensor t;
          if (!ready || !(ready = lookup(r, from, &t))) break;
          keyword_args[key] = t;
        }
        if (!ready) break;
        if (args.empty()) raise<ValueError>("{}: {} has no input tensors", where, from);
        made[i].push_back(p.layer->call_from_config(args, keyword_args, node.kwargs));
        ++done[i];
        progress = true;
      }
    }
  }
  for (std::size_t i = 0; i < parsed.size(); ++i)
    if (!is_input(*parsed[i].layer) && done[i] < parsed[i].nodes.size())
      raise<ValueError>("{}: layer \"{}\" (inbound node {}) needs a tensor that no call in the config makes (a "
                        "cycle, or a reference to a node that does not exist)",
                        where, parsed[i].name, done[i]);

  auto resolve = [&](const std::vector<Ref>& refs, const char* key) {
    std::vector<KerasTensor> out;
    for (const auto& r : refs) {
      KerasTensor t;
      if (!lookup(r, key, &t))
        raise<ValueError>("{}: {} refers to node {} of layer \"{}\", which is never called", where, key, r.node, r.layer);
      out.push_back(t);
    }
    return out;
  };
  auto model = std::make_shared<Model>(resolve(input_refs, "input_layers"), resolve(output_refs, "output_layers"),
                                       model_name);
  if (config.contains("trainable") && config["trainable"] == false) model->set_trainable(false);
  return model;
}

LayerPtr sequential_from_config(const json& config) {
  json list;
  std::string name;
  if (config.is_array()) {  // Keras <= 2.2.2 (and Keras 1): just the layers
    list = config;
  } else if (config.is_object()) {
    name = config.value("name", "");
    list = get_field(config, "layers", "Sequential \"" + name + "\"");
  }
  const std::string where = "Sequential \"" + name + "\"";
  if (!list.is_array()) raise<ValueError>("{}: the config must be a list of layers or {{\"name\", \"layers\": [...]}}", where);

  std::vector<LayerRef> refs;
  KerasTensor input;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& entry = list[i];
    LayerPtr layer = layers::layer_from_config(entry);
    if (auto* input_layer = dynamic_cast<InputLayer*>(layer.get())) {
      if (i != 0) raise<ValueError>("{}: an InputLayer can only be the first layer (found \"{}\" at position {})", where, layer->name(), i);
      input = input_layer->make_output();
      refs.emplace_back(input);
      continue;
    }
    if (!input.defined() && refs.empty()) {
      // Keras 1/2 keep the input shape in the first layer's config; Keras 1 Dense may give input_dim only.
      const json& c = entry["config"];
      std::vector<std::int64_t> dims;
      bool known = false;
      if (c.is_object() && c.contains("batch_input_shape") && !c["batch_input_shape"].is_null()) {
        layers::ConfigReader r(c, entry["class_name"].get<std::string>());
        dims = r.shape("batch_input_shape");
        if (dims.empty()) r.fail("field \"batch_input_shape\" must include the batch dimension");
        dims.erase(dims.begin());
        known = true;
      } else if (c.is_object() && c.contains("input_dim") && c["input_dim"].is_number_integer() &&
                 entry["class_name"] != "Embedding") {
        layers::ConfigReader r(c, entry["class_name"].get<std::string>());
        dims = {r.integer("input_dim")};  // checked: get<std::int64_t> wrapped 2^64 - 1 to -1, "unknown"
        if (dims[0] < 0) r.fail(fmt::format("field \"input_dim\" must be >= 0, got {}", dims[0]));
        known = true;
      } else if (config.is_object() && config.contains("build_input_shape") && config["build_input_shape"].is_array()) {
        layers::ConfigReader r(config, "Sequential");
        dims = r.shape("build_input_shape");
        dims.erase(dims.begin());
        known = true;
      }
      if (known) {
        DType dtype = DType::float32;
        if (c.is_object() && c.contains("input_dtype") && c["input_dtype"].is_string()) {  // Keras 1
          layers::ConfigReader r(c, entry["class_name"].get<std::string>());
          dtype = layers::dtype_from_name(r, c["input_dtype"].get<std::string>());
        }
        input = layers::Input(Shape(dims), {.dtype = dtype, .name = layer->name() + "_input"});
        refs.emplace_back(input);
      }
    }
    refs.emplace_back(layer);
  }
  return std::make_shared<Sequential>(refs, name);
}

}  // namespace

// ---- Model / Sequential ------------------------------------------------------------------------

json Model::get_config() const {
  return class_name() == "Sequential" ? sequential_config(*this) : functional_config(*this);
}

LayerPtr Model::from_config(const json& config) { return functional_from_config(config); }

LayerPtr Sequential::from_config(const json& config) { return sequential_from_config(config); }

std::string Model::to_json() const { return io::model_to_json(*this); }

namespace io {

json model_to_config(const Model& model) { return {{"class_name", model.class_name()}, {"config", model.get_config()}}; }

Model model_from_config(const json& config) {
  if (!config.is_object() || !config.contains("class_name") || !config["class_name"].is_string())
    raise<ValueError>("model_config: expected {{\"class_name\": \"Sequential\" | \"Functional\" | \"Model\", \"config\": "
                      "{{...}}}}; \"class_name\" is missing");
  const std::string class_name = config["class_name"].get<std::string>();
  if (class_name != "Sequential" && class_name != "Functional" && class_name != "Model")
    raise<ValueError>("model_config: class_name \"{}\" is not a model; expected Sequential, Functional or Model "
                      "(for a single layer use layers::layer_from_config)",
                      class_name);
  if (!config.contains("config"))
    raise<ValueError>("model_config of a {}: \"config\" is missing", class_name);
  std::optional<layers::KerasVersionScope> version;  // model.to_json()'s root names the Keras that wrote it
  if (config.contains("keras_version") && config["keras_version"].is_string())
    version.emplace(config["keras_version"].get<std::string>());
  auto model = std::dynamic_pointer_cast<Model>(layers::layer_from_config(config));
  // A Sequential whose config gives no input shape builds on its first data, which only the
  // Sequential object itself can do: not the Model this function returns.
  if (model->inputs().empty())
    raise<ValueError>("model_config: Sequential \"{}\" gives no input shape (no InputLayer, batch_input_shape or "
                      "build_input_shape), so it cannot be rebuilt as a Model; use layers::layer_from_config(config), "
                      "whose Sequential builds on the first data it sees, or add an InputLayer to the config",
                      model->name());
  return *model;
}

Model model_from_config(const json& config, const CustomObjects& custom_objects) {
  CustomObjectScope scope(custom_objects);
  return model_from_config(config);
}

std::string model_to_json(const Model& model) {
  json root = model_to_config(model);
  root["keras_version"] = kKerasVersion;
  root["backend"] = kKerasBackend;
  return root.dump();
}

Model model_from_json(const std::string& text) {
  json config;
  try {
    config = layers::parse_json(text, "model_from_json");
  } catch (const json::parse_error& e) {
    raise<ValueError>("model_from_json: malformed JSON at byte {}: {}", e.byte, e.what());
  } catch (const json::exception& e) {  // a number beyond double's range, say
    raise<ValueError>("model_from_json: the JSON text cannot be read: {}", e.what());
  }
  return model_from_config(config);
}

Model model_from_json(const std::string& text, const CustomObjects& custom_objects) {
  CustomObjectScope scope(custom_objects);
  return model_from_json(text);
}

}  // namespace io
}  // namespace tower
