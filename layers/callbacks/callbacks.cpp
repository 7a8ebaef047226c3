// Keras's built-in callbacks. Texts and rules follow tf.keras 2's Progbar and Keras 3's callbacks.
#include "tower/layers/callbacks/callbacks.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>

#include "tower/core/error.h"
#include "tower/layers/engine/model.h"

namespace tower::callbacks {

std::string python_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", value);  // shortest round-trip digits, as Python
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

namespace {

bool is_terminal(const std::ostream* stream) {
  if (stream == &std::cout) return ::isatty(STDOUT_FILENO) != 0;
  if (stream == &std::cerr || stream == &std::clog) return ::isatty(STDERR_FILENO) != 0;
  return false;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The learning rate as Keras reads it: its optimizer holds it in a float32 variable.
double float32_learning_rate(Model& model) {
  return static_cast<double>(static_cast<float>(model.optimizer().current_learning_rate()));
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// LambdaCallback's hooks: each runs its function when one was given.
template <typename F, typename... Args>
void call(const F& function, Args&&... args) {
  if (function) function(std::forward<Args>(args)...);
}

}  // namespace

// ---- shared by the callbacks that monitor a value (declared in callbacks.h) --------------------------

void check_mode(const char* who, const std::string& mode) {
  if (mode != "auto" && mode != "min" && mode != "max")
    raise<ValueError>("{}: mode must be \"auto\", \"min\" or \"max\", got \"{}\"", who, mode);
}

// Keras 3's "auto" mode takes the metric's direction: losses and errors go down, accuracies up.
bool higher_is_better(const char* who, const std::string& monitor, const std::string& mode) {
  if (mode != "auto") return mode == "max";
  const std::string name = monitor.rfind("val_", 0) == 0 ? monitor.substr(4) : monitor;
  for (const char* down : {"loss", "error", "crossentropy", "mse", "mae", "huber"})
    if (ends_with(name, down)) return false;
  for (const char* up : {"accuracy", "acc"})
    if (ends_with(name, up)) return true;
  raise<ValueError>(
      "{} callback received monitor=\"{}\", but cannot tell whether that metric should be maximized "
      "or minimized. Pass mode \"max\" to monitor its highest value, or mode \"min\" for the lowest",
      who, monitor);
}

// Keras's MonitorCallback._is_improvement, min_delta taken towards "better".
bool is_improvement(double current, std::optional<double> reference, bool higher, double min_delta) {
  if (!reference) return true;
  return higher ? current - min_delta > *reference : current + min_delta < *reference;
}

// Keras warns (once) when the monitored value is missing from the logs.
void warn_missing(bool& warned, const char* what, const std::string& monitor, const Logs& logs) {
  if (warned) return;
  warned = true;
  std::string names;
  for (const auto& entry : logs.entries()) names += (names.empty() ? "" : ",") + entry.first;
  std::cerr << "WARNING: " << what << " conditioned on metric `" << monitor
            << "` which is not available. Available metrics are: " << names << "\n";
}


// ---- ProgbarLogger ---------------------------------------------------------------------------------

ProgbarLogger::ProgbarLogger(ProgbarOptions options) : options_(std::move(options)) {
  out_ = options_.stream ? options_.stream : &std::cout;
  if (!options_.clock) options_.clock = steady_seconds;
  dynamic_ = options_.dynamic_display.value_or(is_terminal(out_));
}

std::string ProgbarLogger::format_time(double seconds, const std::string& unit) {
  if (seconds >= 1 || seconds == 0) return fmt::format(" {:.0f}s/{}", seconds, unit);
  if (seconds >= 1e-3) return fmt::format(" {:.0f}ms/{}", seconds * 1e3, unit);
  return fmt::format(" {:.0f}us/{}", seconds * 1e6, unit);
}

std::string ProgbarLogger::format_value(double value) {
  return std::abs(value) > 1e-3 ? fmt::format("{:.4f}", value) : fmt::format("{:.4e}", value);
}

std::string ProgbarLogger::format_eta(double eta) {
  // Python's "%d" truncates and "//" floors; eta is never negative.
  const auto whole = [](double v) { return static_cast<long long>(v); };
  if (eta > 3600)
    return fmt::format("{}:{:02}:{:02}", whole(std::floor(eta / 3600)), whole(std::floor(std::fmod(eta, 3600) / 60)),
                       whole(std::fmod(eta, 60)));
  if (eta > 60) return fmt::format("{}:{:02}", whole(std::floor(eta / 60)), whole(std::fmod(eta, 60)));
  return fmt::format("{}s", whole(eta));
}

void ProgbarLogger::start() {
  active_ = true;
  target_ = params_.steps;
  seen_ = 0;
  start_ = epoch_start_ = options_.clock();
  last_update_.reset();
  time_after_first_step_.reset();
  epoch_end_.reset();
  total_width_ = 0;
}

void ProgbarLogger::on_train_begin(const Logs&) { in_fit_ = true; }

void ProgbarLogger::on_epoch_begin(int epoch, const Logs&) {
  start();
  if (verbose() != 0 && params_.epochs > 1) {
    *out_ << "Epoch " << epoch + 1 << "/" << params_.epochs << "\n";
    out_->flush();
  }
}

void ProgbarLogger::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  if (verbose() != 1) return;  // Keras calls the batch hooks only for the live bar
  seen_ = batch + 1;
  update(seen_, logs, false);
}

void ProgbarLogger::on_epoch_end(int, Logs& logs) {
  if (target_ <= 0) target_ = seen_;
  update(target_, logs, true);
}

void ProgbarLogger::on_test_begin(const Logs&) {
  if (!in_fit_) start();
}

void ProgbarLogger::on_test_batch_end(std::int64_t batch, const Logs& logs) {
  if (in_fit_ || verbose() != 1) return;
  seen_ = batch + 1;
  update(seen_, logs, false);
}

void ProgbarLogger::on_test_end(const Logs& logs) {
  if (in_fit_) return;
  if (target_ <= 0) target_ = seen_;
  update(target_, logs, true);
}

void ProgbarLogger::on_predict_begin(const Logs&) { start(); }

void ProgbarLogger::on_predict_batch_end(std::int64_t batch, const Logs&) {
  if (verbose() != 1) return;
  seen_ = batch + 1;
  update(seen_, {}, false);
}

void ProgbarLogger::on_predict_end(const Logs&) {
  if (target_ <= 0) target_ = seen_;
  update(target_, {}, true);
}

double ProgbarLogger::estimate_step_duration(std::int64_t current, double now) {
  if (current == 0) return 0;
  // The first step (graph building, plan compilation) is left out once there are others.
  const double per_step = time_after_first_step_ && current > 1
                              ? (now - *time_after_first_step_) / static_cast<double>(current - 1)
                              : (now - start_) / static_cast<double>(current);
  if (current == 1) time_after_first_step_ = now;
  return per_step;
}

void ProgbarLogger::update(std::int64_t current, const Logs& logs, bool finalize) {
  if (!active_) start();  // hooks called without a begin (tests, custom loops)
  const double now = options_.clock();
  std::string info = fmt::format(" - {:.0f}s", now - start_);
  if (current == target_) epoch_end_ = now;
  const auto digits = static_cast<int>(std::to_string(target_).size());

  if (verbose() == 1) {
    if (!finalize && last_update_ && now - *last_update_ < options_.interval) return;
    last_update_ = now;
    const std::size_t previous_width = total_width_;
    std::string bar;
    if (target_ > 0) {
      bar = fmt::format("{:>{}}/{} [", current, digits, target_);
      const auto done =
          static_cast<int>(options_.width * (static_cast<double>(current) / static_cast<double>(target_)));
      if (done > 0) bar += std::string(static_cast<std::size_t>(done - 1), '=') + (current < target_ ? ">" : "=");
      bar += std::string(static_cast<std::size_t>(std::max(0, options_.width - done)), '.') + "]";
    } else {
      bar = fmt::format("{:7d}/Unknown", current);
    }
    total_width_ = bar.size();
    const double per_step = estimate_step_duration(current, now);
    if (target_ <= 0 || finalize)
      info += format_time(per_step, "step");
    else
      info = " - ETA: " + format_eta(per_step * static_cast<double>(target_ - current));
    for (const auto& [name, value] : logs.entries()) info += " - " + name + ": " + format_value(value);
    total_width_ += info.size();
    if (!dynamic_ && !finalize) return;  // a file or pipe gets only each bar's final line
    if (dynamic_ && previous_width > total_width_) info += std::string(previous_width - total_width_, ' ');
    *out_ << (dynamic_ ? "\r" : "") << bar << info << (finalize ? "\n" : "");
    out_->flush();
  } else if (verbose() == 2 && finalize) {
    std::string line = fmt::format("{:>{}}/{}", current, digits, target_) + info;
    // Keras's verbose-2 branch tests v > 1e-3, not |v|.
    for (const auto& [name, value] : logs.entries())
      line += " - " + name + ": " + (value > 1e-3 ? fmt::format("{:.4f}", value) : fmt::format("{:.4e}", value));
    if (epoch_end_) {
      const double per_epoch = *epoch_end_ - epoch_start_;
      line += " -" + format_time(per_epoch, "epoch") + " -" +
              format_time(per_epoch / static_cast<double>(std::max<std::int64_t>(target_, 1)), "step") + "\n";
      epoch_start_ = now;
      epoch_end_.reset();
    }
    *out_ << line;
    out_->flush();
  }
  if (finalize) active_ = false;
}

// ---- EarlyStopping ---------------------------------------------------------------------------------

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  check_mode("EarlyStopping", options_.mode);
  options_.min_delta = std::abs(options_.min_delta);
  if (options_.patience < 0) raise<ValueError>("EarlyStopping: patience must be >= 0, got {}", options_.patience);
}

void EarlyStopping::on_train_begin(const Logs&) {  // instances may be reused across fits
  wait_ = stopped_epoch_ = best_epoch_ = 0;
  best_.reset();
  best_weights_.clear();
}

void EarlyStopping::on_epoch_end(int epoch, Logs& logs) {
  if (!higher_is_better_) higher_is_better_ = higher_is_better("EarlyStopping", options_.monitor, options_.mode);
  const bool higher = *higher_is_better_;
  auto current = logs.get(options_.monitor);
  if (!current) warn_missing(warned_, "Early stopping", options_.monitor, logs);
  if (!current || epoch < options_.start_from_epoch) return;
  if (options_.restore_best_weights && best_weights_.empty()) {  // never improved yet: these are the best
    best_weights_ = model().get_weights();
    best_epoch_ = epoch;
  }
  ++wait_;
  if (is_improvement(*current, best_, higher, options_.min_delta)) {
    best_ = current;
    best_epoch_ = epoch;
    if (options_.restore_best_weights) best_weights_ = model().get_weights();
    // Patience restarts only when the baseline is beaten too.
    if (!options_.baseline || is_improvement(*current, options_.baseline, higher, options_.min_delta)) wait_ = 0;
    return;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    model().set_stop_training(true);
  }
}

void EarlyStopping::on_train_end(const Logs&) {
  if (stopped_epoch_ > 0 && options_.verbose > 0) std::cout << "Epoch " << stopped_epoch_ + 1 << ": early stopping\n";
  if (options_.restore_best_weights && !best_weights_.empty()) {
    if (options_.verbose > 0)
      std::cout << "Restoring model weights from the end of the best epoch: " << best_epoch_ + 1 << ".\n";
    model().set_weights(best_weights_);
  }
}

// ---- ReduceLROnPlateau -----------------------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options) : options_(std::move(options)) {
  check_mode("ReduceLROnPlateau", options_.mode);
  if (options_.factor >= 1.0)
    raise<ValueError>("ReduceLROnPlateau does not support a factor >= 1.0, got factor={}", options_.factor);
  options_.min_delta = std::abs(options_.min_delta);
}

