// Model's training loops: fit, evaluate and predict (on arrays or datasets) and the *_on_batch steps.
// They read batches through a DataAdapter (layers/engine/data_adapter.h), prepared by
// layers/engine/batches.h, and run the engine graphs of layers/engine/model_functions.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <numeric>
#include <tuple>

#include "tower/core/error.h"
#include "tower/core/random.h"
#include "tower/layers/callbacks/callbacks.h"
#include "tower/layers/engine/batches.h"
#include "tower/layers/engine/model_internal.h"
#include "tower/optimizers/optimizer.h"

namespace tower {

using engine::apply_class_weight;
using engine::num_samples;
using engine::prepare_inputs;
using engine::prepare_labels;
using engine::StepBatches;
using engine::to_dtype;

namespace {

// ---- what the workers of a multi-worker job compare at fit's start (Replication::check_agreement) ----

std::string joined_or(const std::vector<std::string>& items, const char* none) {
  return items.empty() ? std::string(none) : fmt::format("{}", fmt::join(items, ", "));
}

std::string loss_text(const losses::Loss& loss) {
  const auto& o = loss.options();
  const losses::LossOptions d;
  std::vector<std::string> args;
  if (o.from_logits != d.from_logits) args.push_back(fmt::format("from_logits={}", o.from_logits));
  if (o.label_smoothing != d.label_smoothing) args.push_back(fmt::format("label_smoothing={}", o.label_smoothing));
  if (o.delta != d.delta) args.push_back(fmt::format("delta={}", o.delta));
  if (o.apply_class_balancing != d.apply_class_balancing) args.push_back("apply_class_balancing=true");
  if (o.alpha != d.alpha) args.push_back(fmt::format("alpha={}", o.alpha));
  if (o.gamma != d.gamma) args.push_back(fmt::format("gamma={}", o.gamma));
  if (o.axis != d.axis) args.push_back(fmt::format("axis={}", o.axis));
  return args.empty() ? loss.name() : fmt::format("{}({})", loss.name(), fmt::join(args, ", "));
}

Replication::Agreement fit_agreement(const Model& model, const FitOptions& options, const DataAdapter& train) {
  Replication::Agreement a;
  const auto& args = model.compile_args();
  const auto optimizer = optimizers::to_config(*args.optimizer);
  a.emplace_back("the optimizer", optimizer.at("class_name").get<std::string>());
  for (const auto& [key, value] : optimizer.at("config").items())  // learning_rate (or its schedule), ...
    if (key != "name") a.emplace_back(fmt::format("the optimizer's {}", key), value.dump());
  std::vector<std::string> items;
  for (const auto& loss : args.losses) items.push_back(loss_text(loss));
  a.emplace_back("the loss", joined_or(items, "none"));
  items.clear();
  for (const auto& metric : args.metrics) items.push_back(metric.name());
  a.emplace_back("the metrics", joined_or(items, "none"));
  items.clear();
  for (double w : args.loss_weights) items.push_back(fmt::format("{}", w));
  a.emplace_back("the loss_weights", joined_or(items, "none"));
  if (train.num_samples() >= 0) a.emplace_back("the number of training samples", std::to_string(train.num_samples()));
  if (const std::string print = train.fingerprint(); !print.empty())
    a.emplace_back("the training data (a fingerprint of its first, last and strided rows)", print);
  a.emplace_back("batch_size", std::to_string(options.batch_size));
  a.emplace_back("epochs", std::to_string(options.epochs));
  a.emplace_back("initial_epoch", std::to_string(options.initial_epoch));
  a.emplace_back("shuffle", options.shuffle ? "true" : "false");
  a.emplace_back("validation_split", fmt::format("{}", options.validation_split));
  items.clear();
  for (const auto& [k, w] : options.class_weight) items.push_back(fmt::format("{}: {}", k, w));
  a.emplace_back("class_weight", joined_or(items, "none"));
  items.clear();
  for (const auto& cb : options.callbacks)
    if (cb) {
      if (std::string target = cb->writes_to(); !target.empty()) items.push_back(std::move(target));
    }
  a.emplace_back("the callbacks that write files", joined_or(items, "none"));
  return a;
}

// Runs fit's `body`; when it throws, the model's replication tells the other workers of a job first.
template <typename Body>
History telling_workers(const Model& model, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    if (model.replication()) model.replication()->fit_failed(e);
    throw;
  }
}

// Calls every callback's hook.
struct CallbackList {
  std::vector<CallbackPtr> all;
  template <typename F>
  void each(F&& f) const {
    for (const auto& cb : all) f(*cb);
  }
};

// Sums of batch means weighted by batch size: Keras's epoch averages; and the stateful metrics' statistics
// summed over the batches (made anew for every epoch and evaluation: Keras resets its metrics there),
// whose result() is the value so far.
struct Averages {
  std::vector<std::string> names;
  std::vector<double> sums;
  std::map<std::size_t, metrics::Metric> stateful;
  std::map<std::size_t, std::vector<double>> states;
  std::int64_t count = 0;

