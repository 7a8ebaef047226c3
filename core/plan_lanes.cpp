// Plan phase 3, the lanes: with steps on several devices, each device's steps run on a thread of its
// own, ordered by their cross-device dependencies; the all_reduce replicas meet across lanes.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "tower/core/collective.h"
#include "tower/core/plan_internal.h"

namespace tower {

// The replicas of one all_reduce wait for each other (on the host on CPU devices, in NCCL's kernels
// on GPUs), so a plan runs them only where every lane can reach its replica: all of the group's
// replicas, each on a device of its own, as consecutive steps. Then no lane waits, before its
// replica, for a step that another lane issues after its own (which would wait forever).
void Plan::check_collectives() {
  std::map<std::string, std::vector<std::size_t>> steps_of;  // group -> its steps, in schedule order
  for (std::size_t i = 0; i < steps_.size(); ++i)
    if (steps_[i].node && steps_[i].node->def().collective) {
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
  // Per device, its arena and feed buffers that steps of other devices read (copies), by offset: a
  // step that writes over one of them waits for those reads. Looking only there (and only at buffers
  // near the written range) keeps this linear in the steps; every buffer against every step was
  // quadratic in the device count (8 s for 256 devices).
  struct ReadElsewhere {
    const Value* root;
    const std::vector<std::size_t>* steps;  // all of the root's readers, in schedule order
  };
  struct DeviceBuffers {
    std::vector<ReadElsewhere> by_offset;
    std::size_t max_bytes = 0;
  };
  std::map<const Device*, DeviceBuffers> read_elsewhere;
  for (const auto& [root, steps] : readers) {
    if (root->kind != Value::Kind::arena && root->kind != Value::Kind::feed) continue;
    const Device* home = root->device;  // (clang 14 cannot capture a structured binding)
    if (std::none_of(steps.begin(), steps.end(), [&](std::size_t r) { return steps_[r].device != home; }))
      continue;
    auto& buffers = read_elsewhere[root->device];
    buffers.by_offset.push_back({root, &steps});
    buffers.max_bytes = std::max(buffers.max_bytes, root->bytes);
  }
  for (auto& [dev, buffers] : read_elsewhere)
    std::sort(buffers.by_offset.begin(), buffers.by_offset.end(),
              [](const ReadElsewhere& a, const ReadElsewhere& b) { return a.root->offset < b.root->offset; });
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
      auto there = read_elsewhere.find(out->device);
      if (there == read_elsewhere.end()) continue;
      // Buffers that overlap [offset, offset + bytes) start after offset - max_bytes.
      const auto& list = there->second.by_offset;
      const std::size_t from = out->offset > there->second.max_bytes ? out->offset - there->second.max_bytes : 0;
      auto it = std::lower_bound(list.begin(), list.end(), from,
                                 [](const ReadElsewhere& b, std::size_t offset) { return b.root->offset < offset; });
      for (; it != list.end() && it->root->offset < out->offset + out->bytes; ++it)
        if (it->root != out && overlap(it->root, out))
          for (std::size_t r : *it->steps) {
            if (r >= i) break;
            after_others(r);
          }
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
  // Who to wake when a step is done.
  std::vector<std::size_t> lane_of_step(steps_.size());
  for (std::size_t l = 0; l < lanes_.size(); ++l)
    for (std::size_t i : lanes_[l]) lane_of_step[i] = l;
  for (std::size_t i = 0; i < steps_.size(); ++i)
    for (std::size_t w : steps_[i].waits) {
      auto& waiters = steps_[w].waiters;
      if (std::find(waiters.begin(), waiters.end(), lane_of_step[i]) == waiters.end())
        waiters.push_back(lane_of_step[i]);
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

Plan::~Plan() {
  if (!lane_threads_) return;
  {
    std::lock_guard lock(lane_threads_->mutex);
    lane_threads_->stop = true;
  }
  for (auto& wake : lane_threads_->wake) wake.notify_all();
  for (auto& thread : lane_threads_->threads) thread.join();
}

// Lane l's steps in order; a step starts once the steps it waits for on other lanes are done. The
// first error stops every lane.
void Plan::run_lane(std::size_t l) {
  LaneThreads& t = *lane_threads_;
  const std::vector<std::size_t>& mine = lanes_[l];
  const bool throttled = steps_[mine.front()].device->slowdown() > 1.0;  // a lane is one device's steps
  try {
    for (std::size_t k = 0; k < mine.size();) {
      const std::size_t i = mine[k];
      {
        std::unique_lock lock(t.mutex);
        const auto& waits = steps_[i].waits;
        t.wake[l].wait(lock, [&] {
          return t.error || std::all_of(waits.begin(), waits.end(), [&](std::size_t w) { return t.done[w]; });
        });
        if (t.error) return;
      }
      const auto start = std::chrono::steady_clock::now();
      order_after_waits(i);
      const std::size_t count = throttled ? run_step_throttled(i) : run_step(i);
      for (std::size_t j = i; j < i + count; ++j)
        if (steps_[j].mark) steps_[j].device->record_event(*steps_[j].mark);
      if (!steps_[i].collective)  // busy means computing, not waiting for the other replicas
        lane_busy_[l] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      {
        std::lock_guard lock(t.mutex);
        for (std::size_t j = i; j < i + count; ++j) t.done[j] = 1;
      }
      for (std::size_t j = i; j < i + count; ++j)
        for (std::size_t waiter : steps_[j].waiters) t.wake[waiter].notify_one();
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
    for (auto& wake : t.wake) wake.notify_one();
    abort_collectives();  // the other replicas of a collective this lane will not join stop waiting
  }
}

void Plan::run_lanes() {
  if (!lane_threads_) {
    lane_threads_ = std::make_unique<LaneThreads>(lanes_.size());
    for (std::size_t l = 1; l < lanes_.size(); ++l)
      lane_threads_->threads.emplace_back([this, l] {
        LaneThreads& t = *lane_threads_;
        std::uint64_t seen = 0;
        for (;;) {
          {
            std::unique_lock lock(t.mutex);
            t.wake[l].wait(lock, [&] { return t.stop || t.generation != seen; });
            if (t.stop) return;
            seen = t.generation;
          }
          run_lane(l);
          {
            std::lock_guard lock(t.mutex);
            ++t.finished;
          }
          t.wake[0].notify_one();
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
  for (std::size_t l = 1; l < lanes_.size(); ++l) t.wake[l].notify_one();
  run_lane(0);
  std::unique_lock lock(t.mutex);
  t.wake[0].wait(lock, [&] { return t.finished == lanes_.size() - 1; });
  if (t.error) std::rethrow_exception(t.error);
}

}  // namespace tower
