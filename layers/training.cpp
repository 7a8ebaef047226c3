// Model's training API: compile, fit, evaluate, predict and the *_on_batch steps. Each builds (once
// per label layout) an engine graph from the model: forward, losses, metrics and, for training,
// gradients and the optimizer's updates; the Executor caches one plan per batch shape.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "core/autodiff.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/random.h"
#include "layers/callbacks.h"
#include "layers/model_internal.h"

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

// Copies rows idx[0..n) of a host array into `out`, (re)allocating it only when its shape differs.
void gather_rows(const Tensor& src, const std::int64_t* idx, std::int64_t n, Tensor& out) {
  auto dims = src.shape().dims();
  dims[0] = n;
  if (!out.defined() || out.shape() != Shape(dims) || out.dtype() != src.dtype()) out = Tensor::zeros(Shape(dims), src.dtype());
  const std::size_t row = src.shape()[0] == 0 ? 0 : src.nbytes() / static_cast<std::size_t>(src.shape()[0]);
  auto* from = static_cast<const char*>(src.raw_data());
  auto* to = static_cast<char*>(out.raw_data());
  for (std::int64_t i = 0; i < n; ++i) std::memcpy(to + i * row, from + idx[i] * row, row);
}

// Rows idx[0..n) of a host array, as a new (n, ...) array.
Tensor take_rows(const Tensor& src, const std::int64_t* idx, std::int64_t n) {
  Tensor out;
  gather_rows(src, idx, n, out);
  return out;
}

// Batches of rows of several host arrays, gathered into buffers kept per batch size, so that steps
// in a loop allocate nothing (the plan reads the fed buffers; the next step refills them).
class Batcher {
 public:
  explicit Batcher(std::vector<Tensor> arrays) : arrays_(std::move(arrays)) {}
  // Rows idx[0..n) of every array; valid until the next take() of the same size.
  const std::vector<Tensor>& take(const std::int64_t* idx, std::int64_t n) {
    auto& out = buffers_[n];
    out.resize(arrays_.size());
    for (std::size_t i = 0; i < arrays_.size(); ++i) gather_rows(arrays_[i], idx, n, out[i]);
    return out;
  }

