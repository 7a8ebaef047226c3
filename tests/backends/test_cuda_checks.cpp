// CUDA_CHECK, CUBLAS_CHECK and CUDNN_CHECK on failed statuses (label unit: no GPU needed, the error
// strings come from the libraries on the host): the exception type, the call, file:line and the
// library's message. Also cuBLASLt's alignment-aware plan keys.
#include <doctest/doctest.h>

#include <cstdint>

#include "tower/backends/cuda/cublaslt_plan.h"
#include "tower/backends/cuda/cuda_check.h"
#include "tests/support/errors.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

TEST_CASE("CUDA_CHECK: the call, where, and CUDA's message; out of memory as OutOfMemoryError") {
  auto msg = message_of<DeviceError>([] { CUDA_CHECK(cudaErrorInvalidValue); });
  CHECK(contains(msg, "cudaErrorInvalidValue failed at "));
  CHECK(contains(msg, "test_cuda_checks.cpp:"));
  CHECK(contains(msg, "invalid argument (cudaErrorInvalidValue)"));
  msg = message_of<OutOfMemoryError>([] { CUDA_CHECK(cudaErrorMemoryAllocation); });
  CHECK(contains(msg, "out of memory"));
  CHECK(contains(msg, "smaller batch size"));
  CHECK_NOTHROW(CUDA_CHECK(cudaSuccess));
}

TEST_CASE("CUBLAS_CHECK: cuBLAS's status name and text") {
  auto msg = message_of<DeviceError>([] { CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE); });
  CHECK(contains(msg, "CUBLAS_STATUS_INVALID_VALUE failed at "));
  CHECK(contains(msg, "cuBLAS: "));
  CHECK(contains(msg, "(CUBLAS_STATUS_INVALID_VALUE)"));
  CHECK_THROWS_AS(CUBLAS_CHECK(CUBLAS_STATUS_ALLOC_FAILED), OutOfMemoryError);
  CHECK_NOTHROW(CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
}

TEST_CASE("CUDNN_CHECK: cuDNN's message") {
  auto msg = message_of<DeviceError>([] { CUDNN_CHECK(CUDNN_STATUS_BAD_PARAM); });
  CHECK(contains(msg, "CUDNN_STATUS_BAD_PARAM failed at "));
  CHECK(contains(msg, "cuDNN: CUDNN_STATUS_BAD_PARAM"));
  CHECK_THROWS_AS(CUDNN_CHECK(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED), OutOfMemoryError);
  CHECK_NOTHROW(CUDNN_CHECK(CUDNN_STATUS_SUCCESS));
}

TEST_CASE("cuBLASLt alignment: the lowest set bit of the address, at most 256; part of the plan key") {
  using tower::cuda::lt_dense_key;
  using tower::cuda::pointer_alignment;
  CHECK(pointer_alignment(std::uintptr_t{0}) == 256);
  CHECK(pointer_alignment(std::uintptr_t{0x1000}) == 256);
  CHECK(pointer_alignment(std::uintptr_t{0x7f0000000100}) == 256);
  CHECK(pointer_alignment(std::uintptr_t{0x7f0000000040}) == 64);  // an arena buffer at a 64-byte offset
  CHECK(pointer_alignment(std::uintptr_t{0x7f00000000c0}) == 64);
  CHECK(pointer_alignment(std::uintptr_t{0x7f0000000080}) == 128);
  CHECK(pointer_alignment(std::uintptr_t{0x7f0000000010}) == 16);
  CHECK(pointer_alignment(std::uintptr_t{0x7f0000000004}) == 4);
  CHECK(pointer_alignment(std::uintptr_t{0x7f0000000003}) == 1);
  alignas(256) static float buffer[128];
  CHECK(pointer_alignment(static_cast<const void*>(buffer)) == 256);
  CHECK(pointer_alignment(static_cast<const void*>(buffer + 16)) == 64);
  CHECK(pointer_alignment(static_cast<const void*>(buffer + 1)) == 4);

  int gpu = 0;
  const auto key = lt_dense_key(&gpu, 32, 10, 784, true, buffer, buffer + 16, buffer + 32, buffer + 32);
  CHECK(key.align_a == 256);
  CHECK(key.align_b == 64);
  CHECK(key.align_c == 128);
  CHECK(key.align_d == 128);
  // Same shape, another alignment: another plan.
  CHECK(key != lt_dense_key(&gpu, 32, 10, 784, true, buffer, buffer + 32, buffer + 32, buffer + 32));
  CHECK(key == lt_dense_key(&gpu, 32, 10, 784, true, buffer, buffer + 48, buffer + 32, buffer + 32));  // 64 again
  CHECK(key != lt_dense_key(&gpu, 32, 10, 784, false, buffer, buffer + 16, buffer + 32, buffer + 32));
  CHECK(key < lt_dense_key(&gpu, 33, 10, 784, true, buffer, buffer + 16, buffer + 32, buffer + 32));
  // TF32 (config::enable_tensor_float_32_execution) is another plan: another compute type.
  CHECK_FALSE(key.tf32);
  const auto tf32 = lt_dense_key(&gpu, 32, 10, 784, true, buffer, buffer + 16, buffer + 32, buffer + 32, true);
  CHECK(tf32.tf32);
  CHECK(key != tf32);
  // Half operands (mixed precision) are other plans: other matrix layouts.
  CHECK(key.dtype == DType::float32);
  const auto f16 = lt_dense_key(&gpu, 32, 10, 784, true, buffer, buffer + 16, buffer + 32, buffer + 32, false,
                                DType::float16);
  const auto bf16 = lt_dense_key(&gpu, 32, 10, 784, true, buffer, buffer + 16, buffer + 32, buffer + 32, false,
                                 DType::bfloat16);
  CHECK(f16 != key);
  CHECK(bf16 != key);
  CHECK(f16 != bf16);
}
