// Whole-step graphs without a GPU: a test device whose kernels are queued closures (run later, in
// order, as on a stream) and a recorder that records them, driving the Plan's rules (core/plan_graphs.cpp):
// warm-up, one recording per feed slot, replays, the feed slots' alternation and their hazards, random
// counters and fed values advancing across replays, fallbacks said once, a new shape recorded anew, and
// the switches of core/config.h.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "tower/core/config.h"
#include "tower/core/executor.h"
#include "tower/core/step_graph.h"

using namespace tower;

namespace {

// A device like a GPU: not host-accessible, its work queued and run later in order (flush(), or when the
// host reads a result), recorded instead while a step is being recorded.
class QueueDevice final : public Device {
 public:
  QueueDevice() : Device(DeviceKind::cpu, 901, "queue:0") {}
  bool host_accessible() const override { return false; }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override {
    flush();  // like a synchronous copy: what is queued first is done
    std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    flush();
    std::memcpy(dst, src, bytes);
  }
  void copy_within(void* dst, const void* src, std::size_t bytes) override {
    launch([=] { std::memcpy(dst, src, bytes); });
  }
  void synchronize() override { flush(); }

  // Queues work (recorded while `recording` is set).
  void launch(std::function<void()> work) {
    if (recording)
      recording->push_back(std::move(work));
    else
      queue.push_back(std::move(work));
  }
  // Runs the queued work until `until` holds (or all of it).
  void flush(const std::function<bool()>& until = nullptr) {
    while (!queue.empty() && !(until && until())) {
      auto work = std::move(queue.front());
      queue.pop_front();
      work();
    }
  }

  std::deque<std::function<void()>> queue;
  std::vector<std::function<void()>>* recording = nullptr;
  int kernels_launched = 0;  // kernel calls made by the host (recorded or queued), not replays

 protected:
  void* do_allocate(std::size_t bytes) override { return ::operator new(bytes); }
  void do_deallocate(void* ptr, std::size_t) override { ::operator delete(ptr); }
};

QueueDevice& queue_device() {
  static QueueDevice* device = new QueueDevice();  // never destroyed, like the registry's GPUs
  return *device;
}

// What the recorder saw, in order: "begin", "end", "replay", "upload 0", "step 1", "wait 0".
std::vector<std::string> events;
bool fail_next_end = false;

class QueueGraph final : public StepGraph {
 public:
  explicit QueueGraph(std::vector<std::function<void()>> work) : work_(std::move(work)) {}
  // As the CUDA graph waits for its stream: no queued work may outlive the memory it uses.
  ~QueueGraph() override { queue_device().flush(); }
  void replay() override {
    events.push_back("replay");
    for (const auto& w : work_) queue_device().launch(w);
  }

 private:
  std::vector<std::function<void()>> work_;
};

class QueueRecorder final : public StepRecorder {
 public:
  ~QueueRecorder() override { queue_device().flush(); }  // queued uploads use this recorder's flags
  void begin() override {
    events.push_back("begin");
    recorded_.clear();
    queue_device().recording = &recorded_;
  }
  std::unique_ptr<StepGraph> end() override {
    events.push_back("end");
    queue_device().recording = nullptr;
    if (fail_next_end) {
      fail_next_end = false;
      raise<Error>("the test recorder refuses this recording");
    }
    return std::make_unique<QueueGraph>(std::move(recorded_));
  }
  void abort() noexcept override {
    events.push_back("abort");
    queue_device().recording = nullptr;
    recorded_.clear();
  }
  // Like cudaEventSynchronize on the slot's last upload: runs the queue until that upload is done, and
  // no further, so a test sees it when the plan writes a host block an upload still reads.
  void wait_host_slot(int slot) override {
    events.push_back("wait " + std::to_string(slot));
    queue_device().flush([&] { return !uploading_[slot]; });
  }
  void upload(int slot, void* dst, const void* src, std::size_t bytes) override {
    CHECK_MESSAGE(last_step_ != slot, "two uploads into slot ", slot, " with no step reading the other between");
    events.push_back("upload " + std::to_string(slot));
    uploading_[slot] = true;
    queue_device().launch([this, slot, dst, src, bytes] {
      std::memcpy(dst, src, bytes);
      uploading_[slot] = false;
    });
  }
  void step_queued(int slot) override {
    events.push_back("step " + std::to_string(slot));
    last_step_ = slot;
  }

