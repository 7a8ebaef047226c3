// CudaDevice, the CUDA error helper and the CUDA backend's registration.
#include "backends/cuda/cuda_device.h"

#include <memory>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels.h"

namespace tower::cuda {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  std::string msg = fmt::format("{} failed at {}:{}: {} ({})", call, file, line, cudaGetErrorString(status),
                                cudaGetErrorName(status));
  if (status == cudaErrorMemoryAllocation) throw OutOfMemoryError(msg);
  throw DeviceError(msg);
}

int visible_gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

CudaDevice::CudaDevice(int index) : Device(DeviceKind::cuda, index), ordinal_(index) {
  CUDA_CHECK(cudaSetDevice(ordinal_));
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaDevice::~CudaDevice() {
  if (stream_) cudaStreamDestroy(stream_);
}

void* CudaDevice::do_allocate(std::size_t bytes) {
  CUDA_CHECK(cudaSetDevice(ordinal_));
  void* p = nullptr;
  cudaError_t status = cudaMalloc(&p, std::max<std::size_t>(bytes, 1));
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    std::size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    raise<OutOfMemoryError>("{}: out of memory allocating {} bytes ({} in use by tower, {} free of {}); use a smaller "
                            "batch size or give this device a smaller share (ratios)",
                            name(), bytes, memory_stats().in_use, free_bytes, total);
  }
  CUDA_CHECK(status);
  return p;
}

void CudaDevice::do_deallocate(void* ptr, std::size_t) {
  cudaSetDevice(ordinal_);
  cudaFree(ptr);  // never throws from a destructor path
}

void CudaDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaDevice::copy_within(void* dst, const void* src, std::size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaDevice::synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

}  // namespace tower::cuda

namespace tower {

void register_cuda_backend() {
  register_device_factory(DeviceKind::cuda, DeviceFactory{
                                                [] { return cuda::visible_gpu_count(); },
                                                [](int index) -> std::unique_ptr<Device> {
                                                  return std::make_unique<cuda::CudaDevice>(index);
                                                },
                                            });
  cuda::register_elementwise_kernels();
}

}  // namespace tower
