// CUDA_CHECK, CUBLAS_CHECK and CUDNN_CHECK on failed statuses (label unit: no GPU needed, the error
// strings come from the libraries on the host): the exception type, the call, file:line and the
// library's message.
#include <doctest/doctest.h>

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
