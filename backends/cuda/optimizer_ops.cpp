// The CUDA kernel table entries of the optimizer updates: a kernel per step and a group kernel that
// updates all variables of a step in one launch per 48 variables. Inputs as the ops' contracts (and
// the CPU kernels) have them: var, grad, lr, then the optimizer's iteration and slots.
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/optimizer_launchers.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

namespace {

template <typename T>
T attr(const KernelContext& ctx, const char* name) {
  return static_cast<T>(ctx.attrs().get_float(name));
}

// Where an op's inputs are: the iteration (or none) and the first slot; and its rule.
struct UpdateInputs {
  UpdateRule rule;
  int iteration = -1;
  std::size_t first_slot = 3;
};

UpdateInputs inputs_of(const std::string& op) {
  if (op == op_names::apply_sgd) return {UpdateRule::sgd};
  if (op == op_names::apply_rmsprop) return {UpdateRule::rmsprop};
  if (op == op_names::apply_adam) return {UpdateRule::adam, 3, 4};
  if (op == op_names::apply_adagrad) return {UpdateRule::adagrad};
  if (op == op_names::apply_adamax) return {UpdateRule::adamax, 3, 4};
  if (op == op_names::apply_nadam) return {UpdateRule::nadam, 3, 4};
  if (op == op_names::apply_lion) return {UpdateRule::lion};
  if (op == op_names::apply_ftrl) return {UpdateRule::ftrl};
  if (op == op_names::apply_ema) return {UpdateRule::ema, 2, 3};  // (average, var, iteration): no lr
  return {UpdateRule::adadelta};
}

// lr, iteration and the constants from the step's attrs (each op reads its own).
template <typename T>
UpdateConstants<T> constants_of(const KernelContext& ctx, const UpdateInputs& where) {
  UpdateConstants<T> c;
  const Attrs& a = ctx.attrs();
  if (where.rule != UpdateRule::ema) c.lr = ctx.inputs[2].data<T>();
  if (where.iteration >= 0) c.iteration = ctx.inputs[static_cast<std::size_t>(where.iteration)].data<T>();
  if (a.has("momentum")) c.momentum = attr<T>(ctx, "momentum");
  if (a.has("nesterov")) c.nesterov = a.get_bool("nesterov");
  if (a.has("rho")) c.rho = attr<T>(ctx, "rho");
  if (a.has("beta_1")) c.beta_1 = attr<T>(ctx, "beta_1");
  if (a.has("beta_2")) c.beta_2 = attr<T>(ctx, "beta_2");
  if (a.has("epsilon")) c.epsilon = attr<T>(ctx, "epsilon");
  if (a.has("weight_decay")) c.weight_decay = attr<T>(ctx, "weight_decay");
  if (a.has("learning_rate_power")) c.lr_power = attr<T>(ctx, "learning_rate_power");
  if (a.has("l1")) c.l1 = attr<T>(ctx, "l1");
  if (a.has("l2")) c.l2 = attr<T>(ctx, "l2");
  if (a.has("l2_shrinkage")) c.l2_shrinkage = attr<T>(ctx, "l2_shrinkage");
  if (a.has("beta")) c.beta = attr<T>(ctx, "beta");
  return c;
}

// The slot pointers in the launcher's order (UpdateList): optional slots are left out of the
// inputs, and the has_* attrs say which are there.
template <typename T>
void add_variable(UpdateList<T>& list, KernelContext& ctx, const UpdateInputs& where) {
  const int k = list.count++;
  list.var[k] = ctx.inputs[0].data<T>();
  list.grad[k] = ctx.inputs[1].data<T>();
  list.n[k] = ctx.inputs[0].num_elements();
  std::size_t next = where.first_slot;
  const auto take = [&](bool present) { return present ? ctx.inputs[next++].data<T>() : nullptr; };
  const Attrs& a = ctx.attrs();
  switch (where.rule) {
    case UpdateRule::sgd: list.slot[0][k] = take(a.get_bool("has_momentum")); break;
    case UpdateRule::rmsprop:
      list.slot[0][k] = take(true);
      list.slot[1][k] = take(a.get_bool("has_momentum"));
      list.slot[2][k] = take(a.get_bool("has_average_grad"));
      break;
    case UpdateRule::adam:
      list.slot[0][k] = take(true);
      list.slot[1][k] = take(true);
      list.slot[2][k] = take(a.get_bool("has_v_hat"));
      break;
    case UpdateRule::adagrad: list.slot[0][k] = take(true); break;
    case UpdateRule::adadelta:
    case UpdateRule::adamax:
    case UpdateRule::nadam:
    case UpdateRule::ftrl:
      list.slot[0][k] = take(true);
      list.slot[1][k] = take(true);
      break;
    case UpdateRule::lion: list.slot[0][k] = take(true); break;
    case UpdateRule::ema: break;  // var: the average, grad: the model variable
  }
}

// Updates the steps of `group` (one op, equal attrs) in launches of up to kMaxVariables variables.
// They must share lr (and iteration) and a dtype; the plan's grouping leaves that to us.
void run_updates(std::span<KernelContext> group) {
  KernelContext& first = group.front();
  CudaDevice& gpu = gpu_of(first);
  const UpdateInputs where = inputs_of(first.node.op());
  const auto shares_first = [&](KernelContext& ctx) {
    return ctx.inputs[0].dtype() == first.inputs[0].dtype() && ctx.inputs[2].raw_data() == first.inputs[2].raw_data() &&
           (where.iteration < 0 || ctx.inputs[static_cast<std::size_t>(where.iteration)].raw_data() ==
                                       first.inputs[static_cast<std::size_t>(where.iteration)].raw_data());
  };
  for (KernelContext& ctx : group)
    if (!shares_first(ctx)) {  // not one update after all: each step on its own
      for (KernelContext& one : group) run_updates(std::span<KernelContext>(&one, 1));
      return;
    }
  dispatch_floating(first.inputs[0].dtype(), first.node.op().c_str(), [&]<typename T>() {
    const UpdateConstants<T> constants = constants_of<T>(first, where);
    UpdateList<T> list;
    for (std::size_t i = 0; i < group.size(); ++i) {
      add_variable(list, group[i], where);
      if (list.count == UpdateList<T>::kMaxVariables || i + 1 == group.size()) {
        CUDA_CHECK(launch_update<T>(where.rule, constants, list, gpu.stream()));
        list.count = 0;
      }
    }
  });
}

void update_kernel(KernelContext& ctx) { run_updates(std::span<KernelContext>(&ctx, 1)); }

}  // namespace

void register_optimizer_kernels() {
  for (const char* op : {op_names::apply_sgd, op_names::apply_rmsprop, op_names::apply_adam, op_names::apply_adagrad,
                         op_names::apply_adadelta, op_names::apply_adamax, op_names::apply_nadam, op_names::apply_lion,
                         op_names::apply_ftrl, op_names::apply_ema}) {
    register_kernel(op, DeviceKind::cuda, update_kernel);
    register_group_kernel(op, DeviceKind::cuda, run_updates);
  }
}

}  // namespace tower::cuda
