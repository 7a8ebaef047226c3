// Model's training API: compile, fit, evaluate, predict and the *_on_batch steps. Each builds (once
// per label layout) an engine graph from the model: forward, losses, metrics and, for training,
// gradients and the optimizer's updates; the Executor caches one plan per batch shape. The loops read
// batches through a DataAdapter (layers/engine/data_adapter.h): arrays or a dataset (docs/data.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <numeric>
#include <tuple>

#include "tower/core/autodiff.h"
#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/core/ops/shape_utils.h"
#include "tower/core/random.h"
#include "tower/layers/callbacks/callbacks.h"
#include "tower/layers/engine/model_internal.h"

namespace tower {

// ---- compile() arguments ---------------------------------------------------------------------------

OptimizerArg::OptimizerArg(const char* name) : optimizer_(optimizers::get(name)) {}
OptimizerArg::OptimizerArg(const std::string& name) : optimizer_(optimizers::get(name)) {}
OptimizerArg::OptimizerArg(const optimizers::Optimizer& optimizer) : optimizer_(optimizer.clone()) {}
OptimizerArg::OptimizerArg(optimizers::OptimizerPtr optimizer) : optimizer_(std::move(optimizer)) {
  if (!optimizer_) raise<ValueError>("compile: the optimizer is null");
}

namespace {

std::int64_t num_samples(const std::vector<Tensor>& arrays, const std::string& where) {
  std::int64_t n = -1;
  for (const auto& a : arrays) {
    if (a.shape().rank() == 0) raise<ShapeError>("{}: arrays need a batch dimension, got a scalar", where);
    if (n >= 0 && a.shape()[0] != n) {
      std::string sizes;
      for (const auto& b : arrays) sizes += (sizes.empty() ? "" : ", ") + std::to_string(b.shape()[0]);
      raise<ShapeError>("{}: all arrays must have the same number of samples, got {}", where, sizes);
    }
    n = a.shape()[0];
  }
  return n;
}

// Rows idx[0..n) of a host array, as a new (n, ...) array.
Tensor take_rows(const Tensor& src, const std::int64_t* idx, std::int64_t n) {
  Tensor out;
  gather_rows(src, idx, n, out);
  return out;
}

// A host copy of `t` converted to `dtype` (Keras casts inputs to the model's dtypes).
Tensor to_dtype(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor src = t.to(cpu_device());
  Tensor out = Tensor::zeros(src.shape(), dtype);
  const std::int64_t n = src.num_elements();
  dispatch_any(src.dtype(), "cast", [&]<typename S>() {
    dispatch_any(dtype, "cast", [&]<typename D>() {
      const S* s = src.data<S>();
      D* d = out.data<D>();
      for (std::int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
    });
  });
  return out;
}

// Labels as the graph wants them: floats stay, integer class ids become int32 (uint8 IDX labels).
Tensor normalize_labels(const Tensor& y) {
  if (y.dtype() == DType::uint8) return to_dtype(y, DType::int32);
  return y;
}

// Calls every callback's hook.
struct CallbackList {
  std::vector<CallbackPtr> all;
  template <typename F>
  void each(F&& f) const {
    for (const auto& cb : all) f(*cb);
  }
};

// Sums of batch means weighted by batch size: Keras's epoch averages.
struct Averages {
  std::vector<std::string> names;
  std::vector<double> sums;
  std::int64_t count = 0;

  void add(const std::vector<std::string>& n, const std::vector<double>& values, std::int64_t batch) {
    if (names.empty()) {
      names = n;
      sums.assign(n.size(), 0.0);
    }
    for (std::size_t i = 0; i < values.size(); ++i) sums[i] += values[i] * static_cast<double>(batch);
    count += batch;
  }
  Logs logs(const std::string& prefix = "") const {
    Logs out;
    for (std::size_t i = 0; i < names.size(); ++i)
      out.set(prefix + names[i], count ? sums[i] / static_cast<double>(count) : 0.0);
    return out;
  }
};

Logs batch_logs(const std::vector<std::string>& names, const std::vector<double>& values) {
  Logs out;
  for (std::size_t i = 0; i < names.size(); ++i) out.set(names[i], values[i]);
  return out;
}

}  // namespace

// ---- compile ---------------------------------------------------------------------------------------

void Model::compile(const OptimizerArg& optimizer, const LossArg& loss, const std::vector<metrics::Metric>& metrics,
                    const CompileOptions& options) {
  auto& d = *data_;
  d.strategy = current_strategy();  // under MirroredStrategy::scope(): train through its towers
  if (!d.wrapped) d.towers = {};     // a strategy's towers are made again with the next graph
  d.optimizer = optimizer.get();
  d.losses = loss.losses();
  d.metrics = metrics;
  d.loss_weights = options.loss_weights;
  d.compiled = true;
  d.stop_training = false;
  reset_functions();
}

bool Model::compiled() const { return data_->compiled; }

optimizers::Optimizer& Model::optimizer() const {
  if (!data_->optimizer) raise<ValueError>("Model \"{}\": has no optimizer; call compile() first", name());
  return *data_->optimizer;
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

// Where a model computes: on the device its weights live on (DefaultDeviceScope at build time),
// or the default device for a model without weights.
Device& compute_device(const Model& model) {
  const auto weights = model.weights();
  if (weights.empty()) return default_device();
  Device& first = weights.front()->value().device();
  for (const auto& w : weights)
    if (&w->value().device() != &first)
      raise<ValueError>("Model \"{}\": its weights live on several devices (\"{}\" on {}, \"{}\" on {}); build the "
                        "model under one DefaultDeviceScope, or use parallel::multi_gpu_model for several devices",
                        model.name(), weights.front()->name(), first.name(), w->name(), w->value().device().name());
  return first;
}

// The mirrors (Variable::primary) among the variables `graph` reads.
std::vector<VariablePtr> mirrors_read(const Graph& graph) {
  std::vector<VariablePtr> mirrors;
  for (int id = 0; id < graph.num_nodes(); ++id)
    if (const auto& v = graph.node(id).variable(); v && v->primary()) mirrors.push_back(v);
  return mirrors;
}

}  // namespace

void Model::build_function(Function& f, const std::vector<Tensor>* y, bool training) {
  auto& d = *data_;
  for (const auto& input : d.inputs) {
    auto dims = input.shape().dims();
    dims[0] = -1;
    f.x.push_back(f.graph.placeholder(Shape(dims), input.dtype(), input.layer().name()));
  }
  std::vector<Node*> updates;
  std::vector<SymbolicTensor> layer_losses;
  CallContext ctx{.graph = f.graph, .training = training, .updates = &updates, .losses = &layer_losses};
  // Compiled under a strategy: the graph is the towers' (a wrapper around this model, made for this
  // graph only, so the model never owns a wrapper that owns it), with the mirrors of earlier graphs.
  std::optional<Model> strategy_towers;
  if (d.strategy && !d.wrapped) {
    strategy_towers.emplace(d.strategy->distribute(*this, d.towers));
    d.towers = strategy_towers->internal().towers;
  }
  // Train and test: each output's parts, one per tower, for per-tower losses and metrics.
  std::vector<std::vector<SymbolicTensor>> tower_outputs;
  auto outputs = (strategy_towers ? *strategy_towers : *this).call_graph(ctx, f.x, y ? &tower_outputs : nullptr);
  f.executor = std::make_unique<Executor>(compute_device(*this));  // every node without a device of its own
  if (!y) {  // predict
    f.fetches = outputs;
    return;
  }

  if (!d.compiled) raise<ValueError>("Model \"{}\": call compile() before fit, evaluate or *_on_batch", name());
  const std::size_t n_out = outputs.size();
  if (y->size() != n_out)
    raise<ValueError>("Model \"{}\": has {} outputs but {} label arrays were given", name(), n_out, y->size());
  std::vector<losses::Loss> losses = d.losses;
  if (losses.size() == 1 && n_out > 1) losses.assign(n_out, losses[0]);
  if (losses.size() != n_out)
    raise<ValueError>("Model \"{}\": compile() got {} losses for {} outputs", name(), losses.size(), n_out);
  std::vector<double> weights = d.loss_weights.empty() ? std::vector<double>(n_out, 1.0) : d.loss_weights;
  if (weights.size() != n_out)
    raise<ValueError>("Model \"{}\": compile() got {} loss_weights for {} outputs", name(), weights.size(), n_out);

  f.sample_weight = f.graph.placeholder({-1}, DType::float32, "sample_weight");
  auto names = output_names();
  for (std::size_t k = 0; k < n_out; ++k) {
    auto dims = (*y)[k].shape().dims();
    dims[0] = -1;
    f.y.push_back(f.graph.placeholder(Shape(dims), (*y)[k].dtype(), names[k] + "_target"));
    f.classes.push_back(losses[k].name() == "sparse_categorical_crossentropy" ? outputs[k].shape().dim(-1) : 0);
  }
  // The mean over the batch of per_element(labels, outputs, sample weights) for output k. With towers,
  // each tower computes its share's sum and element count on its device and only those scalars meet:
  // the mean is exact over the global batch whatever the shares, and no output is gathered (only
  // predict concatenates them).
  using PerElement = std::function<SymbolicTensor(const SymbolicTensor& y, const SymbolicTensor& out,
                                                  const SymbolicTensor& sample_weight)>;
  std::vector<std::vector<SymbolicTensor>> y_shares(n_out);  // [k][tower]
  std::vector<SymbolicTensor> weight_shares;                 // [tower]
  for (std::size_t i = 0; !tower_outputs.empty() && i < d.towers.devices.size(); ++i) {
    const int share = static_cast<int>(i);
    weight_shares.push_back(ops::batch_share(f.sample_weight, *d.towers.ratios, share));
    for (std::size_t k = 0; k < n_out; ++k) y_shares[k].push_back(ops::batch_share(f.y[k], *d.towers.ratios, share));
  }
  const auto batch_mean = [&](std::size_t k, const PerElement& per_element) {
    if (tower_outputs.empty()) return ops::reduce_mean(per_element(f.y[k], outputs[k], f.sample_weight));
    std::vector<SymbolicTensor> sums, counts;
    for (std::size_t i = 0; i < d.towers.devices.size(); ++i) {
      Graph::DeviceScope on(f.graph, d.towers.devices[i]);
      const auto v = per_element(y_shares[k][i], tower_outputs[k][i], weight_shares[i]);
      sums.push_back(ops::reduce_sum(v));
      counts.push_back(ops::reduce_sum(ops::ones_like(v)));
    }
    SymbolicTensor sum = sums[0], count = counts[0];
    for (std::size_t i = 1; i < sums.size(); ++i) sum = ops::add(sum, sums[i]), count = ops::add(count, counts[i]);
    return ops::divide(sum, count);
  };

  SymbolicTensor total;
  std::vector<SymbolicTensor> output_losses, metric_values;
  std::vector<std::string> metric_names;
  for (std::size_t k = 0; k < n_out; ++k) {
    auto loss_k = batch_mean(k, [&](const SymbolicTensor& y_k, const SymbolicTensor& out, const SymbolicTensor& sw) {
      auto per_sample = losses[k](y_k, out);  // (batch,)
      return ops::multiply(per_sample, per_sample.dtype() == DType::float32 ? sw : ops::cast(sw, per_sample.dtype()));
    });
    output_losses.push_back(loss_k);
    auto weighted = weights[k] == 1.0 ? loss_k : ops::scale(loss_k, weights[k]);
    total = total.defined() ? ops::add(total, weighted) : weighted;
    const std::string prefix = n_out > 1 ? names[k] + "_" : "";
    for (const auto& metric : d.metrics) {
      auto resolved = metric.resolve((*y)[k].shape(), outputs[k].shape());
      metric_values.push_back(batch_mean(k, [&](const SymbolicTensor& y_k, const SymbolicTensor& out, const SymbolicTensor&) {
        return resolved(y_k, out);
      }));
      metric_names.push_back(prefix + metric.name());
    }
  }
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
    f.fetches.push_back(metric_values[i]);
    f.names.push_back(metric_names[i]);
  }
  if (!training) return;

