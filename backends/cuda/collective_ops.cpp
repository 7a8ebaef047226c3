// all_reduce on GPUs: one NCCL rank per replica, each queued on its GPU's stream by its lane.
#include <map>

#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/nccl.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

namespace {

// The physical GPU of each replica, from the node's "cuda:0,cuda:1" list.
std::vector<int> ordinals_of(const std::string& devices) {
  std::vector<int> ordinals;
  std::size_t begin = 0;
  while (begin <= devices.size()) {
    const std::size_t end = std::min(devices.find(',', begin), devices.size());
    auto* gpu = dynamic_cast<CudaDevice*>(&device(devices.substr(begin, end - begin)));
    if (!gpu) raise<ValueError>("all_reduce on GPUs: {} is not a GPU", devices.substr(begin, end - begin));
    ordinals.push_back(gpu->ordinal());
    begin = end + 1;
  }
  return ordinals;
}

void all_reduce_kernel(KernelContext& ctx) {
  CudaDevice& gpu = gpu_of(ctx);
  const Tensor& x = ctx.inputs[0];
  nccl_all_reduce_sum(ctx.attrs().get_string("group"), ordinals_of(ctx.attrs().get_string("devices")),
                      static_cast<int>(ctx.attrs().get_int("rank")), x.raw_data(), ctx.outputs[0].raw_data(),
                      static_cast<std::size_t>(x.num_elements()), x.dtype(), gpu.stream());
}

}  // namespace

std::string nccl_all_reduce_unsupported(const std::vector<Device*>& gpus) {
  std::map<int, std::string> first_on;  // physical GPU -> the first replica there
  for (Device* d : gpus) {
    const int ordinal = static_cast<CudaDevice&>(*d).ordinal();
    auto [it, added] = first_on.emplace(ordinal, d->name());
    if (!added)
      return fmt::format("{} and {} are logical GPUs of physical GPU {}, and NCCL needs a physical GPU per replica",
                         it->second, d->name(), ordinal);
  }
  return nccl_unavailable();  // loads NCCL: only once the GPUs could use it
}

void register_collective_kernels() { register_kernel(op_names::all_reduce, DeviceKind::cuda, all_reduce_kernel); }

}  // namespace tower::cuda
