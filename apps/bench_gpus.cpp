// bench_gpus: how fast each device trains alone, how fast they train together as towers, and the
// ratios that would balance them. For GPUs of different speed (or a mix of CPU devices):
//
//   bench_gpus --gpus 0 1 --batches 512 355        # each GPU's own batch; together: ratios 512:355
//   bench_gpus --devices cpu:0 cpu:1 --slowdown cpu:1=2
//
// Each device first trains the model alone (its weights there) on its batch; then all train one
// parallel::multi_gpu_model (mirrored variables) on the sum of the batches, split by those batches.
// It prints samples/s alone and together, each device's busy share of the together steps (a device
// that is rarely busy is one that is not really used), and the ratios proportional to the devices'
// speed alone, for train_mnist --ratios or MultiGpuOptions::ratios. Synthetic MNIST-sized data.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <iostream>
#include <numeric>

#include "apps/device_args.h"
#include "apps/mnist_models.h"
#include "tower/core/executor.h"
#include "tower/core/random.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/multi_gpu_model.h"

using namespace tower;

namespace {

struct Args {
  std::vector<std::string> gpus, devices, slowdowns;
  std::vector<std::int64_t> batches{256};
  std::string model = "cnn";
  int steps = 20;
  int virtual_gpus = 0;
  std::string cross_device_ops = "auto";
};

// Random inputs and class ids for a batch of n.
std::pair<Tensor, Tensor> synthetic_batch(const std::string& kind, std::int64_t n) {
  const Shape shape = kind == "mlp" ? Shape{n, 784} : Shape{n, 28, 28, 1};
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i) labels.push_back(static_cast<std::int32_t>((i * 7) % 10));
  return {random_uniform(shape, 0.0, 1.0, 5), Tensor::from_vector<std::int32_t>({n}, labels)};
}

Model compiled(Model model, const std::string& kind) {
  if (kind == "mlp")
    model.compile(optimizers::RMSprop(), "sparse_categorical_crossentropy");
  else
    model.compile(optimizers::Adadelta(1.0), "sparse_categorical_crossentropy");
  return model;
}

struct Timing {
  double samples_per_second = 0;
  std::vector<double> busy_seconds;  // per device (towers only)
  double seconds = 0;
};

// `steps` timed train_on_batch calls after two untimed ones (plans compiled, memory cached).
Timing time_steps(Model& model, const Tensor& x, const Tensor& y, int steps, const std::vector<std::string>& devices) {
  for (int i = 0; i < 2; ++i) model.train_on_batch({x}, {y});
  Timing t;
  t.busy_seconds.assign(devices.size(), 0.0);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    model.train_on_batch({x}, {y});  // its loss is read back: every step ends on the host
    if (const Plan* plan = model.last_plan(Model::Mode::train); plan && plan->num_lanes() > 1)
      for (std::size_t d = 0; d < devices.size(); ++d) t.busy_seconds[d] += plan->busy_seconds(device(devices[d]));
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.samples_per_second = static_cast<double>(x.shape()[0]) * steps / t.seconds;
  return t;
}

// Integer ratios proportional to `speeds` that add up to `total` (largest remainder).
std::vector<std::int64_t> balancing_ratios(const std::vector<double>& speeds, std::int64_t total) {
  const double sum = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  std::vector<std::int64_t> ratios;
  std::vector<std::pair<double, std::size_t>> remainders;
  std::int64_t given = 0;
  for (std::size_t i = 0; i < speeds.size(); ++i) {
    const double exact = static_cast<double>(total) * speeds[i] / sum;
    ratios.push_back(static_cast<std::int64_t>(std::floor(exact)));
    given += ratios.back();
    remainders.emplace_back(exact - std::floor(exact), i);
  }
  std::sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; given < total; ++k, ++given) ++ratios[remainders[k % remainders.size()].second];
  return ratios;
}

