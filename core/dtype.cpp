// DType sizes and names.
#include "tower/core/dtype.h"

namespace tower {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::uint8: return 1;
    case DType::float16: return 2;
    case DType::bfloat16: return 2;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::uint8: return "uint8";
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
  }
  return "unknown";
}

bool is_floating(DType dtype) {
  return dtype == DType::float32 || dtype == DType::float64 || dtype == DType::float16 ||
         dtype == DType::bfloat16;
}

bool is_integer(DType dtype) {
  return dtype == DType::int32 || dtype == DType::int64 || dtype == DType::uint8;
}

}  // namespace tower
