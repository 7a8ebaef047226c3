// Executor and Plan: buffer reuse by liveness, cross-device copies, plan caching, feeds,
// variable updates ordered after reads, and allocation-free steady state.
#include <doctest/doctest.h>

#include "tower/core/autodiff.h"
#include "tower/core/executor.h"
#include "tower/core/memory_plan.h"
#include "tower/core/ops.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::random_tensor;

TEST_CASE("executor: liveness reuse lowers the peak memory of a deep chain") {
  Graph g;
  auto x = g.placeholder({-1, 256}, DType::float32, "x");
  SymbolicTensor h = x;
  for (int i = 0; i < 30; ++i) h = ops::scale(ops::add(h, h), 0.5);  // 60 intermediates of 64 KiB
  FeedMap feeds{{x, random_tensor({64, 256}, 1, 0.1, 1.0, false, DType::float32)}};
  Executor shared;
  Executor unshared(cpu_device(), PlanOptions{.reuse_buffers = false});
  auto a = shared.run(feeds, {h});
  auto b = unshared.run(feeds, {h});
  check_close(a[0], b[0], 0, 0);
  check_close(a[0], feeds[0].second, 1e-6, 0);
  const std::size_t buffer = 64 * 256 * 4;
  Plan& plan = shared.plan(feeds, {h});
  CHECK(unshared.plan(feeds, {h}).peak_bytes() >= 60 * buffer);
  CHECK(plan.peak_bytes() <= 3 * buffer);  // the feed slot plus two live buffers at a time
  CHECK(plan.unshared_bytes() >= 60 * buffer);
}

TEST_CASE("executor: sum_to and broadcast_like to the shape their input has are views, not steps") {
  Graph g;
  auto x = g.placeholder({-1, 4}, DType::float32, "x");
  auto y = g.placeholder({-1, 4}, DType::float32, "y");
  auto row = g.placeholder({1, 4}, DType::float32, "row");
  // The unknown batch hides at build time that x and y have one shape; the plan sees it.
  auto same = ops::scale(ops::sum_to(ops::broadcast_like(x, y), y), 2.0);
  auto reduced = ops::sum_to(x, row);
  FeedMap feeds{{x, random_tensor({3, 4}, 1, 0.1, 1.0, false, DType::float32)},
                {y, random_tensor({3, 4}, 2, 0.1, 1.0, false, DType::float32)},
                {row, random_tensor({1, 4}, 3, 0.1, 1.0, false, DType::float32)}};
  Executor executor;
  auto r = executor.run(feeds, {same, reduced});
  check_close(r[0], Tensor::from_vector<float>({3, 4}, [&] {
                auto v = feeds[0].second.to_vector<float>();
                for (float& e : v) e *= 2;
                return v;
              }()),
              0, 0);
  const auto xs = feeds[0].second.to_vector<float>();
  std::vector<float> sums(4, 0.0f);
  for (std::size_t i = 0; i < xs.size(); ++i) sums[i % 4] += xs[i];
  check_close(r[1], Tensor::from_vector<float>({1, 4}, sums), 1e-6, 1e-6);
  // Only the feeds' slots, scale's output and the real reduction take memory.
  const std::size_t batch = align_buffer(3 * 4 * 4), row_bytes = align_buffer(4 * 4);
  CHECK(executor.plan(feeds, {same, reduced}).unshared_bytes() == 3 * batch + 2 * row_bytes);
  // Fed a batch of 1 for x: now sum_to(x, row) reduces nothing either, and gives x.
  FeedMap one{{x, feeds[2].second}, {y, feeds[2].second},
              {row, random_tensor({1, 4}, 4, 0.1, 1.0, false, DType::float32)}};
  check_close(executor.run(one, {reduced})[0], feeds[2].second, 0, 0);
}

