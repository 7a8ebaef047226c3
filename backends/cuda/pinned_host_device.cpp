// PinnedHostDevice: cudaHostAlloc'ed memory behind a caching allocator.
#include "tower/backends/cuda/pinned_host_device.h"

#include <cstring>

#include <cuda_runtime.h>

#include "tower/backends/cuda/cuda_check.h"

namespace tower::cuda {

namespace {

CachingAllocator::System pinned_system() {
  return {.allocate =
              [](std::size_t bytes) -> void* {
                void* p = nullptr;
                const cudaError_t status = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
                if (status == cudaErrorMemoryAllocation) {
                  (void)cudaGetLastError();
                  return nullptr;
                }
                CUDA_CHECK(status);
                return p;
              },
          .free = [](void* p) { cudaFreeHost(p); },  // never throws: called from destructors
          .describe = [] { return std::string("page-locked host memory"); }};
}

// Whether a copy's event has completed; an error (a failed copy) counts as done: nothing will read
// the block any more.
bool event_done(const std::shared_ptr<void>& event) {
  return cudaEventQuery(static_cast<cudaEvent_t>(event.get())) != cudaErrorNotReady;
}

}  // namespace

PinnedHostDevice::PinnedHostDevice()
    : Device(DeviceKind::cpu, -1, "pinned host memory"), allocator_(name(), pinned_system(), 0), blocks_(event_done) {}

void PinnedHostDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void PinnedHostDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void PinnedHostDevice::copy_within(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

void PinnedHostDevice::release_ready() {
  for (void* block : blocks_.ready()) allocator_.deallocate(block);
}

void* PinnedHostDevice::do_allocate(std::size_t bytes) {
  release_ready();
  void* p = allocator_.allocate(bytes);
  blocks_.allocated(p, bytes);
  return p;
}

void PinnedHostDevice::do_deallocate(void* ptr, std::size_t) {
  if (blocks_.release(ptr)) allocator_.deallocate(ptr);
  release_ready();
}

void PinnedHostDevice::empty_cache() {
  release_ready();
  allocator_.empty_cache();
}

bool PinnedHostDevice::hold_until(const void* src, std::size_t bytes, std::shared_ptr<void> copy_done) {
  return blocks_.tag(src, bytes, std::move(copy_done));
}

Device& pinned_host() {
  static auto* device = new PinnedHostDevice();  // never destroyed: see the header
  return *device;
}

}  // namespace tower::cuda
