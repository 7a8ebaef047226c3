// Plan compilation (needed nodes, concrete shapes, placement, copies, liveness-based buffers) and
// execution; Executor caches one Plan per (fetches, targets, feed shapes).
#include "tower/core/executor.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "tower/core/collective.h"

namespace tower {

struct Plan::Value {
  enum class Kind { arena, persistent, feed, alias };
  TensorSpec spec;
  Device* device = nullptr;
  Kind kind = Kind::arena;
  Tensor tensor;              // bound buffer: arena view, variable/constant, fed tensor or alias view
  Tensor slot;                // feeds: arena buffer used when the fed tensor lives on another device
  Value* alias_of = nullptr;  // alias: the value whose storage this one views
  int def_step = 0, last_use = -1;
  std::size_t bytes = 0, offset = 0;
  std::string name;
};

struct Plan::Step {
  const Node* node = nullptr;  // null for a cross-device copy
  KernelFn kernel = nullptr;   // null for copies and aliases
  // The first step of a run that one group kernel call does (group_size steps, this one first).
  GroupKernelFn group_kernel = nullptr;
  int group_size = 1;
  // Steps on other devices that must have finished first (their outputs are read here, or this step
  // overwrites memory they read); plan_lanes fills it for concurrent runs.
  std::vector<std::size_t> waits;
  // Recorded on this step's device after it runs when a step of another lane waits for it there
  // (plan_lanes; null where the device needs none: a CPU step is done when it returns).
  std::unique_ptr<DeviceEvent> mark;
  bool collective = false;  // an all_reduce: on a CPU device its time is mostly waiting for the others
  Device* device = nullptr;
  std::vector<Value*> inputs, outputs;
  bool mutates = false;
};

// The lanes' threads (lane 0 runs on the caller's) and what they share during a run. The threads are
// started with the first concurrent run and kept for the plan's life, so a step starts no thread.
struct Plan::LaneThreads {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<char> done;         // per step, in this run
  std::exception_ptr error;       // the first one of this run
  std::uint64_t generation = 0;   // runs started
  std::size_t finished = 0;       // lanes other than 0 done with this run
  bool stop = false;
  std::vector<std::thread> threads;
};

namespace {

constexpr std::size_t kAlignment = 64;

std::size_t align_up(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

Device& resolve_device(const std::string& name, Device& fallback) { return name.empty() ? fallback : device(name); }

// Rethrows a kernel's or shape function's error with the node that raised it, keeping its type.
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

}  // namespace

Plan::Plan(const std::vector<SymbolicTensor>& fetches, const std::vector<Node*>& targets, const FeedMap& feeds,
           Device& default_device, PlanOptions options)
    : options_(options) {
  if (fetches.empty() && targets.empty()) raise<ValueError>("a plan needs at least one fetch or target");
  Graph& graph = fetches.empty() ? targets[0]->graph() : fetches[0].graph();

  // 1. The nodes the fetches and targets need, in id (= topological) order.
  std::vector<char> needed(static_cast<std::size_t>(graph.num_nodes()), 0);
  std::vector<int> stack;
  for (const auto& f : fetches) stack.push_back(f.node()->id());
  for (Node* t : targets) stack.push_back(t->id());
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (needed[static_cast<std::size_t>(id)]) continue;
    needed[static_cast<std::size_t>(id)] = 1;
    for (const auto& in : graph.node(id).inputs()) stack.push_back(in.node()->id());
  }
  std::map<int, const Tensor*> fed;
  for (const auto& [sym, tensor] : feeds) {
    if (sym.node()->op() != "placeholder")
      raise<ValueError>("only placeholders can be fed; {} is a {} node", sym.name(), sym.node()->op());
    fed[sym.node()->id()] = &tensor;
  }

