// The throwers behind CUDA_CHECK, CUBLAS_CHECK and CUDNN_CHECK.
#include "tower/backends/cuda/cuda_check.h"

#include <fmt/format.h>

namespace tower::cuda {

namespace {

[[noreturn]] void throw_library_error(bool out_of_memory, const char* call, const char* file, int line,
                                      const std::string& reason) {
  std::string msg = fmt::format("{} failed at {}:{}: {}", call, file, line, reason);
  if (out_of_memory) throw OutOfMemoryError(msg + kSmallerBatchAdvice);
  throw DeviceError(msg);
}

}  // namespace

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  throw_library_error(status == cudaErrorMemoryAllocation, call, file, line,
                      fmt::format("{} ({})", cudaGetErrorString(status), cudaGetErrorName(status)));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw_library_error(status == CUBLAS_STATUS_ALLOC_FAILED, call, file, line,
                      fmt::format("cuBLAS: {} ({})", cublasGetStatusString(status), cublasGetStatusName(status)));
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  const bool out_of_memory = status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
                             status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  throw_library_error(out_of_memory, call, file, line,
                      fmt::format("cuDNN: {}", cudnnGetErrorString(status)));
}

}  // namespace tower::cuda
