// The CUDA kernel groups (backends/cuda/*.cu). The CUDA backend grows to every CPU op in its own issue.
#pragma once

namespace tower::cuda {
void register_elementwise_kernels();  // elementwise_kernels.cu
}
