// CudaDevice: one visible GPU as a tower Device (memory through cudaMalloc, a compute stream,
// copies to and from the host and between GPUs).
#pragma once

#include <cuda_runtime.h>

#include "core/device.h"

namespace tower::cuda {

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int index);
  ~CudaDevice() override;

  bool host_accessible() const override { return false; }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_within(void* dst, const void* src, std::size_t bytes) override;
  void synchronize() override;

  int ordinal() const { return ordinal_; }  // the CUDA device number
  cudaStream_t stream() const { return stream_; }

 protected:
  void* do_allocate(std::size_t bytes) override;
  void do_deallocate(void* ptr, std::size_t bytes) override;

 private:
  int ordinal_;
  cudaStream_t stream_ = nullptr;
};

// Visible GPUs; 0 when there is no driver or no device (never throws).
int visible_gpu_count();

}  // namespace tower::cuda