  void add(const Model::Function& f, const std::vector<double>& values) {
    const std::int64_t batch = f.last_batch_size;  // the global batch's rows
    if (names.empty()) {
      names = f.names;
      sums.assign(names.size(), 0.0);
      stateful = f.stateful;
    }
    for (std::size_t i = 0; i < values.size(); ++i) sums[i] += values[i] * static_cast<double>(batch);
    for (const auto& [index, s] : f.statistics) {
      auto& state = states[index];
      if (state.empty()) state.assign(s.size(), 0.0);
      for (std::size_t j = 0; j < s.size() && j < state.size(); ++j) state[j] += s[j];
    }
    count += batch;
  }
  Logs logs(const std::string& prefix = "") const {
    Logs out;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (auto s = stateful.find(i); s != stateful.end()) {
        auto st = states.find(i);
        out.set(prefix + names[i], s->second.result_of(st == states.end() ? std::vector<double>{} : st->second).at(0));
        continue;
      }
      out.set(prefix + names[i], count ? sums[i] / static_cast<double>(count) : 0.0);
    }
    return out;
  }
};

// One batch's logs (train_on_batch, test_on_batch: Keras resets the metrics first).
Logs batch_logs(const Model::Function& f, const std::vector<double>& values) {
  Averages one;
  one.add(f, values);
  return one.logs();
}


// The ProgbarLogger when asked, the user's callbacks, then `extra` (the replication's), each given the
// model and the params.
CallbackList make_callbacks(Model* model, bool progress, const std::vector<CallbackPtr>& user,
                            const CallbackParams& params, const std::vector<CallbackPtr>& extra = {}) {
  CallbackList callbacks;
  if (progress) callbacks.all.push_back(std::make_shared<callbacks::ProgbarLogger>());
  callbacks.all.insert(callbacks.all.end(), user.begin(), user.end());
  callbacks.all.insert(callbacks.all.end(), extra.begin(), extra.end());
  callbacks.each([&](Callback& cb) {
    cb.set_model(model);
    cb.set_params(params);
  });
  return callbacks;
}

// The errors the loops share: a dataset without labels, and data that gave no batches.
void check_has_labels(const DataElement& element, const std::string& model, const char* where) {
  if (element.y.empty())
    raise<ValueError>("Model \"{}\": {}: the dataset's elements have no labels (y); make it with labels, e.g. "
                      "Dataset::from_tensor_slices({{x}}, {{y}})", model, where);
}
// class_weight checked against the model's classes: its one output's last dimension (2 for a single
// unit, as in binary classification).
void check_class_weight_for(const Model& model, const std::map<std::int64_t, double>& class_weight, const char* where) {
  if (class_weight.empty()) return;
  if (model.outputs().size() != 1)
    raise<ValueError>("{}: class_weight needs a model with one output, got {}", where, model.outputs().size());
  const Shape& shape = model.outputs()[0].shape();
  const std::int64_t units = shape.rank() >= 2 ? shape.dim(-1) : 1;
  engine::check_class_weight(class_weight, units == 1 ? 2 : units, fmt::format("Model \"{}\": {}", model.name(), where));
}