  // 2. Values and steps, node by node, with copies where a consumer sits on another device.
  std::map<std::pair<int, int>, Value*> value_of;  // (node id, output) -> value
  std::map<std::pair<Value*, Device*>, Value*> copies;
  auto new_value = [&](TensorSpec spec, Device* dev, Value::Kind kind, std::string name) {
    auto v = std::make_unique<Value>();
    v->spec = std::move(spec);
    v->device = dev;
    v->kind = kind;
    v->name = std::move(name);
    values_.push_back(std::move(v));
    return values_.back().get();
  };
  std::vector<Step> mutating;  // variable updates run after every other step (they read old values)
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (!needed[static_cast<std::size_t>(id)]) continue;
    const Node& node = graph.node(id);
    const std::string& op = node.op();
    Device* dev = &resolve_device(node.device(), default_device);
    if (op == "placeholder") {
      auto it = fed.find(id);
      if (it == fed.end())
        raise<ValueError>("placeholder \"{}\" {} must be fed: pass it in the feeds", node.name(),
                          node.outputs()[0].to_string());
      const Tensor& t = *it->second;
      if (t.dtype() != node.outputs()[0].dtype || !t.shape().compatible_with(node.outputs()[0].shape))
        raise<ShapeError>("placeholder \"{}\" expects {}, was fed {} {}", node.name(), node.outputs()[0].to_string(),
                          t.shape().to_string(), dtype_name(t.dtype()));
      Value* v = new_value({t.shape(), t.dtype()}, dev, Value::Kind::feed, node.name());
      value_of[{id, 0}] = v;
      feed_values_[id] = v;
      continue;
    }
    if (op == "constant" || op == "variable") {
      const Tensor& t = op == "constant" ? node.constant_value() : node.variable()->value();
      Value* v = new_value({t.shape(), t.dtype()}, &t.device(), Value::Kind::persistent, node.name());
      v->tensor = t;
      value_of[{id, 0}] = v;
      continue;
    }
    Step step;
    step.node = &node;
    step.device = dev;
    std::vector<TensorSpec> specs;
    for (std::size_t i = 0; i < node.inputs().size(); ++i) {
      const auto& in = node.inputs()[i];
      Value* v = value_of.at({in.node()->id(), in.index()});
      if (v->device != dev) {
        auto key = std::make_pair(v, dev);
        if (!copies.count(key)) {
          Value* c = new_value(v->spec, dev, Value::Kind::arena, v->name + "/copy_to_" + dev->name());
          Step copy;
          copy.device = dev;
          copy.inputs = {v};
          copy.outputs = {c};
          steps_.push_back(std::move(copy));
          copies[key] = c;
          ++num_copies_;
        }
        v = copies[key];
      }
      step.inputs.push_back(v);
      specs.push_back(v->spec);
    }
    std::vector<TensorSpec> out_specs;
    try {
      out_specs = node.def().shape(specs, node.attrs());
    } catch (const Error& e) {
      rethrow_with_node(e, node);
    }
    for (int m : node.def().mutated_inputs) {
      if (m >= static_cast<int>(step.inputs.size())) continue;
      if (step.inputs[static_cast<std::size_t>(m)]->kind != Value::Kind::persistent)
        raise<ValueError>("{}: input {} is written in place but is not a variable on {}", node.describe(), m,
                          dev->name());
      step.mutates = true;
      if (const auto& written = node.inputs()[static_cast<std::size_t>(m)].node()->variable()) written_.push_back(written);
    }
    for (std::size_t k = 0; k < out_specs.size(); ++k) {
      bool alias = k == 0 && node.def().alias_input >= 0;
      Value* v = new_value(out_specs[k], dev, alias ? Value::Kind::alias : Value::Kind::arena,
                           fmt::format("{}:{}", node.name(), k));
      if (alias) {
        Value* src = step.inputs.at(static_cast<std::size_t>(node.def().alias_input));
        v->alias_of = src->alias_of ? src->alias_of : src;
      }
      step.outputs.push_back(v);
      value_of[{id, static_cast<int>(k)}] = v;
    }
    if (!alias_step(step)) step.kernel = find_kernel(op, dev->kind());
    (step.mutates ? mutating : steps_).push_back(std::move(step));
  }
  for (auto& s : mutating) steps_.push_back(std::move(s));
  group_steps();
  for (const auto& f : fetches) fetch_values_.push_back(value_of.at({f.node()->id(), f.index()}));

  // 3. Liveness: the step that defines each buffer and the last step that reads it (or an alias of it).
  const int end = static_cast<int>(steps_.size());
  for (int i = 0; i < end; ++i) {
    for (Value* v : steps_[static_cast<std::size_t>(i)].outputs) v->def_step = i, v->last_use = std::max(v->last_use, i);
    for (Value* v : steps_[static_cast<std::size_t>(i)].inputs) {
      Value* root = v->alias_of ? v->alias_of : v;
      root->last_use = std::max(root->last_use, i);
    }
  }
  for (Value* v : fetch_values_) (v->alias_of ? v->alias_of : v)->last_use = end;

