// pipeline_model: stages (weights moved to their devices) and micro-batches (one engine graph).
#include "tower/parallel/pipeline_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <utility>

#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/layers/core/input_layer.h"
#include "tower/optimizers/optimizer.h"
#include "tower/parallel/batch_parts.h"

namespace tower::parallel {

namespace {

// The model a pipeline runs: the one a wrapper wraps, or the model itself.
Model inner_of(const Model& model) { return model.wrapped_model() ? *model.wrapped_model() : model; }

// The layers that stages are made of, in model order: the model's layers but its InputLayers.
std::vector<LayerPtr> stage_units(const Model& model) {
  std::vector<LayerPtr> units;
  for (const auto& layer : model.layers())
    if (!dynamic_cast<const InputLayer*>(layer.get())) units.push_back(layer);
  return units;
}

// The first unit of each stage after the first, chosen so that the largest stage's parameter count is
// as small as it can be (the linear partition, by dynamic programming over the layers with weights; a
// layer without weights stays in the stage of the layer before it).
std::vector<std::size_t> balanced_cuts(const std::vector<LayerPtr>& units, std::size_t stages) {
  std::vector<std::size_t> at;         // the units with weights
  std::vector<std::int64_t> prefix{0};  // their parameters, summed
  for (std::size_t i = 0; i < units.size(); ++i)
    if (!units[i]->weights().empty()) {
      at.push_back(i);
      prefix.push_back(prefix.back() + units[i]->count_params());
    }
  const std::size_t n = at.size();
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  // best[k][j]: the smallest largest stage for the first j weighted units in k stages; from[k][j]: the
  // first unit of the k-th stage there.
  std::vector<std::vector<std::int64_t>> best(stages + 1, std::vector<std::int64_t>(n + 1, kNone));
  std::vector<std::vector<std::size_t>> from(stages + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t k = 1; k <= stages; ++k)
    for (std::size_t j = k; j <= n; ++j)
      for (std::size_t i = k - 1; i < j; ++i) {
        if (best[k - 1][i] == kNone) continue;
        const std::int64_t largest = std::max(best[k - 1][i], prefix[j] - prefix[i]);
        if (largest < best[k][j]) {
          best[k][j] = largest;
          from[k][j] = i;
        }
      }
  std::vector<std::size_t> cuts(stages - 1);
  std::size_t j = n;
  for (std::size_t k = stages; k > 1; --k) {
    j = from[k][j];
    cuts[k - 2] = at[j];
  }
  return cuts;
}

}  // namespace

std::vector<PipelineStage> pipeline_stages(const Model& model, const std::vector<std::string>& devices,
                                           const PipelineOptions& options) {
  const Model inner = inner_of(model);
  if (!inner.has_graph())
    raise<ValueError>("pipeline_model: model \"{}\" has no input shape yet; build it (an Input first) before cutting "
                      "it into stages",
                      inner.name());
  if (devices.empty()) raise<ValueError>("pipeline_model: give one device per stage, e.g. {{\"cpu:0\", \"cpu:1\"}}");
  if (options.micro_batches < 1)
    raise<ValueError>("pipeline_model: micro_batches must be at least 1, got {}", options.micro_batches);
  std::vector<std::string> names;
  for (const auto& d : devices) {
    const std::string name = device(d).name();  // unknown devices: NotFoundError listing what is visible
    if (std::find(names.begin(), names.end(), name) != names.end())
      raise<ValueError>("pipeline_model: device {} is listed twice; give each stage a device of its own", name);
    names.push_back(name);
  }
  const auto units = stage_units(inner);
  const std::size_t stages = names.size();
  std::size_t weighted = 0;
  for (const auto& unit : units) weighted += unit->weights().empty() ? 0 : 1;
  if (weighted < stages)
    raise<ValueError>("pipeline_model: model \"{}\" has {} layer(s) with weights, fewer than the {} stages; give at most "
                      "{} device(s)",
                      inner.name(), weighted, stages, std::max<std::size_t>(weighted, 1));
  std::vector<std::size_t> cuts;
  if (options.cuts.empty()) {
    cuts = balanced_cuts(units, stages);
  } else {
    if (options.cuts.size() != stages - 1)
      raise<ValueError>("pipeline_model: {} cut(s) for {} stages; give {} layer name(s), each the first layer of a "
                        "stage after the first",
                        options.cuts.size(), stages, stages - 1);
    for (const auto& cut : options.cuts) {
      const auto it = std::find_if(units.begin(), units.end(), [&](const LayerPtr& u) { return u->name() == cut; });
      if (it == units.end()) {
        std::vector<std::string> known;
        for (const auto& u : units) known.push_back(u->name());
        raise<ValueError>("pipeline_model: no layer \"{}\" to cut at in model \"{}\"; its layers are {}", cut,
                          inner.name(), fmt::join(known, ", "));
      }
      const auto at = static_cast<std::size_t>(it - units.begin());
      if (at == 0)
        raise<ValueError>("pipeline_model: cut \"{}\" is the model's first layer, which would leave the first stage "
                          "empty; name the first layer of the second stage",
                          cut);
      if (!cuts.empty() && at <= cuts.back())
        raise<ValueError>("pipeline_model: cut \"{}\" comes before (or is) cut \"{}\" in the model; give the cuts in "
                          "the model's layer order",
                          cut, units[cuts.back()]->name());
      cuts.push_back(at);
    }
  }
  std::vector<PipelineStage> out(stages);
  for (std::size_t k = 0, i = 0; k < stages; ++k) {
    out[k].device = names[k];
    const std::size_t end = k + 1 < stages ? cuts[k] : units.size();
    for (; i < end; ++i) {
      out[k].layers.push_back(units[i]->name());
      out[k].params += units[i]->count_params();
    }
    if (out[k].params == 0 && std::none_of(out[k].layers.begin(), out[k].layers.end(), [&](const std::string& n) {
          return !inner.get_layer(n)->weights().empty();
        }))
      raise<ValueError>("pipeline_model: stage {} ({}: {}) has no layer with weights, so nothing would run on {} (a "
                        "layer without weights runs where its input is); cut at layers with weights",
                        k + 1, names[k], fmt::join(out[k].layers, ", "), names[k]);
  }
  return out;
}

Model pipeline_model(const Model& model, const std::vector<std::string>& devices, const PipelineOptions& options) {
  auto stages = pipeline_stages(model, devices, options);  // checks everything before anything moves
  Model inner = inner_of(model);
  for (const auto& stage : stages)
    for (const auto& name : stage.layers) inner.move_weights(*inner.get_layer(name), stage.device);
  // The same layers as a model of their own, which the pipeline's engine graphs call per micro-batch;
  // saving it saves `inner` (files never nest).
  Model wrapper(inner.inputs(), inner.outputs());
  wrapper.set_wrapped_model(std::make_shared<const Model>(inner));
  if (inner.compiled()) {
    const auto& args = inner.compile_args();
    wrapper.compile(args.optimizer, args.losses, args.metrics_arg,
                    {.loss_weights = args.loss_weights, .weighted_metrics = args.weighted_metrics_arg});
  }
  wrapper.set_replication(std::make_shared<const Pipeline>(std::move(stages), options.micro_batches));
  return wrapper;
}

// ---- the micro-batches of one engine graph -------------------------------------------------------

class Pipeline::Call : public PartsCall {
 public:
  explicit Call(const Pipeline& pipeline)
      : PartsCall(std::vector<std::int64_t>(static_cast<std::size_t>(pipeline.micro_batches_), 1)) {}