  auto variables = trainable_weights();
  if (variables.empty())
    raise<ValueError>("Model \"{}\": has no trainable weights (are all its layers frozen?)", name());
  f.learning_rate = f.graph.placeholder({}, DType::float32, "learning_rate");
  f.iteration = f.graph.placeholder({}, DType::float32, "iteration");
  if (d.towers.apply_gradients) {  // mirrored towers: an all-reduce, then the update of every copy
    f.targets = d.towers.apply_gradients(f.graph, d.towers, total, variables, *d.optimizer, f.learning_rate, f.iteration);
  } else {
    std::vector<SymbolicTensor> reads;
    for (const auto& v : variables) reads.push_back(f.graph.variable(v));
    f.targets = d.optimizer->apply_gradients(f.graph, gradients(total, reads), variables, f.learning_rate, f.iteration);
  }
  f.targets.insert(f.targets.end(), updates.begin(), updates.end());
}

std::vector<Tensor> Model::Function::run(const FeedMap& feeds) {
  for (const auto& m : mirrors) m->sync_from_primary();
  auto values = executor->run(feeds, fetches, targets);
  for (const auto& m : mirrors) m->mark_in_sync();  // the step gave every copy the same update
  return values;
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

Model::Function& Model::function(std::unique_ptr<Function>& slot, const std::vector<Tensor>* y, bool training) {
  if (!slot || (y && !takes_labels(*slot, *y))) {
    slot.reset();
    auto f = std::make_unique<Function>();
    build_function(*f, y, training);
    f->mirrors = mirrors_read(f->graph);
    slot = std::move(f);
  }
  return *slot;
}

// ---- one step ----------------------------------------------------------------------------------------

namespace {

// Converts inputs to the model's dtypes and labels to what the graph takes.
std::vector<Tensor> prepare_inputs(const std::vector<Tensor>& x, const std::vector<KerasTensor>& inputs) {
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < x.size(); ++i) out.push_back(to_dtype(x[i], inputs[i].dtype()));
  return out;
}
std::vector<Tensor> prepare_labels(const std::vector<Tensor>& y) {
  std::vector<Tensor> out;
  for (const auto& t : y) out.push_back(normalize_labels(t));
  return out;
}

// Sparse class ids outside [0, classes) are refused here, on the host, before a step runs: a GPU
// kernel cannot stop to throw (it would give NaN), so every device gets the same clear error.
void check_class_ids(const Model::Function& f, const std::vector<Tensor>& y) {
  for (std::size_t k = 0; k < y.size() && k < f.classes.size(); ++k) {
    const std::int64_t classes = f.classes[k];
    if (classes == 0 || !y[k].device().host_accessible()) continue;
    dispatch_any(y[k].dtype(), "sparse_categorical_crossentropy labels", [&]<typename T>() {
      const T* ids = y[k].data<T>();
      for (std::int64_t i = 0; i < y[k].num_elements(); ++i)
        if (!(ids[i] >= T(0) && static_cast<double>(ids[i]) < static_cast<double>(classes)))
          raise<ValueError>("sparse_categorical_crossentropy: label {} (sample {} of the batch{}) is out of range for "
                            "{} classes; labels must be class ids 0..{} (check the number of output units)",
                            static_cast<double>(ids[i]), i, y.size() > 1 ? fmt::format(", output {}", k) : "",
                            classes, classes - 1);
    });
  }
}

FeedMap feeds_for(const Model::Function& f, const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                  const Tensor& sample_weight) {
  check_class_ids(f, y);
  FeedMap feeds;
  for (std::size_t i = 0; i < x.size(); ++i) feeds.emplace_back(f.x[i], x[i]);
  for (std::size_t i = 0; i < y.size() && i < f.y.size(); ++i) feeds.emplace_back(f.y[i], y[i]);
  if (f.sample_weight.defined()) feeds.emplace_back(f.sample_weight, sample_weight);
  return feeds;
}

std::vector<double> scalars(const std::vector<Tensor>& values) {
  std::vector<double> out;
  for (const auto& v : values) out.push_back(v.item());
  return out;
}

// One optimizer step on a batch: feeds the learning rate and the 1-based step number, runs the
// updates, counts the step. Random ops (Dropout) draw with counter = the optimizer's step count, so
// step k's masks are the same in a run resumed from a checkpoint (docs/data.md). Returns the batch's
// loss and metric means.
std::vector<double> train_step(Model::Function& f, optimizers::Optimizer& optimizer, const std::vector<Tensor>& x,
                               const std::vector<Tensor>& y, const Tensor& sample_weight) {
  auto feeds = feeds_for(f, x, y, sample_weight);
  feeds.emplace_back(f.learning_rate, Tensor::scalar(optimizer.current_learning_rate()));
  feeds.emplace_back(f.iteration, Tensor::scalar(static_cast<double>(optimizer.iterations() + 1)));
  f.graph.set_random_counters(static_cast<std::uint64_t>(optimizer.iterations()));
  auto values = scalars(f.run(feeds));
  optimizer.finish_step();
  return values;
}

// Multiplies each sample's weight by the class_weight of its label (class ids, or the argmax of
// one-hot rows). weights: (n,) float32, changed in place; labels: (n,) or (n, classes).
void apply_class_weight(const std::map<std::int64_t, double>& class_weight, const Tensor& y, Tensor& weights) {
  const std::int64_t n = weights.shape()[0];
  auto labels = to_dtype(y, DType::float64);
  const std::int64_t per = labels.shape().rank() > 1 && n ? labels.num_elements() / n : 1;
  const double* l = labels.data<double>();
  float* w = weights.data<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t cls = per == 1 ? static_cast<std::int64_t>(l[i])
                                : std::max_element(l + i * per, l + (i + 1) * per) - (l + i * per);
    auto it = class_weight.find(cls);
    if (it != class_weight.end()) w[i] *= static_cast<float>(it->second);
  }
}

// A batch from an adapter as the graph takes it: inputs in the model's dtypes, labels normalized,
// float32 weights (ones when the batch has none).
struct StepBatch {
  std::vector<Tensor> x, y;
  Tensor sample_weight;  // (size,)
  std::int64_t size = 0;
};

class StepBatches {
 public:
  // where: "fit", "evaluate", ...; class_weight: applied to batches from datasets (arrays have them
  // in their weights already).
  StepBatches(const std::vector<KerasTensor>& inputs, std::string where, bool labels,
              const std::map<std::int64_t, double>* class_weight = nullptr)
      : inputs_(inputs),
        where_(std::move(where)),
        batch_where_(where_ + ": a batch"),
        labels_(labels),
        class_weight_(class_weight) {}

