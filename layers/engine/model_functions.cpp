// Model's engine graphs: compile(), and the graph of each mode (train, test, predict) built from the
// model through its replication (layers/engine/replication.h): forward, losses, metrics and, for
// training, gradients and the optimizer's updates. The Executor caches one plan per batch shape.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/layers/constraints.h"
#include "tower/layers/engine/batches.h"
#include "tower/layers/engine/model_internal.h"
#include "tower/optimizers/loss_scale_optimizer.h"

namespace tower {

// ---- compile() -------------------------------------------------------------------------------------

OptimizerArg::OptimizerArg(const char* name) : optimizer_(optimizers::get(name)) {}
OptimizerArg::OptimizerArg(const std::string& name) : optimizer_(optimizers::get(name)) {}
OptimizerArg::OptimizerArg(const optimizers::Optimizer& optimizer) : optimizer_(optimizer.clone()) {}
OptimizerArg::OptimizerArg(optimizers::OptimizerPtr optimizer) : optimizer_(std::move(optimizer)) {
  if (!optimizer_) raise<ValueError>("compile: the optimizer is null");
}

std::vector<std::vector<metrics::Metric>> MetricsArg::for_outputs(const std::vector<std::string>& output_names,
                                                                  const std::string& model) const {
  const std::size_t n = output_names.size();
  if (form_ == Form::all) return std::vector<std::vector<metrics::Metric>>(n, all_);
  if (form_ == Form::per_output) {
    if (per_output_.size() != n)
      raise<ValueError>("Model \"{}\": compile() got {} lists of metrics for {} outputs; give one list per output "
                        "(an empty one for none), or a map from output name to its list", model, per_output_.size(), n);
    return per_output_;
  }
  std::vector<std::vector<metrics::Metric>> out(n);
  for (const auto& [name, list] : by_output_) {
    auto it = std::find(output_names.begin(), output_names.end(), name);
    if (it == output_names.end()) {
      std::string names;
      for (const auto& o : output_names) names += (names.empty() ? "" : ", ") + o;
      raise<ValueError>("Model \"{}\": compile() got metrics for \"{}\", which is not an output; the outputs are: {}",
                        model, name, names);
    }
    out[static_cast<std::size_t>(it - output_names.begin())] = list;
  }
  return out;
}

void Model::compile(const OptimizerArg& optimizer, const LossArg& loss, const MetricsArg& metrics,
                    const CompileOptions& options) {
  auto& d = *data_;
  // Under a strategy's scope the model runs through it; outside, it keeps the one it was made (or
  // last compiled) under, as TensorFlow does.
  if (current_strategy()) set_replication(current_strategy());
  if (metrics.form() != MetricsArg::Form::all && has_graph())
    metrics.for_outputs(output_names(), name());  // the lists or names checked now, as Keras does
  if (options.weighted_metrics.form() != MetricsArg::Form::all && has_graph())
    options.weighted_metrics.for_outputs(output_names(), name());
  // Keras 3's compile: under "mixed_float16" the optimizer is wrapped in a LossScaleOptimizer (float16
  // gradients underflow without loss scaling); bfloat16 has float32's range and needs none.
  optimizers::OptimizerPtr chosen = optimizer.get();
  if (dtype_policy().name() == "mixed_float16" && chosen &&
      !dynamic_cast<const optimizers::LossScaleOptimizer*>(chosen.get()))
    chosen = std::make_shared<optimizers::LossScaleOptimizer>(*chosen);
  d.compile_args = {.optimizer = chosen, .losses = loss.losses(), .metrics = metrics.all(),
                    .loss_weights = options.loss_weights, .metrics_arg = metrics,
                    .weighted_metrics_arg = options.weighted_metrics};
  d.compiled = true;
  d.stop_training = false;
  reset_functions();
}

bool Model::compiled() const { return data_->compiled; }

optimizers::Optimizer& Model::optimizer() const {
  if (!data_->compile_args.optimizer) raise<ValueError>("Model \"{}\": has no optimizer; call compile() first", name());
  return *data_->compile_args.optimizer;
}

// ---- building the engine graphs --------------------------------------------------------------------

void Model::check_inputs(const std::vector<Tensor>& x, const char* where) const {
  const auto& inputs = data_->inputs;
  if (x.size() != inputs.size())
    raise<ValueError>("Model \"{}\": {} expects {} input arrays, got {}", name(), where, inputs.size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto dims = x[i].shape().dims();
    if (!dims.empty()) dims[0] = -1;
    if (!Shape(dims).compatible_with(inputs[i].shape()))
      raise<ShapeError>("Model \"{}\": {}: input {} (\"{}\") expects arrays of shape {}, got {}", name(), where, i,
                        inputs[i].layer().name(), inputs[i].shape().to_string(), x[i].shape().to_string());
  }
}

namespace {

// The device of the nodes nothing else places (the fed batches, the losses and metrics): where the
// model's first weight lives (DefaultDeviceScope at build time), or the default device for a model
// without weights. Layers whose weights live on other devices run there (placement by scope: Model::call
// places each layer's call where its weights are, and the optimizer updates each variable on its device).
Device& compute_device(const Model& model) {
  const auto weights = model.weights();
  return weights.empty() ? default_device() : weights.front()->value().device();
}

// A placeholder for a batch of arrays like `like` (any batch size).
SymbolicTensor batch_placeholder(Graph& graph, const Shape& like, DType dtype, const std::string& name) {
  auto dims = like.dims();
  dims[0] = -1;
  return graph.placeholder(Shape(dims), dtype, name);
}

// Keras 3's losses and metrics compute in floatx: a model output of a mixed policy (float16, bfloat16)
// is cast to float32 before them (Loss.__call__'s convert_to_tensor(y_pred, dtype=self.dtype)).
SymbolicTensor as_float32(const SymbolicTensor& output) {
  return is_half(output.dtype()) ? ops::cast(output, DType::float32) : output;
}

}  // namespace

namespace {
// The step's logs as one fetch: every value as float64 in one vector, so that a step reads them with one
// copy and one synchronisation (on a GPU, a copy and a wait per value would stall every step). Values
// of a shape known only at run time leave the fetches as they are.
void pack_fetches(Model::Function& f) {
  std::vector<SymbolicTensor> parts;
  for (const auto& v : f.fetches) {
    if (!v.shape().is_fully_known()) {
      f.packed_shapes.clear();
      return;
    }
    f.packed_shapes.push_back(v.shape());
    parts.push_back(ops::reshape(v.dtype() == DType::float64 ? v : ops::cast(v, DType::float64), {v.shape().num_elements()}));
  }
  f.packed = parts.size() == 1 ? parts[0] : ops::concat(parts, 0);
}
}  // namespace

void Model::build_function(Function& f, const std::vector<Tensor>* y, bool training, int sample_weight_rank) {
  auto& d = *data_;
  for (const auto& input : d.inputs) f.x.push_back(batch_placeholder(f.graph, input.shape(), input.dtype(), input.layer().name()));
  std::vector<Node*> updates;
  std::vector<SymbolicTensor> layer_losses;
  CallContext ctx{.graph = f.graph, .training = training, .updates = &updates, .losses = &layer_losses};
  d.masks_of_outputs.clear();
  f.replication = d.replication;
  const Replication& replication = d.replication ? *d.replication : single_replica();
  f.replicas = replication.call(*this, ctx, f.x);
  const auto& outputs = f.replicas->outputs();
  f.executor = std::make_unique<Executor>(compute_device(*this));  // every node without a device of its own
  f.targets = updates;  // in inference only a stateful layer's new states; in training also BatchNormalization's
  if (!y) {  // predict
    f.fetches = outputs;
    return;
  }

  if (!d.compiled) raise<ValueError>("Model \"{}\": call compile() before fit, evaluate or *_on_batch", name());
  const std::size_t n_out = outputs.size();
  if (y->size() != n_out)
    raise<ValueError>("Model \"{}\": has {} outputs but {} label arrays were given", name(), n_out, y->size());
  std::vector<losses::Loss> losses = d.compile_args.losses;
  if (losses.size() == 1 && n_out > 1) losses.assign(n_out, losses[0]);
  if (losses.size() != n_out)
    raise<ValueError>("Model \"{}\": compile() got {} losses for {} outputs", name(), losses.size(), n_out);
  const auto& loss_weights = d.compile_args.loss_weights;
  std::vector<double> weights = loss_weights.empty() ? std::vector<double>(n_out, 1.0) : loss_weights;
  if (weights.size() != n_out)
    raise<ValueError>("Model \"{}\": compile() got {} loss_weights for {} outputs", name(), weights.size(), n_out);

  // (batch,) or, for temporal weights, (batch, time) with time any length (checked against the losses).
  f.sample_weight = f.graph.placeholder(Shape(std::vector<std::int64_t>(static_cast<std::size_t>(sample_weight_rank), -1)),
                                        DType::float32, "sample_weight");
  auto names = output_names();
  for (std::size_t k = 0; k < n_out; ++k) {
    f.y.push_back(batch_placeholder(f.graph, (*y)[k].shape(), (*y)[k].dtype(), names[k] + "_target"));
    f.classes.push_back(losses[k].name() == "sparse_categorical_crossentropy" ? outputs[k].shape().dim(-1) : 0);
  }

  // An output's Keras mask (the losses and metrics leave its masked steps out), or undefined.
  auto mask_of = [&](const SymbolicTensor& out) {
    auto it = d.masks_of_outputs.find({out.node(), out.index()});
    return it == d.masks_of_outputs.end() ? SymbolicTensor() : it->second;
  };
  // Each output's loss and metrics: means over the global batch, formed by the replication.
  SymbolicTensor total;
  std::vector<SymbolicTensor> output_losses, metric_values;
  std::vector<std::string> metric_names;
  std::map<std::size_t, metrics::Metric> stateful;  // by position in metric_values
  const auto output_metrics = d.compile_args.metrics_arg.for_outputs(names, name());
  const auto output_weighted = d.compile_args.weighted_metrics_arg.for_outputs(names, name());
  // A stateful metric's batch statistics (metrics= unweighted, weighted_metrics= with the sample weights,
  // as Keras), summed over the replicas; the loops accumulate them.
  auto add_statistics = [&](std::size_t k, const metrics::Metric& metric, bool weighted, std::string log_name) {
    if (!metric.scalar_result())
      raise<ValueError>("Model \"{}\": metric \"{}\" ({}) gives several values (one per threshold or class), "
                        "which logs cannot hold; compile it with one threshold, or an F-score with average "
                        "\"micro\", \"macro\" or \"weighted\" (or use it standalone: update_state, result_values)",
                        name(), metric.name(), metric.class_name());
    stateful.emplace(metric_values.size(), metric);
    metric_values.push_back(f.replicas->batch_sum(
        k, f.y[k], f.sample_weight,
        [&](const SymbolicTensor& y_k, const SymbolicTensor& out, const SymbolicTensor& sw) {
          return metric.statistics(y_k, as_float32(out), weighted ? sw : SymbolicTensor());
        }));
    metric_names.push_back(std::move(log_name));
  };
  for (std::size_t k = 0; k < n_out; ++k) {
    auto loss_k = f.replicas->batch_mean(k, f.y[k], f.sample_weight,
                                         [&](const SymbolicTensor& y_k, const SymbolicTensor& out, const SymbolicTensor& sw) {
                                           return losses[k](y_k, as_float32(out), mask_of(out), sw);  // (batch,)
                                         });
    output_losses.push_back(loss_k);
    auto weighted = weights[k] == 1.0 ? loss_k : ops::scale(loss_k, weights[k]);
    total = total.defined() ? ops::add(total, weighted) : weighted;
    const std::string prefix = n_out > 1 ? names[k] + "_" : "";
    for (const auto& metric : output_metrics[k]) {
      if (metric.stateful()) {
        add_statistics(k, metric, /*weighted=*/false, prefix + metric.name());
        continue;
      }
      auto resolved = metric.resolve((*y)[k].shape(), outputs[k].shape());
      metric_values.push_back(f.replicas->batch_mean(
          k, f.y[k], f.sample_weight,
          [&](const SymbolicTensor& y_k, const SymbolicTensor& out, const SymbolicTensor&) {
            return resolved(y_k, as_float32(out), mask_of(out));
          }));
      metric_names.push_back(prefix + metric.name());
    }
  }
  // weighted_metrics=, after the others as Keras lists them; a name taken by metrics= gets "weighted_".
  for (std::size_t k = 0; k < n_out; ++k) {
    const std::string prefix = n_out > 1 ? names[k] + "_" : "";
    for (const auto& metric : output_weighted[k]) {
      if (mask_of(outputs[k]).defined())
        raise<ValueError>("Model \"{}\": weighted_metrics on the masked output \"{}\" are not supported; fold the "
                          "mask into sample_weight (zeros at masked steps) and unmask the output, or use metrics=",
                          name(), names[k]);
      std::string log_name = prefix + metric.name();
      if (std::find(metric_names.begin(), metric_names.end(), log_name) != metric_names.end())
        log_name = prefix + "weighted_" + metric.name();
      add_statistics(k, metric.resolve((*y)[k].shape(), outputs[k].shape()), /*weighted=*/true, log_name);
    }
  }
  if (f.replicas->adds_weight_losses())
    for (const auto& reg : regularization_losses(f.graph)) total = ops::add(total, reg);
  for (const auto& extra : layer_losses) total = ops::add(total, extra);

  f.fetches.push_back(total);
  f.names.push_back("loss");
  if (n_out > 1)
    for (std::size_t k = 0; k < n_out; ++k) {
      f.fetches.push_back(output_losses[k]);
      f.names.push_back(names[k] + "_loss");
    }
  for (std::size_t i = 0; i < metric_values.size(); ++i) {
    if (auto s = stateful.find(i); s != stateful.end()) f.stateful.emplace(f.fetches.size(), s->second);
    f.fetches.push_back(metric_values[i]);
    f.names.push_back(metric_names[i]);
  }
  pack_fetches(f);
  if (!training) return;

  auto variables = trainable_weights();
  if (variables.empty())
    raise<ValueError>("Model \"{}\": has no trainable weights (are all its layers frozen?)", name());
  f.learning_rate = f.graph.placeholder({}, DType::float32, "learning_rate");
  f.iteration = f.graph.placeholder({}, DType::float32, "iteration");
  // Under LossScaleOptimizer the gradients are those of the scaled loss (Keras's optimizer.scale_loss);
  // the logs keep the loss itself.
  optimizers::Optimizer& optimizer = *d.compile_args.optimizer;
  auto applied = f.replicas->apply_gradients(optimizer.scale_loss(total, variables), variables, optimizer, f.learning_rate,
                                             f.iteration);
  f.targets.insert(f.targets.begin(), applied.begin(), applied.end());
  // The constraints read the weights the update wrote, so they run as a graph of their own after it.
  for (const auto& variable : variables) {
    const Constraint constraint = constraint_of(variable);
    if (!constraint.defined()) continue;
    if (!f.constraint_graph) f.constraint_graph = std::make_unique<Graph>();
    const SymbolicTensor w = f.constraint_graph->variable(variable);
    f.constraint_targets.push_back(ops::assign(w, constraint(w)));
  }
  if (f.constraint_graph) f.constraint_executor = std::make_unique<Executor>(compute_device(*this));
}

namespace {
// True when the graph's label placeholders take these arrays (same trailing dims and dtype).
bool takes_labels(const Model::Function& f, const std::vector<Tensor>& y) {
  if (f.y.size() != y.size()) return false;
  for (std::size_t i = 0; i < y.size(); ++i) {
    auto dims = y[i].shape().dims();
    dims[0] = -1;
    if (f.y[i].shape() != Shape(dims) || f.y[i].dtype() != y[i].dtype()) return false;
  }
  return true;
}
}  // namespace

Model::Function& Model::function(Mode mode, const std::vector<Tensor>* y, int sample_weight_rank) {
  auto& slot = data_->slot(mode);
  if (!slot || (y && (!takes_labels(*slot, *y) || slot->sample_weight.rank() != sample_weight_rank))) {
    slot.reset();
    auto f = std::make_unique<Function>();
    build_function(*f, y, mode == Mode::train, sample_weight_rank);
    slot = std::move(f);
  }
  return *slot;
}

// ---- running them ----------------------------------------------------------------------------------

std::vector<Tensor> Model::Function::run(const FeedMap& feeds, const std::vector<Node*>* step_targets) {
  replicas->before_step();
  std::vector<Tensor> values;
  if (packed.defined()) {  // the logs in one vector: one copy to the host, unpacked there
    const Tensor all = executor->run(feeds, {packed}, step_targets ? *step_targets : targets)[0].to(cpu_device());
    const double* at = all.data<double>();
    for (const Shape& shape : packed_shapes) {
      Tensor value(shape, DType::float64);
      std::copy(at, at + shape.num_elements(), value.data<double>());
      at += shape.num_elements();
      values.push_back(std::move(value));
    }
  } else {
    values = executor->run(feeds, fetches, step_targets ? *step_targets : targets);
  }
  replicas->after_step();
  replicas->combine(values, /*outputs=*/y.empty() && !sample_weight.defined());
  // A stateful metric's statistics go to `statistics`; its place among the values holds 0.
  for (const auto& [index, metric] : stateful) {
    const Tensor v = values[index].to(cpu_device());
    const double* data = v.data<double>();
    statistics[index].assign(data, data + v.num_elements());
    values[index] = Tensor::scalar(0.0);
  }
  return values;
}

FeedMap Model::Function::feeds(const std::vector<Tensor>& x_batch, const std::vector<Tensor>& y_batch,
                               const Tensor& weights, bool own_batches) {
  // Sparse class ids outside [0, classes) are refused here, on the host, before a step runs: a GPU
  // kernel cannot stop to throw (it would give NaN), so every device gets the same clear error.
  for (std::size_t k = 0; k < y_batch.size() && k < classes.size(); ++k) {
    const std::int64_t n_classes = classes[k];
    if (n_classes == 0 || !y_batch[k].device().host_accessible()) continue;
    dispatch_any(y_batch[k].dtype(), "sparse_categorical_crossentropy labels", [&]<typename T>() {
      const T* ids = y_batch[k].data<T>();
      // Which output, for the messages only (made on failure: this loop runs every step).
      auto output = [&] { return y_batch.size() > 1 ? fmt::format(", output {}", k) : std::string(); };
      for (std::int64_t i = 0; i < y_batch[k].num_elements(); ++i) {
        const auto id = static_cast<double>(ids[i]);
        if (!(id >= 0 && id < static_cast<double>(n_classes)))
          raise<ValueError>("sparse_categorical_crossentropy: label {} (sample {} of the batch{}) is out of range for "
                            "{} classes; labels must be class ids 0..{} (check the number of output units)", id, i,
                            output(), n_classes, n_classes - 1);
        if (id != std::floor(id))  // Keras casts to an integer: 1.5 would silently train as class 1
          raise<ValueError>("sparse_categorical_crossentropy: label {} (sample {} of the batch{}) is not a class id; "
                            "labels must be whole numbers 0..{} (for soft or one-hot targets use "
                            "categorical_crossentropy)", id, i, output(), n_classes - 1);
      }
    });
  }
  // In a multi-worker job this process feeds its rows of the batch (views, no copy).
  const std::int64_t rows = x_batch.empty() ? 0 : x_batch[0].shape()[0];
  const Replication::Rows mine = replication ? replication->local_rows(rows, own_batches) : Replication::Rows{0, rows, rows};
  last_batch_size = mine.global;
  const bool all = own_batches || mine.count == rows;  // an own batch is all this process's
  const auto part = [&](const Tensor& t) { return all ? t : engine::row_range(t, mine.first, mine.count); };
  FeedMap out;
  for (std::size_t i = 0; i < x_batch.size(); ++i) out.emplace_back(x[i], part(x_batch[i]));
  for (std::size_t i = 0; i < y_batch.size() && i < y.size(); ++i) out.emplace_back(y[i], part(y_batch[i]));
  if (sample_weight.defined()) out.emplace_back(sample_weight, part(weights));
  replicas->add_feeds(out, mine.global, mine.first);
  return out;
}

std::vector<double> Model::Function::test_step(const std::vector<Tensor>& x_batch, const std::vector<Tensor>& y_batch,
                                               const Tensor& weights, bool own_batches) {
  std::vector<double> out;
  for (const auto& v : run(feeds(x_batch, y_batch, weights, own_batches))) out.push_back(v.item());
  return out;
}

std::vector<double> Model::Function::train_step(optimizers::Optimizer& optimizer, const std::vector<Tensor>& x_batch,
                                                const std::vector<Tensor>& y_batch, const Tensor& weights,
                                                bool own_batches) {
  auto fed = feeds(x_batch, y_batch, weights, own_batches);
  fed.emplace_back(learning_rate, Tensor::scalar(optimizer.current_learning_rate()));
  fed.emplace_back(iteration, Tensor::scalar(static_cast<double>(optimizer.update_number())));
  graph.set_random_counters(static_cast<std::uint64_t>(optimizer.iterations()));
  std::vector<double> out;
  const std::vector<Node*> step_targets = optimizer.step_targets(targets);  // gradient accumulation's choice
  for (const auto& v : run(fed, &step_targets)) out.push_back(v.item());
  optimizer.overwrite_with_averages_if_due();  // use_ema: before the constraints, as Keras 3
  if (constraint_executor) constraint_executor->run({}, {}, constraint_targets);
  optimizer.finish_step();
  return out;
}

std::vector<Tensor> Model::Function::predict_step(const std::vector<Tensor>& x_batch, bool own_batches) {
  std::vector<Tensor> out;
  for (auto& t : run(feeds(x_batch, {}, Tensor(), own_batches))) out.push_back(t.to(cpu_device()));
  return out;
}

}  // namespace tower
