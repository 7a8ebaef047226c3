// Towers: a model called once per device in one engine graph, its batch means, its mirrored updates.
#include "tower/parallel/towers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "tower/core/checked.h"
#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tower/core/op_names.h"
#include "tower/core/ops.h"
#include "tower/layers/engine/model.h"
#include "tower/optimizers/optimizer.h"
#include "tower/parallel/process_group.h"
#include "tower/parallel/batch_parts.h"
#include "tower/parallel/tower_meter.h"

namespace tower::parallel {

namespace {

// Every worker's rows of `out` (rows, ...), in rank order, on the host.
Tensor gather_rows(ProcessGroup& group, const Tensor& out) {
  const Tensor host = out.to(cpu_device());
  const auto parts = group.all_gather(
      std::string(static_cast<const char*>(host.raw_data()), host.nbytes()), {.what = "predictions"});
  std::string joined;
  for (const auto& p : parts) joined += p;
  auto dims = host.shape().dims();
  std::size_t row_bytes = dtype_size(host.dtype());
  for (std::size_t d = 1; d < dims.size(); ++d) row_bytes *= static_cast<std::size_t>(dims[d]);
  dims[0] = row_bytes ? static_cast<std::int64_t>(joined.size() / row_bytes) : 0;
  Tensor all = Tensor::zeros(Shape(dims), host.dtype());
  std::memcpy(all.raw_data(), joined.data(), joined.size());
  return all;
}

}  // namespace

// ---- the towers of one engine graph --------------------------------------------------------------

class Towers::Call : public PartsCall {
 public:
  Call(const Towers& towers, Graph& graph) : PartsCall(towers.ratios_), towers_(towers), graph_(graph) {}

  // Adds the towers: every share and first row is made before any tower's ops, where the batch is
  // (lanes run their steps in graph order, so a tower would otherwise wait for the towers before it
  // to finish their forward pass), then each device calls the model on its share.
  void build(Model& model, CallContext& ctx, const std::vector<SymbolicTensor>& inputs) {
    const auto& devices = towers_.devices_;
    const auto& ratios = towers_.ratios_;
    const std::size_t n = devices.size();
    std::vector<SymbolicTensor> first_rows(n);
    if (towers_.worker_) {  // this worker's rows of the global batch, and how many the batch has
      worker_first_row_ = graph_.placeholder(Shape{}, DType::int64, "worker_first_row");
      global_rows_ = graph_.placeholder(Shape{}, DType::float32, "global_rows");
    }
    if (ctx.training && !inputs.empty())
      for (std::size_t t = 0; t < n; ++t) {
        first_rows[t] = ops::batch_share_start(inputs[0], ratios, static_cast<int>(t));
        if (towers_.worker_) first_rows[t] = ops::add(worker_first_row_, first_rows[t]);
      }
    // The rows activity penalties are divided by (made only if a layer reads it: unused nodes never run).
    const SymbolicTensor batch_rows = towers_.worker_  ? global_rows_
                                      : inputs.empty() ? SymbolicTensor()
                                                       : rows_of(inputs[0]);
    std::vector<std::vector<SymbolicTensor>> shares(n);  // [tower][input]
    {
      Graph::DeviceScope on_merge(graph_, towers_.options_.merge_device);  // only a share is copied over
      for (std::size_t t = 0; t < n; ++t)
        for (const auto& x : inputs) shares[t].push_back(ops::batch_share(x, ratios, static_cast<int>(t)));
    }
    local_.resize(n);
    if (towers_.mirrors_)
      for (std::size_t t = 0; t < n; ++t) local_[t] = towers_.mirrors_->on(devices[t], model.weights());
    std::vector<CallUpdate> tower_updates;
    for (std::size_t t = 0; t < n; ++t) {
      Graph::DeviceScope on(graph_, devices[t]);
      const ReplicaContext replica{.local_variables = towers_.mirrors_ ? &local_[t] : nullptr,
                                   .first_row = first_rows[t],
                                   .global_rows = batch_rows};
      const ReplicaContext* outer = std::exchange(ctx.replica, &replica);
      const std::size_t updates_before = ctx.updates ? ctx.updates->size() : 0;
      const auto outs = model.call(ctx, shares[t]);
      ctx.replica = outer;
      parts_.add(outs, devices[t]);
      if (ctx.updates && !shares[t].empty())
        for (std::size_t k = updates_before; k < ctx.updates->size(); ++k) tower_updates.push_back({k, rows_of(shares[t][0])});
    }
    if (!tower_updates.empty())
      merge_updates(
          ctx, tower_updates, [this](const VariablePtr& primary) { return copies_of(primary); },
          towers_.worker_ ? std::optional(towers_.worker_->transport) : std::nullopt);
    // The whole batch's outputs (predict only: training and evaluation gather none).
    Graph::DeviceScope on_merge(graph_, towers_.options_.merge_device);
    concatenate_outputs(model.outputs().size());
  }