int run(const Args& a) {
  apps::split_gpu0(a.virtual_gpus);
  apps::apply_slowdowns(a.slowdowns);
  std::vector<std::string> devices = a.devices;
  if (!a.gpus.empty()) devices = apps::gpu_devices(a.gpus);
  if (devices.empty() && device_count(DeviceKind::cuda) == 0)
    throw apps::UsageError("no GPU is visible (no CUDA device, or tower was built without CUDA); measure CPU devices "
                           "with --devices cpu:0 cpu:1");
  if (devices.empty()) devices = apps::gpu_devices({std::to_string(device_count(DeviceKind::cuda))});
  for (auto& d : devices) d = device(d).name();  // an unknown device: NotFoundError naming the visible ones
  std::vector<std::int64_t> batches = a.batches;
  if (batches.size() == 1) batches.assign(devices.size(), batches.front());
  if (batches.size() != devices.size())
    throw apps::UsageError(fmt::format("--batches gives {} sizes for {} devices ({}); give one, or one per device",
                                       batches.size(), devices.size(), fmt::join(devices, ", ")));
  for (auto b : batches)
    if (b <= 0) throw apps::UsageError(fmt::format("--batches must be > 0, got {}", fmt::join(batches, " ")));
  if (a.steps <= 0) throw apps::UsageError(fmt::format("--steps must be > 0, got {}", a.steps));

  std::cout << fmt::format("bench_gpus: {} on {}, {} timed steps each\n", a.model, fmt::join(devices, ", "), a.steps);
  std::vector<double> alone;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    set_random_seed(1);
    Model model = [&] {
      DefaultDeviceScope on(devices[d]);
      return compiled(apps::mnist_model(a.model), a.model);
    }();
    const auto [x, y] = synthetic_batch(a.model, batches[d]);
    alone.push_back(time_steps(model, x, y, a.steps, {devices[d]}).samples_per_second);
    std::cout << fmt::format("  alone     {:<8} batch {:>5}  {:>10.0f} samples/s\n", devices[d], batches[d], alone.back());
  }
  const double sum_alone = std::accumulate(alone.begin(), alone.end(), 0.0);
  const std::int64_t global = std::accumulate(batches.begin(), batches.end(), std::int64_t{0});
  if (devices.size() > 1) {
    set_random_seed(1);
    Sequential inner = [&] {
      DefaultDeviceScope on(devices.front());
      return apps::mnist_model(a.model);
    }();
    Model towers = compiled(parallel::multi_gpu_model(inner, devices, {.ratios = batches,
                                                                 .merge_device = devices.front(),
                                                                 .cross_device_ops = apps::cross_device_ops(a.cross_device_ops)}),
                            a.model);
    const auto [x, y] = synthetic_batch(a.model, global);
    const Timing together = time_steps(towers, x, y, a.steps, devices);
    std::cout << fmt::format("  together  ratios {}, batch {}: {:.0f} samples/s ({:.0f} % of the sum alone, {:.2f}x the "
                             "fastest alone)\n",
                             fmt::join(batches, ":"), global, together.samples_per_second,
                             100.0 * together.samples_per_second / sum_alone,
                             together.samples_per_second / *std::max_element(alone.begin(), alone.end()));
    for (std::size_t d = 0; d < devices.size(); ++d)
      std::cout << fmt::format("            {:<8} busy {:>3.0f} % of the steps\n", devices[d],
                               100.0 * together.busy_seconds[d] / together.seconds);
  }
  const auto ratios = balancing_ratios(alone, global);
  std::cout << fmt::format("balancing ratios (speed alone, for a global batch of {}): {}\n", global, fmt::join(ratios, ":"));
  std::cout << fmt::format("  e.g. bench_gpus ... --batches {}   or   MultiGpuOptions{{.ratios = {{{}}}}}\n",
                           fmt::join(ratios, " "), fmt::join(ratios, ", "));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  Args a;
  po::options_description options("Usage: bench_gpus [options]\nOptions");
  options.add_options()("help,h", "show this help")(
      "gpus", po::value(&a.gpus)->multitoken(), "GPUs: a count (3) or ids (0 2 3); default: every visible GPU")(
      "devices", po::value(&a.devices)->multitoken(), "any devices instead of --gpus (cpu:0 cpu:1, cuda:0 cpu:0)")(
      "batches", po::value(&a.batches)->multitoken(),
      "each device's batch (one value: the same for all); together they train on the sum, split in these ratios")(
      "model", po::value(&a.model)->default_value(a.model), "cnn or mlp (Keras's mnist_cnn, mnist_mlp)")(
      "steps", po::value(&a.steps)->default_value(a.steps), "timed training steps per measurement")(
      "virtual-gpus", po::value(&a.virtual_gpus)->default_value(a.virtual_gpus),
      "split GPU 0 into N logical GPUs first (then --gpus counts them)")(
      "slowdown", po::value(&a.slowdowns)->multitoken(),
      "DEVICE=FACTOR: run DEVICE FACTOR times slower (a test throttle), e.g. cpu:1=2")(
      "cross-device-ops", po::value(&a.cross_device_ops)->default_value(a.cross_device_ops), apps::kCrossDeviceOpsHelp);
  try {
    if (!apps::parse_command_line(options, argc, argv)) return 0;
    if (a.model != "mlp" && a.model != "cnn") throw apps::UsageError("--model must be mlp or cnn, got " + a.model);
    if (!a.gpus.empty() && !a.devices.empty()) throw apps::UsageError("--gpus and --devices exclude each other");
    return run(a);
  } catch (const po::error& e) {
    std::cerr << "bench_gpus: " << e.what() << "\n" << options << "\n";
    return 2;
  } catch (const apps::UsageError& e) {
    std::cerr << "bench_gpus: " << e.what() << "\n(bench_gpus --help lists the options)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "bench_gpus: " << e.what() << "\n";
    return 1;
  }
}
