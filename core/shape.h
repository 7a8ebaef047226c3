// Shape: the dimensions of a tensor, outermost first. -1 marks a dimension (usually the batch)
// that is unknown until a Plan is compiled.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace tower {

class Shape {
 public:
  static constexpr std::int64_t kUnknown = -1;

  Shape() = default;
  // ValueError for a dimension below -1 (a size from a user or a file, or an overflow gone negative).
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) { check_dims(); }
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) { check_dims(); }

  int rank() const { return static_cast<int>(dims_.size()); }
  // Dimension `axis`, counting from the end when negative as Python does (shape[-1] is the last);
  // ShapeError naming the shape and the valid range when out of range.
  std::int64_t operator[](int axis) const { return dims_[index(axis)]; }
  std::int64_t& operator[](int axis) { return dims_[index(axis)]; }
  std::int64_t dim(int axis) const { return dims_[index(axis)]; }  // the same as operator[]
  const std::vector<std::int64_t>& dims() const { return dims_; }

  bool is_fully_known() const;
  // Product of the dimensions (1 for a scalar); ShapeError when a dimension is unknown, ValueError when
  // the product does not fit in 64 bits (no tensor is that large).
  std::int64_t num_elements() const;
  // Normalizes a possibly negative axis into [0, rank); throws ShapeError naming `op` if out of range.
  int normalize_axis(int axis, const char* op = "") const;

  // True when the shapes can describe the same tensor (unknown dims match anything).
  bool compatible_with(const Shape& other) const;

  std::string to_string() const;  // "(None, 28, 28, 1)" as Keras prints it
  bool operator==(const Shape&) const = default;

 private:
  std::size_t index(int axis) const {
    const int r = rank();
    const int a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r) out_of_range(axis);
    return static_cast<std::size_t>(a);
  }
  [[noreturn]] void out_of_range(int axis) const;
  void check_dims() const {
    for (auto d : dims_)
      if (d < kUnknown) [[unlikely]]
        negative_dim();
  }
  [[noreturn]] void negative_dim() const;

  std::vector<std::int64_t> dims_;
};

// Row-major strides of `shape` laid against `target` (right-aligned, NumPy broadcasting): 0 along
// the axes where `shape` has size 1 (or is missing) and `target` does not. Result has target's rank.
std::vector<std::int64_t> broadcast_strides(const Shape& shape, const Shape& target);

}  // namespace tower