 private:
  std::vector<std::function<void()>> recorded_;
  bool uploading_[2] = {false, false};
  int last_step_ = -1;
};

// Installs the recorder for the queue device (other CPU devices record nothing) while it lives.
struct RecorderScope {
  RecorderScope() {
    events.clear();
    fail_next_end = false;
    queue_device().kernels_launched = 0;
    reset_step_graph_warnings();
    previous = register_step_recorder(DeviceKind::cpu, [](Device& d) -> std::unique_ptr<StepRecorder> {
      if (&d != &queue_device()) return nullptr;
      return std::make_unique<QueueRecorder>();
    });
    previous_handler = set_step_graph_warning_handler([this](const std::string& m) { warnings.push_back(m); });
  }
  ~RecorderScope() {
    queue_device().flush();
    register_step_recorder(DeviceKind::cpu, previous);
    set_step_graph_warning_handler(previous_handler);
    config::enable_cuda_graphs(true);
  }
  StepRecorderFactory previous;
  StepGraphWarningHandler previous_handler;
  std::vector<std::string> warnings;
};

// The test ops' kernels work on the queue device as a GPU kernel would: they read their pointers when
// the work runs, not when it is queued. On an ordinary CPU device they run at once.
void run_on(Device& device, std::function<void()> work) {
  auto* q = dynamic_cast<QueueDevice*>(&device);
  if (!q) return work();
  ++q->kernels_launched;
  q->launch(std::move(work));
}

// y = x * factor
void scale_kernel(KernelContext& ctx) {
  const float* x = ctx.inputs[0].data<float>();
  float* y = ctx.outputs[0].data<float>();
  const auto n = ctx.inputs[0].num_elements();
  const auto factor = static_cast<float>(ctx.attrs().get_float("factor"));
  run_on(ctx.device, [=] {
    for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * factor;
  });
}

// y = x + the node's random counter (a stand-in for dropout: what matters is which counter it sees).
void counter_kernel(KernelContext& ctx) {
  const float* x = ctx.inputs[0].data<float>();
  float* y = ctx.outputs[0].data<float>();
  const auto n = ctx.inputs[0].num_elements();
  const std::uint64_t counter = ctx.node.next_random_counter();
  const std::uint64_t* on_device = recorded_random_counter(ctx.node, counter);
  run_on(ctx.device, [=] {
    const auto c = static_cast<float>(on_device ? *on_device : counter);
    for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] + c;
  });
}

// y = x + s (s a fed scalar: the optimizer's step count, read where the kernel runs).
void add_scalar_kernel(KernelContext& ctx) {
  const float* x = ctx.inputs[0].data<float>();
  const float* scalar = ctx.inputs[1].data<float>();
  float* y = ctx.outputs[0].data<float>();
  const auto n = ctx.inputs[0].num_elements();
  run_on(ctx.device, [=] {
    for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] + *scalar;
  });
}

void register_test_ops() {
  static bool done = false;
  if (done) return;
  done = true;
  const auto same = [](const std::vector<TensorSpec>& in, const Attrs&) { return std::vector<TensorSpec>{in[0]}; };
  register_op({.name = "test_graph_scale", .shape = same});
  register_op({.name = "test_graph_counter", .shape = same});
  register_op({.name = "test_graph_host_op", .shape = same});
  register_op({.name = "test_graph_add_scalar", .shape = same});
  register_kernel("test_graph_scale", DeviceKind::cpu, scale_kernel);
  register_kernel("test_graph_counter", DeviceKind::cpu, counter_kernel);
  register_kernel("test_graph_host_op", DeviceKind::cpu, scale_kernel);
  register_kernel("test_graph_add_scalar", DeviceKind::cpu, add_scalar_kernel);
  register_not_capturable("test_graph_host_op", DeviceKind::cpu, "it calls back into the host");
}

