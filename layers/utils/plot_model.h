// utils::plot_model and utils::model_to_dot: a picture of a model's graph, as Keras's
// keras.utils.plot_model / model_to_dot (Keras 3's DOT text, rendered by Graphviz's `dot` program).
#pragma once

#include <string>

namespace tower {
class Model;
}

namespace tower::utils {

// Keras 3's keyword arguments of plot_model and model_to_dot, with plot_model's defaults.
struct PlotModelOptions {
  bool show_shapes = false;             // each layer's input and output shapes, "(None, 8)"
  bool show_dtype = false;              // each layer's output dtype
  bool show_layer_names = false;        // "<b>dense</b> (Dense)" rather than "<b>Dense</b>"
  std::string rankdir = "TB";           // "TB": top to bottom; "LR": left to right (also "BT", "RL")
  bool expand_nested = false;           // nested models (Functional, Sequential) as dashed clusters
  int dpi = 200;                        // resolution of PNG output
  bool show_layer_activations = false;  // "Activation: relu" for layers with an activation
  bool show_trainable = false;          // "Trainable" / "Non-trainable" for layers with weights
  std::string splines = "ortho";        // how Graphviz draws edges: ortho, curved, polyline, spline, line
};

// The graph in Graphviz's DOT language, as Keras 3's model_to_dot(...).to_string() writes it: a node per
// layer (HTML-like label table), an edge per connection, nested models as "cluster_<name>" subgraphs when
// expand_nested. Node ids are the layers' names (Keras uses Python object ids). Keras's model_to_dot
// shows the layer names by default, hence the default argument. Throws ValueError for a model that is
// not built yet (a Sequential without an Input, before it saw data) or a bad rankdir, dpi or splines.
std::string model_to_dot(const Model& model, const PlotModelOptions& options = {.show_layer_names = true});

// Writes the plot to `to_file`: its extension picks the format (.png, .svg, .pdf, .jpg, .gif, .ps; none:
// PNG, as Keras), and .dot writes the DOT text itself without Graphviz. The image is made by Graphviz's
// `dot` program (run directly, no shell), into a temporary file renamed over `to_file` on success.
// Throws Error naming the Debian package (graphviz) when `dot` is not installed, Error with dot's message
// when it fails, ValueError for an unknown extension.
void plot_model(const Model& model, const std::string& to_file = "model.png", const PlotModelOptions& options = {});

// Whether Graphviz's `dot` program is on PATH (what plot_model needs for anything but .dot).
bool graphviz_available();

}  // namespace tower::utils
