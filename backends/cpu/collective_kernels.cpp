// all_reduce on CPU devices: the replicas' lanes meet on the host (core/collective.h).
#include "tower/backends/cpu/kernels.h"
#include "tower/core/collective.h"
#include "tower/core/op_names.h"

namespace tower::cpu {

namespace {

void all_reduce_kernel(KernelContext& ctx) {
  host_all_reduce(ctx.attrs().get_string("group"), static_cast<int>(ctx.attrs().get_int("rank")),
                  static_cast<int>(ctx.attrs().get_int("size")), ctx.inputs[0], ctx.outputs[0]);
}

}  // namespace

void register_collective_kernels() { register_kernel(op_names::all_reduce, DeviceKind::cpu, all_reduce_kernel); }

}  // namespace tower::cpu