  StepBatch make(const DataElement& e) {
    StepBatch b;
    b.x = prepare_inputs(e.x, inputs_);
    if (labels_) b.y = prepare_labels(e.y);
    all_.assign(b.x.begin(), b.x.end());  // a member: its capacity is kept from step to step
    all_.insert(all_.end(), b.y.begin(), b.y.end());
    b.size = num_samples(all_, batch_where_);
    if (!labels_) return b;
    if (e.sample_weight) {
      b.sample_weight = to_dtype(*e.sample_weight, DType::float32);
      if (b.sample_weight.shape() != Shape{b.size})
        raise<ShapeError>("{}: a batch of {} samples has sample weights of shape {}; expected ({},)", where_, b.size,
                          b.sample_weight.shape().to_string(), b.size);
    }
    if (class_weight_ && !class_weight_->empty()) {
      if (b.y.size() != 1) raise<ValueError>("{}: class_weight needs a model with one output, got {}", where_, b.y.size());
      b.sample_weight = b.sample_weight.defined() ? b.sample_weight.clone() : Tensor::full({b.size}, 1.0);
      apply_class_weight(*class_weight_, b.y[0], b.sample_weight);
    }
    if (!b.sample_weight.defined()) {
      auto& ones = ones_[b.size];
      if (!ones.defined()) ones = Tensor::full({b.size}, 1.0);
      b.sample_weight = ones;
    }
    return b;
  }

