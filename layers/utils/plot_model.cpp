// utils::model_to_dot (Keras 3's DOT text of a model) and utils::plot_model (rendered by Graphviz's
// `dot` program, started with posix_spawnp: no shell, arguments passed as they are).
#include "tower/layers/utils/plot_model.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "tower/core/error.h"
#include "tower/io/hdf5.h"
#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/model.h"

namespace tower::utils {

namespace {

const Model* as_model(const Layer& layer) { return dynamic_cast<const Model*>(&layer); }
bool is_sequential(const Model& model) { return model.class_name() == "Sequential"; }

// The characters an HTML-like label cannot hold as they are (Keras does not escape; a name with "<"
// would make Graphviz reject the whole graph).
std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// A quoted DOT ID.
std::string dot_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A DOT ID as pydot writes it: bare when it is a plain identifier (and not a keyword), else quoted.
std::string dot_id(const std::string& s) {
  static const std::set<std::string> keywords{"graph", "node", "edge", "digraph", "subgraph", "strict"};
  bool plain = !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) && !keywords.contains(s);
  for (char c : s) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  return plain ? s : dot_quoted(s);
}

// Python's repr of a shape list as Keras 3 prints it: "(None, 8)" for one tensor, "[(None, 8), (None, 4)]"
// for several.
std::string shapes_text(const std::vector<Shape>& shapes) {
  if (shapes.empty()) return "?";
  if (shapes.size() == 1) return shapes[0].to_string();
  std::string s = "[";
  for (std::size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shapes[i].to_string();
  return s + "]";
}

// The layer's call whose shapes the label shows: its first call in `model_calls` (the model drawn), else
// its first call still alive (Keras 3's layer.input and layer.output read the first call), or null.
std::shared_ptr<KerasNode> shown_call(const Layer& layer, const std::set<const KerasNode*>& model_calls) {
  std::shared_ptr<KerasNode> first;
  for (const auto& weak : layer.inbound_nodes()) {
    auto call = weak.lock();
    if (!call) continue;
    if (model_calls.contains(call.get())) return call;
    if (!first) first = call;
  }
  return first;
}

std::string activation_of(const Layer& layer) {
  if (as_model(layer)) return "";
  const nlohmann::json config = layer.get_config();
  auto it = config.find("activation");
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("config") && (*it)["config"].is_object() && (*it)["config"].contains("name"))
    return (*it)["config"]["name"].get<std::string>();  // Keras 3's serialized activation
  if (it->is_object() && it->contains("class_name")) return (*it)["class_name"].get<std::string>();
  return it->dump();
}

// Keras 3's make_layer_label: a black title row (name and class, or class), the activation, then one row
// of the input shape, output shape, dtype and trainability.
std::string layer_label(const Layer& layer, const std::shared_ptr<KerasNode>& call, const PlotModelOptions& o) {
  const std::string class_name = layer.class_name();
  const int colspan_max = int(o.show_dtype) + int(o.show_trainable) + (o.show_shapes ? 2 : 0);
  const int colspan = std::max(1, colspan_max);
  std::string table = R"(<<table border="0" cellborder="1" bgcolor="black" cellpadding="10">)";
  table += fmt::format(R"(<tr><td colspan="{}" bgcolor="black"><font point-size="16" color="white">)", colspan);
  table += o.show_layer_names ? fmt::format("<b>{}</b> ({})", html_escape(layer.name()), class_name)
                              : fmt::format("<b>{}</b>", class_name);
  table += "</font></td></tr>";
  if (o.show_layer_activations) {
    const std::string activation = activation_of(layer);
    if (!activation.empty())
      table += fmt::format(R"(<tr><td bgcolor="white" colspan="{}"><font point-size="14">Activation: <b>{}</b>)"
                           "</font></td></tr>", colspan, html_escape(activation));
  }
  const auto* input_layer = dynamic_cast<const InputLayer*>(&layer);
  std::vector<Shape> in_shapes, out_shapes;
  std::vector<DType> out_dtypes;
  if (input_layer) {
    out_shapes.push_back(input_layer->spec().shape);
    out_dtypes.push_back(input_layer->spec().dtype);
  } else if (call) {
    for (const auto& x : call->inputs) in_shapes.push_back(x.shape());
    for (const auto& spec : call->outputs) {
      out_shapes.push_back(spec.shape);
      out_dtypes.push_back(spec.dtype);
    }
  }
  auto cell = [](const std::string& text) {
    return fmt::format(R"(<td bgcolor="white"><font point-size="14">{}</font></td>)", text);
  };
  std::string cols;
  if (o.show_shapes) {
    if (!input_layer) cols += cell(fmt::format("Input shape: <b>{}</b>", shapes_text(in_shapes)));
    cols += cell(fmt::format("Output shape: <b>{}</b>", shapes_text(out_shapes)));
  }
  if (o.show_dtype) {
    std::string dtype = "?";
    if (out_dtypes.size() == 1) {
      dtype = std::string(dtype_name(out_dtypes[0]));
    } else if (!out_dtypes.empty()) {
      dtype = "[";
      for (std::size_t i = 0; i < out_dtypes.size(); ++i) dtype += fmt::format("{}'{}'", i ? ", " : "", dtype_name(out_dtypes[i]));
      dtype += "]";
    }
    cols += cell(fmt::format("Output dtype: <b>{}</b>", dtype));
  }
  if (o.show_trainable && !layer.weights().empty()) {
    cols += layer.trainable()
                ? R"(<td bgcolor="forestgreen"><font point-size="14" color="white"><b>Trainable</b></font></td>)"
                : R"(<td bgcolor="firebrick"><font point-size="14" color="white"><b>Non-trainable</b></font></td>)";
  }
  if (!cols.empty()) table += "<tr>" + cols + "</tr>";
  return table + "</table>>";
}

// Writes one model (the whole graph, or a cluster of it) in pydot's order: attributes, nodes and
// clusters in layer order, then the edges.
class DotWriter {
 public:
  explicit DotWriter(const PlotModelOptions& options) : o_(options) {}

