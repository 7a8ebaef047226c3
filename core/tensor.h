// Storage (bytes owned on one device) and Tensor (a typed, shaped, contiguous row-major view of it).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tower/core/device.h"
#include "tower/core/dtype.h"
#include "tower/core/error.h"
#include "tower/core/shape.h"

namespace tower {

// Bytes on one device, freed when the last Tensor using them goes.
class Storage {
 public:
  Storage(Device& device, std::size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  Device& device() const { return *device_; }
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  Device* device_;
  void* data_;
  std::size_t bytes_;
};

// The bytes of a tensor of `shape` and `dtype` (elements times the element size); ShapeError for an
// unknown dimension, ValueError when the count does not fit in 64 bits (tensors are made through it,
// so nbytes() of an existing one fits).
std::size_t tensor_bytes(const Shape& shape, DType dtype);

// A value type: copying a Tensor shares its storage (like a Python reference); clone() copies data.
class Tensor {
 public:
  Tensor() = default;
  // Allocates uninitialised storage for `shape` on `device`.
  Tensor(Shape shape, DType dtype, Device& device = cpu_device());
  // A view of `storage` starting `offset` bytes in.
  Tensor(Shape shape, DType dtype, std::shared_ptr<Storage> storage, std::size_t offset = 0);

  static Tensor zeros(Shape shape, DType dtype = DType::float32, Device& device = cpu_device());
  static Tensor full(Shape shape, double value, DType dtype = DType::float32,
                     Device& device = cpu_device());
  template <typename T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values, Device& device = cpu_device());
  static Tensor scalar(double value, DType dtype = DType::float32, Device& device = cpu_device());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Device& device() const { return storage_->device(); }
  std::int64_t num_elements() const { return shape_.num_elements(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(num_elements()) * dtype_size(dtype_); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  std::size_t offset() const { return offset_; }

  void* raw_data() const { return static_cast<char*>(storage_->data()) + offset_; }
  // Typed pointer (device memory for accelerators); throws DTypeError if T does not match dtype().
  template <typename T>
  T* data() const {
    if (dtype_of<T>() != dtype_)
      raise<DTypeError>("tensor of shape {} holds {}, not {}", shape_.to_string(), dtype_name(dtype_),
                        dtype_name(dtype_of<T>()));
    return static_cast<T*>(raw_data());
  }

  // Copies the elements to the host, converting to T.
  template <typename T>
  std::vector<T> to_vector() const;
  // The single element of a tensor with one element, as double.
  double item() const;

  // A copy on `device` (shares nothing with this tensor).
  Tensor to(Device& device) const;
  Tensor clone() const { return to(device()); }
  // Copies src's elements into this tensor (same shape and dtype, any devices).
  void copy_from(const Tensor& src);
  // The same storage seen with another shape of the same element count.
  Tensor reshaped(Shape shape) const;

  std::string to_string(int max_elements = 16) const;

 private:
  Shape shape_;
  DType dtype_ = DType::float32;
  std::shared_ptr<Storage> storage_;
  std::size_t offset_ = 0;
};

// Calls f.template operator()<T>() with T the C++ type of a floating dtype (float32, float64);
// throws DTypeError naming `op` for any other dtype.
template <typename F>
decltype(auto) dispatch_floating(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::float32: return f.template operator()<float>();
    case DType::float64: return f.template operator()<double>();
    default: raise<DTypeError>("{}: dtype {} is not supported (use float32 or float64)", op, dtype_name(dtype));
  }
}

// As dispatch_floating, for the integer dtypes used as indices and labels (int32, int64, uint8).
template <typename F>
decltype(auto) dispatch_integer(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::int32: return f.template operator()<std::int32_t>();
    case DType::int64: return f.template operator()<std::int64_t>();
    case DType::uint8: return f.template operator()<std::uint8_t>();
    default: raise<DTypeError>("{}: dtype {} is not an integer type (use int32 or int64)", op, dtype_name(dtype));
  }
}

// Any dtype with CPU kernels: float32, float64, int32, int64, uint8.
template <typename F>
decltype(auto) dispatch_any(DType dtype, const char* op, F&& f) {
  if (is_floating(dtype) && !is_half(dtype)) return dispatch_floating(dtype, op, std::forward<F>(f));
  return dispatch_integer(dtype, op, std::forward<F>(f));
}

// The floating dtypes, the half ones too: for kernels with half code of their own (the CUDA GEMMs and
// convolutions, which take half operands natively).
template <typename F>
decltype(auto) dispatch_float_or_half(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::float16: return f.template operator()<float16_t>();
    case DType::bfloat16: return f.template operator()<bfloat16_t>();
    default: return dispatch_floating(dtype, op, std::forward<F>(f));
  }
}

// Every dtype, the half ones too (float16_t, bfloat16_t: storage types that convert to and from
// float, core/half.h): for code that only moves or converts elements (casts, Tensor::full, to_vector).
template <typename F>
decltype(auto) dispatch_every(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::float16: return f.template operator()<float16_t>();
    case DType::bfloat16: return f.template operator()<bfloat16_t>();
    default: return dispatch_any(dtype, op, std::forward<F>(f));
  }
}

}  // namespace tower