 private:
  std::vector<Tensor> arrays_;
  std::map<std::int64_t, std::vector<Tensor>> buffers_;
};

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
  auto outputs = call(ctx, f.x);
  f.executor = std::make_unique<Executor>(cpu_device());
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
  SymbolicTensor total;
  std::vector<SymbolicTensor> output_losses, metric_values;
  std::vector<std::string> metric_names;
  for (std::size_t k = 0; k < n_out; ++k) {
    const Tensor& labels = (*y)[k];
    auto dims = labels.shape().dims();
    dims[0] = -1;
    f.y.push_back(f.graph.placeholder(Shape(dims), labels.dtype(), names[k] + "_target"));
    auto per_sample = losses[k](f.y[k], outputs[k]);  // (batch,)
    auto sw = f.sample_weight;
    if (per_sample.dtype() != DType::float32) sw = ops::cast(sw, per_sample.dtype());
    auto loss_k = ops::reduce_mean(ops::multiply(per_sample, sw));
    output_losses.push_back(loss_k);
    auto weighted = weights[k] == 1.0 ? loss_k : ops::scale(loss_k, weights[k]);
    total = total.defined() ? ops::add(total, weighted) : weighted;
    const std::string prefix = n_out > 1 ? names[k] + "_" : "";
    for (const auto& metric : d.metrics) {
      auto resolved = metric.resolve(labels.shape(), outputs[k].shape());
      metric_values.push_back(ops::reduce_mean(resolved(f.y[k], outputs[k])));
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
  std::vector<SymbolicTensor> reads;
  for (const auto& v : variables) reads.push_back(f.graph.variable(v));
  auto grads = gradients(total, reads);
  f.learning_rate = f.graph.placeholder({}, DType::float32, "learning_rate");
  f.iteration = f.graph.placeholder({}, DType::float32, "iteration");
  f.targets = d.optimizer->apply_gradients(f.graph, grads, variables, f.learning_rate, f.iteration);
  f.targets.insert(f.targets.end(), updates.begin(), updates.end());
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

FeedMap feeds_for(const Model::Function& f, const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                  const Tensor& sample_weight) {
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
// updates, counts the step. Returns the batch's loss and metric means.
std::vector<double> train_step(Model::Function& f, optimizers::Optimizer& optimizer, const std::vector<Tensor>& x,
                               const std::vector<Tensor>& y, const Tensor& sample_weight) {
  auto feeds = feeds_for(f, x, y, sample_weight);
  feeds.emplace_back(f.learning_rate, Tensor::scalar(optimizer.current_learning_rate()));
  feeds.emplace_back(f.iteration, Tensor::scalar(static_cast<double>(optimizer.iterations() + 1)));
  auto values = scalars(f.executor->run(feeds, f.fetches, f.targets));
  optimizer.finish_step();
  return values;
}

}  // namespace

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
  } else if (options.validation_split > 0.0) {
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
    auto labels = to_dtype(y[0], DType::float64);
    const std::int64_t per = labels.shape().rank() > 1 ? labels.num_elements() / total : 1;
    const double* l = labels.data<double>();
    float* w = sample_weights.data<float>();
    for (std::int64_t i = 0; i < total; ++i) {
      std::int64_t cls = per == 1 ? static_cast<std::int64_t>(l[i])
                                  : std::max_element(l + i * per, l + (i + 1) * per) - (l + i * per);
      auto it = options.class_weight.find(cls);
      if (it != options.class_weight.end()) w[i] *= static_cast<float>(it->second);
    }
  }

  auto history = std::make_shared<History>();
  CallbackList callbacks;
  if (options.verbose != 0) callbacks.all.push_back(std::make_shared<callbacks::ProgbarLogger>());
  callbacks.all.insert(callbacks.all.end(), options.callbacks.begin(), options.callbacks.end());
  callbacks.all.push_back(history);
  const std::int64_t steps = (n + options.batch_size - 1) / options.batch_size;
  callbacks.each([&](Callback& cb) {
    cb.set_model(this);
    cb.set_params({.epochs = options.epochs, .steps = steps, .verbose = options.verbose});
  });

  data_->stop_training = false;
  Function& f = function(data_->train_fn, &y, true);
  auto& optimizer = *data_->optimizer;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Generator shuffler(options.seed ? options.seed : next_seed());
  Batcher x_batches(x), y_batches(y), w_batches({sample_weights});

  callbacks.each([&](Callback& cb) { cb.on_train_begin({}); });
  Logs epoch_logs;
  for (int epoch = options.initial_epoch; epoch < options.epochs && !data_->stop_training; ++epoch) {
    if (options.shuffle)  // Fisher-Yates with the seeded generator
      for (std::int64_t i = n - 1; i > 0; --i)
        std::swap(order[static_cast<std::size_t>(i)], order[shuffler.next_u32() % static_cast<std::uint64_t>(i + 1)]);
    callbacks.each([&](Callback& cb) { cb.on_epoch_begin(epoch, {}); });
    Averages averages;
    for (std::int64_t step = 0; step < steps && !data_->stop_training; ++step) {
      const std::int64_t begin = step * options.batch_size;
      const std::int64_t size = std::min(options.batch_size, n - begin);
      const std::int64_t* rows = order.data() + begin;
      const auto& bx = x_batches.take(rows, size);
      const auto& by = y_batches.take(rows, size);
      const auto& bw = w_batches.take(rows, size)[0];
      callbacks.each([&](Callback& cb) { cb.on_train_batch_begin(step, {}); });
      auto values = train_step(f, optimizer, bx, by, bw);
      averages.add(f.names, values, size);
      auto logs = averages.logs();
      callbacks.each([&](Callback& cb) { cb.on_train_batch_end(step, logs); });
    }
    epoch_logs = averages.logs();
    if (!val_x.empty() && !data_->stop_training) {
      auto val = run_test_loop(val_x, val_y, std::nullopt,
                               options.validation_batch_size ? options.validation_batch_size : options.batch_size, 0,
                               {}, true);
      for (const auto& [key, value] : val.entries()) epoch_logs.set("val_" + key, value);
    }
    callbacks.each([&](Callback& cb) { cb.on_epoch_end(epoch, epoch_logs); });
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
  return run_test_loop(prepare_inputs(x_in, data_->inputs), prepare_labels(y_in), options.sample_weight,
                       options.batch_size, options.verbose, options.callbacks, false);
}

Logs Model::run_test_loop(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const std::optional<Tensor>& sw,
                          std::int64_t batch_size, int verbose, const std::vector<CallbackPtr>& user_callbacks,
                          bool for_fit) {
  std::vector<Tensor> all = x;
  all.insert(all.end(), y.begin(), y.end());
  const std::int64_t n = num_samples(all, for_fit ? "fit(validation data)" : "evaluate(x, y)");
  Tensor weights = sw ? to_dtype(*sw, DType::float32) : Tensor::full({n}, 1.0);
  if (weights.shape() != Shape{n})
    raise<ShapeError>("evaluate: sample_weight must have shape ({},), got {}", n, weights.shape().to_string());
  Function& f = function(data_->test_fn, &y, false);
  const std::int64_t steps = (n + batch_size - 1) / batch_size;
  CallbackList callbacks;
  if (verbose != 0) callbacks.all.push_back(std::make_shared<callbacks::ProgbarLogger>());
  callbacks.all.insert(callbacks.all.end(), user_callbacks.begin(), user_callbacks.end());
  callbacks.each([&](Callback& cb) {
    cb.set_model(this);
    cb.set_params({.epochs = 1, .steps = steps, .verbose = verbose});
  });
  callbacks.each([&](Callback& cb) { cb.on_test_begin({}); });
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Averages averages;
  Batcher x_batches(x), y_batches(y), w_batches({weights});
  for (std::int64_t step = 0; step < steps; ++step) {
    const std::int64_t begin = step * batch_size;
    const std::int64_t size = std::min(batch_size, n - begin);
    const std::int64_t* rows = order.data() + begin;
    callbacks.each([&](Callback& cb) { cb.on_test_batch_begin(step, {}); });
    auto feeds = feeds_for(f, x_batches.take(rows, size), y_batches.take(rows, size), w_batches.take(rows, size)[0]);
    auto values = scalars(f.executor->run(feeds, f.fetches));
    averages.add(f.names, values, size);
    auto logs = averages.logs();
    callbacks.each([&](Callback& cb) { cb.on_test_batch_end(step, logs); });
  }
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
  const std::int64_t n = num_samples(x, "predict(x)");
  Function& f = function(data_->predict_fn, nullptr, false);
  const std::int64_t steps = (n + options.batch_size - 1) / options.batch_size;
  CallbackList callbacks;
  if (options.verbose != 0) callbacks.all.push_back(std::make_shared<callbacks::ProgbarLogger>());
  callbacks.all.insert(callbacks.all.end(), options.callbacks.begin(), options.callbacks.end());
  callbacks.each([&](Callback& cb) {
    cb.set_model(this);
    cb.set_params({.epochs = 1, .steps = steps, .verbose = options.verbose});
  });
  callbacks.each([&](Callback& cb) { cb.on_predict_begin({}); });
  std::vector<Tensor> results;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Batcher x_batches(x);
  for (std::int64_t step = 0; step < steps; ++step) {
    const std::int64_t begin = step * options.batch_size;
    const std::int64_t size = std::min(options.batch_size, n - begin);
    callbacks.each([&](Callback& cb) { cb.on_predict_batch_begin(step, {}); });
    auto outs = f.executor->run(feeds_for(f, x_batches.take(order.data() + begin, size), {}, Tensor()), f.fetches);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      Tensor out = outs[k].to(cpu_device());
      if (results.size() <= k) {  // allocate (n, ...) once the first batch shows the output shape
        auto dims = out.shape().dims();
        dims[0] = n;
        results.push_back(Tensor::zeros(Shape(dims), out.dtype()));
      }
      const std::size_t row = size ? out.nbytes() / static_cast<std::size_t>(size) : 0;
      std::memcpy(static_cast<char*>(results[k].raw_data()) + begin * row, out.raw_data(), out.nbytes());
    }
    callbacks.each([&](Callback& cb) { cb.on_predict_batch_end(step, {}); });
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
  return batch_logs(f.names, scalars(f.executor->run(feeds_for(f, batch.x, batch.y, batch.sample_weight), f.fetches)));
}

std::vector<Tensor> Model::predict_on_batch(const std::vector<Tensor>& x_in) {
  build_from_data(x_in);
  check_inputs(x_in, "predict_on_batch");
  auto x = prepare_inputs(x_in, data_->inputs);
  Function& f = function(data_->predict_fn, nullptr, false);
  std::vector<Tensor> out;
  for (auto& t : f.executor->run(feeds_for(f, x, {}, Tensor()), f.fetches)) out.push_back(t.to(cpu_device()));
  return out;
}

}  // namespace tower
