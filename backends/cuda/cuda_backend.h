// The CUDA backend's entry point: registers the cuda:N devices and their kernels.
#pragma once

namespace tower {
void register_cuda_backend();
}