  // Each tower sums its share's values and counts them on its device; only those scalars meet.
  SymbolicTensor batch_mean(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                            const PerSample& per_sample) override {
    auto [sum, count, per_row] = parts_.sums(output, y, sample_weight, per_sample);
    if (towers_.worker_) {  // this worker's part of the global mean: its sum over the global count
      const SymbolicTensor rows = sum.dtype() == DType::float32 ? global_rows_ : ops::cast(global_rows_, sum.dtype());
      count = per_row == 1 ? rows : ops::scale(rows, static_cast<double>(per_row));
    }
    return ops::divide(sum, count);
  }


  // Without mirrors the towers' gradients meet in the shared variables; with them, every copy is a
  // replica of the all-reduce, the variables' own device too when no tower runs there (its copy gets
  // the same update, so the model's weights are current whenever a callback or the user reads them).
  std::vector<Node*> apply_gradients(const SymbolicTensor& loss, const std::vector<VariablePtr>& variables,
                                     optimizers::Optimizer& optimizer, const SymbolicTensor& learning_rate,
                                     const SymbolicTensor& iteration) override {
    if (!towers_.mirrors_) return optimizer.minimize(graph_, loss, variables, learning_rate, iteration);
    std::vector<std::string> replicas = towers_.devices_;
    const std::string home = variables.front()->device().name();  // Model refuses weights on several devices
    if (std::find(replicas.begin(), replicas.end(), home) == replicas.end()) replicas.push_back(home);
    std::vector<std::vector<VariablePtr>> copies(replicas.size());
    for (std::size_t r = 0; r < replicas.size(); ++r)
      for (const auto& v : variables) {
        VariablePtr copy = v->device().name() == replicas[r] ? v : towers_.mirrors_->find(v, replicas[r]);
        if (!copy)
          raise<ValueError>("towers: variable \"{}\" has no mirror on {}; wrap the model again after adding layers",
                            v->name(), replicas[r]);
        copies[r].push_back(copy);
      }
    AcrossWorkers across;
    if (towers_.worker_)
      across = [transport = towers_.worker_->transport](const SymbolicTensor& bucket, int index) {
        return worker_all_reduce(bucket, index, transport);
      };
    return apply_mirrored_gradients(graph_, replicas, copies, loss, optimizer, learning_rate, iteration,
                                    towers_.options_.cross_device_ops, across);
  }

  // Mirrors whose primary was written outside the towers (set_weights, load_weights, optimizer
  // set_state, training the model alone) catch up before a step; after it, the step gave every copy
  // the same update.
  void before_step() override {
    if (!mirrors_listed_) {
      for (int id = 0; id < graph_.num_nodes(); ++id)
        if (const auto& v = graph_.node(id).variable(); v && v->primary()) mirrors_read_.push_back(v);
      mirrors_listed_ = true;
    }
    for (const auto& m : mirrors_read_) m->sync_from_primary();
  }
  void after_step() override {
    for (const auto& m : mirrors_read_) m->mark_in_sync();
  }

