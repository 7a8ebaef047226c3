// Shape arithmetic and printing.
#include "tower/core/shape.h"

#include <fmt/ranges.h>

#include "tower/core/checked.h"
#include "tower/core/error.h"

namespace tower {

void Shape::out_of_range(int axis) const {
  if (dims_.empty()) raise<ShapeError>("index {} into shape () of rank 0: a scalar has no dimensions", axis);
  raise<ShapeError>("index {} is out of range for shape {} of rank {}: use 0 to {}, or -{} to -1 counting from the end",
                    axis, to_string(), rank(), rank() - 1, rank());
}

bool Shape::is_fully_known() const {
  for (auto d : dims_)
    if (d < 0) return false;
  return true;
}

void Shape::negative_dim() const {
  for (std::size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i] < kUnknown)
      raise<ValueError>("shape ({}): dimension {} is {}; a dimension is a size >= 0, or -1 (None) for one unknown "
                        "until run time",
                        fmt::join(dims_, ", "), i, dims_[i]);
  raise<ValueError>("shape ({}): a dimension is below -1", fmt::join(dims_, ", "));
}

std::int64_t Shape::num_elements() const {
  std::int64_t n = 1;
  bool overflow = false;  // checked once at the end: the common case pays one flag per dimension
  for (auto d : dims_) {
    if (d < 0) raise<ShapeError>("cannot count the elements of {}: a dimension is unknown", to_string());
    overflow |= __builtin_mul_overflow(n, d, &n);
  }
  if (overflow)  // raises (unless a dimension is 0: then there are none)
    return checked_product(dims_, fmt::format("the number of elements of shape {}", to_string()),
                           "no tensor can be that large: use smaller dimensions");
  return n;
}

int Shape::normalize_axis(int axis, const char* op) const {
  int r = rank();
  int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    raise<ShapeError>("{}{}axis {} is out of range for a tensor of shape {} (rank {})", op,
                      *op ? ": " : "", axis, to_string(), r);
  return a;
}

bool Shape::compatible_with(const Shape& other) const {
  if (rank() != other.rank()) return false;
  for (int i = 0; i < rank(); ++i)
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) return false;
  return true;
}

std::string Shape::to_string() const {
  std::string s = "(";
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += dims_[i] < 0 ? std::string("None") : std::to_string(dims_[i]);
  }
  if (dims_.size() == 1) s += ",";
  return s + ")";
}

std::vector<std::int64_t> broadcast_strides(const Shape& shape, const Shape& target) {
  const int rank = target.rank();
  std::vector<std::int64_t> strides(static_cast<std::size_t>(rank), 0);
  std::int64_t stride = 1;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    const int t = rank - shape.rank() + d;
    strides[static_cast<std::size_t>(t)] = (shape[d] == 1 && target[t] != 1) ? 0 : stride;
    stride *= shape[d];
  }
  return strides;
}

}  // namespace tower
