// CudaDevice and the CUDA backend's registration.
#include "tower/backends/cuda/cuda_device.h"

#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <set>

#include "tower/backends/cuda/cuda_backend.h"
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/cuda_graph.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/nccl.h"
#include "tower/backends/cuda/pinned_host_device.h"
#include "tower/core/config.h"

namespace tower::cuda {

GpuProbe gpu_probe_from(cudaError_t status, int count) {
  if (status == cudaSuccess) return {count, ""};
  if (status == cudaErrorNoDevice) return {0, ""};  // a machine without GPUs, or CUDA_VISIBLE_DEVICES=""
  return {0, fmt::format("{}: {}", cudaGetErrorName(status), cudaGetErrorString(status))};
}

namespace {
GpuProbe probe_gpus() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) (void)cudaGetLastError();  // clear the error (not a kernel's: nothing sticky)
  return gpu_probe_from(status, count);
}
}  // namespace

int visible_gpu_count() { return probe_gpus().count; }

std::string gpu_unavailable_reason() {
  const GpuProbe probe = probe_gpus();
  if (probe.count > 0) return "";
  return probe.error.empty() ? "no CUDA device (cudaErrorNoDevice)" : probe.error;
}

namespace {

// cudaMalloc/cudaFree on one GPU for its CachingAllocator: out of memory is nullptr (the allocator
// retries and then reports it); other failures throw.
CachingAllocator::System cuda_system(int ordinal) {
  return {.allocate =
              [ordinal](std::size_t bytes) -> void* {
                CUDA_CHECK(cudaSetDevice(ordinal));
                void* p = nullptr;
                const cudaError_t status = cudaMalloc(&p, bytes);
                if (status == cudaErrorMemoryAllocation) {
                  (void)cudaGetLastError();  // not sticky: clear it
                  return nullptr;
                }
                CUDA_CHECK(status);
                return p;
              },
          .free =
              [ordinal](void* p) {
                cudaSetDevice(ordinal);
                cudaFree(p);  // never throws: called from destructors
              },
          .describe =
              [ordinal] {
                std::size_t free_bytes = 0, total = 0;
                if (cudaSetDevice(ordinal) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total) != cudaSuccess)
                  return std::string("an unknown amount free");
                return format_bytes(free_bytes) + " free of " + format_bytes(total);
              }};
}

}  // namespace

CudaDevice::CudaDevice(int index, LogicalGpu where)
    : Device(DeviceKind::cuda, index),
      ordinal_(where.physical),
      allocator_(index == where.physical ? name() : fmt::format("{} (a logical GPU on GPU {})", name(), where.physical),
                 cuda_system(where.physical), where.memory_limit) {
  CUDA_CHECK(cudaSetDevice(ordinal_));
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&download_stream_, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming));
}

// Runs only when a CudaDevice is destroyed before exit (the registry never destroys its GPUs at exit,
// core/device.cpp): its GPU made current first, as the handles and streams belong to it.
CudaDevice::~CudaDevice() {
  cudaSetDevice(ordinal_);  // never throws: a destructor
  if (cublas_) cublasDestroy(cublas_);
  if (cublas_lt_) cublasLtDestroy(cublas_lt_);
  if (cudnn_) cudnnDestroy(cudnn_);
  for (cudaStream_t stream : {download_stream_, copy_stream_, stream_})
    if (stream) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
  if (copied_) cudaEventDestroy(copied_);
}

void CudaDevice::make_current() const { CUDA_CHECK(cudaSetDevice(ordinal_)); }

// cuBLAS's own workspace pool would be allocated per captured graph (PyTorch #83461: memory grows with
// every capture); a workspace of the handle's own, allocated once, is what every GEMM uses, recorded
// or not. 32 MiB: what cuBLAS asks for on Hopper.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;

cublasHandle_t CudaDevice::cublas() {
  if (!cublas_) {
    make_current();
    CUBLAS_CHECK(cublasCreate(&cublas_));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream_));  // (resets the workspace: set it after)
    cublas_workspace_ = allocate(kCublasWorkspaceBytes);
    CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_, kCublasWorkspaceBytes));
  }
  // TF32 or full FP32, as the switch says now (a host-side setting, cheap; cached).
  const int math = config::tensor_float_32_execution_enabled() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
  if (math != cublas_math_) {
    CUBLAS_CHECK(cublasSetMathMode(cublas_, static_cast<cublasMath_t>(math)));
    cublas_math_ = math;
  }
  return cublas_;
}

cublasLtHandle_t CudaDevice::cublas_lt() {
  if (!cublas_lt_) {
    make_current();
    CUBLAS_CHECK(cublasLtCreate(&cublas_lt_));
  }
  return cublas_lt_;
}

