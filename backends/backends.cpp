// register_builtin_backends: the one place that knows which backends are compiled in.
#include "tower/backends/cpu/cpu_device.h"
#include "tower/core/device.h"

#ifdef TOWER_WITH_CUDA
#include "tower/backends/cuda/cuda_backend.h"
#endif

namespace tower {

void register_builtin_backends() {
  register_cpu_backend();
#ifdef TOWER_WITH_CUDA
  register_cuda_backend();
#endif
}

}  // namespace tower
