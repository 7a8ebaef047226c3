// ModelCheckpoint: when and where to save, then Model::save / Model::save_weights.
#include "tower/io/model_checkpoint.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "tower/core/error.h"
#include "tower/io/keras_weights.h"
#include "tower/layers/callbacks/callbacks.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/engine/replication.h"

namespace tower::callbacks {

namespace fs = std::filesystem;

std::string format_checkpoint_path(const std::string& pattern, int epoch, std::optional<std::int64_t> batch,
                                   const Logs& logs) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {  // "{{" and "}}"
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const auto close = pattern.find('}', i);
    if (close == std::string::npos)
      raise<ValueError>("ModelCheckpoint: filepath \"{}\" has a '{{' without its '}}'", pattern);
    const std::string field = pattern.substr(i + 1, close - i - 1);
    const auto colon = field.find(':');
    const std::string name = field.substr(0, colon);
    const std::string spec = colon == std::string::npos ? "" : field.substr(colon);
    try {
      if (name == "epoch") {
        out += fmt::format(fmt::runtime("{" + spec + "}"), epoch + 1);
      } else if (name == "batch" && batch) {
        out += fmt::format(fmt::runtime("{" + spec + "}"), *batch + 1);
      } else if (auto value = logs.get(name)) {
        out += fmt::format(fmt::runtime("{" + spec + "}"), *value);
      } else {
        std::string names = "epoch";
        for (const auto& entry : logs.entries()) names += ", " + entry.first;
        raise<ValueError>("ModelCheckpoint: filepath \"{}\" uses {{{}}} but the logs hold only {}", pattern, name,
                          names);
      }
    } catch (const fmt::format_error& e) {
      raise<ValueError>("ModelCheckpoint: filepath \"{}\": the format \"{{{}}}\" does not fit the value ({})", pattern,
                        field, e.what());
    }
    i = close;
  }
  return out;
}

ModelCheckpoint::ModelCheckpoint(std::string filepath, ModelCheckpointOptions options)
    : filepath_(std::move(filepath)), options_(std::move(options)) {
  if (filepath_.empty()) raise<ValueError>("ModelCheckpoint: filepath is empty");
  // Refused here, before fit runs and long before the first save.
  io::refuse_keras_archive_name(fmt::format("ModelCheckpoint: \"{}\"", filepath_), filepath_);
  if (options_.save_freq < 0)
    raise<ValueError>("ModelCheckpoint: save_freq must be 0 (every epoch) or a number of batches, got {}",
                      options_.save_freq);
  check_mode("ModelCheckpoint", options_.mode);
}

std::string ModelCheckpoint::writes_to() const { return fmt::format("ModelCheckpoint(\"{}\")", filepath_); }

void ModelCheckpoint::on_train_begin(const Logs&) {
  // The fields fill in the file name only at saving time; a file name with fields is checked as it
  // is written here (its directory, and that files can be created there). A directory with fields
  // cannot be checked before the first save. In a multi-worker job only the chief writes, so only it
  // checks (the others may not even see the directory).
  if (writes_files(model()) && fs::path(filepath_).parent_path().string().find('{') == std::string::npos)
    io::check_writable(filepath_, fmt::format("ModelCheckpoint: \"{}\"", filepath_));
  if (options_.save_best_only) higher_ = higher_is_better("ModelCheckpoint", options_.monitor, options_.mode);
  best_ = options_.initial_value_threshold;
  batches_seen_ = 0;
}

void ModelCheckpoint::on_epoch_begin(int epoch, const Logs&) { epoch_ = epoch; }

void ModelCheckpoint::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  if (options_.save_freq > 0 && ++batches_seen_ % options_.save_freq == 0) save(epoch_, batch, logs);
}

void ModelCheckpoint::on_epoch_end(int epoch, Logs& logs) {
  if (options_.save_freq == 0) save(epoch, std::nullopt, logs);
}

void ModelCheckpoint::save(int epoch, std::optional<std::int64_t> batch, const Logs& logs) {
  if (!writes_files(model())) return;  // a multi-worker job: the chief writes, the others nothing
  const std::string path = format_checkpoint_path(filepath_, epoch, batch, logs);
  if (options_.save_best_only) {
    const auto current = logs.get(options_.monitor);
    if (!current) {
      warn_missing(warned_, "Can save best model only with", options_.monitor, logs);
      return;
    }
    if (!is_improvement(*current, best_, higher_, 0.0)) {
      if (options_.verbose > 0)
        std::cout << fmt::format("\nEpoch {}: {} did not improve from {:.5f}\n", epoch + 1, options_.monitor,
                                 best_.value_or(0.0));
      return;
    }
    if (options_.verbose > 0)
      std::cout << fmt::format("\nEpoch {}: {} improved from {} to {:.5f}, saving model to {}\n", epoch + 1,
                               options_.monitor, best_ ? fmt::format("{:.5f}", *best_) : std::string(higher_ ? "-inf" : "inf"), *current,
                               path);
    best_ = current;
  } else if (options_.verbose > 0) {
    std::cout << fmt::format("\nEpoch {}: saving model to {}\n", epoch + 1, path);
  }
  // Checked here, so that the message names this callback's option rather than save()'s.
  if (!options_.allow_non_finite) {
    const auto inner = model().wrapped_model();  // a parallel wrapper saves the model it wraps
    std::vector<VariablePtr> variables = inner ? inner->weights() : model().weights();
    if (!options_.save_weights_only && model().compiled())
      for (const auto& slot : model().optimizer().variables()) variables.push_back(slot);
    io::refuse_non_finite(variables, fmt::format("ModelCheckpoint: \"{}\"", path),
                          fmt::format("ModelCheckpoint(\"{}\", {{.allow_non_finite = true}})", filepath_));
  }
  if (options_.save_weights_only)
    model().save_weights(path, {.allow_non_finite = true});
  else
    model().save(path, {.allow_non_finite = true});
  last_saved_ = path;
}

}  // namespace tower::callbacks