Tensor batch(std::int64_t rows, float first) {
  std::vector<float> v(static_cast<std::size_t>(rows * 3));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<float>(i);
  return Tensor::from_vector<float>({rows, 3}, v);
}

// A training-like step: y = scale(counter(x), 2) (dropout's stand-in), z = x + iteration (what reads the
// optimizer's step count). Both fetched.
struct StepModel {
  Graph g;
  SymbolicTensor x = g.placeholder({-1, 3}, DType::float32, "x");
  SymbolicTensor iteration = g.placeholder({}, DType::float32, "iteration");
  SymbolicTensor y, z;
  std::vector<std::vector<float>> z_results;  // of the last train()
  explicit StepModel(const std::string& op = "test_graph_scale") {
    register_test_ops();
    y = g.add1(op, {g.add1("test_graph_counter", {x})}, {{"factor", 2.0}});
    z = g.add1("test_graph_add_scalar", {x, iteration});
  }
  FeedMap feeds(const Tensor& xs, int step) {
    return {{x, xs}, {iteration, Tensor::from_vector<float>({}, {static_cast<float>(step)})}};
  }
};

// Runs `steps` steps as the trainer does (random counters set to the step number first) without
// waiting for any of them, then reads every step's fetches: each step's results must be its own batch's.
std::vector<std::vector<float>> train(StepModel& m, Executor& executor, int steps, std::int64_t rows = 4) {
  std::vector<std::vector<Tensor>> fetched;
  for (int step = 1; step <= steps; ++step) {
    m.g.set_random_counters(static_cast<std::uint64_t>(100 * step));
    fetched.push_back(executor.run(m.feeds(batch(rows, static_cast<float>(step)), step), {m.y, m.z}));
  }
  std::vector<std::vector<float>> out;
  m.z_results.clear();
  for (const auto& t : fetched) {
    out.push_back(t[0].to(cpu_device()).to_vector<float>());
    m.z_results.push_back(t[1].to(cpu_device()).to_vector<float>());
  }
  return out;
}

// z of a step: its batch plus the step number.
std::vector<float> expected_z(int step, std::int64_t rows = 4) {
  std::vector<float> v = batch(rows, static_cast<float>(step)).to_vector<float>();
  for (float& e : v) e += static_cast<float>(step);
  return v;
}

// What every step should give: (x + 100·step) · 2 for the batch of that step.
std::vector<float> expected(int step, std::int64_t rows = 4) {
  std::vector<float> v = batch(rows, static_cast<float>(step)).to_vector<float>();
  for (float& e : v) e = (e + static_cast<float>(100 * step)) * 2;
  return v;
}

int count(const std::string& event) {
  return static_cast<int>(std::count(events.begin(), events.end(), event));
}

}  // namespace

TEST_CASE("step graphs: a warm-up step, one recording per feed slot, then one replay per step") {
  RecorderScope scope;
  StepModel m;
  Executor executor(queue_device());
  const auto results = train(m, executor, 6);
  for (int step = 1; step <= 6; ++step) {
    CHECK(results[static_cast<std::size_t>(step - 1)] == expected(step));
    CHECK(m.z_results[static_cast<std::size_t>(step - 1)] == expected_z(step));
  }
  const Plan& plan = *executor.last_plan();
  CHECK(plan.graph_captures() == 2);
  CHECK(plan.replays_graph());
  CHECK(plan.graph_fallback_reason().empty());
  CHECK(scope.warnings.empty());
  CHECK(count("begin") == 2);
  CHECK(count("end") == 2);
  CHECK(count("replay") == 5);  // the two recorded steps are launched once recorded, then steps 4 to 6
  // The kernels were called by the host in the warm-up and the two recordings only: 3 kernels each.
  CHECK(queue_device().kernels_launched == 9);
  // The feed slots alternate: warm-up in slot 0, recordings of slot 1 then slot 0, replays 1, 0, 1.
  std::vector<std::string> uploads, steps;
  for (const auto& e : events) {
    if (e.starts_with("upload")) uploads.push_back(e);
    if (e.starts_with("step")) steps.push_back(e);
  }
  CHECK(uploads == std::vector<std::string>{"upload 0", "upload 1", "upload 0", "upload 1", "upload 0", "upload 1"});
  CHECK(steps == std::vector<std::string>{"step 0", "step 1", "step 0", "step 1", "step 0", "step 1"});
  // The host waits for a slot's last upload before it writes that slot's host block again.
  const auto first_wait_0 = std::find(events.begin() + 1, events.end(), "wait 0");
  CHECK(std::find(events.begin(), first_wait_0, "upload 0") != first_wait_0);
}

