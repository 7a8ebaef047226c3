// Tensor construction, host transfers and printing.
#include "tower/core/tensor.h"

#include <cstring>

#include "tower/core/checked.h"

namespace tower {

Storage::Storage(Device& device, std::size_t bytes)
    : device_(&device), data_(device.allocate(bytes)), bytes_(bytes) {}

Storage::~Storage() { device_->deallocate(data_, bytes_); }

std::size_t tensor_bytes(const Shape& shape, DType dtype) {
  return checked_bytes(
      shape.num_elements(), dtype_size(dtype),
      [&] { return fmt::format("the bytes of a {} tensor of shape {}", dtype_name(dtype), shape.to_string()); },
      "no memory is that large: use smaller dimensions");
}

Tensor::Tensor(Shape shape, DType dtype, Device& device) : shape_(std::move(shape)), dtype_(dtype) {
  if (!shape_.is_fully_known())
    raise<ShapeError>("cannot allocate a tensor of shape {}: every dimension must be known",
                      shape_.to_string());
  storage_ = std::make_shared<Storage>(device, std::max<std::size_t>(tensor_bytes(shape_, dtype_), 1));
}

Tensor::Tensor(Shape shape, DType dtype, std::shared_ptr<Storage> storage, std::size_t offset)
    : shape_(std::move(shape)), dtype_(dtype), storage_(std::move(storage)), offset_(offset) {
  const std::size_t bytes = tensor_bytes(shape_, dtype_);
  if (offset_ > storage_->bytes() || bytes > storage_->bytes() - offset_)
    raise<ShapeError>("a view of shape {} at offset {} does not fit in storage of {} bytes",
                      shape_.to_string(), offset_, storage_->bytes());
}

namespace {
template <typename T>
void fill_host(void* dst, std::int64_t n, double value) {
  T* p = static_cast<T*>(dst);
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(value);
}
}  // namespace

Tensor Tensor::full(Shape shape, double value, DType dtype, Device& device) {
  Tensor host(std::move(shape), dtype, cpu_device());
  dispatch_every(dtype, "Tensor::full", [&]<typename T>() { fill_host<T>(host.raw_data(), host.num_elements(), value); });
  return &device == &cpu_device() ? host : host.to(device);
}

Tensor Tensor::zeros(Shape shape, DType dtype, Device& device) { return full(std::move(shape), 0.0, dtype, device); }

Tensor Tensor::scalar(double value, DType dtype, Device& device) { return full(Shape{}, value, dtype, device); }

template <typename T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values, Device& device) {
  Tensor t(std::move(shape), dtype_of<T>(), device);
  if (static_cast<std::int64_t>(values.size()) != t.num_elements())
    raise<ShapeError>("from_vector: {} values do not fill shape {} ({} elements)", values.size(),
                      t.shape().to_string(), t.num_elements());
  copy_between(device, t.raw_data(), cpu_device(), values.data(), t.nbytes());
  return t;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  std::vector<T> out(static_cast<std::size_t>(num_elements()));
  dispatch_every(dtype_, "Tensor::to_vector", [&]<typename S>() {
    std::vector<S> host(out.size());
    copy_between(cpu_device(), host.data(), device(), raw_data(), nbytes());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(host[i]);
  });
  return out;
}

#define TOWER_INSTANTIATE(T)                                                                   \
  template Tensor Tensor::from_vector<T>(Shape, const std::vector<T>&, Device&);              \
  template std::vector<T> Tensor::to_vector<T>() const;
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
TOWER_INSTANTIATE(std::int32_t)
TOWER_INSTANTIATE(std::int64_t)
TOWER_INSTANTIATE(std::uint8_t)
TOWER_INSTANTIATE(float16_t)
TOWER_INSTANTIATE(bfloat16_t)
#undef TOWER_INSTANTIATE

double Tensor::item() const {
  if (num_elements() != 1)
    raise<ShapeError>("item() needs a tensor with one element, got shape {}", shape_.to_string());
  return to_vector<double>()[0];
}

Tensor Tensor::to(Device& target) const {
  Tensor t(shape_, dtype_, target);
  copy_between(target, t.raw_data(), device(), raw_data(), nbytes());
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.shape() != shape_ || src.dtype() != dtype_)
    raise<ShapeError>("copy_from: source {} {} does not match destination {} {}", src.shape().to_string(),
                      dtype_name(src.dtype()), shape_.to_string(), dtype_name(dtype_));
  copy_between(device(), raw_data(), src.device(), src.raw_data(), nbytes());
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape.num_elements() != num_elements())
    raise<ShapeError>("cannot reshape a tensor of shape {} ({} elements) to {} ({} elements)",
                      shape_.to_string(), num_elements(), shape.to_string(), shape.num_elements());
  return Tensor(std::move(shape), dtype_, storage_, offset_);
}

std::string Tensor::to_string(int max_elements) const {
  std::string s = fmt::format("Tensor(shape={}, dtype={}, device={}, values=[", shape_.to_string(),
                              dtype_name(dtype_), device().name());
  auto v = to_vector<double>();
  for (std::size_t i = 0; i < v.size() && i < static_cast<std::size_t>(max_elements); ++i)
    s += fmt::format("{}{:.6g}", i ? ", " : "", v[i]);
  if (v.size() > static_cast<std::size_t>(max_elements)) s += ", ...";
  return s + "])";
}

}  // namespace tower
