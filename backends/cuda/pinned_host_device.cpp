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

}  // namespace

PinnedHostDevice::PinnedHostDevice()
    : Device(DeviceKind::cpu, -1, "pinned host memory"), allocator_(name(), pinned_system(), 0) {}

void PinnedHostDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void PinnedHostDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void PinnedHostDevice::copy_within(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

Device& pinned_host() {
  static PinnedHostDevice device;
  return device;
}

}  // namespace tower::cuda