TEST_CASE("executor: copies between cpu:0 and cpu:1 give identical results") {
  Graph g;
  auto x = g.placeholder({-1, 16}, DType::float32, "x");
  auto w1 = g.constant(random_tensor({16, 32}, 2, 0.1, 1.0, false, DType::float32));
  auto w2 = g.constant(random_tensor({32, 4}, 3, 0.1, 1.0, false, DType::float32));
  auto build = [&](const std::string& middle) {
    auto h = ops::matmul(x, w1);
    SymbolicTensor mid;
    {
      Graph::DeviceScope scope(g, middle);
      mid = ops::scale(ops::maximum(h, ops::zeros_like(h)), 2.0);
    }
    return ops::reduce_sum(ops::matmul(mid, w2), {1});
  };
  auto same = build("cpu:0");
  auto split = build("cpu:1");
  FeedMap feeds{{x, random_tensor({8, 16}, 4, 0.1, 1.0, false, DType::float32)}};
  Executor executor;
  auto r = executor.run(feeds, {same, split});
  check_close(r[1], r[0], 0, 0);
  CHECK(executor.plan(feeds, {split}).num_copies() == 2);  // h to cpu:1, mid back to cpu:0
  CHECK(executor.plan(feeds, {same}).num_copies() == 0);
  CHECK(executor.plan(feeds, {split}).peak_bytes(cpu_device(1)) > 0);
  // Fed from another device: the plan copies the feed in.
  FeedMap remote{{x, feeds[0].second.to(cpu_device(1))}};
  check_close(executor.run(remote, {split})[0], r[0], 0, 0);
}

TEST_CASE("executor: a throttled device (set_slowdown, checked once per run) computes the same values") {
  Graph g;
  auto x = g.placeholder({-1, 8}, DType::float32, "x");
  SymbolicTensor y;
  {
    Graph::DeviceScope scope(g, "cpu:2");
    y = ops::reduce_sum(ops::multiply(x, x), {1});
  }
  auto z = ops::scale(y, 2.0);  // on cpu:0: two lanes when concurrent
  FeedMap feeds{{x, random_tensor({4, 8}, 5, 0.1, 1.0, false, DType::float32)}};
  for (bool concurrent : {false, true}) {
    CAPTURE(concurrent);
    Executor executor(cpu_device(), {.concurrent_devices = concurrent});
    const Tensor fast = executor.run(feeds, {z})[0];
    cpu_device(2).set_slowdown(3.0);
    const Tensor slow = executor.run(feeds, {z})[0];  // the same plan, now on a throttled device
    cpu_device(2).set_slowdown(1.0);
    check_close(slow, fast, 0, 0);
    CHECK(executor.plans_compiled() == 1);
  }
}

TEST_CASE("executor: a plan is reused for the same shapes and recompiled for new ones") {
  Graph g;
  auto x = g.placeholder({-1, 3}, DType::float32, "x");
  auto y = ops::reduce_sum(ops::multiply(x, x), {1});
  Executor executor;
  auto run = [&](std::int64_t batch) {
    return executor.run({{x, Tensor::full({batch, 3}, 2.0)}}, {y})[0];
  };
  check_close(run(4), std::vector<double>(4, 12.0));
  check_close(run(4), std::vector<double>(4, 12.0));
  CHECK(executor.plans_compiled() == 1);
  check_close(run(7), std::vector<double>(7, 12.0));
  CHECK(executor.plans_compiled() == 2);
  run(4);
  CHECK(executor.plans_compiled() == 2);
}

TEST_CASE("executor: feeds are checked") {
  Graph g;
  auto x = g.placeholder({-1, 3}, DType::float32, "images");
  auto y = ops::scale(x, 2.0);
  Executor executor;
  try {
    executor.run({}, {y});
    FAIL("expected ValueError");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("images") != std::string::npos);
  }
  CHECK_THROWS_AS(executor.run({{x, Tensor::zeros({2, 4})}}, {y}), ShapeError);
  CHECK_THROWS_AS(executor.run({{x, Tensor::zeros({2, 3}, DType::float64)}}, {y}), ShapeError);
  CHECK_THROWS_AS(executor.run({{y, Tensor::zeros({2, 3})}}, {y}), ValueError);
}