 private:
  const std::vector<KerasTensor>& inputs_;
  std::string where_, batch_where_;
  bool labels_;
  const std::map<std::int64_t, double>* class_weight_;
  std::map<std::int64_t, Tensor> ones_;
  std::vector<Tensor> all_;  // inputs and labels of the current batch, for num_samples
};

CallbackList make_callbacks(Model* model, bool progress, const std::vector<CallbackPtr>& user, const CallbackParams& params) {
  CallbackList callbacks;
  if (progress) callbacks.all.push_back(std::make_shared<callbacks::ProgbarLogger>());
  callbacks.all.insert(callbacks.all.end(), user.begin(), user.end());
  callbacks.each([&](Callback& cb) {
    cb.set_model(model);
    cb.set_params(params);
  });
  return callbacks;
}

// Each device's throughput when a model trains through towers (parallel::multi_gpu_model): the
// samples of its shares and the seconds its lane ran (Plan::busy_seconds), printed after each epoch:
// "cpu:0[96] 1190 sps  cpu:1[32] 410 sps  total[128] 1600 sps", the brackets holding each device's share
// of a full batch. So a device that does nothing, or holds the others up, shows.
class TowerMeter {
 public:
  // `towers` is read as fit goes: a model compiled under a strategy learns its towers with its first
  // training graph, which a dataset's first batch builds.
  explicit TowerMeter(const TowerLayout& towers) : towers_(towers) {}