  void add_feeds(FeedMap& feeds, std::int64_t global_rows, std::int64_t first_row) override {
    if (!towers_.worker_) return;
    if (!first_row_value_.defined()) {  // made once: a step allocates nothing
      first_row_value_ = Tensor::zeros(Shape{}, DType::int64);
      global_rows_value_ = Tensor::zeros(Shape{}, DType::float32);
    }
    first_row_value_.data<std::int64_t>()[0] = first_row;
    global_rows_value_.data<float>()[0] = static_cast<float>(global_rows);
    feeds.emplace_back(worker_first_row_, first_row_value_);
    feeds.emplace_back(global_rows_, global_rows_value_);
  }

  // The workers' parts of the loss and metric means are summed (one all-reduce for all of them), and
  // their rows of the outputs gathered in rank order.
  void combine(std::vector<Tensor>& values, bool outputs) override {
    if (!towers_.worker_ || towers_.worker_->size == 1) return;
    ProcessGroup& group = ProcessGroup::world();
    if (outputs) {
      for (Tensor& out : values) out = gather_rows(group, out);
      return;
    }
    if (values.empty()) return;
    // Scalars (means) and vectors (a stateful metric's statistics, float64), flattened into one buffer.
    std::int64_t total = 0;
    for (const Tensor& v : values) total += v.num_elements();
    if (!sums_.defined() || sums_.num_elements() != total)  // made once, as the step's scalar feeds are
      sums_ = Tensor::zeros(Shape{total}, DType::float64);
    std::int64_t at = 0;
    for (const Tensor& v : values) {
      if (v.num_elements() == 1) {
        sums_.data<double>()[at++] = v.item();
        continue;
      }
      const Tensor host = v.to(cpu_device());
      for (std::int64_t i = 0; i < host.num_elements(); ++i) sums_.data<double>()[at++] = host.data<double>()[i];
    }
    group.all_reduce_sum(sums_, {.what = "loss and metrics"});
    at = 0;
    for (Tensor& v : values) {
      if (v.num_elements() == 1) {
        v = Tensor::scalar(sums_.data<double>()[at++], v.dtype());
        continue;
      }
      std::vector<double> part(sums_.data<double>() + at, sums_.data<double>() + at + v.num_elements());
      at += v.num_elements();
      v = Tensor::from_vector<double>(v.shape(), part);
    }
  }

  bool adds_weight_losses() const override { return !towers_.worker_ || towers_.worker_->rank == 0; }

 private:
  // Every copy of `primary`: itself, then its mirrors in device order.
  std::vector<VariablePtr> copies_of(const VariablePtr& primary) const;