TEST_CASE("step graphs: random counters and fed step counts advance across replays, as in eager steps") {
  RecorderScope scope;
  StepModel graphs;
  Executor executor(queue_device());
  const auto graph_results = train(graphs, executor, 7);
  CHECK(executor.last_plan()->replays_graph());
  config::enable_cuda_graphs(false);
  StepModel eager;
  Executor eager_executor(queue_device());
  const auto eager_results = train(eager, eager_executor, 7);
  CHECK_FALSE(eager_executor.last_plan()->replays_graph());
  CHECK(eager_executor.last_plan()->graph_captures() == 0);
  config::enable_cuda_graphs(true);
  // Each replay read its own step number from the feed block.
  for (int step = 1; step <= 7; ++step) {
    CHECK(graphs.z_results[static_cast<std::size_t>(step - 1)] == expected_z(step));
    CHECK(eager.z_results[static_cast<std::size_t>(step - 1)] == expected_z(step));
  }
  // Each replay drew the node's counter (and the host's count moved on as in an eager step).
  for (int step = 1; step <= 7; ++step) {
    CHECK(graph_results[static_cast<std::size_t>(step - 1)] == expected(step));
    CHECK(eager_results[static_cast<std::size_t>(step - 1)] == expected(step));
  }
  const Node& counter = *graphs.y.node()->inputs()[0].node();
  CHECK(counter.next_random_counter() == 701);
}

TEST_CASE("step graphs: an op that cannot be recorded runs the plan eagerly, said once") {
  RecorderScope scope;
  StepModel m("test_graph_host_op");
  Executor executor(queue_device());
  const auto results = train(m, executor, 4);
  for (int step = 1; step <= 4; ++step) CHECK(results[static_cast<std::size_t>(step - 1)] == expected(step));
  const Plan& plan = *executor.last_plan();
  CHECK_FALSE(plan.replays_graph());
  CHECK(plan.graph_captures() == 0);
  CHECK(plan.graph_fallback_reason().find("calls back into the host") != std::string::npos);
  CHECK(count("begin") == 0);
  // A second batch size is a second plan with the same op: no second warning.
  train(m, executor, 2, 5);
  REQUIRE(scope.warnings.size() == 1);
  CHECK(scope.warnings[0].find("queue:0") != std::string::npos);
  CHECK(scope.warnings[0].find("without a CUDA graph") != std::string::npos);
}

TEST_CASE("step graphs: a failed recording falls back to eager steps with the same numbers") {
  RecorderScope scope;
  StepModel m;
  Executor executor(queue_device());
  fail_next_end = true;  // the recording of step 2 fails
  const auto results = train(m, executor, 5);
  for (int step = 1; step <= 5; ++step) {
    CHECK(results[static_cast<std::size_t>(step - 1)] == expected(step));
    CHECK(m.z_results[static_cast<std::size_t>(step - 1)] == expected_z(step));
  }
  const Plan& plan = *executor.last_plan();
  CHECK_FALSE(plan.replays_graph());
  CHECK(plan.graph_fallback_reason().find("refuses this recording") != std::string::npos);
  CHECK(count("begin") == 1);
  CHECK(count("replay") == 0);
  CHECK(scope.warnings.size() == 1);
}

