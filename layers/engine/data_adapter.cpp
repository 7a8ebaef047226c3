// epoch_permutation, gather_rows and ArrayDataAdapter.
#include "tower/layers/engine/data_adapter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tower/core/random.h"

namespace tower {

std::vector<std::int64_t> epoch_permutation(std::int64_t n, std::uint64_t seed, int epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  std::iota(order.begin(), order.end(), 0);
  Generator g(seed, static_cast<std::uint64_t>(epoch));
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)], order[g.next_u32() % static_cast<std::uint64_t>(i + 1)]);
  return order;
}

void gather_rows(const Tensor& src, const std::int64_t* idx, std::int64_t n, Tensor& out) {
  auto dims = src.shape().dims();
  dims[0] = n;
  if (!out.defined() || out.shape() != Shape(dims) || out.dtype() != src.dtype()) out = Tensor::zeros(Shape(dims), src.dtype());
  const std::size_t row = src.shape()[0] == 0 ? 0 : src.nbytes() / static_cast<std::size_t>(src.shape()[0]);
  auto* from = static_cast<const char*>(src.raw_data());
  auto* to = static_cast<char*>(out.raw_data());
  for (std::int64_t i = 0; i < n; ++i) std::memcpy(to + i * row, from + idx[i] * row, row);
}

ArrayDataAdapter::ArrayDataAdapter(std::vector<Tensor> x, std::vector<Tensor> y, Tensor sample_weight,
                                   std::int64_t batch_size, bool shuffle, std::uint64_t seed, std::int64_t n)
    : x_(std::move(x)), y_(std::move(y)), sample_weight_(std::move(sample_weight)), batch_size_(batch_size),
      shuffle_(shuffle), seed_(seed) {
  if (batch_size_ <= 0) raise<ValueError>("batch_size must be positive, got {}", batch_size_);
  const std::int64_t rows = x_.empty() ? 0 : x_[0].shape()[0];
  if (n > rows) raise<ValueError>("ArrayDataAdapter: {} samples asked of arrays of {}", n, rows);
  n_ = n < 0 ? rows : n;
  order_.resize(static_cast<std::size_t>(n_));
  std::iota(order_.begin(), order_.end(), 0);
}

// ceil(n / batch) without n + batch - 1, which overflowed for a huge batch_size (into a negative count).
std::string ArrayDataAdapter::fingerprint() const {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
  const auto mix = [&](const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  };
  const auto add = [&](const Tensor& array) {
    if (!array.defined()) return;
    const Tensor host = array.device().host_accessible() ? array : array.to(cpu_device());
    const std::string header = fmt::format("{} {}", dtype_name(host.dtype()), host.shape().to_string());
    mix(header.data(), header.size());
    const std::int64_t rows = host.shape().rank() > 0 ? host.shape().dims()[0] : 1;
    if (rows <= 0) return;
    const std::size_t row_bytes = host.nbytes() / static_cast<std::size_t>(rows);
    const auto* bytes = static_cast<const unsigned char*>(host.raw_data());
    const std::int64_t n = std::min(n_, rows);
    const auto row = [&](std::int64_t r) { mix(bytes + static_cast<std::size_t>(r) * row_bytes, row_bytes); };
    for (std::int64_t r = 0; r < std::min<std::int64_t>(4, n); ++r) row(r);
    for (std::int64_t r = std::max<std::int64_t>(0, n - 4); r < n; ++r) row(r);
    for (std::int64_t k = 0; k < 56 && n > 0; ++k) row(n * k / 56);
  };
  for (const auto& a : x_) add(a);
  for (const auto& a : y_) add(a);
  add(sample_weight_);
  return fmt::format("{:016x}", hash);
}

std::int64_t ArrayDataAdapter::steps_per_epoch() const { return n_ / batch_size_ + (n_ % batch_size_ != 0); }

void ArrayDataAdapter::begin_epoch(int epoch, std::int64_t skip) {
  if (shuffle_) order_ = epoch_permutation(n_, seed_, epoch);
  // skip batches past the end leave nothing (fit refuses a resume position past the epoch before); the
  // division keeps skip * batch_size from overflowing into a negative row.
  skip = std::max<std::int64_t>(skip, 0);
  position_ = skip >= steps_per_epoch() ? n_ : skip * batch_size_;
}

bool ArrayDataAdapter::next(DataElement& batch) {
  if (position_ >= n_) return false;
  const std::int64_t size = std::min(batch_size_, n_ - position_);
  const std::int64_t* rows = order_.data() + position_;
  position_ += size;
  auto& out = buffers_[size];
  out.x.resize(x_.size());
  out.y.resize(y_.size());
  for (std::size_t i = 0; i < x_.size(); ++i) gather_rows(x_[i], rows, size, out.x[i]);
  for (std::size_t i = 0; i < y_.size(); ++i) gather_rows(y_[i], rows, size, out.y[i]);
  if (sample_weight_.defined()) {
    if (!out.sample_weight) out.sample_weight.emplace();
    gather_rows(sample_weight_, rows, size, *out.sample_weight);
  }
  batch = out;
  return true;
}

}  // namespace tower
