// The CUDA backend's host-side logic (label unit: no GPU needed): the GPU probe's reason, the pinned
// allocator's event-tagged frees, and NCCL's communicator cliques with their abort on a failed lane.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "tower/backends/cuda/cuda_device.h"
#include "tower/backends/cuda/event_tagged_blocks.h"
#include "tower/backends/cuda/nccl_cliques.h"
#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tests/support/errors.h"

using namespace tower;
using namespace tower::cuda;
using tower::testing::contains;
using tower::testing::message_of;

TEST_CASE("gpu_probe_from: no device is 0 without an error; any other failure keeps CUDA's reason") {
  CHECK(gpu_probe_from(cudaSuccess, 2) == GpuProbe{2, ""});
  CHECK(gpu_probe_from(cudaErrorNoDevice, 0) == GpuProbe{0, ""});
  const GpuProbe old_driver = gpu_probe_from(cudaErrorInsufficientDriver, 0);
  CHECK(old_driver.count == 0);
  CHECK(contains(old_driver.error, "cudaErrorInsufficientDriver: "));
  CHECK(contains(old_driver.error, "driver"));
  CHECK(contains(gpu_probe_from(cudaErrorSharedObjectInitFailed, 0).error, "cudaErrorSharedObjectInitFailed"));
  // Here (a machine with or without a GPU): the count and the reason agree.
  if (visible_gpu_count() == 0) {
    CHECK_FALSE(gpu_unavailable_reason().empty());
    CHECK(devices_unavailable_reason(DeviceKind::cuda) == gpu_unavailable_reason());
    const std::string msg = message_of<NotFoundError>([] { device("cuda:0"); });
    CHECK(contains(msg, gpu_unavailable_reason()));
    MESSAGE("no GPU here: " << gpu_unavailable_reason());
  } else {
    CHECK(gpu_unavailable_reason().empty());
  }
  CHECK(devices_unavailable_reason(DeviceKind::cpu).empty());
}

namespace {

// A fake event: done once its flag is set.
std::shared_ptr<void> fake_event(std::shared_ptr<bool> done) { return std::static_pointer_cast<void>(done); }
bool fake_done(const std::shared_ptr<void>& event) { return *std::static_pointer_cast<bool>(event); }

}  // namespace

TEST_CASE("EventTaggedBlocks: a freed block waits for the copies reading it, then comes back") {
  EventTaggedBlocks blocks(fake_done);
  alignas(64) static unsigned char memory[4096];
  void* a = memory;
  void* b = memory + 1024;
  blocks.allocated(a, 1024);
  blocks.allocated(b, 512);
  CHECK(blocks.owns(memory + 100, 900));
  CHECK_FALSE(blocks.owns(memory + 100, 1000));  // runs past a's end
  CHECK_FALSE(blocks.owns(memory + 2048, 8));    // in no block
  CHECK_FALSE(blocks.tag(memory + 2048, 8, fake_event(std::make_shared<bool>(false))));

  // A block nothing reads goes back at once.
  CHECK(blocks.release(b));
  CHECK_FALSE(blocks.owns(b, 1));

  // a is read by two copies (a slice of it too): freed, it waits for both.
  auto first = std::make_shared<bool>(false), second = std::make_shared<bool>(false);
  CHECK(blocks.tag(a, 1024, fake_event(first)));
  CHECK(blocks.tag(memory + 256, 128, fake_event(second)));
  CHECK_FALSE(blocks.release(a));
  CHECK(blocks.waiting() == 1);
  CHECK_FALSE(blocks.owns(a, 1));  // released: no new copy may tag it
  CHECK(blocks.ready().empty());
  *first = true;
  CHECK(blocks.ready().empty());  // the second copy still reads it
  *second = true;
  CHECK(blocks.ready() == std::vector<void*>{a});
  CHECK(blocks.waiting() == 0);
  CHECK(blocks.ready().empty());

  // A block copied every step keeps only the copies still running; freed after they end, it comes back now.
  blocks.allocated(a, 1024);
  for (int step = 0; step < 100; ++step) {
    auto done = std::make_shared<bool>(false);
    CHECK(blocks.tag(a, 64, fake_event(done)));
    *done = true;
  }
  CHECK(blocks.release(a));
  // Untracked memory is released at once.
  CHECK(blocks.release(memory + 3000));
}