void ReduceLROnPlateau::on_train_begin(const Logs&) {
  best_.reset();
  cooldown_counter_ = wait_ = 0;
}

void ReduceLROnPlateau::on_epoch_end(int epoch, Logs& logs) {
  if (!higher_is_better_) higher_is_better_ = higher_is_better("ReduceLROnPlateau", options_.monitor, options_.mode);
  const double lr = float32_learning_rate(model());
  logs.set("learning_rate", lr);
  auto current = logs.get(options_.monitor);
  if (!current) return warn_missing(warned_, "Learning rate reduction is", options_.monitor, logs);
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    wait_ = 0;
  }
  if (is_improvement(*current, best_, *higher_is_better_, options_.min_delta)) {
    best_ = current;
    wait_ = 0;
  } else if (cooldown_counter_ <= 0 && ++wait_ >= options_.patience) {
    if (lr > static_cast<double>(static_cast<float>(options_.min_lr))) {
      const double new_lr = std::max(lr * options_.factor, options_.min_lr);
      model().optimizer().set_learning_rate(new_lr);
      if (options_.verbose > 0)
        std::cout << "\nEpoch " << epoch + 1 << ": ReduceLROnPlateau reducing learning rate to " << python_repr(new_lr)
                  << ".\n";
      cooldown_counter_ = options_.cooldown;
      wait_ = 0;
    }
  }
}

