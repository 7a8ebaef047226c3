// TensorBoard: Keras 3's tags and steps, written through io::EventWriter.
#include "tower/layers/callbacks/tensorboard.h"

#include <chrono>
#include <filesystem>

#include "tower/core/error.h"
#include "tower/io/model_config.h"
#include "tower/io/tfevents.h"
#include "tower/layers/engine/model.h"
#include "tower/optimizers/optimizer.h"

namespace tower::callbacks {

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::int64_t parse_update_freq(const std::string& text) {
  if (text == "epoch") return 0;
  if (text == "batch") return 1;
  throw ValueError("TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches >= 1, got \"" +
                   text + "\"");
}

}  // namespace

UpdateFreq::UpdateFreq(const char* text) : batches(parse_update_freq(text)) {}
UpdateFreq::UpdateFreq(const std::string& text) : batches(parse_update_freq(text)) {}
UpdateFreq::UpdateFreq(std::int64_t n) : batches(n) {
  if (n < 1)
    throw ValueError("TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches >= 1, got " +
                     std::to_string(n));
}

TensorBoard::TensorBoard(TensorBoardOptions options) : options_(std::move(options)) {
  if (options_.histogram_freq < 0)
    throw ValueError("TensorBoard: histogram_freq must be >= 0, got " + std::to_string(options_.histogram_freq));
  if (options_.write_images) throw ValueError("TensorBoard: write_images is not supported by tower; leave it false");
  if (options_.profile_batch != 0)
    throw ValueError("TensorBoard: profiling is not supported by tower; leave profile_batch 0");
  if (options_.embeddings_freq != 0)
    throw ValueError("TensorBoard: the embedding projector is not supported by tower; leave embeddings_freq 0");
}

TensorBoard::~TensorBoard() = default;

io::EventWriter& TensorBoard::train_writer() {
  if (!train_) train_ = std::make_unique<io::EventWriter>((std::filesystem::path(options_.log_dir) / "train").string());
  return *train_;
}

io::EventWriter& TensorBoard::val_writer() {
  if (!val_) val_ = std::make_unique<io::EventWriter>((std::filesystem::path(options_.log_dir) / "validation").string());
  return *val_;
}

void TensorBoard::on_train_begin(const Logs&) {
  global_train_batch_ = 0;
  if (options_.write_graph) {
    std::string json;
    try {
      json = io::model_to_json(model());
    } catch (const Error&) {
      json.clear();  // a model without a config (as Keras, which writes only Sequential and Functional)
    }
    if (!json.empty()) train_writer().add_keras_model("keras", json, 0);
  }
  train_writer().flush();
}

void TensorBoard::on_train_end(const Logs&) {
  if (train_) train_->close();
  if (val_) val_->close();
  train_.reset();
  val_.reset();
}

void TensorBoard::on_epoch_begin(int, const Logs&) {
  evaluated_this_epoch_ = false;
  if (options_.write_steps_per_second) {
    epoch_start_iterations_ = model().optimizer().iterations();
    epoch_start_ = now();
  }
}

void TensorBoard::on_train_batch_begin(std::int64_t, const Logs&) {
  ++global_train_batch_;
  if (options_.write_steps_per_second) batch_start_ = now();
}

void TensorBoard::on_train_batch_end(std::int64_t, const Logs& logs) {
  const std::int64_t every = options_.update_freq.batches;
  if (every == 0 || global_train_batch_ % every != 0) return;
  auto& w = train_writer();
  if (options_.write_steps_per_second) {
    const double seconds = now() - batch_start_;
    w.add_scalar("batch_steps_per_second", seconds > 0 ? 1.0 / seconds : 0.0, global_train_batch_);
  }
  for (const auto& [name, value] : logs.entries()) w.add_scalar("batch_" + name, value, global_train_batch_);
}

void TensorBoard::on_epoch_end(int epoch, Logs& logs) {
  Logs train_logs, val_logs;
  for (const auto& [name, value] : logs.entries()) {
    if (name.rfind("val_", 0) == 0)
      val_logs.set(name.substr(4), value);
    else
      train_logs.set(name, value);
  }
  // Keras's _collect_learning_rate: the optimizer's rate as a float32.
  train_logs.set("learning_rate",
                 static_cast<double>(static_cast<float>(model().optimizer().current_learning_rate())));
  if (options_.write_steps_per_second) {
    const double seconds = now() - epoch_start_;
    const auto steps = static_cast<double>(model().optimizer().iterations() - epoch_start_iterations_);
    train_logs.set("steps_per_second", seconds > 0 ? steps / seconds : 0.0);
  }
  auto& train = train_writer();
  for (const auto& [name, value] : train_logs.entries()) train.add_scalar("epoch_" + name, value, epoch);
  if (!val_logs.empty()) {
    auto& val = val_writer();
    // Keras writes these in on_test_end of fit's validation; tower's fit runs validation without the
    // user's callbacks, so they are written here (unless on_test_end already did, this epoch).
    if (!evaluated_this_epoch_) {
      const std::int64_t step = model().optimizer().iterations();
      for (const auto& [name, value] : val_logs.entries())
        val.add_scalar("evaluation_" + name + "_vs_iterations", value, step);
    }
    for (const auto& [name, value] : val_logs.entries()) val.add_scalar("epoch_" + name, value, epoch);
    val.flush();
  }
  if (options_.histogram_freq > 0 && epoch % options_.histogram_freq == 0) log_weights(epoch);
  train.flush();
}

void TensorBoard::on_test_end(const Logs& logs) {
  if (!model_ || !model_->compiled()) return;
  auto& val = val_writer();
  const std::int64_t step = model().optimizer().iterations();
  for (const auto& [name, value] : logs.entries())
    val.add_scalar("evaluation_" + name + "_vs_iterations", value, step);
  val.flush();
  evaluated_this_epoch_ = true;
}

void TensorBoard::log_weights(int epoch) {
  auto& w = train_writer();
  const std::string prefix = model().name() + "/";
  for (const auto& layer : model().layers()) {
    for (const auto& weight : layer->weights()) {
      std::string name = weight->name();
      if (name.size() > 2 && name.compare(name.size() - 2, 2, ":0") == 0) name.resize(name.size() - 2);
      for (char& c : name)
        if (c == ':') c = '_';
      const auto values = weight->value().to_vector<double>();
      w.add_histogram(prefix + name + "/histogram", values, epoch);
    }
  }
}

}  // namespace tower::callbacks