  void write_model(const Model& model, std::ostream& out) {
    const std::vector<LayerPtr> layers = model.layers();
    // The calls that belong to this model: those on the paths from its outputs back to its inputs.
    std::set<const KerasNode*> calls;
    std::vector<const KerasNode*> stack;
    for (const auto& t : model.outputs()) stack.push_back(t.node().get());
    while (!stack.empty()) {
      const KerasNode* node = stack.back();
      stack.pop_back();
      if (!node || !calls.insert(node).second) continue;
      for (const auto& x : node->inputs) stack.push_back(x.node().get());
    }
    for (const auto& layer : layers) {
      const Model* nested = as_model(*layer);
      if (o_.expand_nested && nested) {
        check_built(*nested);
        out << "subgraph " << dot_id("cluster_" + nested->name()) << " {\nstyle=dashed;\nlabel="
            << dot_id(nested->name()) << ";\nlabeljust=l;\n";
        write_model(*nested, out);
        out << "}\n";
      } else {
        out << id_of(*layer) << " [label=" << layer_label(*layer, shown_call(*layer, calls), o_)
            << ", fontname=Helvetica, border=0, margin=0];\n";
      }
    }
    std::set<std::pair<std::string, std::string>> edges;
    for (const auto& layer : layers) {
      for (const auto& weak : layer->inbound_nodes()) {
        const auto call = weak.lock();
        if (!call || !calls.contains(call.get())) continue;
        for (std::size_t i = 0; i < call->inputs.size(); ++i) {
          const KerasTensor& x = call->inputs[i];
          const Layer* source = &x.layer();
          int index = x.index();
          const Layer* destination = layer.get();
          if (o_.expand_nested) {
            // A nested model has no box of its own: the edge goes from the layer making its output and
            // to its InputLayer (Functional) or its first layer (Sequential).
            while (const Model* m = as_model(*source)) {
              if (static_cast<std::size_t>(index) >= m->outputs().size()) break;
              const KerasTensor& inner = m->outputs()[static_cast<std::size_t>(index)];
              source = &inner.layer();
              index = inner.index();
            }
            while (const Model* m = as_model(*destination)) {
              const auto inner = m->layers();
              if (is_sequential(*m) ? inner.empty() : i >= m->inputs().size()) break;  // nothing to point at
              destination = is_sequential(*m) ? inner.front().get() : &m->inputs()[i].layer();
            }
          }
          // A Sequential's hidden InputLayer has no node: nothing to draw from it.
          auto from = ids_.find(source->id()), to = ids_.find(destination->id());
          if (from == ids_.end() || to == ids_.end()) continue;
          if (!edges.emplace(from->second, to->second).second) continue;
          out << from->second << " -> " << to->second << " [penwidth=2];\n";
        }
      }
    }
  }

  static void check_built(const Model& model) {
    if (!model.has_graph())
      raise<ValueError>("model_to_dot: model \"{}\" is not built yet (a Sequential without an Input learns its "
                        "input shape from data); give it an Input or fit/predict once first", model.name());
  }

 private:
  // The node's id: the layer's name (quoted), made unique when two layers share a name.
  const std::string& id_of(const Layer& layer) {
    auto it = ids_.find(layer.id());
    if (it != ids_.end()) return it->second;
    std::string name = layer.name();
    for (int k = 1; used_.contains(name); ++k) name = fmt::format("{}_{}", layer.name(), k);
    used_.insert(name);
    return ids_.emplace(layer.id(), dot_quoted(name)).first->second;
  }