  // 4. Buffers: per device, greedy by size, at the lowest offset that no buffer alive at the same
  //    time occupies (without reuse: one after another).
  std::map<Device*, std::vector<Value*>> per_device;
  for (auto& v : values_) {
    if (v->kind != Value::Kind::arena && v->kind != Value::Kind::feed) continue;
    v->bytes = align_up(static_cast<std::size_t>(v->spec.shape.num_elements()) * dtype_size(v->spec.dtype));
    if (v->kind == Value::Kind::feed) v->def_step = 0;
    unshared_bytes_ += v->bytes;
    per_device[v->device].push_back(v.get());
  }
  for (auto& [dev, list] : per_device) {
    std::size_t total = 0;
    if (options.reuse_buffers) {
      std::stable_sort(list.begin(), list.end(), [](Value* a, Value* b) { return a->bytes > b->bytes; });
      std::vector<Value*> placed;
      for (Value* v : list) {
        std::vector<std::pair<std::size_t, std::size_t>> busy;  // [begin, end) of overlapping-in-time buffers
        for (Value* p : placed)
          if (p->def_step <= v->last_use && v->def_step <= p->last_use) busy.emplace_back(p->offset, p->offset + p->bytes);
        std::sort(busy.begin(), busy.end());
        std::size_t offset = 0;
        for (auto [b, e] : busy) {
          if (offset + v->bytes <= b) break;
          offset = std::max(offset, e);
        }
        v->offset = offset;
        total = std::max(total, offset + v->bytes);
        placed.push_back(v);
      }
    } else {
      for (Value* v : list) v->offset = total, total += v->bytes;
    }
    auto arena = std::make_shared<Storage>(*dev, std::max<std::size_t>(total, 1));
    arenas_[dev] = arena;
    for (Value* v : list) {
      Tensor view(v->spec.shape, v->spec.dtype, arena, v->offset);
      (v->kind == Value::Kind::feed ? v->slot : v->tensor) = view;
    }
  }
  if (options.concurrent_devices) plan_lanes();
  check_collectives();
}

// The replicas of one all_reduce wait for each other (on the host on CPU devices, in NCCL's kernels
// on GPUs), so a plan runs them only where every lane can reach its replica: all of the group's
// replicas, each on a device of its own, as consecutive steps. Then no lane waits, before its
// replica, for a step that another lane issues after its own (which would wait forever).
void Plan::check_collectives() {
  std::map<std::string, std::vector<std::size_t>> steps_of;  // group -> its steps, in schedule order
  for (std::size_t i = 0; i < steps_.size(); ++i)
    if (steps_[i].node && steps_[i].node->op() == "all_reduce") {
      steps_[i].collective = true;
      steps_of[steps_[i].node->attrs().get_string("group")].push_back(i);
    }
  for (const auto& [group, steps] : steps_of) {
    collective_groups_.push_back(group);
    const Node& first = *steps_[steps.front()].node;
    const auto size = static_cast<std::size_t>(first.attrs().get_int("size"));
    if (steps.size() != size)
      raise<ValueError>("all_reduce \"{}\" has {} replicas but the plan runs {} of them, which would wait forever for "
                        "the others: fetch (or target) what every replica computes",
                        group, size, steps.size());
    std::set<const Device*> on;
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const Step& step = steps_[steps[k]];
      if (!on.insert(step.device).second)
        raise<ValueError>("all_reduce \"{}\": two of its replicas are on {}, whose lane can reach only one of them at "
                          "a time; put each replica on a device of its own",
                          group, step.device->name());
      if (const Step& there = steps_[steps.front() + k]; steps[k] != steps.front() + k)
        raise<ValueError>("all_reduce \"{}\": the plan runs {} between its replicas; make the replicas' nodes one "
                          "after another (their inputs first), so that no lane needs another lane's work after the "
                          "collective to reach its own replica",
                          group, there.node ? there.node->describe() : "a copy");
    }
    if (size > 1 && lanes_.empty())
      raise<ValueError>("the plan has all_reduce steps (\"{}\") but runs every device on one thread "
                        "(PlanOptions::concurrent_devices is off), so its replicas would wait for each other forever; "
                        "turn concurrent_devices on",
                        group);
  }
}

void Plan::abort_collectives() {
  for (const auto& group : collective_groups_) abort_collective(group);
}

bool Plan::alias_step(const Step& step) { return step.node && step.node->def().alias_input >= 0; }

