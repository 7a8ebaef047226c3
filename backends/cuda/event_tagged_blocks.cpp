// EventTaggedBlocks: live host blocks, the copies reading them, and frees deferred until those end.
#include "tower/backends/cuda/event_tagged_blocks.h"

#include <algorithm>

namespace tower::cuda {

void EventTaggedBlocks::allocated(void* block, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  blocks_[reinterpret_cast<std::uintptr_t>(block)] = Block{.bytes = bytes};
}

void EventTaggedBlocks::forget_done(Block& block) {
  std::erase_if(block.events, [&](const Event& e) { return done_(e); });
}

std::map<std::uintptr_t, EventTaggedBlocks::Block>::iterator EventTaggedBlocks::find_live(const void* p,
                                                                                          std::size_t bytes) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto it = blocks_.upper_bound(address);  // the first block starting after p
  if (it == blocks_.begin()) return blocks_.end();
  --it;
  if (it->second.released || address + bytes > it->first + it->second.bytes) return blocks_.end();
  return it;
}

bool EventTaggedBlocks::owns(const void* p, std::size_t bytes) const {
  std::lock_guard lock(mutex_);
  return const_cast<EventTaggedBlocks*>(this)->find_live(p, bytes) != blocks_.end();
}

bool EventTaggedBlocks::tag(const void* p, std::size_t bytes, Event event) {
  std::lock_guard lock(mutex_);
  auto it = find_live(p, bytes);
  if (it == blocks_.end()) return false;
  forget_done(it->second);  // a block copied every step keeps only the copies still running
  it->second.events.push_back(std::move(event));
  return true;
}

bool EventTaggedBlocks::release(void* block) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(block));
  if (it == blocks_.end()) return true;  // never tracked: nothing reads it
  forget_done(it->second);
  if (it->second.events.empty()) {
    blocks_.erase(it);
    return true;
  }
  it->second.released = true;
  return false;
}

std::vector<void*> EventTaggedBlocks::ready() {
  std::vector<void*> out;
  std::lock_guard lock(mutex_);
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    if (it->second.released) {
      forget_done(it->second);
      if (it->second.events.empty()) {
        out.push_back(reinterpret_cast<void*>(it->first));
        it = blocks_.erase(it);
        continue;
      }
    }
    ++it;
  }
  return out;
}

std::size_t EventTaggedBlocks::waiting() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(
      std::count_if(blocks_.begin(), blocks_.end(), [](const auto& entry) { return entry.second.released; }));
}

}  // namespace tower::cuda