[[noreturn]] void no_batches(const std::string& model, const std::string& what, const std::string& when = "") {
  raise<ValueError>("Model \"{}\": {} gave no batches{} (it is empty, or batch(n, drop_remainder = true) of fewer "
                    "than n samples)", model, what, when);
}

}  // namespace

// x, y and sample weights of an array call (fit, evaluate, predict, *_on_batch), checked and converted.
struct Model::Arrays {
  std::vector<Tensor> x, y;
  Tensor sample_weight;  // (n,) or (n, time) float32: the given weights, or ones; undefined without labels
  std::int64_t n = 0;
};

Model::Arrays Model::prepare_arrays(const std::vector<Tensor>& x, const std::vector<Tensor>* y,
                                    const std::optional<Tensor>& sample_weight, std::int64_t batch_size,
                                    const char* where) {
  build_from_data(x);
  check_inputs(x, where);
  if (batch_size <= 0) raise<ValueError>("{}: batch_size must be positive, got {}", where, batch_size);
  Arrays a{prepare_inputs(x, data_->inputs), y ? prepare_labels(*y) : std::vector<Tensor>{}, {}, 0};
  std::vector<Tensor> all = a.x;
  all.insert(all.end(), a.y.begin(), a.y.end());
  a.n = num_samples(all, std::string(where) + (y ? "(x, y)" : "(x)"));
  if (a.n == 0)  // as tf.keras, which raises a ValueError on empty data (though a cryptic one)
    raise<ValueError>("Model \"{}\": {}: x has 0 samples (shape {}); give at least one sample", name(), where,
                      x[0].shape().to_string());
  if (!y) return a;
  a.sample_weight = sample_weight ? to_dtype(*sample_weight, DType::float32) : Tensor::full({a.n}, 1.0);
  engine::check_sample_weight(a.sample_weight, a.n, a.y, where);
  return a;
}

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
  if (options.validation_data_by_name) return fit(x_in, y_in, with_positional_validation(options));
  return telling_workers(*this, [&]() -> History {
    if (!(options.validation_split >= 0.0 && options.validation_split < 1.0))  // NaN too (issue 37)
      raise<ValueError>("fit: validation_split must be in [0, 1), got {}", options.validation_split);
    if (options.validation_data && options.validation_dataset)
      raise<ValueError>("fit: give validation_data or validation_dataset, not both");
    auto [x, y, sample_weights, total] = prepare_arrays(x_in, &y_in, options.sample_weight, options.batch_size, "fit");
    check_class_weight_for(*this, options.class_weight, "fit");

    // Validation data: given, or the last validation_split of the samples (before shuffling).
    std::int64_t n = total;
    std::vector<Tensor> val_x, val_y;
    if (options.validation_data) {
      auto val = prepare_arrays(options.validation_data->first, &options.validation_data->second, std::nullopt, 1,
                                "fit(validation_data)");
      val_x = std::move(val.x);
      val_y = std::move(val.y);
    } else if (options.validation_split > 0.0 && !options.validation_dataset) {
      n = static_cast<std::int64_t>(static_cast<double>(total) * (1.0 - options.validation_split));
      std::vector<std::int64_t> rows(static_cast<std::size_t>(total - n));
      std::iota(rows.begin(), rows.end(), n);
      for (const auto& a : x) val_x.push_back(engine::take_rows(a, rows.data(), total - n));
      for (const auto& a : y) val_y.push_back(engine::take_rows(a, rows.data(), total - n));
    }
    if (n <= 0)
      raise<ValueError>("fit: no training samples (got {} samples, validation_split {})", total, options.validation_split);

    // Per-sample weights in the loss: sample_weight times class_weight.
    if (options.sample_weight) sample_weights = sample_weights.clone();
    if (!options.class_weight.empty()) {
      if (y.size() != 1) raise<ValueError>("fit: class_weight needs a model with one output, got {}", y.size());
      apply_class_weight(options.class_weight, y[0], sample_weights);
    }

    // The seed is drawn before anything else can draw one, so a resumed run draws the same (docs/data.md).
    // The training rows are the first n (validation_split keeps the last ones).
    std::uint64_t seed = options.seed ? options.seed : next_seed();
    if (data_->replication) seed = data_->replication->common_seed(seed);  // every worker shuffles alike
    ArrayDataAdapter train(x, y, sample_weights, options.batch_size, options.shuffle, seed, n);
    std::unique_ptr<DataAdapter> validation;
    if (options.validation_dataset) {
      validation = options.validation_dataset->make_adapter();
    } else if (!val_x.empty()) {
      validation = std::make_unique<ArrayDataAdapter>(
          val_x, val_y, Tensor(), options.validation_batch_size ? options.validation_batch_size : options.batch_size);
    }
    return run_fit(train, validation.get(), options, false, &y);
  });
}