// Runs of consecutive steps without outputs, of one op with equal attrs on one device, go to the
// op's group kernel in one call when it has one (the optimizer updates of all variables).
void Plan::group_steps() {
  const auto joins = [](const Step& first, const Step& next) {
    return next.node && next.kernel && next.outputs.empty() && next.device == first.device &&
           next.node->op() == first.node->op() && next.node->attrs().values() == first.node->attrs().values();
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

// Lanes for a concurrent run: each device's steps in schedule order, and for every step the steps on
// other devices it must wait for. Within a lane the schedule order holds, so only cross-device
// hazards are listed: a value read here that another device produced, and memory written here that
// another device read before (an arena buffer reused for a new value, or a variable updated in place).
void Plan::plan_lanes() {
  std::map<Device*, std::size_t> lane_of;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    auto [it, added] = lane_of.try_emplace(steps_[i].device, lanes_.size());
    if (added) lanes_.emplace_back();
    lanes_[it->second].push_back(i);
  }
  if (lanes_.size() < 2) {
    lanes_.clear();
    return;
  }
  std::map<const Value*, std::size_t> producer;                // value -> the step that writes it
  std::map<const Value*, std::vector<std::size_t>> readers;    // storage root -> steps reading it
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    for (Value* v : steps_[i].outputs) producer[v] = i;
    for (Value* v : steps_[i].inputs) readers[v->alias_of ? v->alias_of : v].push_back(i);
  }
  const auto overlap = [](const Value* a, const Value* b) {
    return a->device == b->device && a->offset < b->offset + b->bytes && b->offset < a->offset + a->bytes;
  };
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    Step& step = steps_[i];
    std::set<std::size_t> waits;
    const auto after_others = [&](std::size_t r) {
      if (r < i && steps_[r].device != step.device) waits.insert(r);
    };
    for (Value* v : step.inputs)
      if (auto p = producer.find(v); p != producer.end()) after_others(p->second);
    for (Value* out : step.outputs) {
      if (out->kind != Value::Kind::arena) continue;
      for (const auto& [root, steps] : readers)
        if (root != out && (root->kind == Value::Kind::arena || root->kind == Value::Kind::feed) && overlap(root, out))
          for (std::size_t r : steps) after_others(r);
    }
    if (step.mutates)
      for (Value* v : step.inputs)
        if (v->kind == Value::Kind::persistent)
          for (std::size_t r : readers[v]) after_others(r);
    step.waits.assign(waits.begin(), waits.end());
  }
  // A group runs as one: its first step waits for what any of its steps waits for.
  for (std::size_t i = 0; i < steps_.size(); ++i)
    for (int k = 1; k < steps_[i].group_size; ++k) {
      const auto& more = steps_[i + static_cast<std::size_t>(k)].waits;
      steps_[i].waits.insert(steps_[i].waits.end(), more.begin(), more.end());
    }
  // A step waited for marks its place in its device's queue, so that the waiting lane orders its own
  // work after that step only (not after what the other lane queued since, which may be a collective
  // that waits for this lane in turn).
  for (const Step& step : steps_)
    for (std::size_t w : step.waits)
      if (!steps_[w].mark) steps_[w].mark = steps_[w].device->create_event();
}

// Orders step i after the steps of other lanes it waits for, which have been issued: a GPU step waits
// on its stream (the host goes on), a step on a host device (CPU) waits on the host.
void Plan::order_after_waits(std::size_t i) {
  Step& step = steps_[i];
  for (std::size_t w : step.waits) {
    const DeviceEvent* mark = steps_[w].mark.get();
    if (!mark) continue;  // done when its lane marked it done
    if (step.device->host_accessible())
      mark->synchronize();
    else
      step.device->wait_event(*mark);
  }
}

double Plan::busy_seconds(const Device& device) const {
  for (std::size_t l = 0; l < lanes_.size() && l < lane_busy_.size(); ++l)
    if (steps_[lanes_[l].front()].device == &device) return lane_busy_[l];
  return 0.0;
}

int Plan::num_groups() const {
  int n = 0;
  for (const Step& step : steps_) n += step.group_kernel ? 1 : 0;
  return n;
}

