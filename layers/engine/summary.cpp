// Model::summary(): Keras's table (tf.keras 2 layout: Layer (type), Output Shape, Param #, and
// Connected to for non-sequential graphs), with the trainable / non-trainable totals.
#include <algorithm>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "tower/layers/core/input_layer.h"
#include "tower/layers/engine/model_internal.h"
#include "tower/layers/engine/sequential.h"

namespace tower {

namespace {

// tf.keras's print_row: each field cut to its column (two spaces before the next), continued on
// further lines when too long, breaking after "),", "]," or "',".
void print_row(std::ostream& out, std::vector<std::string> fields, const std::vector<int>& positions) {
  auto any_left = [&] { return std::any_of(fields.begin(), fields.end(), [](const auto& f) { return !f.empty(); }); };
  while (any_left()) {
    std::string line;
    for (std::size_t col = 0; col < fields.size(); ++col) {
      const bool last = col + 1 == positions.size();
      const int start = col > 0 ? positions[col - 1] : 0;
      const int space = last ? 0 : 2;
      int cutoff = positions[col] - start - space - (last ? 0 : 1);
      std::string fit = fields[col].substr(0, static_cast<std::size_t>(std::max(cutoff, 0)));
      std::size_t best = std::string::npos;
      for (const char* brk : {"),", "},", "],", "',"}) {
        auto at = fit.find(brk);
        if (at != std::string::npos) best = std::min(best, at + 2);
      }
      if (best != std::string::npos) {
        cutoff = static_cast<int>(best);
        fit = fit.substr(0, best);
      }
      if (col == 0) line += " ";
      line += fit + std::string(static_cast<std::size_t>(space), ' ');
      fields[col] = fields[col].substr(std::min(fields[col].size(), static_cast<std::size_t>(std::max(cutoff, 0))));
      if (static_cast<int>(line.size()) < positions[col]) line += std::string(positions[col] - line.size(), ' ');
    }
    out << line << "\n";
  }
}

// 669706 -> "669,706", as Keras's "{:,}".
std::string with_commas(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string shape_of(const Layer& layer) {
  if (auto* input = dynamic_cast<const InputLayer*>(&layer)) return "[" + input->spec().shape.to_string() + "]";
  return layer.output_shape_string();
}

// "['dense_1[0][0]', 'input_1[0][0]']": the tensors feeding the layer's calls inside this model.
std::string connected_to(const Layer& layer, const std::vector<std::shared_ptr<KerasNode>>& nodes) {
  std::vector<std::string> names;
  for (const auto& node : nodes) {
    if (!node->layer->same_layer(layer)) continue;
    for (const auto& x : node->inputs) {
      int node_index = 0;
      const auto& calls = x.layer().inbound_nodes();
      for (std::size_t i = 0; i < calls.size(); ++i)
        if (calls[i].lock() == x.node()) node_index = static_cast<int>(i);
      names.push_back(fmt::format("'{}[{}][{}]'", x.layer().name(), node_index, x.index()));
    }
  }
  std::string s = "[";
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s + "]";
}

}  // namespace

void Model::summary(std::ostream& out) const {
  // Keras prints the short table when the graph is a chain.
  bool sequential_like = dynamic_cast<const Sequential*>(this) != nullptr;
  if (!sequential_like) {
    sequential_like = true;
    const KerasNode* previous = nullptr;
    for (const auto& node : data_->nodes) {
      if (node->inputs.size() != 1 || node->outputs.size() != 1 ||
          (previous && node->inputs[0].node().get() != previous)) {
        sequential_like = false;
        break;
      }
      previous = node.get();
    }
  }
  const int line_length = sequential_like ? 65 : 98;
  const std::vector<int> positions = sequential_like ? std::vector<int>{29, 55, 65} : std::vector<int>{29, 58, 68, 98};
  std::vector<std::string> header{"Layer (type)", "Output Shape", "Param #"};
  if (!sequential_like) header.push_back("Connected to");

  out << "Model: \"" << name() << "\"\n" << std::string(line_length, '_') << "\n";
  print_row(out, header, positions);
  out << std::string(line_length, '=') << "\n";
  for (const auto& layer : layers()) {
    std::vector<std::string> row{layer->name() + " (" + layer->class_name() + ")", shape_of(*layer),
                                 std::to_string(layer->count_params())};
    if (!sequential_like) row.push_back(connected_to(*layer, data_->nodes));
    print_row(out, row, positions);
    out << std::string(line_length, ' ') << "\n";
  }
  std::int64_t trainable = 0, non_trainable = 0;
  for (const auto& w : trainable_weights()) trainable += w->shape().num_elements();
  for (const auto& w : non_trainable_weights()) non_trainable += w->shape().num_elements();
  out << std::string(line_length, '=') << "\n"
      << "Total params: " << with_commas(trainable + non_trainable) << "\nTrainable params: " << with_commas(trainable)
      << "\nNon-trainable params: " << with_commas(non_trainable) << "\n"
      << std::string(line_length, '_') << "\n";
  // A parallel wrapper: where its towers run, and the model they run (what its files hold).
  if (const auto inner = wrapped_model()) {
    std::string towers;
    for (const auto& node : data_->nodes)
      if (node->layer->name() == inner->name() && !node->device.empty())
        towers += (towers.empty() ? "" : ", ") + node->device;
    out << "\nTowers: model \"" << inner->name() << "\" on " << towers << "\n\n";
    inner->summary(out);
  }
}

void Model::summary() const { summary(std::cout); }

std::string Model::summary_string() const {
  std::ostringstream out;
  summary(out);
  return out.str();
}

}  // namespace tower
