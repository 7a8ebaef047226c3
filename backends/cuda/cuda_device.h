// CudaDevice: one visible GPU as a tower Device (memory through a caching allocator over cudaMalloc,
// a compute stream, a copy stream for host-to-GPU copies, copies between GPUs).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "tower/backends/cuda/cudnn_conv_plan.h"
#include "tower/core/caching_allocator.h"
#include "tower/core/device.h"

namespace tower::cuda {

// Device memory of one plan's recorded steps (cuda_graph.h): what kernels allocate while a step is
// recorded. A replay writes it again, so no other allocation may get it while the graphs live; a block
// freed during a recording stays here for the plan's next recording (its graphs never run at once:
// one stream), and all of it goes back to the device's cache with the pool (release_capture_pool).
struct CapturePool {
  std::multimap<std::size_t, void*> free;  // by size: blocks no recorded kernel holds now
  std::map<void*, std::size_t> sizes;      // every block the pool took from the cache
};

class CudaDevice final : public Device {
 public:
  // cuda:<index>, a logical GPU on physical GPU where.physical holding at most where.memory_limit
  // bytes (0: all the GPU has). Without logical devices, index == where.physical.
  CudaDevice(int index, LogicalGpu where);
  ~CudaDevice() override;

  bool host_accessible() const override { return false; }
  // On the copy stream, after the compute stream's queued work (dst may be in use) and before its later
  // work (by events), from page-locked memory: pinned_host()'s block src lies in, else a pinned staging
  // block the host fills. The host waits for neither the copy nor the GPU; the pinned block is reused
  // only once the copy is done. Pageable src may be reused when this returns; pinned src may be freed
  // (its block waits for the copy) but not overwritten before synchronize(), as with any asynchronous
  // copy from pinned memory (io::pinned_memory()'s batches are new tensors, never overwritten).
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_within(void* dst, const void* src, std::size_t bytes) override;
  // From another CudaDevice: cudaMemcpyPeerAsync, direct where the two GPUs can reach each other (peer
  // access is enabled on first use), else staged by the driver; after the source's stream has
  // finished what it queued, and finished itself when it returns.
  bool copy_from_peer(void* dst, Device& from, const void* src, std::size_t bytes) override;
  void synchronize() override;
  // Events on the compute stream; a wait is cudaStreamWaitEvent, also for another GPU's event.
  std::unique_ptr<DeviceEvent> create_event() override;
  void record_event(DeviceEvent& event) override;
  void wait_event(const DeviceEvent& event) override;
  // On a download stream of its own, so the copy does not wait for the kernels queued after src's
  // producer (the caller has waited for that one).
  void copy_to_host_ready(void* dst, const void* src, std::size_t bytes) override;
  // cudaMemcpyPeerAsync on this device's compute stream, ordered by the caller's wait_event; the
  // host does not wait.
  bool copy_from_peer_ready(void* dst, Device& from, const void* src, std::size_t bytes) override;
  void empty_cache() override { allocator_.empty_cache(); }
  CachingAllocatorStats allocator_stats() const { return allocator_.stats(); }

  int ordinal() const { return ordinal_; }  // the CUDA device number of the physical GPU
  cudaStream_t stream() const { return stream_; }
  cudaStream_t copy_stream() const { return copy_stream_; }
  // Makes this device's GPU the calling thread's current one (cudaSetDevice): kernels launch there.
  void make_current() const;
  // This device's cuBLAS handle, bound to its stream and to a workspace of its own (created on first
  // use). FP32 GEMMs run in full FP32, matching the CPU within 1e-5, unless
  // config::enable_tensor_float_32_execution(true): each call sets the handle's math mode to the switch.
  cublasHandle_t cublas();
  // This device's cuBLASLt handle (created on first use; the stream is given per call).
  cublasLtHandle_t cublas_lt();
  // This device's cuDNN handle, bound to its stream (created on first use).
  cudnnHandle_t cudnn();
  // The convolution algorithms chosen on this device, per geometry and pass.
  ConvAlgorithmCache& conv_algorithms() { return conv_algorithms_; }
  // The most bytes this device may hold (a logical GPU's share); 0: all the GPU has.
  std::size_t memory_limit() const { return allocator_.budget(); }
  // While a step is recorded on this thread: what this thread allocates on the device comes from and
  // returns to `pool` (null: the shared cache again). Other threads keep the shared cache.
  void set_capture_pool(CapturePool* pool);
  // Gives the pool's free blocks back to the cache (after the graphs using them are destroyed).
  void release_capture_pool(CapturePool& pool);

 protected:
  void* do_allocate(std::size_t bytes) override;
  // Blocks go back to the cache at once: work queued on the compute stream that still reads a freed
  // block runs before any later work that reuses it, as both are on that one stream.
  void do_deallocate(void* ptr, std::size_t bytes) override;
  std::optional<std::size_t> reserved_bytes() const override { return allocator_.stats().reserved; }

 private:
  int ordinal_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t copy_stream_ = nullptr;
  cudaEvent_t copied_ = nullptr;  // recorded on stream_ before a copy; copy_stream_ waits for it
  std::mutex copy_mutex_;         // one copy_from_host at a time records and waits for copied_
  cudaStream_t download_stream_ = nullptr;  // copy_to_host_ready's, one caller at a time
  std::mutex download_mutex_;
  cublasHandle_t cublas_ = nullptr;
  cublasLtHandle_t cublas_lt_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  ConvAlgorithmCache conv_algorithms_;
  CachingAllocator allocator_;
  void* cublas_workspace_ = nullptr;  // cublasSetWorkspace's: fixed, so recorded GEMMs find it again
  int cublas_math_ = -1;              // the cublasMath_t set on cublas_ (TF32 or not)
  std::mutex capture_mutex_;
  CapturePool* capture_pool_ = nullptr;
  std::thread::id capture_thread_;
};

// What cudaGetDeviceCount said: the count, and when it failed with anything but cudaErrorNoDevice (an
// insufficient driver, a missing or mismatched library), the reason as CUDA names it ("" otherwise).
struct GpuProbe {
  int count = 0;
  std::string error;  // "cudaErrorInsufficientDriver: CUDA driver version is insufficient for ..."
  bool operator==(const GpuProbe&) const = default;
};
// The probe of one cudaGetDeviceCount result (pure; unit-tested with CUDA's statuses).
GpuProbe gpu_probe_from(cudaError_t status, int count);

// Visible GPUs; 0 when there is no device, and also (never throws) when CUDA cannot tell: then
// gpu_unavailable_reason() says why.
int visible_gpu_count();
// Why visible_gpu_count() is 0: CUDA's error name and text, "no CUDA device (cudaErrorNoDevice)", or ""
// when GPUs are visible.
std::string gpu_unavailable_reason();

}  // namespace tower::cuda
