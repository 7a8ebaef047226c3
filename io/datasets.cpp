// load_mnist, load_emnist, to_categorical, to_float.
#include "tower/io/datasets.h"

#include <algorithm>
#include <iterator>

#include "tower/core/error.h"
#include "tower/io/idx.h"

namespace tower::io {

namespace {
// MNIST-style data sets hold 28x28 images, and the models made for them expect that size: other sizes
// are refused here, naming the file, rather than failing later in a reshape or a layer.
void check_28x28(const char* loader, const IdxSplit& split) {
  const Shape& s = split.images.shape();
  if (s[1] != 28 || s[2] != 28)
    raise<ValueError>("{}: the images in {} are {}x{}, but MNIST-style data (and the models made for it) are 28x28; "
                      "give a data set of 28x28 images, or read other sizes with read_idx_split", loader,
                      split.images_path, s[1], s[2]);
}
}  // namespace

std::pair<Split, Split> load_mnist(const std::string& dir) {
  auto train = read_idx_split(dir, "train");
  auto test = read_idx_split(dir, "t10k");
  check_28x28("load_mnist", train);
  check_28x28("load_mnist", test);
  return {{train.images, train.labels}, {test.images, test.labels}};
}

std::pair<Split, Split> load_emnist(const std::string& dir, const std::string& split) {
  static const char* const known[] = {"balanced", "byclass", "bymerge", "digits", "letters", "mnist"};
  if (std::find(std::begin(known), std::end(known), split) == std::end(known))
    raise<ValueError>("load_emnist(\"{}\", \"{}\"): unknown split; EMNIST's are balanced, byclass, bymerge, digits, "
                      "letters and mnist", dir, split);
  auto train = read_idx_split(dir, "emnist-" + split + "-train");
  auto test = read_idx_split(dir, "emnist-" + split + "-test");
  check_28x28("load_emnist", train);
  check_28x28("load_emnist", test);
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