  bool active() const { return towers_.devices.size() > 1 && towers_.ratios; }
  void begin_epoch() {
    shares_of_ = -1;  // the ratios may have changed (auto)
    reset_counts();
    total_ = 0;
    start_ = std::chrono::steady_clock::now();
  }
  void add_step(const Executor& executor, std::int64_t batch) {
    if (samples_.size() != towers_.devices.size()) reset_counts();  // the towers appeared with this step's graph
    if (full_batch_ == 0) full_batch_ = batch;
    if (batch != shares_of_) shares_ = largest_remainder_split(batch, *towers_.ratios), shares_of_ = batch;  // once per size
    const Plan* plan = executor.last_plan();
    for (std::size_t k = 0; k < samples_.size(); ++k) {
      samples_[k] += shares_[k];
      if (plan) busy_[k] += plan->busy_seconds(*devices_[k]);
    }
    total_ += batch;
  }
  std::string line() const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const auto shares = largest_remainder_split(full_batch_, *towers_.ratios);
    std::string out;
    for (std::size_t k = 0; k < samples_.size(); ++k)
      out += fmt::format("{}[{}] {:.0f} sps  ", towers_.devices[k], shares[k],
                         busy_[k] > 0 ? static_cast<double>(samples_[k]) / busy_[k] : 0.0);
    return out + fmt::format("total[{}] {:.0f} sps", full_batch_, wall > 0 ? static_cast<double>(total_) / wall : 0.0);
  }
  // Shares in proportion to each device's measured samples per busy second (out of 1000), so that the
  // devices finish their parts of a step together; empty when a device has no measurement.
  std::vector<std::int64_t> balanced_ratios() const {
    std::vector<double> speed;
    double total = 0;
    for (std::size_t k = 0; k < samples_.size(); ++k) {
      if (busy_[k] <= 0 || samples_[k] == 0) return {};
      speed.push_back(static_cast<double>(samples_[k]) / busy_[k]);
      total += speed.back();
    }
    std::vector<std::int64_t> ratios;
    for (double v : speed) ratios.push_back(std::max<std::int64_t>(1, std::llround(1000 * v / total)));
    return ratios;
  }

 private:
  void reset_counts() {
    devices_.clear();
    for (const auto& name : towers_.devices) devices_.push_back(&device(name));
    samples_.assign(devices_.size(), 0);
    busy_.assign(devices_.size(), 0.0);
  }