History Model::fit(const DataSource& data, const FitOptions& options) {
  if (options.validation_data_by_name) return fit(data, with_positional_validation(options));
  return telling_workers(*this, [&]() -> History {
    const FitOptions defaults;
    if (options.batch_size != defaults.batch_size || options.validation_split != 0.0 || options.sample_weight ||
        options.validation_batch_size != 0 || !options.shuffle || options.seed != 0)
      raise<ValueError>("fit(dataset): batch_size, validation_split, sample_weight, validation_batch_size, shuffle and "
                        "seed are for arrays; batch, split, weight and shuffle the dataset instead (docs/data.md)");
    if (options.validation_data && options.validation_dataset)
      raise<ValueError>("fit: give validation_data or validation_dataset, not both");
    auto train = data.make_adapter();
    if (!has_graph()) build_from_data(train->peek_x());
    check_class_weight_for(*this, options.class_weight, "fit");
    std::unique_ptr<DataAdapter> validation;
    if (options.validation_dataset) {
      validation = options.validation_dataset->make_adapter();
    } else if (options.validation_data) {
      auto val = prepare_arrays(options.validation_data->first, &options.validation_data->second, std::nullopt, 1,
                                "fit(validation_data)");
      validation = std::make_unique<ArrayDataAdapter>(val.x, val.y, Tensor(), defaults.batch_size);
    }
    return run_fit(*train, validation.get(), options, true, nullptr);
  });
}

