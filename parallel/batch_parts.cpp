// A batch cut into parts, a call of the model per part: rows, losses over the parts, merged updates.
#include "tower/parallel/batch_parts.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "tower/core/op_names.h"
#include "tower/core/ops.h"

namespace tower::parallel {

SymbolicTensor rows_of(const SymbolicTensor& x) {
  std::int64_t per_row = 1;
  for (int d = 1; d < x.rank(); ++d) per_row *= x.shape()[d];
  const SymbolicTensor ones = ops::ones_like(is_floating(x.dtype()) ? x : ops::cast(x, DType::float32));
  return ops::scale(ops::reduce_sum(ones), 1.0 / static_cast<double>(std::max<std::int64_t>(per_row, 1)));
}

namespace {

// A variable that the calls update: their new values weighted by their rows, and the rows.
struct MovingSums {
  const Variable* variable;
  SymbolicTensor weighted, rows;
};

// Every worker's weighted values and rows summed across the workers, in one all-reduce per dtype.
void sum_across_workers(Graph& graph, std::vector<MovingSums>& sums, WorkerTransport transport) {
  std::map<DType, std::vector<MovingSums*>> by_dtype;
  for (auto& sum : sums) by_dtype[sum.weighted.dtype()].push_back(&sum);
  int index = 0;
  for (auto& [dtype, group] : by_dtype) {
    Graph::DeviceScope on(graph, group.front()->variable->device().name());
    std::vector<SymbolicTensor> parts;
    std::vector<std::int64_t> sizes;
    for (MovingSums* sum : group) {
      parts.push_back(ops::reshape(sum->weighted, {-1}));
      sizes.push_back(sum->weighted.shape().num_elements());
      parts.push_back(ops::reshape(sum->rows, {1}));
      sizes.push_back(1);
    }
    const SymbolicTensor total = worker_all_reduce(ops::concat(parts, 0), index++, transport, "moving statistics");
    const auto pieces = ops::split(total, 0, sizes);
    for (std::size_t k = 0; k < group.size(); ++k) {
      group[k]->weighted = ops::reshape(pieces[2 * k], group[k]->weighted.shape().dims());
      group[k]->rows = ops::reshape(pieces[2 * k + 1], group[k]->rows.shape().dims());
    }
  }
}

}  // namespace

void merge_updates(CallContext& ctx, const std::vector<CallUpdate>& updates,
                   const std::function<std::vector<VariablePtr>(const VariablePtr&)>& copies_of,
                   std::optional<WorkerTransport> across_workers) {
  // primary -> its calls' assigns, in the order the calls made them: the same in every process (an
  // order by address would differ between workers, whose sums must line up).
  std::vector<std::pair<const Variable*, std::vector<const CallUpdate*>>> by_variable;
  std::map<const Variable*, VariablePtr> primary_of;
  std::map<const Variable*, std::size_t> slot;  // primary -> its entry in by_variable
  for (const auto& u : updates) {
    Node* update = (*ctx.updates)[u.index];
    if (update->op() != op_names::assign) continue;
    const VariablePtr& target = update->inputs()[0].node()->variable();
    if (!target) continue;
    const VariablePtr& primary = target->primary() ? target->primary() : target;
    if (slot.emplace(primary.get(), by_variable.size()).second) {
      by_variable.emplace_back(primary.get(), std::vector<const CallUpdate*>{});
      primary_of[primary.get()] = primary;
    }
    by_variable[slot.at(primary.get())].second.push_back(&u);
  }
  std::vector<MovingSums> sums;
  std::set<std::size_t> replaced;
  for (const auto& [variable, assigns] : by_variable) {
    if (assigns.size() < 2 && copies_of(primary_of.at(variable)).size() < 2 && !across_workers) continue;
    Graph::DeviceScope on_variable(ctx.graph, variable->device().name());
    MovingSums& sum = sums.emplace_back(MovingSums{variable, {}, {}});
    for (const CallUpdate* u : assigns) {
      const Node* update = (*ctx.updates)[u->index];
      const SymbolicTensor& value = update->inputs()[1];
      const SymbolicTensor share = value.dtype() == u->rows.dtype() ? u->rows : ops::cast(u->rows, value.dtype());
      const SymbolicTensor term = ops::multiply(value, share);
      sum.weighted = sum.weighted.defined() ? ops::add(sum.weighted, term) : term;
      sum.rows = sum.rows.defined() ? ops::add(sum.rows, share) : share;
      replaced.insert(u->index);
    }
  }
  if (across_workers) sum_across_workers(ctx.graph, sums, *across_workers);
  std::vector<Node*> merged;
  for (const MovingSums& sum : sums) {
    SymbolicTensor average;
    {
      Graph::DeviceScope on_variable(ctx.graph, sum.variable->device().name());
      average = ops::divide(sum.weighted, sum.rows);
    }
    for (const auto& copy : copies_of(primary_of.at(sum.variable))) {
      Graph::DeviceScope on_copy(ctx.graph, copy->device().name());
      merged.push_back(ops::assign(ctx.graph.variable(copy), average));
    }
  }
  if (replaced.empty()) return;
  std::vector<Node*> kept;
  for (std::size_t k = 0; k < ctx.updates->size(); ++k)
    if (!replaced.count(k)) kept.push_back((*ctx.updates)[k]);
  kept.insert(kept.end(), merged.begin(), merged.end());
  *ctx.updates = std::move(kept);
}

// ---- BatchParts ------------------------------------------------------------------------------------

void BatchParts::add(const std::vector<SymbolicTensor>& outputs, const std::string& device) {
  if (outputs_.empty()) outputs_.resize(outputs.size());
  for (std::size_t k = 0; k < outputs.size(); ++k) outputs_[k].push_back(outputs[k]);
  devices_.push_back(!device.empty() || outputs.empty() ? device : outputs.front().node()->device());
}

SymbolicTensor BatchParts::concatenated(std::size_t output) const { return ops::concat(outputs_.at(output), 0); }

const std::vector<SymbolicTensor>& BatchParts::y_parts(std::size_t output, const SymbolicTensor& y) {
  auto& parts = y_parts_[output];
  if (parts.empty())
    for (std::size_t p = 0; p < size(); ++p) parts.push_back(ops::batch_share(y, ratios_, static_cast<int>(p)));
  return parts;
}

const std::vector<SymbolicTensor>& BatchParts::weight_parts(const SymbolicTensor& sample_weight) {
  if (weight_parts_.empty())
    for (std::size_t p = 0; p < size(); ++p)
      weight_parts_.push_back(ops::batch_share(sample_weight, ratios_, static_cast<int>(p)));
  return weight_parts_;
}

BatchParts::Sums BatchParts::sums(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                                  const ReplicatedCall::PerSample& per_sample) {
  const auto& ys = y_parts(output, y);
  const auto& weights = weight_parts(sample_weight);
  Sums out;
  Graph& graph = y.graph();
  for (std::size_t p = 0; p < size(); ++p) {
    SymbolicTensor part_sum, part_count;
    {
      Graph::DeviceScope on(graph, devices_[p]);
      const auto v = per_sample(ys[p], outputs_.at(output)[p], weights[p]);
      if (p == 0)
        for (int d = 1; d < v.rank(); ++d) out.per_row *= v.shape()[d];
      part_sum = ops::reduce_sum(v);
      part_count = ops::reduce_sum(ops::ones_like(v));
    }
    out.sum = out.sum.defined() ? ops::add(out.sum, part_sum) : part_sum;
    out.count = out.count.defined() ? ops::add(out.count, part_count) : part_count;
  }
  return out;
}

SymbolicTensor BatchParts::batch_sum(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                                     const ReplicatedCall::PerSample& per_batch) {
  const auto& ys = y_parts(output, y);
  const auto& weights = weight_parts(sample_weight);
  Graph& graph = y.graph();
  SymbolicTensor sum;
  for (std::size_t p = 0; p < size(); ++p) {
    SymbolicTensor part;
    {
      Graph::DeviceScope on(graph, devices_[p]);
      part = per_batch(ys[p], outputs_.at(output)[p], weights[p]);
    }
    sum = sum.defined() ? ops::add(sum, part) : part;
  }
  return sum;
}

// ---- PartsCall -------------------------------------------------------------------------------------

SymbolicTensor PartsCall::batch_mean(std::size_t output, const SymbolicTensor& y, const SymbolicTensor& sample_weight,
                                     const PerSample& per_sample) {
  const auto sums = parts_.sums(output, y, sample_weight, per_sample);
  return ops::divide(sums.sum, sums.count);
}

void PartsCall::call_parts(Model& model, CallContext& ctx, const std::vector<SymbolicTensor>& inputs,
                           const std::vector<std::string>& devices,
                           const std::function<ReplicaContext(std::size_t)>& replica,
                           const std::function<std::vector<VariablePtr>(const VariablePtr&)>& copies_of) {
  const auto& ratios = parts_.ratios();
  std::vector<std::vector<SymbolicTensor>> shares(ratios.size());  // [part][input]
  std::vector<SymbolicTensor> first_rows(ratios.size());
  for (std::size_t p = 0; p < ratios.size(); ++p) {
    for (const auto& x : inputs) shares[p].push_back(ops::batch_share(x, ratios, static_cast<int>(p)));
    if (ctx.training && !inputs.empty()) first_rows[p] = ops::batch_share_start(inputs[0], ratios, static_cast<int>(p));
  }
  const SymbolicTensor batch_rows = inputs.empty() ? SymbolicTensor() : rows_of(inputs[0]);
  std::vector<CallUpdate> updates;
  for (std::size_t p = 0; p < ratios.size(); ++p) {
    Graph::DeviceScope on(ctx.graph, devices[p]);
    ReplicaContext context = replica(p);
    context.first_row = first_rows[p];
    context.global_rows = batch_rows;
    const ReplicaContext* outer = std::exchange(ctx.replica, &context);
    const std::size_t before = ctx.updates ? ctx.updates->size() : 0;
    const auto outs = model.call(ctx, shares[p]);
    ctx.replica = outer;
    parts_.add(outs, devices[p]);
    if (ctx.updates && !shares[p].empty())
      for (std::size_t k = before; k < ctx.updates->size(); ++k) updates.push_back({k, rows_of(shares[p][0])});
  }
  if (!updates.empty()) merge_updates(ctx, updates, copies_of, std::nullopt);
  concatenate_outputs(model.outputs().size());
}

void PartsCall::concatenate_outputs(std::size_t count) {
  for (std::size_t k = 0; k < count; ++k) outputs_.push_back(parts_.concatenated(k));
}

}  // namespace tower::parallel