namespace {

// NCCL stand-ins: communicators are numbers; init and abort are counted.
struct FakeNccl {
  std::atomic<int> inits{0};
  std::vector<CommunicatorCliques::Comm> aborted;
  std::mutex mutex;
  std::uintptr_t next = 1;
  CommunicatorCliques::Ops ops() {
    return {.init =
                [this](const std::vector<int>& ordinals) {
                  ++inits;
                  std::vector<CommunicatorCliques::Comm> comms;
                  std::lock_guard lock(mutex);
                  for (std::size_t i = 0; i < ordinals.size(); ++i)
                    comms.push_back(reinterpret_cast<CommunicatorCliques::Comm>(next++));
                  return comms;
                },
            .abort =
                [this](CommunicatorCliques::Comm comm) {
                  std::lock_guard lock(mutex);
                  aborted.push_back(comm);
                }};
  }
};

}  // namespace

TEST_CASE("CommunicatorCliques: made once per list of GPUs; a failed lane aborts and evicts its group's clique") {
  FakeNccl nccl;
  CommunicatorCliques cliques(nccl.ops());
  CommunicatorCliques::Comm rank0, rank1;
  {
    auto lease = cliques.acquire("grads", {0, 1}, 0);
    rank0 = lease.comm();
  }
  rank1 = cliques.acquire("grads", {0, 1}, 1).comm();
  CHECK(nccl.inits == 1);
  CHECK(rank0 != rank1);
  CHECK(cliques.acquire("other", {0, 1}, 0).comm() == rank0);  // another group on the same GPUs shares it
  CHECK(nccl.inits == 1);
  CHECK(cliques.size() == 1);
  CHECK_THROWS_AS(cliques.acquire("grads", {0, 1}, 2), ValueError);

  // Lane 1 fails: the group's communicators are aborted (both ranks) and evicted.
  cliques.abort("grads");
  CHECK(nccl.aborted == std::vector<CommunicatorCliques::Comm>{rank0, rank1});
  CHECK(cliques.size() == 0);
  // The group refuses until the next run resets it: a late lane does not queue a collective nobody joins.
  CHECK(contains(message_of<Error>([&] { cliques.acquire("grads", {0, 1}, 0); }), "another replica failed"));
  // "other" used the same (aborted) clique: aborting it again aborts nothing twice.
  cliques.abort("other");
  CHECK(nccl.aborted.size() == 2);
  // A new run: new communicators.
  cliques.reset("grads");
  cliques.reset("other");
  const auto fresh = cliques.acquire("grads", {0, 1}, 0).comm();
  CHECK(nccl.inits == 2);
  CHECK(fresh != rank0);
  // Aborting a group that never ran a collective only makes it refuse until reset.
  cliques.abort("never");
  CHECK_THROWS_AS(cliques.acquire("never", {0, 1}, 0), Error);
  cliques.reset("never");
  CHECK_NOTHROW(cliques.acquire("never", {0, 1}, 0));
  CHECK(nccl.aborted.size() == 2);
}

TEST_CASE("CommunicatorCliques: abort waits for a rank's enqueue in flight, within a bound") {
  FakeNccl nccl;
  CommunicatorCliques cliques(nccl.ops(), std::chrono::milliseconds(5000));
  std::atomic<bool> leased{false}, lease_ended{false};
  std::thread lane([&] {
    auto lease = cliques.acquire("grads", {0, 1}, 1);
    leased = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    lease_ended = true;
  });
  while (!leased) std::this_thread::yield();
  cliques.abort("grads");
  CHECK(lease_ended);  // aborted only after the lease ended
  CHECK(nccl.aborted.size() == 2);
  lane.join();

  // A call that never returns does not hang the abort: it goes ahead after the bound.
  CommunicatorCliques bounded(nccl.ops(), std::chrono::milliseconds(50));
  auto stuck = bounded.acquire("g", {0, 1}, 0);
  bounded.abort("g");
  CHECK(nccl.aborted.size() == 4);
}
