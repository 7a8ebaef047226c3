// The name->factory registry: a Keras layer config ({"class_name": ..., "config": ...}) -> a new layer;
// the user's own layers, losses and metrics by name (Keras's custom_objects and registration).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tower/layers/layer.h"
#include "tower/layers/losses/losses.h"
#include "tower/layers/metrics/metrics.h"

namespace tower::layers {

// A layer class's from_config: its "config" object -> a new, unbuilt layer. A built-in class's is a
// static member (&Dense::from_config); a user's may be any callable.
using LayerFactory = std::function<LayerPtr(const nlohmann::json& config)>;

// {"class_name": ..., "config": ...} of any supported Keras version (Keras 1.2 to Keras 3's legacy
// .h5; "module" is ignored) -> a new (unbuilt) layer; models (Sequential, Functional, Model) come back
// built. The class is looked up in the custom_objects of the innermost CustomObjectScope, then among
// tower's classes, then among the classes given to register_layer (by "class_name", then by Keras 3's
// "registered_name"). An unknown class throws NotFoundError naming the class and the layer's name,
// saying how to supply it (custom_objects or register_layer) and listing what is supported. Keras 1
// class names (Convolution2D, Merge, ...) are aliases, and Keras 1 argument names (output_dim, init,
// W_regularizer, nb_filter, border_mode, subsample, dim_ordering, p, ...) are translated to Keras 2's.
LayerPtr layer_from_config(const nlohmann::json& layer);

// The class names of tower's own layers that layer_from_config accepts (aliases included), sorted;
// classes given to register_layer are not among them.
std::vector<std::string> registered_layer_names();

// Keras's keras.saving.register_keras_serializable / get_custom_objects() for a layer class: from now
// on, in this process, layer_from_config, io::model_from_json and models::load_model build configs
// whose class_name is `class_name` with `factory`. Throws ValueError for an empty name or factory, for
// the name of one of tower's classes (a registration cannot change what "Dense" means; a
// CustomObjectScope can, for the calls inside it) and for a name registered before (as Keras).
void register_layer(const std::string& class_name, LayerFactory factory);

// The class names given to register_layer, sorted.
std::vector<std::string> custom_layer_names();

}  // namespace tower::layers

namespace tower {

// Keras's custom_objects: the user's layer classes, losses and metrics that a model config or a
// training_config names, by the name the file uses. Passed to models::load_model,
// io::model_from_json and io::model_from_config, or made current with a CustomObjectScope.
//   models::load_model("m.h5", {.layers = {{"MyLayer", &MyLayer::from_config}},
//                               .losses = {{"my_loss", my_loss}}});
struct CustomObjects {
  std::map<std::string, layers::LayerFactory> layers;        // class_name -> from_config
  std::map<std::string, losses::Loss::Function> losses;     // name -> per-sample loss (batch,)
  std::map<std::string, metrics::Metric::Function> metrics;  // name -> per-sample values (batch,)

  bool empty() const { return layers.empty() && losses.empty() && metrics.empty(); }
};

// Keras's custom_object_scope: while it lives, layer_from_config, losses::Loss(name) and
// metrics::Metric(name) on this thread find `objects` first; they take precedence over tower's own
// classes and functions and over registrations, as in Keras. Scopes nest (the innermost wins).
class CustomObjectScope {
 public:
  explicit CustomObjectScope(CustomObjects objects);
  ~CustomObjectScope();
  CustomObjectScope(const CustomObjectScope&) = delete;
  CustomObjectScope& operator=(const CustomObjectScope&) = delete;

 private:
  CustomObjects objects_;
};

namespace internal {
// The entries of the CustomObjectScopes alive on this thread, innermost first; null when none names
// `name`. For losses.cpp and metrics.cpp.
const losses::Loss::Function* scoped_custom_loss(const std::string& name);
const metrics::Metric::Function* scoped_custom_metric(const std::string& name);
}  // namespace internal

}  // namespace tower