Plan::~Plan() {
  if (!lane_threads_) return;
  {
    std::lock_guard lock(lane_threads_->mutex);
    lane_threads_->stop = true;
  }
  lane_threads_->changed.notify_all();
  for (auto& thread : lane_threads_->threads) thread.join();
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
    return 1;
  }
  KernelContext ctx = context(step);
  const auto start = std::chrono::steady_clock::now();
  try {
    step.kernel(ctx);
  } catch (const Error& e) {
    rethrow_with_node(e, *step.node);
  }
  // A throttled device (tests, benchmarks) computes slower; a collective's time is mostly waiting.
  if (const double slowdown = step.device->slowdown(); slowdown > 1.0 && !step.collective)
    std::this_thread::sleep_for((std::chrono::steady_clock::now() - start) * (slowdown - 1.0));
  return 1;
}

// Lane l's steps in order; a step starts once the steps it waits for on other lanes are done. The
// first error stops every lane.
void Plan::run_lane(std::size_t l) {
  LaneThreads& t = *lane_threads_;
  const std::vector<std::size_t>& mine = lanes_[l];
  try {
    for (std::size_t k = 0; k < mine.size();) {
      const std::size_t i = mine[k];
      {
        std::unique_lock lock(t.mutex);
        const auto& waits = steps_[i].waits;
        t.changed.wait(lock, [&] {
          return t.error || std::all_of(waits.begin(), waits.end(), [&](std::size_t w) { return t.done[w]; });
        });
        if (t.error) return;
      }
      const auto start = std::chrono::steady_clock::now();
      order_after_waits(i);
      const std::size_t count = run_step(i);
      for (std::size_t j = i; j < i + count; ++j)
        if (steps_[j].mark) steps_[j].device->record_event(*steps_[j].mark);
      if (!steps_[i].collective)  // busy means computing, not waiting for the other replicas
        lane_busy_[l] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      {
        std::lock_guard lock(t.mutex);
        for (std::size_t j = i; j < i + count; ++j) t.done[j] = 1;
      }
      t.changed.notify_all();
      k += count;
    }
    // The run ends when the work is done, not only issued: the next run may overwrite what this
    // lane's queued copies still read on other devices, and the caller reads the results.
    steps_[mine.front()].device->synchronize();
  } catch (...) {
    {
      std::lock_guard lock(t.mutex);
      if (!t.error) t.error = std::current_exception();
    }
    t.changed.notify_all();
    abort_collectives();  // the other replicas of a collective this lane will not join stop waiting
  }
}

void Plan::run_lanes() {
  if (!lane_threads_) {
    lane_threads_ = std::make_unique<LaneThreads>();
    for (std::size_t l = 1; l < lanes_.size(); ++l)
      lane_threads_->threads.emplace_back([this, l] {
        LaneThreads& t = *lane_threads_;
        std::uint64_t seen = 0;
        for (;;) {
          {
            std::unique_lock lock(t.mutex);
            t.changed.wait(lock, [&] { return t.stop || t.generation != seen; });
            if (t.stop) return;
            seen = t.generation;
          }
          run_lane(l);
          {
            std::lock_guard lock(t.mutex);
            ++t.finished;
          }
          t.changed.notify_all();
        }
      });
  }
  LaneThreads& t = *lane_threads_;
  for (const auto& group : collective_groups_) reset_collective(group);  // after a failed run
  {
    std::lock_guard lock(t.mutex);
    t.done.assign(steps_.size(), 0);
    t.error = nullptr;
    t.finished = 0;
    lane_busy_.assign(lanes_.size(), 0.0);
    ++t.generation;
  }
  t.changed.notify_all();
  run_lane(0);
  std::unique_lock lock(t.mutex);
  t.changed.wait(lock, [&] { return t.finished == lanes_.size() - 1; });
  if (t.error) std::rethrow_exception(t.error);
}

std::vector<Tensor> Plan::run(const FeedMap& feeds) {
  for (const auto& [sym, tensor] : feeds) {
    auto it = feed_values_.find(sym.node()->id());
    if (it == feed_values_.end()) continue;  // fed but not needed
    Value* v = it->second;
    if (tensor.shape() != v->spec.shape || tensor.dtype() != v->spec.dtype)
      raise<ShapeError>("placeholder \"{}\" was compiled for {}, fed {} {}", sym.node()->name(), v->spec.to_string(),
                        tensor.shape().to_string(), dtype_name(tensor.dtype()));
    if (&tensor.device() == v->device) {
      v->tensor = tensor;
    } else {
      v->slot.copy_from(tensor);
      v->tensor = v->slot;
    }
  }
  if (lanes_.empty()) {
    for (std::size_t i = 0; i < steps_.size();) i += run_step(i);
  } else {
    run_lanes();
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