  const TowerLayout& towers_;
  std::vector<Device*> devices_;
  std::vector<std::int64_t> shares_;  // of a batch of shares_of_ samples
  std::int64_t shares_of_ = -1;
  std::vector<std::int64_t> samples_;
  std::vector<double> busy_;
  std::int64_t total_ = 0, full_batch_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

void Model::set_initial_position(int epoch, std::int64_t step) {
  if (epoch < 0 || step < 0)
    raise<ValueError>("Model \"{}\": set_initial_position({}, {}): the epoch and the step must be >= 0", name(), epoch,
                      step);
  data_->initial_position = std::make_pair(epoch, step);
}

// ---- fit ---------------------------------------------------------------------------------------------

History Model::fit(const Tensor& x, const Tensor& y, const FitOptions& options) {
  return fit(std::vector<Tensor>{x}, std::vector<Tensor>{y}, options);
}

History Model::fit(const std::vector<Tensor>& x_in, const std::vector<Tensor>& y_in, const FitOptions& options) {
  build_from_data(x_in);
  check_inputs(x_in, "fit");
  if (options.batch_size <= 0) raise<ValueError>("fit: batch_size must be positive, got {}", options.batch_size);
  if (options.validation_split < 0.0 || options.validation_split >= 1.0)
    raise<ValueError>("fit: validation_split must be in [0, 1), got {}", options.validation_split);
  if (options.validation_data && options.validation_dataset)
    raise<ValueError>("fit: give validation_data or validation_dataset, not both");
  auto x = prepare_inputs(x_in, data_->inputs);
  auto y = prepare_labels(y_in);
  std::vector<Tensor> all = x;
  all.insert(all.end(), y.begin(), y.end());
  const std::int64_t total = num_samples(all, "fit(x, y)");

  // Validation data: given, or the last validation_split of the samples (before shuffling).
  std::int64_t n = total;
  std::vector<Tensor> val_x, val_y;
  if (options.validation_data) {
    val_x = prepare_inputs(options.validation_data->first, data_->inputs);
    val_y = prepare_labels(options.validation_data->second);
    check_inputs(val_x, "fit(validation_data)");
    std::vector<Tensor> val_all = val_x;
    val_all.insert(val_all.end(), val_y.begin(), val_y.end());
    num_samples(val_all, "fit(validation data)");
  } else if (options.validation_split > 0.0 && !options.validation_dataset) {
    n = static_cast<std::int64_t>(static_cast<double>(total) * (1.0 - options.validation_split));
    std::vector<std::int64_t> rows(static_cast<std::size_t>(total - n));
    std::iota(rows.begin(), rows.end(), n);
    for (const auto& a : x) val_x.push_back(take_rows(a, rows.data(), total - n));
    for (const auto& a : y) val_y.push_back(take_rows(a, rows.data(), total - n));
  }
  if (n <= 0) raise<ValueError>("fit: no training samples (got {} samples, validation_split {})", total, options.validation_split);

  // Per-sample weights in the loss: sample_weight times class_weight.
  Tensor sample_weights = Tensor::full({total}, 1.0);
  if (options.sample_weight) {
    auto sw = to_dtype(*options.sample_weight, DType::float32);
    if (sw.shape() != Shape{total})
      raise<ShapeError>("fit: sample_weight must have shape ({},), got {}", total, sw.shape().to_string());
    sample_weights = sw.clone();
  }
  if (!options.class_weight.empty()) {
    if (y.size() != 1) raise<ValueError>("fit: class_weight needs a model with one output, got {}", y.size());
    apply_class_weight(options.class_weight, y[0], sample_weights);
  }

  // The seed is drawn before anything else can draw one, so a resumed run draws the same (docs/data.md).
  // The training rows are the first n (validation_split keeps the last ones).
  const std::uint64_t seed = options.seed ? options.seed : next_seed();
  ArrayDataAdapter train(x, y, sample_weights, options.batch_size, options.shuffle, seed, n);
  std::unique_ptr<DataAdapter> validation;
  if (options.validation_dataset) {
    validation = options.validation_dataset->make_adapter();
  } else if (!val_x.empty()) {
    validation = std::make_unique<ArrayDataAdapter>(
        val_x, val_y, Tensor(), options.validation_batch_size ? options.validation_batch_size : options.batch_size);
  }
  return run_fit(train, validation.get(), options, false, &y);
}

History Model::fit(const DataSource& data, const FitOptions& options) {
  const FitOptions defaults;
  if (options.batch_size != defaults.batch_size || options.validation_split != 0.0 || options.sample_weight ||
      options.validation_batch_size != 0 || !options.shuffle || options.seed != 0)
    raise<ValueError>("fit(dataset): batch_size, validation_split, sample_weight, validation_batch_size, shuffle and "
                      "seed are for arrays; batch, split, weight and shuffle the dataset instead (docs/data.md)");
  if (options.validation_data && options.validation_dataset)
    raise<ValueError>("fit: give validation_data or validation_dataset, not both");
  auto train = data.make_adapter();
  if (!has_graph()) build_from_data(train->peek_x());
  std::unique_ptr<DataAdapter> validation;
  if (options.validation_dataset) {
    validation = options.validation_dataset->make_adapter();
  } else if (options.validation_data) {
    auto val_x = prepare_inputs(options.validation_data->first, data_->inputs);
    check_inputs(val_x, "fit(validation_data)");
    validation = std::make_unique<ArrayDataAdapter>(val_x, prepare_labels(options.validation_data->second), Tensor(),
                                                    defaults.batch_size);
  }
  return run_fit(*train, validation.get(), options, true, nullptr);
}

History Model::run_fit(DataAdapter& train, DataAdapter* validation, const FitOptions& options, bool dataset,
                       const std::vector<Tensor>* y_layout) {
  auto& d = *data_;
  if (!d.compiled) raise<ValueError>("Model \"{}\": call compile() before fit, evaluate or *_on_batch", name());
  auto history = std::make_shared<History>();
  const std::int64_t steps = train.steps_per_epoch();
  std::vector<CallbackPtr> user = options.callbacks;
  user.push_back(history);
  CallbackList callbacks = make_callbacks(this, options.verbose != 0, user,
                                          {.epochs = options.epochs, .steps = std::max<std::int64_t>(steps, 0),
                                           .verbose = options.verbose});
  d.stop_training = false;
  // First the callbacks (BackupAndRestore restores the weights, the optimizer state and the position
  // here), then the training graph, whose random counters start at the restored step count.
  callbacks.each([&](Callback& cb) { cb.on_train_begin({}); });
  int first_epoch = options.initial_epoch;
  std::int64_t first_step = 0;
  if (d.initial_position) {
    std::tie(first_epoch, first_step) = *d.initial_position;
    d.initial_position.reset();
  }
  if (y_layout) function(d.train_fn, y_layout, true);
  auto& optimizer = *d.optimizer;
  StepBatches batches(d.inputs, "fit", true, dataset ? &options.class_weight : nullptr);
  DataElement element;
  Logs epoch_logs;
  TowerMeter tower_meter(d.towers);
  for (int epoch = first_epoch; epoch < options.epochs && !d.stop_training; ++epoch) {
    const std::int64_t skip = epoch == first_epoch ? first_step : 0;
    train.begin_epoch(epoch, skip);
    callbacks.each([&](Callback& cb) { cb.on_epoch_begin(epoch, {}); });
    Averages averages;
    tower_meter.begin_epoch();
    std::int64_t step = skip;
    for (; !d.stop_training && train.next(element); ++step) {
      if (dataset) {
        if (element.y.empty())
          raise<ValueError>("Model \"{}\": fit: the dataset's elements have no labels (y); make it with labels, "
                            "e.g. Dataset::from_tensor_slices({{x}}, {{y}})", name());
        check_inputs(element.x, "fit");
      }
      auto batch = batches.make(element);
      Function& f = function(d.train_fn, &batch.y, true);
      callbacks.each([&](Callback& cb) { cb.on_train_batch_begin(step, {}); });
      auto values = train_step(f, optimizer, batch.x, batch.y, batch.sample_weight);
      if (tower_meter.active()) tower_meter.add_step(*f.executor, batch.size);
      averages.add(f.names, values, batch.size);
      auto logs = averages.logs();
      callbacks.each([&](Callback& cb) { cb.on_train_batch_end(step, logs); });
    }
    train.end_epoch();
    if (step == 0 && !d.stop_training)
      raise<ValueError>("Model \"{}\": fit: the training data gave no batches in epoch {} (an empty dataset, or "
                        "batch(n, drop_remainder = true) of fewer than n samples)", name(), epoch);
    epoch_logs = averages.logs();
    if (validation && !d.stop_training) {
      auto val = run_test(*validation, 0, {}, true, dataset || options.validation_dataset != nullptr, nullptr);
      for (const auto& [key, value] : val.entries()) epoch_logs.set("val_" + key, value);
    }
    callbacks.each([&](Callback& cb) { cb.on_epoch_end(epoch, epoch_logs); });
    if (options.verbose > 0 && tower_meter.active() && step > skip) std::cout << tower_meter.line() << "\n";
    // ratios "auto": after the first epoch, shares in proportion to each device's measured speed (the
    // engine graphs are rebuilt with them).
    if (d.towers.auto_ratios && epoch == first_epoch && tower_meter.active())
      if (auto balanced = tower_meter.balanced_ratios(); !balanced.empty() && balanced != *d.towers.ratios) {
        if (options.verbose > 0)
          std::cout << fmt::format("auto ratios: {} -> {}\n", fmt::join(*d.towers.ratios, ":"), fmt::join(balanced, ":"));
        *d.towers.ratios = std::move(balanced);
        reset_functions();
      }
  }
  callbacks.each([&](Callback& cb) { cb.on_train_end(epoch_logs); });
  return *history;
}

// ---- evaluate ------------------------------------------------------------------------------------------

Logs Model::evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& options) {
  return evaluate(std::vector<Tensor>{x}, std::vector<Tensor>{y}, options);
}

