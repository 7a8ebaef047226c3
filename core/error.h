// tower::Error and its subclasses: every failure the library reports is one of these.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace tower {

// Base of every exception tower throws. Messages name the op or layer, the shapes involved and,
// where there is one, the fix.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ShapeError : public Error {  // shapes that do not fit an op's contract
 public:
  using Error::Error;
};

class DTypeError : public Error {  // element types that do not fit an op's contract
 public:
  using Error::Error;
};

class ValueError : public Error {  // a bad argument value (negative rate, unknown name, ...)
 public:
  using Error::Error;
};

class DeviceError : public Error {  // unknown device, failed allocation or copy
 public:
  using Error::Error;
};

class OutOfMemoryError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

// How the allocators' out-of-memory messages end: the advice for a step's buffers (activations and
// gradients), which grow with the batch. A variable's value (a weight, an optimizer slot) does not:
// raise_variable_out_of_memory (core/variable.h) replaces this advice with its own.
inline constexpr const char* kSmallerBatchAdvice =
    "; use a smaller batch size, or give this device a smaller share of the batch (ratios)";

class NotFoundError : public Error {  // a name (op, kernel, device, feed) that is not registered
 public:
  using Error::Error;
};

// Throws E with a fmt-formatted message.
template <typename E = Error, typename... Args>
[[noreturn]] void raise(fmt::format_string<Args...> format, Args&&... args) {
  throw E(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tower