TEST_CASE("executor: variable updates run after every read of the old value") {
  Graph g;
  auto w = make_variable("w", Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}));
  auto x = g.placeholder({-1, 2}, DType::float32, "x");
  auto wv = g.variable(w);
  auto y = ops::reduce_sum(ops::matmul(x, wv));
  auto grads = gradients(y, {x, wv});
  // dx reads w; the update writes w. dx must see the old w.
  Node* update = ops::assign_add(wv, ops::scale(grads[1], -1.0));
  Executor executor;
  FeedMap feeds{{x, Tensor::from_vector<float>({1, 2}, {1, 1})}};
  auto r = executor.run(feeds, {grads[0]}, {update});
  check_close(r[0], {3, 7});                         // rows of w summed: old values
  check_close(w->value(), {0, 1, 2, 3});             // w -= x^T * ones
  r = executor.run(feeds, {grads[0]}, {update});
  check_close(r[0], {1, 5});
}

TEST_CASE("executor: steady-state steps allocate nothing") {
  Graph g;
  auto w = make_variable("w", Tensor::full({8, 8}, 0.1));
  auto x = g.placeholder({-1, 8}, DType::float32, "x");
  auto wv = g.variable(w);
  auto loss = ops::reduce_mean(ops::square(ops::matmul(x, wv)));
  auto grad = gradients(loss, {wv})[0];
  Node* step = ops::assign_add(wv, ops::scale(grad, -0.1));
  Executor executor;
  FeedMap feeds{{x, Tensor::full({4, 8}, 1.0)}};
  executor.run(feeds, {}, {step});
  auto before = cpu_device().memory_stats().allocations;
  for (int i = 0; i < 5; ++i) executor.run(feeds, {}, {step});
  CHECK(cpu_device().memory_stats().allocations == before);
}

namespace {

// A test op with a group kernel: var (input 0) += factor * value (input 1), in place.
std::vector<std::size_t> group_sizes;  // what the group kernel was handed, call by call

void grouped_add_kernel(KernelContext& ctx) {
  float* var = ctx.inputs[0].data<float>();
  const float* value = ctx.inputs[1].data<float>();
  const auto factor = static_cast<float>(ctx.attrs().get_float("factor"));
  for (std::int64_t i = 0; i < ctx.inputs[0].num_elements(); ++i) var[i] += factor * value[i];
}

void grouped_add_group_kernel(std::span<KernelContext> group) {
  group_sizes.push_back(group.size());
  for (KernelContext& ctx : group) grouped_add_kernel(ctx);
}

void register_grouped_add() {
  static bool done = false;
  if (done) return;
  done = true;
  register_op({.name = "test_grouped_add",
               .shape = [](const std::vector<TensorSpec>&, const Attrs&) { return std::vector<TensorSpec>{}; },
               .mutated_inputs = {0}});
  register_kernel("test_grouped_add", DeviceKind::cpu, grouped_add_kernel);
  register_group_kernel("test_grouped_add", DeviceKind::cpu, grouped_add_group_kernel);
}

}  // namespace

TEST_CASE("executor: consecutive updates of one op and attrs go to its group kernel in one call") {
  register_grouped_add();
  group_sizes.clear();
  Graph g;
  auto x = g.placeholder({3}, DType::float32, "x");
  std::vector<VariablePtr> vars;
  std::vector<Node*> updates;
  for (int i = 0; i < 4; ++i) {
    vars.push_back(make_variable("v" + std::to_string(i), Tensor::full({3}, i)));
    const double factor = i < 3 ? 1.0 : 2.0;  // the last one differs: a group of its own
    updates.push_back(&g.add_node("test_grouped_add", {g.variable(vars.back()), x}, {{"factor", factor}}));
  }
  Executor executor;
  FeedMap feeds{{x, Tensor::from_vector<float>({3}, {1, 2, 3})}};
  executor.run(feeds, {}, updates);
  CHECK(executor.plan(feeds, {}, updates).num_groups() == 1);
  CHECK(group_sizes == std::vector<std::size_t>{3});
  check_close(vars[0]->value(), {1, 2, 3});
  check_close(vars[2]->value(), {3, 4, 5});
  check_close(vars[3]->value(), {5, 7, 9});  // alone, through the single-step kernel
  executor.run(feeds, {}, updates);
  CHECK(group_sizes == std::vector<std::size_t>{3, 3});
  check_close(vars[1]->value(), {3, 5, 7});
}
