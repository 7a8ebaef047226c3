// The Plan's compilation in phases (placement and copies: plan_placement.cpp; buffers by liveness
// through the memory plan: memory_plan.h; lanes: plan_lanes.cpp), running its steps, and the
// Executor, which caches one Plan per (fetches, targets, feed shapes).
#include "tower/core/executor.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "tower/core/memory_plan.h"
#include "tower/core/plan_internal.h"

namespace tower {

namespace detail {

[[noreturn]] void rethrow_with_node(const Error& e, const Node& node) {
  std::string msg = fmt::format("{}: {}", node.describe(), e.what());
  if (dynamic_cast<const OutOfMemoryError*>(&e)) throw OutOfMemoryError(msg);
  if (dynamic_cast<const DeviceError*>(&e)) throw DeviceError(msg);
  if (dynamic_cast<const DTypeError*>(&e)) throw DTypeError(msg);
  if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(msg);
  if (dynamic_cast<const ValueError*>(&e)) throw ValueError(msg);
  if (dynamic_cast<const NotFoundError*>(&e)) throw NotFoundError(msg);
  throw Error(msg);
}

}  // namespace detail

using detail::rethrow_with_node;

Plan::Plan(const std::vector<SymbolicTensor>& fetches, const std::vector<Node*>& targets, const FeedMap& feeds,
           Device& default_device, PlanOptions options)
    : options_(options) {
  place(fetches, targets, feeds, default_device);  // 1. steps, devices, copies
  group_steps();
  assign_buffers();                                // 2. liveness and the memory plan
  for (const Step& step : steps_) {                // the devices whose throttle a run looks at
    if (std::find(devices_.begin(), devices_.end(), step.device) == devices_.end()) devices_.push_back(step.device);
  }
  if (options.concurrent_devices) plan_lanes();    // 3. lanes
  check_collectives();
}

// Liveness (the step that defines each buffer and the last step that reads it, or an alias of it),
// then per device the memory plan of its arena buffers, bound as views of one arena.
void Plan::assign_buffers() {
  const int end = static_cast<int>(steps_.size());
  for (int i = 0; i < end; ++i) {
    for (Value* v : steps_[static_cast<std::size_t>(i)].outputs) v->def_step = i, v->last_use = std::max(v->last_use, i);
    for (Value* v : steps_[static_cast<std::size_t>(i)].inputs) {
      Value* root = v->alias_of ? v->alias_of : v;
      root->last_use = std::max(root->last_use, i);
    }
  }
  for (Value* v : fetch_values_) (v->alias_of ? v->alias_of : v)->last_use = end;

  std::map<Device*, std::vector<Value*>> per_device;
  for (auto& v : values_) {
    if (v->kind != Value::Kind::arena && v->kind != Value::Kind::feed) continue;
    v->bytes = align_buffer(tensor_bytes(v->spec.shape, v->spec.dtype));  // checked: a huge shape is refused
    if (v->kind == Value::Kind::feed) v->def_step = 0;
    unshared_bytes_ += v->bytes;
    per_device[v->device].push_back(v.get());
  }
  for (auto& [dev, list] : per_device) {
    std::vector<BufferLifetime> lifetimes;
    lifetimes.reserve(list.size());
    for (const Value* v : list) lifetimes.push_back({v->bytes, v->def_step, v->last_use});
    const MemoryPlan plan = plan_memory(lifetimes, options_.reuse_buffers);
    auto arena = std::make_shared<Storage>(*dev, std::max<std::size_t>(plan.total_bytes, 1));
    arenas_[dev] = arena;
    for (std::size_t k = 0; k < list.size(); ++k) {
      Value* v = list[k];
      v->offset = plan.offsets[k];
      Tensor view(v->spec.shape, v->spec.dtype, arena, v->offset);
      (v->kind == Value::Kind::feed ? v->slot : v->tensor) = view;
    }
  }
}

bool Plan::alias_step(const Step& step) { return step.alias; }

// Runs of consecutive steps without outputs, of one op with equal attrs on one device, go to the
// op's group kernel in one call when it has one (the optimizer updates of all variables).
void Plan::group_steps() {
  const auto joins = [](const Step& first, const Step& next) {
    return next.node && next.kernel && next.outputs.empty() && next.device == first.device &&
           &next.node->def() == &first.node->def() && next.node->attrs().values() == first.node->attrs().values();
  };
  for (std::size_t i = 0; i < steps_.size();) {
    Step& first = steps_[i];
    std::size_t end = i + 1;
    if (first.node && first.kernel && first.outputs.empty())
      if (GroupKernelFn fn = find_group_kernel(first.node->op(), first.device->kind())) {
        while (end < steps_.size() && joins(first, steps_[end])) ++end;
        if (end - i > 1) first.group_kernel = fn, first.group_size = static_cast<int>(end - i);
      }
    i = end;
  }
}

int Plan::num_groups() const {
  int n = 0;
  for (const Step& step : steps_) n += step.group_kernel ? 1 : 0;
  return n;
}

int Plan::num_steps() const { return static_cast<int>(steps_.size()); }

std::size_t Plan::peak_bytes() const {
  std::size_t total = 0;
  for (const auto& [dev, arena] : arenas_) total += arena->bytes();
  return total;
}

std::size_t Plan::peak_bytes(const Device& device) const {
  auto it = arenas_.find(&device);
  return it == arenas_.end() ? 0 : it->second->bytes();
}

std::size_t Plan::run_step(std::size_t i) {
  Step& step = steps_[i];
  const auto context = [](const Step& s) {
    std::vector<Tensor> inputs, outputs;
    inputs.reserve(s.inputs.size());
    for (Value* v : s.inputs) inputs.push_back(v->tensor);
    outputs.reserve(s.outputs.size());
    for (Value* v : s.outputs) outputs.push_back(v->tensor);
    return KernelContext{*s.node, *s.device, std::move(inputs), std::move(outputs)};
  };
  if (step.group_kernel) {
    std::vector<KernelContext> group;
    group.reserve(static_cast<std::size_t>(step.group_size));
    for (std::size_t k = i; k < i + static_cast<std::size_t>(step.group_size); ++k) group.push_back(context(steps_[k]));
    try {
      step.group_kernel(group);
    } catch (const Error& e) {
      rethrow_with_node(e, *step.node);
    }
    return static_cast<std::size_t>(step.group_size);
  }
  if (!step.node) {  // cross-device copy
    const Tensor& src = step.inputs[0]->tensor;
    Tensor& dst = step.outputs[0]->tensor;
    if (lanes_.empty())
      copy_between(*step.device, dst.raw_data(), src.device(), src.raw_data(), src.nbytes());
    else  // ordered after src's producer by order_after_waits
      copy_between_ready(*step.device, dst.raw_data(), src.device(), src.raw_data(), src.nbytes());
    return 1;
  }
  if (alias_step(step)) {
    const Tensor& src = step.outputs[0]->alias_of->tensor;
    const TensorSpec& spec = step.outputs[0]->spec;
    step.outputs[0]->tensor = Tensor(spec.shape, spec.dtype, src.storage(), src.offset());
    if (!step.kernel) return 1;
  }
  KernelContext ctx = context(step);
  try {
    if (step.half_adapter)
      step.half_adapter(ctx, step.kernel);
    else
      step.kernel(ctx);
  } catch (const Error& e) {
    rethrow_with_node(e, *step.node);
  }
  return 1;
}

// A throttled device (Device::set_slowdown: tests, benchmarks) computes slower: its kernel steps
// sleep (factor - 1) times what they took. A collective's time is mostly waiting: not stretched.
// Only runs on a throttled device come here, so a normal step reads no clock for it.
std::size_t Plan::run_step_throttled(std::size_t i) {
  const Step& step = steps_[i];
  const double slowdown = step.device->slowdown();
  if (slowdown <= 1.0 || !step.node || step.group_kernel || alias_step(step) || step.collective) return run_step(i);
  const auto start = std::chrono::steady_clock::now();
  const std::size_t count = run_step(i);
  std::this_thread::sleep_for((std::chrono::steady_clock::now() - start) * (slowdown - 1.0));
  return count;
}

bool Plan::throttled() const {
  return std::any_of(devices_.begin(), devices_.end(), [](const Device* d) { return d->slowdown() > 1.0; });
}

// Checks the fed shapes and binds each feed: a tensor on the value's device as it is, another copied
// into the value's arena slot.
void Plan::bind_feeds(const FeedMap& feeds) {
  for (const auto& [sym, tensor] : feeds) {
    auto it = feed_values_.find(sym.node()->id());
    if (it == feed_values_.end()) continue;  // fed but not needed
    Value* v = it->second;
    if (&tensor.device() == v->device) {
      v->tensor = tensor;
    } else {
      v->slot.copy_from(tensor);
      v->tensor = v->slot;
    }
  }
}

void Plan::run_steps() {
  if (lanes_.empty()) {
    if (throttled())  // decided once per run: the normal path pays nothing for the throttle
      for (std::size_t i = 0; i < steps_.size();) i += run_step_throttled(i);
    else
      for (std::size_t i = 0; i < steps_.size();) i += run_step(i);
  } else {
    run_lanes();
  }
}

std::vector<Tensor> Plan::run(const FeedMap& feeds) {
  for (const auto& [sym, tensor] : feeds) {
    auto it = feed_values_.find(sym.node()->id());
    if (it == feed_values_.end()) continue;  // fed but not needed
    const Value* v = it->second;
    if (tensor.shape() != v->spec.shape || tensor.dtype() != v->spec.dtype)
      raise<ShapeError>("placeholder \"{}\" was compiled for {}, fed {} {}", sym.node()->name(), v->spec.to_string(),
                        tensor.shape().to_string(), dtype_name(tensor.dtype()));
  }
  if (!run_graph_step(feeds)) {  // whole-step graphs (plan_graphs.cpp), or eagerly:
    bind_feeds(feeds);
    run_steps();
  }
  for (const auto& v : written_) v->note_written();
  std::vector<Tensor> out;
  out.reserve(fetch_values_.size());
  for (Value* v : fetch_values_) out.push_back(v->tensor.clone());
  return out;
}

std::string Plan::to_string() const {
  std::string s;
  for (const Step& step : steps_) {
    s += step.node ? fmt::format("{:<12} {}", step.device->name(), step.node->describe())
                   : fmt::format("{:<12} copy {} from {}", step.device->name(), step.inputs[0]->name,
                                 step.inputs[0]->device->name());
    s += "\n";
  }
  return s;
}

Executor::Executor(Device& default_device, PlanOptions options) : default_device_(&default_device), options_(options) {}

Plan& Executor::plan(const FeedMap& feeds, const std::vector<SymbolicTensor>& fetches, const std::vector<Node*>& targets) {
  std::string key;
  for (const auto& f : fetches) key += fmt::format("f{}:{},", f.node()->id(), f.index());
  for (Node* t : targets) key += fmt::format("t{},", t->id());
  auto sorted = feeds;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first.node()->id() < b.first.node()->id(); });
  for (const auto& [sym, t] : sorted)
    key += fmt::format("p{}{}{}@{},", sym.node()->id(), t.shape().to_string(), dtype_name(t.dtype()), t.device().name());
  auto& slot = plans_[key];
  if (!slot) {
    slot = std::make_unique<Plan>(fetches, targets, feeds, *default_device_, options_);
    ++plans_compiled_;
  }
  return *slot;
}

std::vector<Tensor> Executor::run(const FeedMap& feeds, const std::vector<SymbolicTensor>& fetches,
                                  const std::vector<Node*>& targets) {
  Plan& p = plan(feeds, fetches, targets);
  last_plan_ = &p;
  return p.run(feeds);
}

}  // namespace tower