History Model::run_fit(DataAdapter& train, DataAdapter* validation, const FitOptions& options, bool dataset,
                       const std::vector<Tensor>* y_layout) {
  auto& d = *data_;
  if (!d.compiled) raise<ValueError>("Model \"{}\": call compile() before fit, evaluate or *_on_batch", name());
  auto history = std::make_shared<History>();
  const std::int64_t steps = train.steps_per_epoch();
  std::vector<CallbackPtr> user = options.callbacks;
  user.push_back(history);
  // The replication's own callbacks (each device's throughput, load balancing) come last.
  // In a multi-worker job only the chief shows the progress bar.
  CallbackList callbacks =
      make_callbacks(this, options.verbose != 0 && writes_files(*this), user,
                    {.epochs = options.epochs, .steps = std::max<std::int64_t>(steps, 0), .verbose = options.verbose},
                    d.replication ? d.replication->fit_callbacks() : std::vector<CallbackPtr>{});
  d.stop_training = false;
  // A multi-worker job: every worker compiled alike and trains alike on the same data.
  if (d.replication) d.replication->check_agreement([&] { return fit_agreement(*this, options, train); });
  // First the callbacks (BackupAndRestore restores the weights, the optimizer state and the position
  // here), then the training graph, whose random counters start at the restored step count.
  callbacks.each([&](Callback& cb) { cb.on_train_begin({}); });
  int first_epoch = options.initial_epoch;
  std::int64_t first_step = 0;
  if (d.initial_position) {
    std::tie(first_epoch, first_step) = *d.initial_position;
    d.initial_position.reset();
  }
  // A multi-worker job: the same model and data everywhere, then the chief's state and position.
  if (d.replication) d.replication->begin_fit(*this, steps, first_epoch, first_step);
  // A resume position past the end of the epoch (at its end: nothing of it left to train) was saved for
  // other data or another batch size: its rows, step * batch_size, lay beyond the data or overflowed
  // into a negative row.
  if (steps >= 0 && first_step > steps)
    raise<ValueError>("Model \"{}\": fit resumes epoch {} at step {} (BackupAndRestore's backup, or "
                      "set_initial_position), but an epoch of this data has {} step(s); the position was saved for "
                      "other data or another batch_size: train on the same, or delete the backup to start afresh",
                      name(), first_epoch, first_step, steps);
  if (y_layout) function(Mode::train, y_layout);
  StepBatches batches(d.inputs, "fit", true, dataset ? &options.class_weight : nullptr);
  DataElement element;
  Logs epoch_logs;
  // The first non-finite loss of this fit is told, once (by the chief of a multi-worker job): "loss:
  // nan" in the progress bar alone is easily missed, and a training that diverged trains on to the end.
  bool warned_non_finite = false;
  const auto warn_non_finite_loss = [&](const Logs& logs, int epoch, std::int64_t step) {
    const auto loss = logs.get("loss");
    if (!loss || std::isfinite(*loss)) return false;
    if (writes_files(*this))
      std::cerr << fmt::format("\nWarning: fit: the loss of model \"{}\" is {} from epoch {}, batch {} on: the "
                               "training diverged (is the learning rate, {}, too high?); callbacks::TerminateOnNaN "
                               "ends fit there\n",
                               name(), *loss, epoch + 1, step, d.compile_args.optimizer->current_learning_rate());
    return true;
  };
  for (int epoch = first_epoch; epoch < options.epochs && !d.stop_training; ++epoch) {
    const std::int64_t skip = epoch == first_epoch ? first_step : 0;
    train.begin_epoch(epoch, skip);
    callbacks.each([&](Callback& cb) { cb.on_epoch_begin(epoch, {}); });
    Averages averages;
    std::int64_t step = skip;
    for (; !d.stop_training && train.next(element); ++step) {
      if (dataset) {
        check_has_labels(element, name(), "fit");
        check_inputs(element.x, "fit");
      }
      auto batch = batches.make(element);
      Function& f = function(Mode::train, &batch.y, batch.sample_weight.shape().rank());
      callbacks.each([&](Callback& cb) { cb.on_train_batch_begin(step, {}); });
      auto values =
          f.train_step(*d.compile_args.optimizer, batch.x, batch.y, batch.sample_weight, train.own_batches());
      averages.add(f, values);
      auto logs = averages.logs();
      if (!warned_non_finite) warned_non_finite = warn_non_finite_loss(logs, epoch, step);
      callbacks.each([&](Callback& cb) { cb.on_train_batch_end(step, logs); });
    }
    train.end_epoch();
    if (step == 0 && !d.stop_training) no_batches(name(), "fit: the training data", fmt::format(" in epoch {}", epoch));
    epoch_logs = averages.logs();
    if (validation && !d.stop_training) {
      auto val = run_test(*validation, 0, {}, true, dataset || options.validation_dataset != nullptr, nullptr);
      for (const auto& [key, value] : val.entries()) epoch_logs.set("val_" + key, value);
    }
    callbacks.each([&](Callback& cb) { cb.on_epoch_end(epoch, epoch_logs); });
  }
  // Keras 3's fit: with use_ema the weights take their moving averages, before on_train_end.
  if (options.epochs > 0) d.compile_args.optimizer->finalize_variable_values();
  callbacks.each([&](Callback& cb) { cb.on_train_end(epoch_logs); });
  return *history;
}

// ---- evaluate ------------------------------------------------------------------------------------------