cudnnHandle_t CudaDevice::cudnn() {
  if (!cudnn_) {
    make_current();
    cudnnHandle_t handle = nullptr;
    CUDNN_CHECK(cudnnCreate(&handle));
    if (const cudnnStatus_t status = cudnnSetStream(handle, stream_); status != CUDNN_STATUS_SUCCESS) {
      cudnnDestroy(handle);
      CUDNN_CHECK(status);
    }
    cudnn_ = handle;
  }
  return cudnn_;
}

void* CudaDevice::do_allocate(std::size_t bytes) {
  CapturePool* pool = nullptr;
  {
    std::lock_guard lock(capture_mutex_);
    if (capture_pool_ && std::this_thread::get_id() == capture_thread_) pool = capture_pool_;
  }
  if (!pool) return allocator_.allocate(bytes);
  // Recording: the smallest free block of the pool that fits, else a new one from the cache. A cache
  // miss calls cudaMalloc, which a thread-local capture forbids on this thread; relaxed for that call
  // only, it is an ordinary allocation outside the graph (as PyTorch's private pools allocate).
  if (auto it = pool->free.lower_bound(bytes); it != pool->free.end()) {
    void* p = it->second;
    pool->free.erase(it);
    return p;
  }
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  void* p = nullptr;
  try {
    p = allocator_.allocate(bytes);
  } catch (...) {
    cudaThreadExchangeStreamCaptureMode(&mode);
    throw;
  }
  CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  pool->sizes[p] = bytes;
  return p;
}

void CudaDevice::do_deallocate(void* ptr, std::size_t) {
  {
    std::lock_guard lock(capture_mutex_);
    if (capture_pool_ && std::this_thread::get_id() == capture_thread_)
      if (auto it = capture_pool_->sizes.find(ptr); it != capture_pool_->sizes.end()) {
        capture_pool_->free.emplace(it->second, ptr);  // stays the graphs' scratch
        return;
      }
  }
  allocator_.deallocate(ptr);
}

void CudaDevice::set_capture_pool(CapturePool* pool) {
  std::lock_guard lock(capture_mutex_);
  capture_pool_ = pool;
  capture_thread_ = std::this_thread::get_id();
}

void CudaDevice::release_capture_pool(CapturePool& pool) {
  for (const auto& [bytes, p] : pool.free) allocator_.deallocate(p);
  pool.free.clear();
  pool.sizes.clear();
}

namespace {

// A new event of GPU `ordinal`, destroyed with its last owner.
std::shared_ptr<void> new_event(int ordinal) {
  CUDA_CHECK(cudaSetDevice(ordinal));
  cudaEvent_t event = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return std::shared_ptr<void>(event, [](void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); });
}

}  // namespace

// The host never waits here, neither for the copy nor for the kernels queued before it:
//  - The copy reads page-locked memory only. A pageable src is first copied by the host into a pinned
//    block (what the driver's staging would do). The CUDA docs do not promise that cudaMemcpyAsync
//    from pageable memory has read src when it returns: "For transfers between device memory and
//    pageable host memory, the function might be synchronous with respect to host ... If pageable
//    memory must first be staged to pinned memory, the driver may synchronize with the stream and
//    stage the copy into pinned memory" (CUDA Runtime API, "API synchronization behavior",
//    Asynchronous; CUDA 9 to 11.1 said the staging "will be handled asynchronously with a worker
//    thread"). So that call may wait for all earlier kernels, and may not leave src free to reuse.
//    Staging ourselves leaves src free on return, with no wait.
//  - The copy runs on the copy stream after an event from the compute stream (dst may be a buffer the
//    queued kernels still read) and the compute stream waits for the copy's event, on the GPU.
//  - The pinned block the copy reads (the caller's, or the staging block) is held by the pinned
//    allocator until that event completes: freed earlier, it waits before anyone may reuse it.
// Only when no page-locked memory is left does the host stage through the driver and wait.
void CudaDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  make_current();
  auto& pinned = static_cast<PinnedHostDevice&>(pinned_host());
  void* staging = nullptr;
  if (!pinned.owns(src, bytes)) {  // pageable (or another allocator's pinned) memory
    try {
      staging = pinned.allocate(bytes);
    } catch (const OutOfMemoryError&) {
      CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      return;
    }
    std::memcpy(staging, src, bytes);
  }
  // Handed back to the pinned cache when this returns (or throws): after the hold below, so it is
  // reused only once the copy is done.
  const std::unique_ptr<void, std::function<void(void*)>> staged(staging, [&](void* p) {
    if (p) pinned.deallocate(p, bytes);
  });
  const void* from = staging ? staging : src;
  std::shared_ptr<void> done = new_event(ordinal_);
  {
    std::lock_guard lock(copy_mutex_);  // copied_ is recorded and waited for at once
    CUDA_CHECK(cudaEventRecord(copied_, stream_));
    CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, copied_, 0));
    CUDA_CHECK(cudaMemcpyAsync(dst, from, bytes, cudaMemcpyHostToDevice, copy_stream_));
    CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(done.get()), copy_stream_));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(done.get()), 0));
  }
  pinned.hold_until(from, bytes, std::move(done));  // recorded first: an unrecorded event counts as done
}

void CudaDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaDevice::copy_within(void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

namespace {

// Lets GPU `to` read GPU `from`'s memory directly (NVLink or PCIe peer to peer) when the pair can, once
// per pair; without it cudaMemcpyPeerAsync stages through the host. Logical GPUs of one physical GPU
// need nothing.
void enable_peer_access(int to, int from) {
  if (to == from) return;
  static std::mutex mutex;
  static std::set<std::pair<int, int>> tried;
  std::lock_guard lock(mutex);
  if (!tried.insert({to, from}).second) return;
  int can = 0;
  CUDA_CHECK(cudaDeviceCanAccessPeer(&can, to, from));
  if (!can) return;
  CUDA_CHECK(cudaSetDevice(to));
  const cudaError_t status = cudaDeviceEnablePeerAccess(from, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled)
    (void)cudaGetLastError();  // not sticky: clear it
  else
    CUDA_CHECK(status);
}

}  // namespace

bool CudaDevice::copy_from_peer(void* dst, Device& from, const void* src, std::size_t bytes) {
  if (!dynamic_cast<CudaDevice*>(&from)) return false;
  from.synchronize();
  copy_from_peer_ready(dst, from, src, bytes);
  // Finished before returning: the caller may overwrite src as soon as this returns.
  synchronize();
  return true;
}

bool CudaDevice::copy_from_peer_ready(void* dst, Device& from, const void* src, std::size_t bytes) {
  auto* source = dynamic_cast<CudaDevice*>(&from);
  if (!source) return false;
  enable_peer_access(ordinal_, source->ordinal());
  CUDA_CHECK(cudaSetDevice(ordinal_));
  CUDA_CHECK(cudaMemcpyPeerAsync(dst, ordinal_, src, source->ordinal(), bytes, stream_));
  return true;
}

void CudaDevice::copy_to_host_ready(void* dst, const void* src, std::size_t bytes) {
  std::lock_guard lock(download_mutex_);
  make_current();
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, download_stream_));
  CUDA_CHECK(cudaStreamSynchronize(download_stream_));
}

void CudaDevice::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

namespace {

// A CUDA event of one GPU (made with that GPU current, as CUDA requires).
class CudaEvent final : public DeviceEvent {
 public:
  explicit CudaEvent(int ordinal) {
    CUDA_CHECK(cudaSetDevice(ordinal));
    CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  }
  ~CudaEvent() override { cudaEventDestroy(event_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  void synchronize() const override { CUDA_CHECK(cudaEventSynchronize(event_)); }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace

std::unique_ptr<DeviceEvent> CudaDevice::create_event() { return std::make_unique<CudaEvent>(ordinal_); }

void CudaDevice::record_event(DeviceEvent& event) {
  make_current();
  CUDA_CHECK(cudaEventRecord(static_cast<CudaEvent&>(event).get(), stream_));
}

void CudaDevice::wait_event(const DeviceEvent& event) {
  make_current();
  CUDA_CHECK(cudaStreamWaitEvent(stream_, static_cast<const CudaEvent&>(event).get(), 0));
}

}  // namespace tower::cuda

namespace tower {

void register_cuda_backend() {
  register_device_factory(DeviceKind::cuda,
                          DeviceFactory{.count = [] { return cuda::visible_gpu_count(); },
                                        .make = nullptr,
                                        .make_logical = [](int index, LogicalGpu where) -> std::unique_ptr<Device> {
                                          return std::make_unique<cuda::CudaDevice>(index, where);
                                        },
                                        .pinned_host = [] { return &cuda::pinned_host(); },
                                        .all_reduce_unsupported = cuda::nccl_all_reduce_unsupported,
                                        .unavailable = cuda::gpu_unavailable_reason,
                                        .abort_collective = cuda::nccl_abort_group,
                                        .reset_collective = cuda::nccl_reset_group});
  register_step_recorder(DeviceKind::cuda, [](Device& device) -> std::unique_ptr<StepRecorder> {
    auto* gpu = dynamic_cast<cuda::CudaDevice*>(&device);
    return gpu ? cuda::make_step_recorder(*gpu) : nullptr;
  });
  cuda::register_basic_kernels();
  cuda::register_math_kernels();
  cuda::register_activation_kernels();
  cuda::register_reduce_kernels();
  cuda::register_optimizer_kernels();
  cuda::register_dropout_kernels();
  cuda::register_array_kernels();
  cuda::register_loss_kernels();
  cuda::register_conv_kernels();
  cuda::register_pool_kernels();
  cuda::register_pool3d_kernels();
  cuda::register_image_kernels();
  cuda::register_normalization_kernels();
  cuda::register_recurrent_kernels();
  cuda::register_attention_kernels();
  cuda::register_collective_kernels();
  cuda::register_half_support();
}

}  // namespace tower
