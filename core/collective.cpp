// The host rendezvous of the all_reduce op's CPU kernel.
#include "tower/core/collective.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

#include "tower/core/device.h"
#include "tower/core/error.h"

namespace tower {

namespace {

// One round of one group: the replicas that came, and how far the sum is.
struct Meeting {
  int size = 0;
  int arrived = 0;
  int summed = 0;             // replicas that added their part of the elements
  int left = 0;               // replicas that took the result of a complete round
  bool complete = false;      // every replica came; the round ends when all have left
  std::string error;          // the round's replicas disagree (set with complete)
  bool aborted = false;       // from abort_collective to reset_collective
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out;
  // Its own: a change in one group wakes that group's replicas only (one for every group woke every
  // waiting replica of every variable's all-reduce: 1,024 CPU devices never finished an epoch).
  std::condition_variable changed;
};

struct Meetings {
  std::mutex mutex;
  std::map<std::string, Meeting> groups;  // nodes never move: a Meeting's address is stable
};

Meetings& meetings() {
  static Meetings m;
  return m;
}

// Replica `rank`'s part of the sum: elements [n * rank / size, n * (rank + 1) / size) of every out,
// each the sum of the ins in rank order (so every out gets the same bits, whoever adds them).
template <typename T>
void add_part_in_rank_order(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, int rank) {
  const auto n = static_cast<std::size_t>(in.front()->num_elements());
  const std::size_t size = in.size(), r = static_cast<std::size_t>(rank);
  const std::size_t begin = n * r / size, end = n * (r + 1) / size;
  T* sum = out[r]->data<T>();
  for (std::size_t e = begin; e < end; ++e) {
    T s = in.front()->data<T>()[e];
    for (std::size_t k = 1; k < size; ++k) s += in[k]->data<T>()[e];
    sum[e] = s;
  }
  for (std::size_t k = 0; k < size; ++k)
    if (k != r) std::copy(sum + begin, sum + end, out[k]->data<T>() + begin);
}

// Empty when the replicas' tensors agree; what differs otherwise.
std::string disagreement(const Meeting& m) {
  const Tensor& first = *m.in.front();
  for (std::size_t r = 0; r < m.in.size(); ++r) {
    const Tensor& x = *m.in[r];
    if (x.shape() != first.shape() || x.dtype() != first.dtype() || m.out[r]->shape() != first.shape() ||
        m.out[r]->dtype() != first.dtype())
      return fmt::format("replica 0 gives {} {} and replica {} gives {} {} (into {} {})", first.shape().to_string(),
                         dtype_name(first.dtype()), r, x.shape().to_string(), dtype_name(x.dtype()),
                         m.out[r]->shape().to_string(), dtype_name(m.out[r]->dtype()));
  }
  if (first.dtype() != DType::float32 && first.dtype() != DType::float64)
    return fmt::format("it sums float32 or float64, not {}", dtype_name(first.dtype()));
  return {};
}

}  // namespace

void host_all_reduce(const std::string& group, int rank, int size, const Tensor& in, Tensor& out) {
  if (size < 1 || rank < 0 || rank >= size)
    raise<ValueError>("all_reduce \"{}\": replica {} of {} does not exist", group, rank, size);
  Meetings& all = meetings();
  std::unique_lock lock(all.mutex);
  Meeting& m = all.groups[group];
  m.changed.wait(lock, [&] { return !m.complete; });  // the last round's replicas are still leaving
  const auto stopped = [&] {
    return Error(fmt::format("all_reduce \"{}\": replica {} of {} stopped: another replica failed and will not come",
                             group, rank, size));
  };
  if (m.aborted) throw stopped();
  if (m.arrived == 0) {
    m.size = size;
    m.in.assign(static_cast<std::size_t>(size), nullptr);
    m.out.assign(static_cast<std::size_t>(size), nullptr);
  } else if (m.size != size || m.in[static_cast<std::size_t>(rank)]) {
    raise<ValueError>("all_reduce \"{}\": replica {} of {} came to a round of {} replicas {}", group, rank, size,
                      m.size, m.size == size ? "that it had joined already" : "");
  }
  m.in[static_cast<std::size_t>(rank)] = &in;
  m.out[static_cast<std::size_t>(rank)] = &out;
  if (++m.arrived == size) {
    m.error = disagreement(m);
    m.complete = true;
    m.changed.notify_all();
  } else {
    m.changed.wait(lock, [&] { return m.complete || m.aborted; });
    if (!m.complete) throw stopped();
  }
  const std::string error = m.error;
  // Every replica adds its part of the elements at the same time, without the lock (the round's ins
  // and outs stay put until every replica has left), then waits for the others' parts: its out is
  // complete, and no in is needed any more.
  if (error.empty()) {
    lock.unlock();
    if (in.dtype() == DType::float32)
      add_part_in_rank_order<float>(m.in, m.out, rank);
    else
      add_part_in_rank_order<double>(m.in, m.out, rank);
    lock.lock();
  }
  if (++m.summed == size) m.changed.notify_all();
  m.changed.wait(lock, [&] { return m.summed == size; });
  if (++m.left == size) {  // the round is over
    m.arrived = m.summed = m.left = 0;
    m.complete = false;
    m.error.clear();
    m.changed.notify_all();
  }
  if (!error.empty()) raise<ValueError>("all_reduce \"{}\": the replicas disagree: {}", group, error);
}

void abort_collective(const std::string& group) {
  abort_backend_collectives(group);  // collectives that wait on a device (NCCL's kernels) end too
  Meetings& all = meetings();
  std::lock_guard lock(all.mutex);
  Meeting& m = all.groups[group];
  if (m.complete) return;  // everyone came: the round ends as usual
  m.aborted = true;
  m.arrived = 0;
  m.changed.notify_all();
}

void reset_collective(const std::string& group) {
  reset_backend_collectives(group);
  Meetings& all = meetings();
  std::lock_guard lock(all.mutex);
  if (auto it = all.groups.find(group); it != all.groups.end()) it->second.aborted = false;
}

}  // namespace tower
