// Collective ops: all_reduce, one node per replica, whose replicas meet when the plan runs.
#include "tower/core/op_names.h"
#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tower/core/ops/register_ops.h"
#include "tower/core/ops/shape_utils.h"

namespace tower {

namespace ops {

SymbolicTensor all_reduce(const SymbolicTensor& x, const std::string& group, const std::vector<std::string>& devices,
                          int rank) {
  if (rank < 0 || static_cast<std::size_t>(rank) >= devices.size())
    raise<ValueError>("all_reduce \"{}\": rank {} is not one of the {} replicas", group, rank, devices.size());
  std::string names;
  for (const auto& d : devices) names += (names.empty() ? "" : ",") + d;
  return x.graph().add1(op_names::all_reduce, {x},
                        {{"group", group},
                         {"devices", names},
                         {"rank", std::int64_t{rank}},
                         {"size", static_cast<std::int64_t>(devices.size())}});
}

}  // namespace ops

namespace {

std::vector<TensorSpec> all_reduce_shape(const std::vector<TensorSpec>& in, const Attrs& attrs) {
  expect_num_inputs(in, 1);
  if (in[0].dtype != DType::float32 && in[0].dtype != DType::float64)
    raise<DTypeError>("all_reduce sums float32 or float64, not {}", dtype_name(in[0].dtype));
  return {in[0]};
}

}  // namespace

void register_collective_ops() {
  register_op({.name = op_names::all_reduce, .shape = all_reduce_shape, .collective = true});
}

}  // namespace tower