  const PlotModelOptions& o_;
  std::map<const void*, std::string> ids_;
  std::set<std::string> used_;
};

void check_options(const PlotModelOptions& o, const char* where) {
  static const std::set<std::string> rankdirs{"TB", "LR", "BT", "RL"};
  static const std::set<std::string> splines{"ortho", "curved", "polyline", "spline", "line", "true", "false",
                                             "none", "compound"};
  if (!rankdirs.contains(o.rankdir))
    raise<ValueError>("{}: rankdir must be \"TB\", \"LR\", \"BT\" or \"RL\", got \"{}\"", where, o.rankdir);
  if (o.dpi <= 0 || o.dpi > 2400) raise<ValueError>("{}: dpi must be in 1..2400, got {}", where, o.dpi);
  if (!splines.contains(o.splines))
    raise<ValueError>("{}: splines must be ortho, curved, polyline, spline or line, got \"{}\"", where, o.splines);
}

// Writes `text` to `path` through a temporary file renamed over it.
void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tower-tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) raise<Error>("plot_model: cannot write \"{}\": {}", path, std::strerror(errno));
    f << text;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      raise<Error>("plot_model: writing \"{}\" failed: {}", path, std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    raise<Error>("plot_model: cannot write \"{}\": {}", path, std::strerror(err));
  }
}


// Removes its files when it goes out of scope (what a failed run leaves behind).
struct TemporaryFiles {
  std::vector<std::string> paths;
  ~TemporaryFiles() {
    for (const auto& p : paths) std::remove(p.c_str());
  }
};

// Runs `args` (args[0] looked up on PATH) without a shell and waits for it; throws Error with its
// standard error when it cannot start or does not exit with 0.
void run_program(const std::vector<std::string>& args, const char* where) {
  char err_name[] = "/tmp/tower-plot-err-XXXXXX";
  const int err_fd = mkstemp(err_name);
  if (err_fd < 0) raise<Error>("{}: cannot make a temporary file in /tmp: {}", where, std::strerror(errno));
  ::close(err_fd);
  TemporaryFiles cleanup{{err_name}};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  struct Destroy {
    posix_spawn_file_actions_t* a;
    ~Destroy() { posix_spawn_file_actions_destroy(a); }
  } destroy{&actions};
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_name, O_WRONLY | O_TRUNC, 0);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  if (rc != 0) raise<Error>("{}: cannot run `{}`: {}", where, args[0], std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) raise<Error>("{}: waiting for `{}` failed: {}", where, args[0], std::strerror(errno));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::ifstream err(err_name);
  std::string message((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
  const std::string how = WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                            : fmt::format("was killed by signal {}", WTERMSIG(status));
  raise<Error>("{}: `{}` {}: {}", where, args[0], how, message.empty() ? "(no message)" : message);
}

}  // namespace

bool graphviz_available() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/dot";
    if (::access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string model_to_dot(const Model& model, const PlotModelOptions& options) {
  check_options(options, "model_to_dot");
  DotWriter::check_built(model);
  std::ostringstream out;
  out << "digraph G {\nrankdir=" << options.rankdir << ";\nconcentrate=true;\ndpi=" << options.dpi
      << ";\nsplines=" << options.splines << ";\nnode [shape=record];\n";
  DotWriter writer(options);
  writer.write_model(model, out);
  out << "}\n";
  return out.str();
}

void plot_model(const Model& model, const std::string& to_file, const PlotModelOptions& options) {
  static const std::set<std::string> formats{"png", "svg", "pdf", "jpg", "jpeg", "gif", "ps", "dot"};
  const auto slash = to_file.find_last_of('/');
  const auto dot = to_file.find_last_of('.');
  std::string format = "png";  // Keras: no extension means PNG
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    format = to_file.substr(dot + 1);
    std::transform(format.begin(), format.end(), format.begin(), [](unsigned char c) { return std::tolower(c); });
  }
  if (!formats.contains(format))
    raise<ValueError>("plot_model: cannot tell the image format of \"{}\": use .png, .svg, .pdf, .jpg, .gif, .ps or "
                      ".dot (the DOT text)", to_file);
  const std::string text = model_to_dot(model, options);
  // Through a symbolic link to the file it names; never over a FIFO or a device (save_target).
  const std::string target = io::hdf5::save_target(to_file, "plot_model(\"" + to_file + "\")");
  if (format == "dot") {
    write_text_file(target, text);
    return;
  }
  if (!graphviz_available())
    raise<Error>("plot_model: Graphviz's `dot` program was not found on PATH; install Graphviz (Debian/Ubuntu: "
                 "apt-get install graphviz, or scripts/install_deps.sh), or write the DOT text with a .dot file name");
  const std::string dot_file = target + ".tower-tmp.gv";
  const std::string image = target + ".tower-tmp";
  TemporaryFiles cleanup{{dot_file, image}};
  write_text_file(dot_file, text);
  run_program({"dot", "-T" + format, "-o", image, dot_file}, "plot_model");
  if (std::rename(image.c_str(), target.c_str()) != 0)
    raise<Error>("plot_model: cannot write \"{}\": {}", to_file, std::strerror(errno));
}

}  // namespace tower::utils