Logs Model::evaluate(const std::vector<Tensor>& x_in, const std::vector<Tensor>& y_in, const EvaluateOptions& options) {
  build_from_data(x_in);
  check_inputs(x_in, "evaluate");
  if (options.batch_size <= 0) raise<ValueError>("evaluate: batch_size must be positive, got {}", options.batch_size);
  auto x = prepare_inputs(x_in, data_->inputs);
  auto y = prepare_labels(y_in);
  std::vector<Tensor> all = x;
  all.insert(all.end(), y.begin(), y.end());
  const std::int64_t n = num_samples(all, "evaluate(x, y)");
  Tensor weights = options.sample_weight ? to_dtype(*options.sample_weight, DType::float32) : Tensor::full({n}, 1.0);
  if (weights.shape() != Shape{n})
    raise<ShapeError>("evaluate: sample_weight must have shape ({},), got {}", n, weights.shape().to_string());
  ArrayDataAdapter data(x, y, weights, options.batch_size);
  return run_test(data, options.verbose, options.callbacks, false, false, &y);
}

Logs Model::evaluate(const DataSource& source, const EvaluateOptions& options) {
  const EvaluateOptions defaults;
  if (options.batch_size != defaults.batch_size || options.sample_weight)
    raise<ValueError>("evaluate(dataset): batch_size and sample_weight are for arrays; batch and weight the dataset "
                      "instead (docs/data.md)");
  auto data = source.make_adapter();
  if (!has_graph()) build_from_data(data->peek_x());
  return run_test(*data, options.verbose, options.callbacks, false, true, nullptr);
}

Logs Model::run_test(DataAdapter& data, int verbose, const std::vector<CallbackPtr>& user_callbacks, bool for_fit,
                     bool dataset, const std::vector<Tensor>* y_layout) {
  auto& d = *data_;
  if (y_layout) function(d.test_fn, y_layout, false);
  else if (!d.compiled) raise<ValueError>("Model \"{}\": call compile() before fit, evaluate or *_on_batch", name());
  const std::int64_t steps = data.steps_per_epoch();
  CallbackList callbacks =
      make_callbacks(this, verbose != 0, user_callbacks, {.epochs = 1, .steps = std::max<std::int64_t>(steps, 0), .verbose = verbose});
  const char* where = for_fit ? "fit(validation data)" : "evaluate";
  callbacks.each([&](Callback& cb) { cb.on_test_begin({}); });
  Averages averages;
  StepBatches batches(d.inputs, where, true);
  DataElement element;
  data.begin_epoch(0, 0);
  std::int64_t step = 0;
  for (; data.next(element); ++step) {
    if (dataset) {
      if (element.y.empty())
        raise<ValueError>("Model \"{}\": {}: the dataset's elements have no labels (y); make it with labels, e.g. "
                          "Dataset::from_tensor_slices({{x}}, {{y}})", name(), where);
      check_inputs(element.x, where);
    }
    auto batch = batches.make(element);
    Function& f = function(d.test_fn, &batch.y, false);
    callbacks.each([&](Callback& cb) { cb.on_test_batch_begin(step, {}); });
    auto values = scalars(f.run(feeds_for(f, batch.x, batch.y, batch.sample_weight)));
    averages.add(f.names, values, batch.size);
    auto logs = averages.logs();
    callbacks.each([&](Callback& cb) { cb.on_test_batch_end(step, logs); });
  }
  data.end_epoch();
  if (step == 0 && dataset)
    raise<ValueError>("Model \"{}\": {}: the dataset gave no batches (it is empty, or batch(n, drop_remainder = "
                      "true) of fewer than n samples)", name(), where);
  auto logs = averages.logs();
  callbacks.each([&](Callback& cb) { cb.on_test_end(logs); });
  return logs;
}

// ---- predict -------------------------------------------------------------------------------------------

Tensor Model::predict(const Tensor& x, const PredictOptions& options) {
  auto outputs = predict(std::vector<Tensor>{x}, options);
  if (outputs.size() != 1)
    raise<ValueError>("Model \"{}\": has {} outputs; use predict(std::vector<Tensor>) to get them all", name(),
                      outputs.size());
  return outputs[0];
}

std::vector<Tensor> Model::predict(const std::vector<Tensor>& x_in, const PredictOptions& options) {
  build_from_data(x_in);
  check_inputs(x_in, "predict");
  if (options.batch_size <= 0) raise<ValueError>("predict: batch_size must be positive, got {}", options.batch_size);
  auto x = prepare_inputs(x_in, data_->inputs);
  num_samples(x, "predict(x)");
  ArrayDataAdapter data(x, {}, Tensor(), options.batch_size);
  return run_predict(data, options, false);
}

std::vector<Tensor> Model::predict(const DataSource& source, const PredictOptions& options) {
  if (options.batch_size != PredictOptions{}.batch_size)
    raise<ValueError>("predict(dataset): batch_size is for arrays; batch the dataset instead (docs/data.md)");
  auto data = source.make_adapter();
  if (!has_graph()) build_from_data(data->peek_x());
  return run_predict(*data, options, true);
}

