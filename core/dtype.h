// DType: the element types a Tensor can hold, with their sizes and names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tower/core/half.h"

namespace tower {

enum class DType : std::uint8_t {
  float32,
  float64,  // gradient checks and references
  int32,
  int64,
  uint8,
  float16,   // IEEE half (core/half.h): mixed precision's compute dtype; variables stay float32
  bfloat16,  // bfloat16 (core/half.h): the same, with float32's range
};

std::size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
bool is_floating(DType dtype);
bool is_integer(DType dtype);

// The DType of a C++ element type: dtype_of<float>() == DType::float32.
template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::float32; }
template <> constexpr DType dtype_of<double>() { return DType::float64; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::int32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::int64; }
template <> constexpr DType dtype_of<std::uint8_t>() { return DType::uint8; }
template <> constexpr DType dtype_of<float16_t>() { return DType::float16; }
template <> constexpr DType dtype_of<bfloat16_t>() { return DType::bfloat16; }

// float16 or bfloat16: the storage-only dtypes that kernels compute in float32 (is_floating too).
inline bool is_half(DType dtype) { return dtype == DType::float16 || dtype == DType::bfloat16; }

}  // namespace tower
