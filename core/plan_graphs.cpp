// Whole-step graphs, the Plan's side (core/step_graph.h has the device-independent interface, the
// CUDA recorder is backends/cuda/cuda_graph.h): when to warm up, record and replay, the feed blocks the
// recorded steps read, the random counters they carry, and the fallback to eager steps, said once.
#include <algorithm>
#include <cstring>

#include "tower/core/config.h"
#include "tower/core/plan_internal.h"

namespace tower {

namespace {

// A feed sits in a block at the same offset modulo this as its slot in the arena (both bases are at
// least this aligned): a kernel that chooses by its operands' alignment (a cuBLASLt plan) chooses the
// same with and without graphs, so recorded and eager steps compute the same bits.
constexpr std::size_t kFeedAlignment = 256;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// Why the plan on `dev` runs its steps eagerly from now on, kept for graph_fallback_reason and said once.
void fall_back(std::string& fallback, const Device& dev, std::string why) {
  fallback = std::move(why);
  warn_step_graph_fallback(fmt::format("a plan on {}: running its steps without a CUDA graph: {}", dev.name(), fallback));
}

}  // namespace

// Decided once, at the first run: whether this plan records its steps.
// A plan whose devices record nothing (CPU) runs eagerly without a word; one that could but cannot (a
// step that cannot be recorded, steps on several devices) falls back with a warning, once per reason.
bool Plan::graphs_wanted() {
  if (!graphs_) {
    graphs_ = std::make_unique<GraphState>();
    GraphState& g = *graphs_;
    if (devices_.empty()) return false;
    if (devices_.size() > 1 || !lanes_.empty()) {
      for (Device* d : devices_)
        if (step_recorder_registered(d->kind()) && !d->host_accessible()) {
          std::string names;
          for (Device* other : devices_) names += (names.empty() ? "" : ", ") + other->name();
          fall_back(g.fallback, *d,
                    fmt::format("its steps run on several devices ({}); recording one graph per device, "
                                "ordered by cross-device event nodes, is not implemented yet",
                                names));
          break;
        }
      return false;
    }
    Device& dev = *devices_.front();
    g.recorder = make_step_recorder(dev);
    if (!g.recorder) return false;
    for (const Step& step : steps_) {
      std::string why;
      if (!step.node)
        why = fmt::format("it copies \"{}\" from {} in every step (a value on another device; put it on {})",
                          step.inputs[0]->name, step.inputs[0]->device->name(), dev.name());
      else if (step.kernel || step.group_kernel)
        if (std::string reason = not_capturable_reason(step.node->op(), dev.kind()); !reason.empty())
          why = fmt::format("{}: {}", step.node->describe(), reason);
      if (!why.empty()) {
        g.recorder.reset();
        fall_back(g.fallback, dev, std::move(why));
        return false;
      }
    }
    // The blocks: every feed (see kFeedAlignment), then one counter per step (room for every random
    // draw of a step: a node draws once per step).
    std::size_t at = 0;
    for (const auto& [id, v] : feed_values_) {
      at = round_up(at, kFeedAlignment) + v->offset % kFeedAlignment;
      g.feeds.push_back(v);
      g.offsets.push_back(at);
      at += tensor_bytes(v->spec.shape, v->spec.dtype);
    }
    at = round_up(at, kFeedAlignment);
    g.counters_offset = at;
    g.counters = steps_.size();
    g.block_bytes = std::max<std::size_t>(at + g.counters * sizeof(std::uint64_t), 1);
    Device* pinned = dev.host_accessible() ? nullptr : pinned_host_device(dev.kind());
    Device& host = pinned ? *pinned : cpu_device();
    for (int slot = 0; slot < 2; ++slot) {
      g.device_block[slot] = std::make_shared<Storage>(dev, g.block_bytes);
      g.host_block[slot] = std::make_shared<Storage>(host, g.block_bytes);
    }
    g.generation = config::generation();
  }
  GraphState& g = *graphs_;
  return g.recorder && g.fallback.empty() && config::cuda_graphs_enabled() && !throttled();
}

void Plan::rebind_aliases() {
  for (Step& step : steps_) {
    if (!step.alias) continue;
    const Tensor& src = step.outputs[0]->alias_of->tensor;
    const TensorSpec& spec = step.outputs[0]->spec;
    step.outputs[0]->tensor = Tensor(spec.shape, spec.dtype, src.storage(), src.offset());
  }
}

bool Plan::run_graph_step(const FeedMap& feeds) {
  if (!graphs_wanted()) {
    if (graphs_) graphs_->replayed = false;
    return false;
  }
  GraphState& g = *graphs_;
  Device& dev = *devices_.front();
  if (g.generation != config::generation()) {  // a switch changed what the kernels launch: start over
    dev.synchronize();
    for (int slot = 0; slot < 2; ++slot) g.graph[slot].reset(), g.random_nodes[slot].clear();
    g.runs = 0;
    g.generation = config::generation();
  }
  // Slots alternate over the plan's life (also across a restart), so that a slot's upload always
  // follows a step that read the other one.
  const int slot = static_cast<int>(g.uploads++ % 2);
  const bool warm_up = g.runs == 0;
  ++g.runs;

  // The feeds into this slot's host block (once the upload two runs ago has read it), each feed value
  // bound to its place in this slot's device block. Feeds already on an accelerator are copied there
  // after the upload.
  g.recorder->wait_host_slot(slot);
  auto* host = static_cast<unsigned char*>(g.host_block[slot]->data());
  auto* device = static_cast<unsigned char*>(g.device_block[slot]->data());
  std::vector<std::pair<Value*, const Tensor*>> on_devices;
  for (const auto& [sym, tensor] : feeds) {
    auto it = feed_values_.find(sym.node()->id());
    if (it == feed_values_.end()) continue;
    Value* v = it->second;
    const std::size_t k = static_cast<std::size_t>(std::find(g.feeds.begin(), g.feeds.end(), v) - g.feeds.begin());
    v->tensor = Tensor(v->spec.shape, v->spec.dtype, g.device_block[slot], g.offsets[k]);
    if (tensor.device().host_accessible())
      std::memcpy(host + g.offsets[k], tensor.raw_data(), tensor.nbytes());
    else
      on_devices.emplace_back(v, &tensor);
  }
  const auto upload = [&] {
    g.recorder->upload(slot, device, host, g.block_bytes);
    for (const auto& [v, tensor] : on_devices)
      copy_between(dev, v->tensor.raw_data(), tensor->device(), tensor->raw_data(), tensor->nbytes());
  };
  const auto run_eagerly = [&] {
    upload();
    run_steps();
    g.recorder->step_queued(slot);
    g.replayed = false;
    return true;
  };
  if (warm_up) return run_eagerly();  // chooses algorithms, makes plans and workspaces: nothing new when recorded

  if (!g.graph[slot]) {
    // Record: the kernels queue nothing that runs; random kernels take their counters from the block.
    detail::RandomCounterSlots counters{.host = reinterpret_cast<std::uint64_t*>(host + g.counters_offset),
                                        .device = reinterpret_cast<const std::uint64_t*>(device + g.counters_offset),
                                        .capacity = g.counters};
    detail::RandomCounterSlots* previous = detail::set_recording_random_counters(&counters);
    std::string failure;
    try {
      g.recorder->begin();
      try {
        run_steps();
      } catch (...) {
        g.recorder->abort();
        throw;
      }
      g.graph[slot] = g.recorder->end();
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      failure = "an unknown error while recording";
    }
    detail::set_recording_random_counters(previous);
    if (!failure.empty()) {
      // Nothing recorded ran: the counters go back to where they were, and the step runs eagerly (an
      // error of the step itself is thrown there, as without graphs).
      for (auto it = counters.taken.rbegin(); it != counters.taken.rend(); ++it) it->first->set_random_counter(it->second);
      fall_back(g.fallback, dev, "recording the step failed: " + failure);
      for (int s = 0; s < 2; ++s) g.graph[s].reset();
      return run_eagerly();
    }
    for (const auto& [node, counter] : counters.taken) g.random_nodes[slot].push_back(node);
    ++g.captures;
  } else {
    // A replay draws the counters an eager step would, into the block the recorded kernels read.
    auto* counters = reinterpret_cast<std::uint64_t*>(host + g.counters_offset);
    for (std::size_t k = 0; k < g.random_nodes[slot].size(); ++k) counters[k] = g.random_nodes[slot][k]->next_random_counter();
  }
  upload();
  rebind_aliases();
  g.graph[slot]->replay();
  g.recorder->step_queued(slot);
  g.replayed = true;
  return true;
}

bool Plan::replays_graph() const { return graphs_ && graphs_->replayed; }

std::string Plan::graph_fallback_reason() const { return graphs_ ? graphs_->fallback : std::string(); }

int Plan::graph_captures() const { return graphs_ ? graphs_->captures : 0; }

}  // namespace tower
