// Model: Keras's functional model (a graph of layer calls from inputs to outputs), and the training
// API every model has: compile, fit, evaluate, predict, the *_on_batch steps, summary, weights.
// A Model is a Layer: calling it on new KerasTensors nests it in another model. Copies of a Model
// object share one model.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tower/layers/callbacks/callback.h"
#include "tower/layers/engine/data_adapter.h"
#include "tower/layers/engine/logs.h"
#include "tower/layers/layer.h"
#include "tower/layers/losses/losses.h"
#include "tower/layers/metrics/metrics.h"
#include "tower/optimizers/optimizer.h"

namespace tower {

class Plan;
class Replication;

// compile()'s optimizer: a Keras name ("adam"), an optimizer object (copied) or a shared one.
class OptimizerArg {
 public:
  OptimizerArg(const char* name);                        // NOLINT: implicit by design
  OptimizerArg(const std::string& name);                 // NOLINT
  OptimizerArg(const optimizers::Optimizer& optimizer);  // NOLINT
  OptimizerArg(optimizers::OptimizerPtr optimizer);      // NOLINT
  const optimizers::OptimizerPtr& get() const { return optimizer_; }

 private:
  optimizers::OptimizerPtr optimizer_;
};

// compile()'s loss: one for every output, or one per output (in output order).
class LossArg {
 public:
  LossArg(const char* name) : per_output_{losses::Loss(name)} {}             // NOLINT
  LossArg(const std::string& name) : per_output_{losses::Loss(name)} {}      // NOLINT
  LossArg(const losses::Loss& loss) : per_output_{loss} {}                   // NOLINT
  LossArg(std::initializer_list<losses::Loss> losses) : per_output_(losses) {}  // NOLINT
  LossArg(std::vector<losses::Loss> losses) : per_output_(std::move(losses)) {}  // NOLINT
  const std::vector<losses::Loss>& losses() const { return per_output_; }

 private:
  std::vector<losses::Loss> per_output_;
};

// compile()'s metrics, as Keras's metrics=: one list for every output ({"accuracy", metrics::AUC()};
// with several outputs each is reported as "<output>_<metric>"), one list per output in output order
// (std::vector<std::vector<metrics::Metric>>), or a map from output name to its list (outputs left out
// get none).
class MetricsArg {
 public:
  MetricsArg() = default;
  MetricsArg(std::initializer_list<metrics::Metric> all) : all_(all) {}          // NOLINT
  MetricsArg(std::vector<metrics::Metric> all) : all_(std::move(all)) {}         // NOLINT
  MetricsArg(std::vector<std::vector<metrics::Metric>> per_output)               // NOLINT
      : per_output_(std::move(per_output)), form_(Form::per_output) {}
  MetricsArg(std::map<std::string, std::vector<metrics::Metric>> by_output)      // NOLINT
      : by_output_(std::move(by_output)), form_(Form::by_output) {}

  enum class Form { all, per_output, by_output };
  Form form() const { return form_; }
  const std::vector<metrics::Metric>& all() const { return all_; }
  const std::vector<std::vector<metrics::Metric>>& per_output() const { return per_output_; }
  const std::map<std::string, std::vector<metrics::Metric>>& by_output() const { return by_output_; }
  // Each output's metrics, for outputs of these names; throws ValueError naming the model when the lists
  // are not one per output or a name is not an output.
  std::vector<std::vector<metrics::Metric>> for_outputs(const std::vector<std::string>& output_names,
                                                        const std::string& model) const;

