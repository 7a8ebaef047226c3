// Registers the compiled-in backends once, on first use of a device or kernel registry.
#include "tower/core/registry_init.h"

#include <mutex>

#include "tower/core/device.h"

namespace tower {

void ensure_backends_registered() {
  static std::once_flag once;
  std::call_once(once, [] { register_builtin_backends(); });
}

}  // namespace tower
