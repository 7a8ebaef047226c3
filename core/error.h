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