Logs Model::evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& options) {
  return evaluate(std::vector<Tensor>{x}, std::vector<Tensor>{y}, options);
}

Logs Model::evaluate(const std::vector<Tensor>& x_in, const std::vector<Tensor>& y_in, const EvaluateOptions& options) {
  auto a = prepare_arrays(x_in, &y_in, options.sample_weight, options.batch_size, "evaluate");
  ArrayDataAdapter data(a.x, a.y, a.sample_weight, options.batch_size);
  return run_test(data, options.verbose, options.callbacks, false, false, &a.y);
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
  if (y_layout) function(Mode::test, y_layout);
  else if (!d.compiled) raise<ValueError>("Model \"{}\": call compile() before fit, evaluate or *_on_batch", name());
  const std::int64_t steps = data.steps_per_epoch();
  CallbackList callbacks =
      make_callbacks(this, verbose != 0 && writes_files(*this), user_callbacks, {.epochs = 1, .steps = std::max<std::int64_t>(steps, 0), .verbose = verbose});
  const char* where = for_fit ? "fit(validation data)" : "evaluate";
  callbacks.each([&](Callback& cb) { cb.on_test_begin({}); });
  Averages averages;
  StepBatches batches(d.inputs, where, true);
  DataElement element;
  data.begin_epoch(0, 0);
  std::int64_t step = 0;
  for (; data.next(element); ++step) {
    if (dataset) {
      check_has_labels(element, name(), where);
      check_inputs(element.x, where);
    }
    auto batch = batches.make(element);
    Function& f = function(Mode::test, &batch.y, batch.sample_weight.shape().rank());
    callbacks.each([&](Callback& cb) { cb.on_test_batch_begin(step, {}); });
    auto values = f.test_step(batch.x, batch.y, batch.sample_weight, data.own_batches());
    averages.add(f, values);
    auto logs = averages.logs();
    callbacks.each([&](Callback& cb) { cb.on_test_batch_end(step, logs); });
  }
  data.end_epoch();
  if (step == 0 && dataset) no_batches(name(), std::string(where) + ": the dataset");
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
  auto a = prepare_arrays(x_in, nullptr, std::nullopt, options.batch_size, "predict");
  ArrayDataAdapter data(a.x, {}, Tensor(), options.batch_size);
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
  Function& f = function(Mode::predict, nullptr);
  const std::int64_t steps = data.steps_per_epoch();
  const std::int64_t n = data.num_samples();  // -1: concatenate the batches at the end
  CallbackList callbacks = make_callbacks(this, options.verbose != 0 && writes_files(*this), options.callbacks,
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
    callbacks.each([&](Callback& cb) { cb.on_predict_batch_begin(step, {}); });
    auto outs = f.predict_step(batch.x, data.own_batches());
    const std::int64_t size = f.last_batch_size;  // every worker's rows of a sharded pipeline's batches
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const Tensor& out = outs[k];
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
  if (step == 0 && dataset) no_batches(name(), "predict: the dataset");
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

Logs Model::train_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                           const std::optional<Tensor>& sample_weight) {
  auto a = prepare_arrays(x, &y, sample_weight, 1, "train_on_batch");
  Function& f = function(Mode::train, &a.y, a.sample_weight.shape().rank());
  auto values = f.train_step(*data_->compile_args.optimizer, a.x, a.y, a.sample_weight);
  return batch_logs(f, values);
}

Logs Model::test_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                          const std::optional<Tensor>& sample_weight) {
  auto a = prepare_arrays(x, &y, sample_weight, 1, "test_on_batch");
  Function& f = function(Mode::test, &a.y, a.sample_weight.shape().rank());
  auto values = f.test_step(a.x, a.y, a.sample_weight);
  return batch_logs(f, values);
}

std::vector<Tensor> Model::predict_on_batch(const std::vector<Tensor>& x) {
  auto a = prepare_arrays(x, nullptr, std::nullopt, 1, "predict_on_batch");
  return function(Mode::predict, nullptr).predict_step(a.x);
}

}  // namespace tower