std::vector<Tensor> Model::run_predict(DataAdapter& data, const PredictOptions& options, bool dataset) {
  Function& f = function(data_->predict_fn, nullptr, false);
  const std::int64_t steps = data.steps_per_epoch();
  const std::int64_t n = data.num_samples();  // -1: concatenate the batches at the end
  CallbackList callbacks = make_callbacks(this, options.verbose != 0, options.callbacks,
                                          {.epochs = 1, .steps = std::max<std::int64_t>(steps, 0), .verbose = options.verbose});
  callbacks.each([&](Callback& cb) { cb.on_predict_begin({}); });
  std::vector<Tensor> results;                   // (n, ...) per output, when n is known
  std::vector<std::vector<Tensor>> pieces;       // per output, the batches' outputs, when it is not
  std::int64_t begin = 0;
  StepBatches batches(data_->inputs, "predict", false);
  DataElement element;
  data.begin_epoch(0, 0);
  std::int64_t step = 0;
  for (; data.next(element); ++step) {
    if (dataset) check_inputs(element.x, "predict");
    auto batch = batches.make(element);
    const std::int64_t size = batch.size;
    callbacks.each([&](Callback& cb) { cb.on_predict_batch_begin(step, {}); });
    auto outs = f.run(feeds_for(f, batch.x, {}, Tensor()));
    for (std::size_t k = 0; k < outs.size(); ++k) {
      Tensor out = outs[k].to(cpu_device());
      if (n < 0) {
        if (pieces.size() <= k) pieces.emplace_back();
        pieces[k].push_back(out);
        continue;
      }
      if (results.size() <= k) {  // allocate (n, ...) once the first batch shows the output shape
        auto dims = out.shape().dims();
        dims[0] = n;
        results.push_back(Tensor::zeros(Shape(dims), out.dtype()));
      }
      if (begin + size > n)
        raise<ValueError>("Model \"{}\": predict: the data gave more than the {} samples it announced", name(), n);
      const std::size_t row = size ? out.nbytes() / static_cast<std::size_t>(size) : 0;
      std::memcpy(static_cast<char*>(results[k].raw_data()) + begin * row, out.raw_data(), out.nbytes());
    }
    begin += size;
    callbacks.each([&](Callback& cb) { cb.on_predict_batch_end(step, {}); });
  }
  data.end_epoch();
  if (step == 0 && dataset)
    raise<ValueError>("Model \"{}\": predict: the dataset gave no batches (it is empty, or batch(n, drop_remainder = "
                      "true) of fewer than n samples)", name());
  if (n < 0) {
    for (auto& parts : pieces) {
      auto dims = parts[0].shape().dims();
      dims[0] = begin;
      Tensor all = Tensor::zeros(Shape(dims), parts[0].dtype());
      std::size_t offset = 0;
      auto tail = [](const Tensor& t) {
        auto d = t.shape().dims();
        d.erase(d.begin());
        return d;
      };
      for (const auto& p : parts) {
        if (tail(p) != tail(parts[0]) || p.dtype() != parts[0].dtype())
          raise<ShapeError>("Model \"{}\": predict: the batches' outputs differ: {} and {}", name(),
                            parts[0].shape().to_string(), p.shape().to_string());
        std::memcpy(static_cast<char*>(all.raw_data()) + offset, p.raw_data(), p.nbytes());
        offset += p.nbytes();
      }
      results.push_back(all);
    }
  }
  callbacks.each([&](Callback& cb) { cb.on_predict_end({}); });
  return results;
}

// ---- single batches ---------------------------------------------------------------------------------

// x, y and sample weights of one batch, checked and converted as fit does.
struct Model::Batch {
  std::vector<Tensor> x, y;
  Tensor sample_weight;
};

Model::Batch Model::prepare_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                                  const std::optional<Tensor>& sample_weight, const char* where) {
  build_from_data(x);
  check_inputs(x, where);
  Batch batch{prepare_inputs(x, data_->inputs), prepare_labels(y), {}};
  std::vector<Tensor> all = batch.x;
  all.insert(all.end(), batch.y.begin(), batch.y.end());
  const std::int64_t n = num_samples(all, std::string(where) + "(x, y)");
  batch.sample_weight = sample_weight ? to_dtype(*sample_weight, DType::float32) : Tensor::full({n}, 1.0);
  if (batch.sample_weight.shape() != Shape{n})
    raise<ShapeError>("{}: sample_weight must have shape ({},), got {}", where, n, batch.sample_weight.shape().to_string());
  return batch;
}

Logs Model::train_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                           const std::optional<Tensor>& sample_weight) {
  auto batch = prepare_batch(x, y, sample_weight, "train_on_batch");
  Function& f = function(data_->train_fn, &batch.y, true);
  return batch_logs(f.names, train_step(f, *data_->optimizer, batch.x, batch.y, batch.sample_weight));
}

Logs Model::test_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                          const std::optional<Tensor>& sample_weight) {
  auto batch = prepare_batch(x, y, sample_weight, "test_on_batch");
  Function& f = function(data_->test_fn, &batch.y, false);
  return batch_logs(f.names, scalars(f.run(feeds_for(f, batch.x, batch.y, batch.sample_weight))));
}

std::vector<Tensor> Model::predict_on_batch(const std::vector<Tensor>& x_in) {
  build_from_data(x_in);
  check_inputs(x_in, "predict_on_batch");
  auto x = prepare_inputs(x_in, data_->inputs);
  Function& f = function(data_->predict_fn, nullptr, false);
  std::vector<Tensor> out;
  for (auto& t : f.run(feeds_for(f, x, {}, Tensor()))) out.push_back(t.to(cpu_device()));
  return out;
}

}  // namespace tower