  const Towers& towers_;
  Graph& graph_;
  std::vector<std::map<const Variable*, VariablePtr>> local_;  // [tower]: the copies it reads
  std::vector<VariablePtr> mirrors_read_;
  bool mirrors_listed_ = false;
  // A worker of a multi-worker job: its first row and the global batch's rows, fed per step.
  SymbolicTensor worker_first_row_, global_rows_;  // () int64, () float32
  Tensor first_row_value_, global_rows_value_;
  Tensor sums_;  // (fetches,) float64: the step's loss and metric parts, summed across the workers
};

std::vector<VariablePtr> Towers::Call::copies_of(const VariablePtr& primary) const {
  std::vector<VariablePtr> copies{primary};
  if (towers_.mirrors_)
    for (const auto& device : towers_.devices_)
      if (auto mirror = towers_.mirrors_->find(primary, device)) copies.push_back(mirror);
  return copies;
}

// ---- Towers --------------------------------------------------------------------------------------------

Towers::Towers(const std::vector<std::string>& devices, const MultiGpuOptions& options, const std::string& who,
               std::optional<WorkerPart> worker)
    : options_(options), worker_(worker) {
  if (devices.empty()) raise<ValueError>("{}: give at least one device, e.g. {{\"cuda:0\", \"cuda:1\"}}", who);
  for (const auto& d : devices) {
    const std::string name = device(d).name();  // unknown devices: NotFoundError listing what is visible
    if (std::find(devices_.begin(), devices_.end(), name) != devices_.end())
      raise<ValueError>("{}: device {} is listed twice; give each device once", who, name);
    devices_.push_back(name);
  }
  ratios_ = options.ratios.empty() ? std::vector<std::int64_t>(devices_.size(), 1) : options.ratios;
  if (ratios_.size() != devices_.size())
    raise<ValueError>("{}: {} ratios for {} devices; give one ratio per device", who, ratios_.size(), devices_.size());
  std::int64_t total = 0;
  for (auto r : ratios_) {
    if (r < 0) raise<ValueError>("{}: ratios must be >= 0, got {}", who, fmt::join(ratios_, ":"));
    total = checked_add(
        total, r, [&] { return fmt::format("{}: the sum of the ratios {}", who, fmt::join(ratios_, ":")); },
        "give smaller ratios: only their proportions count (3:2 is 60 % and 40 %)");
  }
  if (total == 0) raise<ValueError>("{}: at least one ratio must be above 0", who);
  options_.ratios = ratios_;
  options_.merge_device = device(options.merge_device).name();
  if (options.mirrored) mirrors_ = std::make_shared<MirrorSet>();
}

std::unique_ptr<ReplicatedCall> Towers::call(Model& model, CallContext& ctx,
                                             const std::vector<SymbolicTensor>& inputs) const {
  // A parallel wrapper's towers run the model it wraps; a strategy's run the model itself.
  Model replicated = model.wrapped_model() ? *model.wrapped_model() : model;
  check_not_placed(replicated, "towers");  // e.g. a DefaultDeviceScope inside MirroredStrategy::scope()
  auto call = std::make_unique<Call>(*this, ctx.graph);
  call->build(replicated, ctx, inputs);
  return call;
}

std::vector<CallbackPtr> Towers::fit_callbacks() const {
  if (devices_.size() < 2) return {};
  return {std::make_shared<TowerMeter>()};
}

std::shared_ptr<const Towers> Towers::with_ratios(std::vector<std::int64_t> ratios) const {
  auto copy = std::make_shared<Towers>(*this);
  copy->ratios_ = copy->options_.ratios = std::move(ratios);
  return copy;
}

void Towers::mirror(const std::vector<VariablePtr>& variables) const {
  if (mirrors_)
    for (const auto& d : devices_) mirrors_->on(d, variables);
}

std::map<std::string, std::map<const Variable*, VariablePtr>> Towers::mirrors_of(
    const std::vector<VariablePtr>& variables) const {
  std::map<std::string, std::map<const Variable*, VariablePtr>> out;
  if (!mirrors_) return out;
  for (const auto& d : devices_)
    for (const auto& v : variables)
      if (auto m = mirrors_->find(v, d)) out[d][v.get()] = m;
  return out;
}

void check_not_placed(const Model& model, const std::string& who) {
  const auto weights = model.weights();
  for (const auto& w : weights)
    if (&w->value().device() != &weights.front()->value().device())
      raise<ValueError>("{}: model \"{}\" is placed on several devices (\"{}\" on {}, \"{}\" on {}); towers run a whole "
                        "copy of the model on each device, so they take a model built on one device: build it "
                        "without the DefaultDeviceScopes to replicate it, or train it placed, without towers",
                        who, model.name(), weights.front()->name(), weights.front()->value().device().name(),
                        w->name(), w->value().device().name());
}

std::shared_ptr<const Towers> towers_of(const Model& model) {
  return std::dynamic_pointer_cast<const Towers>(model.replication());
}

std::vector<std::string> tower_devices(const Model& model) {
  const auto towers = towers_of(model);
  return towers ? towers->devices() : std::vector<std::string>{};
}

std::map<std::string, std::map<const Variable*, VariablePtr>> mirrors(const Model& model) {
  const auto towers = towers_of(model);
  return towers ? towers->mirrors_of(model.weights()) : std::map<std::string, std::map<const Variable*, VariablePtr>>{};
}

}  // namespace tower::parallel