 private:
  std::vector<metrics::Metric> all_;
  std::vector<std::vector<metrics::Metric>> per_output_;
  std::map<std::string, std::vector<metrics::Metric>> by_output_;
  Form form_ = Form::all;
};

struct CompileOptions {
  std::vector<double> loss_weights;  // one per output; empty = all 1
  // Keras's weighted_metrics=: metrics weighted by fit's and evaluate's sample_weight (the metrics= ones
  // are not, as in Keras), in the same forms as metrics=. Reported under their names, or as
  // "weighted_<name>" when a metric of metrics= has that name.
  MetricsArg weighted_metrics;
};

// Arrays by name, as Keras's dicts: Input layer name -> x array, or output layer name -> y array.
// A std::map without map's iterator-pair constructor, so that fit({x1, x2}, ...) stays the vector call.
class TensorMap : public std::map<std::string, Tensor> {
 public:
  TensorMap() = default;
  TensorMap(std::initializer_list<value_type> items) : map(items) {}           // NOLINT: implicit by design
  TensorMap(std::map<std::string, Tensor> items) : map(std::move(items)) {}  // NOLINT
};

struct FitOptions {
  std::int64_t batch_size = 32;
  int epochs = 1;
  int verbose = 1;  // 0 silent, 1 progress bar, 2 one line per epoch
  std::vector<CallbackPtr> callbacks;
  double validation_split = 0.0;  // the last fraction of x, y (before shuffling), as Keras
  // (x, y) for validation; takes precedence over validation_split (as validation_dataset does).
  std::optional<std::pair<std::vector<Tensor>, std::vector<Tensor>>> validation_data;
  // The same by name (Keras's validation_data=(dict, dict)): input names -> x, output names -> y.
  std::optional<std::pair<TensorMap, TensorMap>> validation_data_by_name;
  // Validation batches from a batched dataset (an io::Dataset: std::make_shared<io::Dataset>(ds));
  // not together with validation_data. validation_batch_size does not apply to it.
  std::shared_ptr<const DataSource> validation_dataset;
  // Arrays only: reshuffle the samples every epoch, in epoch_permutation(n, seed, epoch) order.
  bool shuffle = true;
  // class id -> weight of its samples in the loss (classes not given weigh 1). The keys must be classes
  // of the model (0 to its output's width - 1) and the weights finite and >= 0, else ValueError.
  std::map<std::int64_t, double> class_weight;
  // Weights in the loss and the weighted_metrics: one per sample (samples,), or one per time step
  // (samples, time) for outputs of shape (samples, time, ...) (Keras's temporal sample weights).
  std::optional<Tensor> sample_weight;
  int initial_epoch = 0;
  std::int64_t validation_batch_size = 0;  // 0 = batch_size
  std::uint64_t seed = 0;                   // shuffling; 0 = next_seed() when fit starts
};

struct EvaluateOptions {
  std::int64_t batch_size = 32;
  int verbose = 1;
  std::vector<CallbackPtr> callbacks;
  std::optional<Tensor> sample_weight;  // as FitOptions::sample_weight
};

struct PredictOptions {
  std::int64_t batch_size = 32;
  int verbose = 0;  // 1: a progress bar (Keras's default "auto"); 0 here because C++ callers rarely want it
  std::vector<CallbackPtr> callbacks;
};

// Model::save_weights and Model::save: weights holding NaN or infinity (a diverged training) are
// refused unless allowed, since such a file loads without complaint and predicts nothing useful.
struct SaveWeightsOptions {
  bool allow_non_finite = false;  // write NaN and infinite values instead of refusing them
};

struct SaveOptions {
  bool include_optimizer = true;  // write optimizer_weights (the step count and every slot)
  bool allow_non_finite = false;  // write NaN and infinite weights and slots instead of refusing them
};

struct LoadWeightsOptions {
  bool by_name = false;         // match layers by name instead of by position
  bool skip_mismatch = false;   // with by_name: skip layers whose weight count or shapes differ
};

// The deepest nesting of models in models a Model accepts (ValueError beyond it): building, copying,
// saving and describing a model recurse once per level.
inline constexpr int kMaxModelNesting = 100;

class Model : public Layer {
 public:
  // A functional model from inputs to outputs (KerasTensors made by calling layers on the inputs).
  Model(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs, const std::string& name = "");
  Model(const KerasTensor& input, const KerasTensor& output, const std::string& name = "");
  ~Model() override;

  // ---- structure ---------------------------------------------------------------------------------
  // Keras's model.layers: every layer in graph order (functional models include InputLayers).
  virtual std::vector<LayerPtr> layers() const;
  // The layer named `name`; throws NotFoundError listing the names.
  LayerPtr get_layer(const std::string& name) const;
  const std::vector<KerasTensor>& inputs() const;
  const std::vector<KerasTensor>& outputs() const;
  // Output layer names ("dense_2"), used in multi-output log names ("dense_2_loss").
  std::vector<std::string> output_names() const;
  // Input layer names ("image", "input_1"), in input order: the keys of named x.
  std::vector<std::string> input_names() const;
  // Named arrays in the model's input (output) order, as Keras maps a dict onto its inputs: every name
  // must be an input (output) layer's and every input (output) must be given, else ValueError listing
  // the model's names. (layers/engine/named_data.cpp.) Also what a dataset of named arrays is made of:
  // io::Dataset::from_tensor_slices(model.inputs_by_name(x), model.outputs_by_name(y)).
  std::vector<Tensor> inputs_by_name(const TensorMap& x, const char* where = "inputs_by_name") const;
  std::vector<Tensor> outputs_by_name(const TensorMap& y, const char* where = "outputs_by_name") const;
  // Prints Keras's summary table (line_length 65 as Keras's default for Sequential-like models).
  void summary(std::ostream& out) const;
  void summary() const;
  std::string summary_string() const;