// ---- LearningRateScheduler, TerminateOnNaN ---------------------------------------------------------------

LearningRateScheduler::LearningRateScheduler(Schedule schedule, int verbose)
    : schedule_(std::move(schedule)), verbose_(verbose) {
  if (!schedule_) raise<ValueError>("LearningRateScheduler: the schedule function is empty");
}

void LearningRateScheduler::on_epoch_begin(int epoch, const Logs&) {
  const double lr = schedule_(epoch, float32_learning_rate(model()));
  if (!std::isfinite(lr))
    raise<ValueError>("LearningRateScheduler: the schedule gave {} for epoch {}; it must give a finite float",
                      python_repr(lr), epoch);
  model().optimizer().set_learning_rate(lr);
  if (verbose_ > 0)
    std::cout << "\nEpoch " << epoch + 1 << ": LearningRateScheduler setting learning rate to " << python_repr(lr)
              << ".\n";
}

void LearningRateScheduler::on_epoch_end(int, Logs& logs) { logs.set("learning_rate", float32_learning_rate(model())); }

void TerminateOnNaN::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  auto loss = logs.get("loss");
  if (!loss || std::isfinite(*loss)) return;
  if (raise_error_)
    raise<Error>("NaN or Inf loss encountered at batch {}. Loss value: {}. Terminating training immediately.", batch,
                 python_repr(*loss));
  std::cout << "Batch " << batch << ": Invalid loss, terminating training\n";
  model().set_stop_training(true);
}

