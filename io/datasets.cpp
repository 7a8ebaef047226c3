// load_mnist, load_emnist, to_categorical, to_float.
#include "tower/io/datasets.h"

#include <algorithm>
#include <iterator>

#include "tower/core/error.h"
#include "tower/io/idx.h"

namespace tower::io {

std::pair<Split, Split> load_mnist(const std::string& dir) {
  auto train = read_idx_split(dir, "train");
  auto test = read_idx_split(dir, "t10k");
  return {{train.images, train.labels}, {test.images, test.labels}};
}

std::pair<Split, Split> load_emnist(const std::string& dir, const std::string& split) {
  static const char* const known[] = {"balanced", "byclass", "bymerge", "digits", "letters", "mnist"};
  if (std::find(std::begin(known), std::end(known), split) == std::end(known))
    raise<ValueError>("load_emnist(\"{}\", \"{}\"): unknown split; EMNIST's are balanced, byclass, bymerge, digits, "
                      "letters and mnist", dir, split);
  auto train = read_idx_split(dir, "emnist-" + split + "-train");
  auto test = read_idx_split(dir, "emnist-" + split + "-test");
  return {{train.images, train.labels}, {test.images, test.labels}};
}

Tensor to_categorical(const Tensor& labels, std::int64_t num_classes) {
  const std::int64_t n = labels.shape().rank() == 0 ? 1 : labels.shape()[0];
  if (labels.num_elements() != n)
    raise<ShapeError>("to_categorical: expected labels of shape (n,), got {}", labels.shape().to_string());
  Tensor out = Tensor::zeros({n, num_classes});
  float* rows = out.data<float>();
  dispatch_integer(labels.dtype(), "to_categorical", [&]<typename T>() {
    const T* ids = labels.data<T>();
    for (std::int64_t i = 0; i < n; ++i) {
      const auto id = static_cast<std::int64_t>(ids[i]);
      if (id < 0 || id >= num_classes)
        raise<ValueError>("to_categorical: label {} (sample {}) is outside [0, {})", id, i, num_classes);
      rows[i * num_classes + id] = 1.0f;
    }
  });
  return out;
}

Tensor to_float(const Tensor& x, double factor, const Shape& shape) {
  Tensor out = Tensor::zeros(x.shape());
  float* to = out.data<float>();
  const std::int64_t n = x.num_elements();
  dispatch_any(x.dtype(), "to_float", [&]<typename T>() {
    const T* from = x.data<T>();
    for (std::int64_t i = 0; i < n; ++i) to[i] = static_cast<float>(static_cast<double>(from[i]) * factor);
  });
  auto dims = shape.dims();
  std::int64_t known = 1;
  for (auto d : dims) known *= d < 0 ? 1 : d;
  for (auto& d : dims)
    if (d < 0) d = known ? n / known : 0;
  return out.reshaped(Shape(dims));
}

}  // namespace tower::io