  // ---- Layer -------------------------------------------------------------------------------------
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override;
  // Every layer's (stateful recurrent layers forget their states).
  void reset_states() override;
  // The masks of the outputs of the last call() (a nested model passes its layers' masks on).
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& inputs,
                                           const std::vector<SymbolicTensor>& masks) const override;
  std::shared_ptr<Layer> share() const override { return std::make_shared<Model>(*this); }
  std::string class_name() const override;
  std::vector<VariablePtr> trainable_weights() const override;
  std::vector<VariablePtr> non_trainable_weights() const override;
  std::vector<SymbolicTensor> regularization_losses(Graph& graph) const override;
  void set_trainable(bool trainable) override;

  // ---- training ----------------------------------------------------------------------------------
  void compile(const OptimizerArg& optimizer, const LossArg& loss, const MetricsArg& metrics = {},
               const CompileOptions& options = {});
  bool compiled() const;
  optimizers::Optimizer& optimizer() const;  // throws when not compiled

  History fit(const Tensor& x, const Tensor& y, const FitOptions& options = {});
  History fit(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const FitOptions& options = {});
  // Loss and metrics over the data: score[0] is the loss, then the metrics, as Keras's list.
  Logs evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& options = {});
  Logs evaluate(const std::vector<Tensor>& x, const std::vector<Tensor>& y, const EvaluateOptions& options = {});
  Tensor predict(const Tensor& x, const PredictOptions& options = {});
  std::vector<Tensor> predict(const std::vector<Tensor>& x, const PredictOptions& options = {});
  // By name, as Keras's fit({"image": x1, "meta": x2}, {"label": y}): the same as the positional calls
  // on inputs_by_name(x) and outputs_by_name(y); predict returns each output by its layer's name.
  History fit(const TensorMap& x, const TensorMap& y, const FitOptions& options = {});
  Logs evaluate(const TensorMap& x, const TensorMap& y, const EvaluateOptions& options = {});
  TensorMap predict(const TensorMap& x, const PredictOptions& options = {});

  // On a batched dataset (io::Dataset, io/dataset.h; docs/data.md): batches in the order the dataset
  // makes them. The arrays-only options (batch_size, shuffle, seed, validation_split, sample_weight,
  // validation_batch_size) do not apply and throw when set; weights come from the dataset's elements.
  // predict ignores the elements' labels and returns one array per model output.
  History fit(const DataSource& data, const FitOptions& options = {});
  Logs evaluate(const DataSource& data, const EvaluateOptions& options = {});
  std::vector<Tensor> predict(const DataSource& data, const PredictOptions& options = {});

  // Where the next fit() starts, set by BackupAndRestore in on_train_begin after it restored the
  // weights: fit begins at `epoch` (0-based) and skips the first `step` batches of that epoch
  // (trained before the interruption), then forgets it.
  void set_initial_position(int epoch, std::int64_t step);

  Logs train_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                      const std::optional<Tensor>& sample_weight = std::nullopt);
  Logs test_on_batch(const std::vector<Tensor>& x, const std::vector<Tensor>& y,
                     const std::optional<Tensor>& sample_weight = std::nullopt);
  std::vector<Tensor> predict_on_batch(const std::vector<Tensor>& x);

  // Set by callbacks (EarlyStopping, TerminateOnNaN) to end fit after the current batch or epoch.
  bool stop_training() const;
  void set_stop_training(bool stop);

  // ---- weights in Keras's legacy HDF5 layout (defined in io/keras_weights.cpp) -----------------
  // Written atomically (a temporary file renamed over `path`), with checksums; a read-only `path` and
  // non-finite weights (unless options.allow_non_finite) are refused with nothing written.
  void save_weights(const std::string& path, const SaveWeightsOptions& options = {}) const;
  // Checks the whole file against the model first; on any mismatch throws naming the first
  // mismatching layer and both shapes, and leaves every weight unchanged.
  void load_weights(const std::string& path, const LoadWeightsOptions& options = {});

  // ---- the whole model in Keras's legacy HDF5 layout (defined in io/keras_model.cpp) -------------
  // Architecture (model_config), weights, training_config and optimizer state, written atomically;
  // models::load_model (io/keras_model.h) reads it back, and Keras's load_model too. Refuses what
  // save_weights refuses (non-finite weights or optimizer slots unless options.allow_non_finite).
  // Keras's save(path, include_optimizer=False) is save(path, {.include_optimizer = false}).
  void save(const std::string& path, const SaveOptions& options = {}) const;

  // ---- architecture as Keras's model_config JSON (defined in io/model_config.cpp) ---------------
  // tf.keras 2's config: {"name", "trainable", "layers", "input_layers", "output_layers"}, or a
  // Sequential's {"name", "layers"}. from_config reads a functional config ("Model"/"Functional").
  nlohmann::json get_config() const override;
  static LayerPtr from_config(const nlohmann::json& config);
  std::string to_json() const;  // io::model_to_json

 public:
  // ---- what parallel/, io/ and apps/ read -------------------------------------------------------------
  // What compile() was given (io/ writes it as the file's training_config; parallel/ compiles a wrapper
  // alike). Empty before compile().
  struct CompileArgs {
    optimizers::OptimizerPtr optimizer;
    std::vector<losses::Loss> losses;  // one, or one per output
    std::vector<metrics::Metric> metrics;  // for every output (metrics_arg.all())
    std::vector<double> loss_weights;  // one per output; empty = all 1
    MetricsArg metrics_arg;            // as given: for every output, per output, or by output name
    MetricsArg weighted_metrics_arg;   // CompileOptions::weighted_metrics
  };
  const CompileArgs& compile_args() const;

  // Keras's modes: which of the model's engine graphs.
  enum class Mode { train, test, predict };
  // The plan the `mode` graph ran last (null before any run) and the samples of that batch: what
  // throughput meters read (parallel/'s per-device meter, bench_gpus).
  const Plan* last_plan(Mode mode) const;
  std::int64_t last_batch_size(Mode mode) const;

  // ---- replication (layers/engine/replication.h) -------------------------------------------------------
  // How the model's engine graphs run: null as it is, else replicated (parallel::multi_gpu_model's
  // towers, or the strategy whose scope was open when the model was made or compiled).
  const std::shared_ptr<const Replication>& replication() const;
  // Drops the engine graphs: the next step builds them through `replication`.
  void set_replication(std::shared_ptr<const Replication> replication);

  // Moves the weights of `layer` (one of this model's layers, or of a model nested in it), and the
  // optimizer slots made for them, to `device`; the engine graphs are built again at the next step. Model
  // parallelism by placement after the fact (parallel::pipeline_model's stages): Model::call then runs
  // the layer there. Another model made of the same layers must be compiled again before it trains.
  void move_weights(const Layer& layer, const std::string& device);

  // The model this one runs on several devices (parallel::multi_gpu_model's template), or null.
  // Saving and loading weights or the whole model go to it, so files never nest.
  std::shared_ptr<const Model> wrapped_model() const;
  void set_wrapped_model(std::shared_ptr<const Model> inner);
  // True once the model knows its inputs (a Sequential without an Input learns them from data).
  bool has_graph() const;

 protected:
  // For Sequential: a model whose graph is set later with set_graph().
  explicit Model(const std::string& name, const std::string& default_base);
  void set_graph(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs);
  void mark_sequential();
  // Sequential without an Input builds its graph from the first data it sees.
  virtual void build_from_data(const std::vector<Tensor>& x);
  // Drops compiled engine graphs (after a change of structure, trainability or compile arguments).
  void reset_functions();

 public:
  // Private to layers/engine (defined in layers/engine/model_internal.h, which is not installed).
  struct Data;
  struct Function;  // one engine graph

 private:
  struct Arrays;    // x, y and sample weights checked and converted (layers/engine/training.cpp)
  Arrays prepare_arrays(const std::vector<Tensor>& x, const std::vector<Tensor>* y, const std::optional<Tensor>& sample_weight,
                        std::int64_t batch_size, const char* where);
  // The engine graph of `mode`, built (or rebuilt when the labels' layout or the sample weights' rank
  // changes) from the model: y null for predict (layers/engine/model_functions.cpp).
  Function& function(Mode mode, const std::vector<Tensor>* y, int sample_weight_rank = 1);
  void build_function(Function& f, const std::vector<Tensor>* y, bool training, int sample_weight_rank);
  void check_inputs(const std::vector<Tensor>& x, const char* where) const;
  // options with validation_data_by_name turned into validation_data (layers/engine/named_data.cpp).
  FitOptions with_positional_validation(const FitOptions& options) const;
  // The loops, written once over DataAdapter (arrays and datasets). dataset: check each batch's inputs
  // and apply class_weight per batch (arrays are checked and weighted once before).
  // y_layout: labels whose layout builds the graph before the first batch (arrays).
  History run_fit(DataAdapter& train, DataAdapter* validation, const FitOptions& options, bool dataset,
                  const std::vector<Tensor>* y_layout);
  Logs run_test(DataAdapter& data, int verbose, const std::vector<CallbackPtr>& callbacks, bool for_fit, bool dataset,
                const std::vector<Tensor>* y_layout);
  std::vector<Tensor> run_predict(DataAdapter& data, const PredictOptions& options, bool dataset);

  std::shared_ptr<Data> data_;
};

}  // namespace tower