// ---- CSVLogger ---------------------------------------------------------------------------------------

CSVLogger::CSVLogger(std::string filename, CSVLoggerOptions options)
    : filename_(std::move(filename)), options_(std::move(options)) {
  if (options_.separator.empty()) raise<ValueError>("CSVLogger \"{}\": the separator is empty", filename_);
}

void CSVLogger::on_train_begin(const Logs&) {
  header_ = true;
  if (options_.append) {  // a file that already has content keeps its header
    std::ifstream existing(filename_);
    header_ = !existing || existing.peek() == std::ifstream::traits_type::eof();
  }
  if (file_.is_open()) file_.close();
  file_.open(filename_, std::ios::binary | (options_.append ? std::ios::app : std::ios::trunc));
  if (!file_) raise<Error>("CSVLogger: cannot open \"{}\" for writing: {}", filename_, std::strerror(errno));
  keys_.reset();
}

void CSVLogger::on_epoch_end(int epoch, Logs& logs) {
  if (!file_.is_open()) raise<ValueError>("CSVLogger \"{}\": on_epoch_end before on_train_begin", filename_);
  // Python's csv module: fields holding the separator, quotes or line breaks are quoted.
  auto field = [&](const std::string& text) {
    if (text.find_first_of(options_.separator + "\"\r\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  };
  if (!keys_) {
    keys_.emplace();
    for (const auto& entry : logs.entries()) keys_->push_back(entry.first);
    std::sort(keys_->begin(), keys_->end());
    // Validation may start later (validation_freq): reserve its columns, as Keras does.
    const bool has_val =
        std::any_of(keys_->begin(), keys_->end(), [](const std::string& k) { return k.rfind("val_", 0) == 0; });
    if (!has_val) {
      const std::size_t n = keys_->size();
      for (std::size_t i = 0; i < n; ++i) keys_->push_back("val_" + (*keys_)[i]);
    }
  }
  if (header_) {
    file_ << "epoch";
    for (const auto& key : *keys_) file_ << options_.separator << field(key);
    file_ << "\r\n";
    header_ = false;
  }
  file_ << epoch;
  for (const auto& key : *keys_) {
    auto value = logs.get(key);
    file_ << options_.separator << (value ? python_repr(*value) : "NA");
  }
  file_ << "\r\n";
  file_.flush();
}

void CSVLogger::on_train_end(const Logs&) {
  if (file_.is_open()) file_.close();
}

// ---- LambdaCallback -----------------------------------------------------------------------------------

void LambdaCallback::on_train_begin(const Logs& l) { call(hooks_.on_train_begin, l); }
void LambdaCallback::on_train_end(const Logs& l) { call(hooks_.on_train_end, l); }
void LambdaCallback::on_epoch_begin(int e, const Logs& l) { call(hooks_.on_epoch_begin, e, l); }
void LambdaCallback::on_epoch_end(int e, Logs& l) { call(hooks_.on_epoch_end, e, l); }
void LambdaCallback::on_train_batch_begin(std::int64_t b, const Logs& l) { call(hooks_.on_train_batch_begin, b, l); }
void LambdaCallback::on_train_batch_end(std::int64_t b, const Logs& l) { call(hooks_.on_train_batch_end, b, l); }
void LambdaCallback::on_test_begin(const Logs& l) { call(hooks_.on_test_begin, l); }
void LambdaCallback::on_test_end(const Logs& l) { call(hooks_.on_test_end, l); }
void LambdaCallback::on_test_batch_begin(std::int64_t b, const Logs& l) { call(hooks_.on_test_batch_begin, b, l); }
void LambdaCallback::on_test_batch_end(std::int64_t b, const Logs& l) { call(hooks_.on_test_batch_end, b, l); }
void LambdaCallback::on_predict_begin(const Logs& l) { call(hooks_.on_predict_begin, l); }
void LambdaCallback::on_predict_end(const Logs& l) { call(hooks_.on_predict_end, l); }
void LambdaCallback::on_predict_batch_begin(std::int64_t b, const Logs& l) {
  call(hooks_.on_predict_batch_begin, b, l);
}
void LambdaCallback::on_predict_batch_end(std::int64_t b, const Logs& l) { call(hooks_.on_predict_batch_end, b, l); }

}  // namespace tower::callbacks