  // The model on each micro-batch in turn, each layer where its weights are: every device's lane meets
  // micro-batch m's steps before m + 1's (GPipe's schedule).
  void build(Model& model, CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
    call_parts(
        model, ctx, inputs, std::vector<std::string>(parts_.ratios().size()), [](std::size_t) { return ReplicaContext{}; },
        [](const VariablePtr& v) { return std::vector<VariablePtr>{v}; });
  }
  // The gradients of every micro-batch's loss meet per variable on its device (autodiff sums them
  // there as they come), and each variable is updated where it lives: ReplicatedCall's default.
};

// ---- Pipeline ------------------------------------------------------------------------------------

Pipeline::Pipeline(std::vector<PipelineStage> stages, int micro_batches)
    : stages_(std::move(stages)), micro_batches_(micro_batches) {
  if (micro_batches_ < 1) raise<ValueError>("pipeline_model: micro_batches must be at least 1, got {}", micro_batches_);
}

std::unique_ptr<ReplicatedCall> Pipeline::call(Model& model, CallContext& ctx,
                                               const std::vector<SymbolicTensor>& inputs) const {
  Model inner = inner_of(model);
  auto call = std::make_unique<Call>(*this);
  call->build(inner, ctx, inputs);
  return call;
}

std::vector<CallbackPtr> Pipeline::fit_callbacks() const { return {std::make_shared<StageMeter>()}; }

// ---- StageMeter ----------------------------------------------------------------------------------

void StageMeter::on_epoch_begin(int, const Logs&) {
  pipeline_.reset();
  busy_.clear();
  wall_ = 0;
  samples_ = 0;
}

void StageMeter::on_train_batch_begin(std::int64_t, const Logs&) { step_start_ = std::chrono::steady_clock::now(); }

void StageMeter::on_train_batch_end(std::int64_t, const Logs&) {
  const double step = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start_).count();
  const Plan* plan = model().last_plan(Model::Mode::train);
  const auto pipeline = pipeline_of(model());
  if (!plan || !pipeline) return;
  if (pipeline != pipeline_) {  // the first step (or a new pipeline): counts start again
    pipeline_ = pipeline;
    devices_.clear();
    for (const auto& stage : pipeline->stages()) devices_.push_back(&device(stage.device));
    busy_.assign(pipeline->stages().size(), 0.0);
    wall_ = 0;
    samples_ = 0;
  }
  for (std::size_t k = 0; k < busy_.size(); ++k) busy_[k] += plan->busy_seconds(*devices_[k]);
  wall_ += step;
  samples_ += model().last_batch_size(Model::Mode::train);
}

std::vector<double> StageMeter::idle() const {
  std::vector<double> out;
  for (double busy : busy_) out.push_back(wall_ > 0 ? std::clamp(1.0 - busy / wall_, 0.0, 1.0) : 0.0);
  return out;
}

std::string StageMeter::line() const {
  if (!pipeline_ || busy_.size() < 2) return {};  // one stage: one lane, nothing to compare
  std::string out = "stages:";
  const auto idle_fraction = idle();
  for (std::size_t k = 0; k < busy_.size(); ++k)
    out += fmt::format(" {} idle {:.0f} % ", pipeline_->stages()[k].device, 100 * idle_fraction[k]);
  const auto stages = static_cast<double>(busy_.size());
  const double gpipe = (stages - 1) / (pipeline_->micro_batches() + stages - 1);
  return out + fmt::format(" (GPipe: {:.0f} %)  total {:.0f} sps", 100 * gpipe,
                           wall_ > 0 ? static_cast<double>(samples_) / wall_ : 0.0);
}

void StageMeter::on_epoch_end(int, Logs&) {
  if (params_.verbose > 0)
    if (const std::string text = line(); !text.empty()) std::cout << text << "\n";
}

std::shared_ptr<const Pipeline> pipeline_of(const Model& model) {
  return std::dynamic_pointer_cast<const Pipeline>(model.replication());
}

}  // namespace tower::parallel
