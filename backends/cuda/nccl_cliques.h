// The NCCL communicators of each list of GPUs ("cliques", one communicator per rank) and what a failed
// lane does to them. No NCCL types: a communicator is opaque here, made and aborted through the
// functions given, so the bookkeeping is unit-tested without NCCL or a GPU.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace tower::cuda {

class CommunicatorCliques {
 public:
  using Comm = void*;
  struct Ops {
    // One communicator per GPU of `ordinals` (ncclCommInitAll).
    std::function<std::vector<Comm>(const std::vector<int>& ordinals)> init;
    // Ends a communicator and whatever it has queued or is running (ncclCommAbort), from any thread.
    std::function<void(Comm)> abort;
  };

  // How long abort() waits for enqueue calls in flight to return before aborting anyway (NCCL's
  // abort is meant to end a blocked call too).
  explicit CommunicatorCliques(Ops ops, std::chrono::milliseconds in_flight_wait = std::chrono::seconds(5))
      : ops_(std::move(ops)), in_flight_wait_(in_flight_wait) {}

  // Rank `rank`'s communicator, held while the caller enqueues its collective: an abort of the clique
  // waits (a bounded time) until the lease ends, so a communicator is not aborted under a call.
  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    Comm comm() const { return comm_; }

   private:
    friend class CommunicatorCliques;
    struct Clique;
    Lease(CommunicatorCliques* owner, std::shared_ptr<Clique> clique, Comm comm);
    CommunicatorCliques* owner_;
    std::shared_ptr<Clique> clique_;
    Comm comm_;
  };

  // The communicator of `rank` among `ordinals` for collective `group` (the all_reduce's group), made on
  // first use for every rank at once. Throws Error when `group` has been aborted and not reset: a
  // replica failed, and a collective now would wait forever for it.
  Lease acquire(const std::string& group, const std::vector<int>& ordinals, int rank);
  // A replica of `group` failed: the clique the group's collectives use is evicted (the next use makes
  // new communicators) and aborted, so the kernels other ranks queued end instead of spinning forever;
  // the group refuses collectives until reset.
  void abort(const std::string& group);
  // A new run: `group` may meet again.
  void reset(const std::string& group);
  // Cliques kept (made and not evicted).
  std::size_t size() const;

 private:
  using Clique = Lease::Clique;
  void release(Clique& clique);

  Ops ops_;
  std::chrono::milliseconds in_flight_wait_;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  std::map<std::vector<int>, std::shared_ptr<Clique>> cliques_;
  std::map<std::string, std::shared_ptr<Clique>> clique_of_group_;  // the clique a group last used
  std::set<std::string> aborted_;
};

}  // namespace tower::cuda
