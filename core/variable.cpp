// Variable construction, mirrors and pieces, and the out-of-memory error of a variable's allocation.
#include "tower/core/variable.h"

#include <cstring>

#include "tower/core/caching_allocator.h"
#include "tower/core/device.h"

namespace tower {

void raise_variable_out_of_memory(const std::string& name, const Shape& shape, DType dtype,
                                  const std::exception* cause) {
  std::string says = cause ? cause->what() : "std::bad_alloc";
  if (auto advice = says.find(kSmallerBatchAdvice); advice != std::string::npos) says.erase(advice);
  raise<OutOfMemoryError>("out of memory allocating the variable \"{}\" ({} {}, {}): the model's weights and "
                          "optimizer state do not fit in this device's memory, whatever the batch size; use a smaller "
                          "model, or a device with more memory ({})", name, shape.to_string(), dtype_name(dtype),
                          format_bytes(tensor_bytes(shape, dtype)), says);
}

Variable::Variable(std::string name, Tensor initial_value, bool trainable)
    : name_(std::move(name)), value_(std::move(initial_value)), trainable_(trainable) {
  if (!value_.defined()) raise<ValueError>("variable \"{}\" needs an initial value", name_);
}

void Variable::relocate(Device& device) {
  if (&device == &value_.device()) return;
  try {
    value_ = value_.to(device);
  } catch (const OutOfMemoryError& e) {
    raise_variable_out_of_memory(name_, value_.shape(), value_.dtype(), &e);
  }
  note_written();
}

namespace {

// Copies between `whole` and `part`, both host tensors: part is whole's slice [offset, offset +
// part.shape()[axis]) along `axis` (into_part: whole -> part, else part -> whole).
void copy_slice(const Tensor& whole, const Tensor& part, int axis, std::int64_t offset, bool into_part) {
  const auto& dims = whole.shape().dims();
  std::int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[static_cast<std::size_t>(d)];
  std::size_t inner = dtype_size(whole.dtype());
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < dims.size(); ++d) inner *= static_cast<std::size_t>(dims[d]);
  const auto full = static_cast<std::size_t>(dims[static_cast<std::size_t>(axis)]);
  const auto size = static_cast<std::size_t>(part.shape()[axis]);
  auto* w = static_cast<char*>(const_cast<void*>(whole.raw_data()));
  auto* p = static_cast<char*>(const_cast<void*>(part.raw_data()));
  for (std::int64_t o = 0; o < outer; ++o) {
    char* in_whole = w + (static_cast<std::size_t>(o) * full + static_cast<std::size_t>(offset)) * inner;
    char* in_part = p + static_cast<std::size_t>(o) * size * inner;
    if (into_part)
      std::memcpy(in_part, in_whole, size * inner);
    else
      std::memcpy(in_whole, in_part, size * inner);
  }
}

}  // namespace

void Variable::assign(const Tensor& value) {
  value_.copy_from(value);
  note_written();
  for (auto& g : pieces_)
    if (const auto piece = g.piece.lock()) g.version = piece->version();
}

void Variable::sync_from_primary() {
  if (!primary_ || synced_version_ == primary_->version()) return;
  if (piece_) {  // this piece's slice of the primary
    Tensor host = Tensor::zeros(value_.shape(), value_.dtype());
    copy_slice(primary_->value(), host, piece_->axis, piece_->offset, /*into_part=*/true);
    value_.copy_from(host);
  } else {
    value_.copy_from(primary_->value());
  }
  note_written();
  synced_version_ = primary_->version();
  for (auto& g : primary_->pieces_)  // what the primary would gather back from this piece is its own value
    if (g.piece.lock().get() == this) g.version = version_;
}

std::vector<VariablePtr> Variable::pieces() const {
  std::vector<VariablePtr> out;
  for (const auto& g : pieces_)
    if (auto piece = g.piece.lock()) out.push_back(piece);
  return out;
}

void Variable::gather_pieces() const {
  for (const auto& g : pieces_) {
    const auto piece = g.piece.lock();
    if (!piece || piece->version() == g.version) continue;
    const Tensor& part = piece->value_;  // read in place where the host can, else through a host copy
    copy_slice(value_, part.device().host_accessible() ? part : part.to(cpu_device()), piece->piece_->axis,
               piece->piece_->offset, /*into_part=*/false);
    g.version = piece->version();
  }
}

VariablePtr make_piece(const VariablePtr& whole, Variable::Slice slice, std::int64_t size, Device& device) {
  if (!whole) raise<ValueError>("make_piece: the whole variable is null");
  const Tensor& value = whole->value();
  if (!value.device().host_accessible())
    raise<ValueError>("make_piece: variable \"{}\" is on {}; a variable split into pieces is kept whole in host memory",
                      whole->name(), value.device().name());
  if (slice.axis < 0 || slice.axis >= value.shape().rank() || slice.offset < 0 || size < 0 ||
      slice.offset + size > value.shape()[slice.axis])
    raise<ValueError>("make_piece: [{}, {}) along axis {} is not a slice of \"{}\" {}", slice.offset, slice.offset + size,
                      slice.axis, whole->name(), value.shape().to_string());
  auto dims = value.shape().dims();
  dims[static_cast<std::size_t>(slice.axis)] = size;
  Tensor host = Tensor::zeros(Shape(dims), value.dtype());
  copy_slice(value, host, slice.axis, slice.offset, /*into_part=*/true);
  Tensor copy;
  try {
    copy = host.to(device);
  } catch (const OutOfMemoryError& e) {
    raise_variable_out_of_memory(whole->name(), Shape(dims), value.dtype(), &e);
  }
  auto piece = make_variable(whole->name(), copy, whole->trainable());
  piece->primary_ = whole;
  piece->piece_ = slice;
  piece->synced_version_ = whole->version();
  whole->pieces_.push_back({piece, piece->version()});
  return piece;
}

VariablePtr make_copy_like(const VariablePtr& like, const VariablePtr& whole_copy) {
  if (!like->is_piece()) return make_mirror(whole_copy, like->device());
  return make_piece(whole_copy, like->slice(), like->shape()[like->slice().axis], like->device());
}

VariablePtr make_mirror(const VariablePtr& primary, Device& device) {
  if (!primary) raise<ValueError>("make_mirror: the primary variable is null");
  const Tensor& value = primary->value();
  Tensor copy;
  try {
    copy = &device == &value.device() ? value.clone() : value.to(device);
  } catch (const OutOfMemoryError& e) {
    raise_variable_out_of_memory(primary->name(), value.shape(), value.dtype(), &e);
  }
  auto mirror = make_variable(primary->name(), copy, primary->trainable());
  mirror->primary_ = primary;
  mirror->synced_version_ = primary->version();
  return mirror;
}

}  // namespace tower