TEST_CASE("step graphs: a new batch shape is a new plan, recorded anew") {
  RecorderScope scope;
  StepModel m;
  Executor executor(queue_device());
  auto a = train(m, executor, 4, 4);
  const Plan* first = executor.last_plan();
  auto b = train(m, executor, 4, 2);
  const Plan* second = executor.last_plan();
  CHECK(first != second);
  CHECK(executor.plans_compiled() == 2);
  CHECK(first->graph_captures() == 2);
  CHECK(second->graph_captures() == 2);
  for (int step = 1; step <= 4; ++step) {
    CHECK(a[static_cast<std::size_t>(step - 1)] == expected(step, 4));
    CHECK(b[static_cast<std::size_t>(step - 1)] == expected(step, 2));
  }
}

TEST_CASE("step graphs: switched off, a plan runs eagerly; switched on again, it warms up and records again") {
  RecorderScope scope;
  StepModel m;
  Executor executor(queue_device());
  train(m, executor, 3);
  CHECK(executor.last_plan()->graph_captures() == 2);
  const std::uint64_t generation = config::generation();
  config::enable_cuda_graphs(false);
  CHECK_FALSE(config::cuda_graphs_enabled());
  CHECK(config::generation() != generation);
  const auto eager = train(m, executor, 2);
  CHECK_FALSE(executor.last_plan()->replays_graph());
  CHECK(eager[1] == expected(2));
  config::enable_cuda_graphs(true);
  events.clear();
  const auto again = train(m, executor, 4);
  CHECK(count("begin") == 2);  // recorded again after one warm-up step
  CHECK(executor.last_plan()->graph_captures() == 4);
  for (int step = 1; step <= 4; ++step) CHECK(again[static_cast<std::size_t>(step - 1)] == expected(step));
  CHECK(scope.warnings.empty());
}

TEST_CASE("step graphs: steps on several devices run eagerly with one warning; CPU plans say nothing") {
  RecorderScope scope;
  register_test_ops();
  Graph g;
  auto x = g.placeholder({2, 3}, DType::float32, "x");
  SymbolicTensor h;
  {
    Graph::DeviceScope on_cpu(g, "cpu:0");
    h = g.add1("test_graph_scale", {x}, {{"factor", 3.0}});
  }
  auto y = g.add1("test_graph_scale", {h}, {{"factor", 2.0}});
  // One thread for both devices: the queue device is not made for lanes on threads of their own.
  Executor executor(queue_device(), PlanOptions{.concurrent_devices = false});
  FeedMap feeds{{x, batch(2, 1)}};
  for (int i = 0; i < 3; ++i) {
    const auto r = executor.run(feeds, {y})[0].to(cpu_device()).to_vector<float>();
    CHECK(r == std::vector<float>{6, 12, 18, 24, 30, 36});
  }
  CHECK(executor.last_plan()->graph_fallback_reason().find("several devices") != std::string::npos);
  CHECK(scope.warnings.size() == 1);

  Executor on_cpu;  // cpu:0 records nothing: eager, without a word
  for (int i = 0; i < 3; ++i) on_cpu.run(feeds, {y});
  CHECK(on_cpu.last_plan()->graph_fallback_reason().empty());
  CHECK_FALSE(on_cpu.last_plan()->replays_graph());
  CHECK(scope.warnings.size() == 1);
}

TEST_CASE("config: TF32 is off by default and its switch counts as a change") {
  CHECK_FALSE(config::tensor_float_32_execution_enabled());
  const std::uint64_t before = config::generation();
  config::enable_tensor_float_32_execution(true);
  CHECK(config::tensor_float_32_execution_enabled());
  CHECK(config::generation() == before + 1);
  config::enable_tensor_float_32_execution(true);  // no change: no new generation
  CHECK(config::generation() == before + 1);
  config::enable_tensor_float_32_execution(false);
  CHECK_FALSE(config::tensor_float_32_execution_enabled());
  CHECK(config::generation() == before + 2);
}
