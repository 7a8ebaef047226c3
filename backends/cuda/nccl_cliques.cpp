// CommunicatorCliques: NCCL communicators per list of GPUs, leased per call, aborted and evicted
// when a replica fails.
#include "tower/backends/cuda/nccl_cliques.h"

#include <utility>

#include "tower/core/error.h"

namespace tower::cuda {

struct CommunicatorCliques::Lease::Clique {
  std::vector<Comm> comms;  // one per rank
  int in_flight = 0;        // leases not yet ended
  bool aborted = false;
};

CommunicatorCliques::Lease::Lease(CommunicatorCliques* owner, std::shared_ptr<Clique> clique, Comm comm)
    : owner_(owner), clique_(std::move(clique)), comm_(comm) {}

CommunicatorCliques::Lease::Lease(Lease&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), clique_(std::move(other.clique_)), comm_(other.comm_) {}

CommunicatorCliques::Lease::~Lease() {
  if (owner_ && clique_) owner_->release(*clique_);
}

void CommunicatorCliques::release(Clique& clique) {
  {
    std::lock_guard lock(mutex_);
    --clique.in_flight;
  }
  released_.notify_all();
}

CommunicatorCliques::Lease CommunicatorCliques::acquire(const std::string& group, const std::vector<int>& ordinals,
                                                        int rank) {
  std::lock_guard lock(mutex_);
  if (aborted_.count(group))
    raise<Error>("all_reduce \"{}\" on GPUs: another replica failed, so its NCCL communicators were aborted; the "
                 "next run makes new ones",
                 group);
  auto& clique = cliques_[ordinals];
  if (!clique) {
    auto made = std::make_shared<Clique>();
    made->comms = ops_.init(ordinals);  // throws without keeping anything
    clique = std::move(made);
  }
  if (rank < 0 || static_cast<std::size_t>(rank) >= clique->comms.size())
    raise<ValueError>("all_reduce \"{}\" on GPUs: rank {} of {} GPUs", group, rank, clique->comms.size());
  clique_of_group_[group] = clique;
  ++clique->in_flight;
  return Lease(this, clique, clique->comms[static_cast<std::size_t>(rank)]);
}

void CommunicatorCliques::abort(const std::string& group) {
  std::shared_ptr<Clique> clique;
  {
    std::unique_lock lock(mutex_);
    aborted_.insert(group);
    auto it = clique_of_group_.find(group);
    if (it == clique_of_group_.end()) return;
    clique = std::move(it->second);
    clique_of_group_.erase(it);
    if (clique->aborted) return;  // another group of the same clique did it
    clique->aborted = true;
    for (auto c = cliques_.begin(); c != cliques_.end(); ++c)
      if (c->second == clique) {
        cliques_.erase(c);  // evicted: the next collective on these GPUs makes new communicators
        break;
      }
    // A rank inside its enqueue call returns at once (the collective runs on its stream); wait for that
    // rather than abort a communicator under it, but not forever.
    released_.wait_for(lock, in_flight_wait_, [&] { return clique->in_flight == 0; });
  }
  for (Comm comm : clique->comms) ops_.abort(comm);
}

void CommunicatorCliques::reset(const std::string& group) {
  std::lock_guard lock(mutex_);
  aborted_.erase(group);
}

std::size_t CommunicatorCliques::size() const {
  std::lock_guard lock(mutex_);
  return cliques_.size();
}

}  // namespace tower::cuda
