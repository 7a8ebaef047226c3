// OpDef (an op's shape function and gradient), KernelContext and the kernel table that maps
// (op, device kind) to the function that runs it. Backends fill the kernel table; core/ops/*.cpp
// fill the op table. Nothing dispatches on the device anywhere else.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tower/core/graph.h"

namespace tower {

// Output specs from input specs and attrs. Throws ShapeError/DTypeError with a short reason; the
// Graph adds the op, node name and input shapes. Called with unknown (-1) batch dims at build time
// and with concrete shapes when a Plan is compiled.
using ShapeFn = std::function<std::vector<TensorSpec>(const std::vector<TensorSpec>& inputs, const Attrs& attrs)>;

// Gradients of the node's inputs given the gradients of its outputs (an entry is undefined when
// that output has none). Builds them with the ops in core/ops.h; returns one entry per input,
// undefined where an input gets no gradient.
using GradFn = std::function<std::vector<SymbolicTensor>(Node& node, const std::vector<SymbolicTensor>& output_grads)>;

// Where a graph source's value comes from (fed, stored in the node, a Variable); none: a kernel.
enum class OpSource { none, placeholder, constant, variable };

struct OpDef {
  std::string name;  // one of core/op_names.h
  ShapeFn shape;
  GradFn grad;                        // empty: not differentiable (gradients stop here)
  int alias_input = -1;               // output 0 is a view of this input's storage (reshape)
  // With alias_input: the kernel still runs, after the view is made (it waits until the view holds its
  // value: a cross-worker sum made in place). Without: an alias step runs no kernel.
  bool alias_runs_kernel = false;
  // Output 0 is a view of input 0 when the plan's concrete shapes show there is nothing to do (sum_to
  // or broadcast_like to the shape the input already has, which an unknown batch hides at build
  // time): that step runs no kernel and takes no buffer.
  bool alias_when_unchanged = false;
  std::vector<int> mutated_inputs;    // inputs written in place; must be variables (update ops)
  OpSource source = OpSource::none;   // placeholder, constant, variable: no kernel, no shape function
  // The replicas of one collective (all_reduce) on several devices wait for each other: the plan
  // checks that every lane can reach its replica, and its time is waiting, not computing.
  bool collective = false;
  // Starts work that goes on in the background (a gradient bucket's all-reduce across worker
  // processes): the plan runs it, and the nodes it needs, as early as it can, so that the work overlaps
  // the rest of the step (the backward pass) instead of waiting for it.
  bool early = false;
};

void register_op(OpDef def);
// Throws NotFoundError if `name` is not registered.
const OpDef& op_def(std::string_view name);

// What a kernel sees: its node, inputs and preallocated outputs, all on `device`.
struct KernelContext {
  const Node& node;
  Device& device;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;  // shapes resolved, memory from the plan; the kernel fills them
  const Attrs& attrs() const { return node.attrs(); }
};
using KernelFn = void (*)(KernelContext& ctx);

void register_kernel(std::string_view op, DeviceKind kind, KernelFn fn);
// Throws NotFoundError ("no cuda kernel for op ...") when missing.
KernelFn find_kernel(std::string_view op, DeviceKind kind);
bool has_kernel(std::string_view op, DeviceKind kind);
// The ops that have a kernel for `kind`, sorted.
std::vector<std::string> ops_with_kernel(DeviceKind kind);
// How a backend runs its kernels on float16/bfloat16 tensors when they have no half code of their own
// (the CPU widens the operands to float32 and rounds the outputs back): the plan calls it, with the
// op's kernel, for the steps that read or write a half tensor. Null (none registered): the kernels
// take half tensors themselves.
using HalfKernelAdapter = void (*)(KernelContext& ctx, KernelFn kernel);
void register_half_kernel_adapter(DeviceKind kind, HalfKernelAdapter adapter);
HalfKernelAdapter find_half_kernel_adapter(DeviceKind kind);

// A kernel that runs several steps of one op in one call: the plan hands it each run of consecutive
// steps with the same op, device and attrs that have no outputs (the in-place updates of an
// optimizer, all variables at once: one fused launch on a GPU). Optional beside the KernelFn, which
// must do the same work for a single step; it checks what its shared inputs need (the same lr, say)
// and may run the steps one by one.
using GroupKernelFn = void (*)(std::span<KernelContext> group);
void register_group_kernel(std::string_view op, DeviceKind kind, GroupKernelFn fn);
// Null when the op has no group kernel for `kind`.
GroupKernelFn find_group_kernel(std::string_view op, DeviceKind kind);

}  // namespace tower
