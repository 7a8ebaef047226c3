// train_mnist: trains an MLP or a convnet on MNIST-style IDX data the way the Keras multi-GPU
// tutorials do, with checkpoints, resume and full-model files. `train_mnist --help` lists every option.
// Exit codes: 0 done, 1 a runtime error (a message says what), 2 a bad command line.
#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "apps/device_args.h"
#include "tower/core/checked.h"
#include "tower/core/device.h"
#include "tower/core/random.h"
#include "tower/io/backup_and_restore.h"
#include "tower/io/datasets.h"
#include "tower/io/keras_model.h"
#include "tower/io/keras_weights.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/distribution.h"
#include "tower/parallel/multi_gpu_model.h"
#include "tower/parallel/multi_worker_mirrored_strategy.h"
#include "tower/parallel/pipeline_model.h"

#ifndef TOWER_DATA_DIR
#define TOWER_DATA_DIR "data"
#endif

using namespace tower;
using apps::UsageError;
namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace {

struct Args {
  std::string model = "mlp";
  int epochs = 5;
  std::int64_t batch_size = 128;
  std::string optimizer = "adam";
  double lr = 0.0;  // 0: the optimizer's default
  std::string data;
  std::vector<std::string> gpus;
  int cpu_devices = 1;
  std::vector<std::string> pipeline_stages;  // one device per stage (parallel::pipeline_model)
  int micro_batches = 1;
  std::vector<std::string> tensor_parallel;  // devices the Dense and Conv2D kernels are sharded over
  std::vector<std::string> ratio_args;  // as given: integers or "auto"
  std::vector<std::int64_t> ratios;      // each tower's share of a batch; empty: equal
  bool auto_ratios = false;              // --ratios auto
  int virtual_gpus = 0;              // split GPU 0 into this many logical GPUs (0: leave it whole)
  std::string cross_device_ops = "auto";
  bool cross_device_ops_given = false;  // --cross-device-ops on the command line (refused with one device)
  std::uint64_t seed = 1;
  std::string save, load, resume;
  std::int64_t backup_every = 0;
  std::int64_t train_samples = 0;
  int verbose = 1;
};

bool has_idx_files(const fs::path& dir) {
  for (const char* stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"})
    if (std::error_code ec; !fs::exists(dir / stem, ec) && !fs::exists(dir / (std::string(stem) + ".gz"), ec))
      return false;
  return true;
}

// --data, or the repository's data/ when scripts/fetch_data.sh filled it (MNIST first), else
// Debian's Fashion-MNIST.
std::string choose_data(const Args& args) {
  if (!args.data.empty()) {
    if (std::error_code ec; !fs::is_directory(args.data, ec))
      throw UsageError(fmt::format("--data {}: no such directory{}", args.data, ec ? " (" + ec.message() + ")" : ""));
    if (!has_idx_files(args.data))
      throw UsageError(fmt::format(
          "--data {}: the directory lacks the four IDX files (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte"
          "[.gz], t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]); scripts/fetch_data.sh downloads them",
          args.data));
    return args.data;
  }
  for (const fs::path dir : {fs::path(TOWER_DATA_DIR) / "mnist", fs::path(TOWER_DATA_DIR) / "fashion-mnist",
                             fs::path(io::kFashionMnistDir)})
    if (has_idx_files(dir)) return dir.string();
  throw UsageError(fmt::format("no data found in {0}/mnist, {0}/fashion-mnist or {1}; run scripts/fetch_data.sh "
                               "or pass --data DIR",
                               TOWER_DATA_DIR, io::kFashionMnistDir));
}

Args parse(int argc, char** argv) {
  Args a;
  po::options_description options(
      "Usage: train_mnist [options]\n"
      "Trains on MNIST-style IDX data and ends by printing the test loss and accuracy.\n"
      "Options");
  options.add_options()("help,h", "show this help")(
      "model", po::value(&a.model)->default_value(a.model), "mlp (Keras's mnist_mlp) or cnn (Keras's mnist_cnn)")(
      "epochs", po::value(&a.epochs)->default_value(a.epochs), "training epochs; 0 with --load evaluates only")(
      "batch-size", po::value(&a.batch_size)->default_value(a.batch_size), "global batch size")(
      "optimizer", po::value(&a.optimizer)->default_value(a.optimizer),
      "sgd, rmsprop, adam, adamw, adagrad or adadelta")(
      "lr", po::value(&a.lr)->default_value(a.lr), "learning rate; 0 = the optimizer's Keras default")(
      "data", po::value(&a.data)->default_value(""),
      "directory with the four IDX files; default: the repository's data/mnist or data/fashion-mnist (filled by "
      "scripts/fetch_data.sh), else Debian's /usr/share/datasets/fashion-mnist")(
      "gpus", po::value(&a.gpus)->multitoken()->default_value({}, ""),
      "GPUs: a count (--gpus 3) or a list of ids (--gpus 0 2 3); default: none (CPU)")(
      "cpu-devices", po::value(&a.cpu_devices)->default_value(a.cpu_devices), "CPU devices (towers) to train on")(
      "pipeline-stages", po::value(&a.pipeline_stages)->multitoken(),
      "train the model cut into consecutive stages, one per device (--pipeline-stages cpu:1 cpu:2, or cuda:0 "
      "cuda:1), its cuts balancing the stages' parameters")(
      "micro-batches", po::value(&a.micro_batches)->default_value(a.micro_batches),
      "with --pipeline-stages: micro-batches per batch (GPipe), so that the stages work at the same time")(
      "tensor-parallel", po::value(&a.tensor_parallel)->multitoken(),
      "shard the Dense and Conv2D kernels and biases by output units over these devices (--tensor-parallel cpu:1 "
      "cpu:2): Keras 3's ModelParallel on a 1 x N mesh; a layer whose units do not divide stays whole")(
      "ratios", po::value(&a.ratio_args)->multitoken(),
      "each tower's share of a batch (--ratios 3 2: 60 % and 40 %), or auto (measured in the first epoch); "
      "default: equal shares")(
      "virtual-gpus", po::value(&a.virtual_gpus)->default_value(a.virtual_gpus),
      "split GPU 0 into N logical GPUs (towers on one GPU, for testing); then --gpus counts them")(
      "cross-device-ops", po::value(&a.cross_device_ops)->default_value(a.cross_device_ops), apps::kCrossDeviceOpsHelp)(
      "seed", po::value(&a.seed)->default_value(a.seed), "random seed (weights, shuffling, dropout)")(
      "save", po::value(&a.save)->default_value(""), "write the trained model (Keras full-model .h5) to FILE")(
      "load", po::value(&a.load)->default_value(""),
      "start from FILE: a full-model .h5 (model.save, Keras's too) or a weights file for --model")(
      "resume", po::value(&a.resume)->default_value(""),
      "back up the training state in DIR and resume from it when run again (BackupAndRestore)")(
      "backup-every", po::value(&a.backup_every)->default_value(a.backup_every),
      "with --resume: also back up every N batches; 0 = at the end of each epoch only")(
      "train-samples", po::value(&a.train_samples)->default_value(a.train_samples),
      "use only the first N training samples; 0 = all")(
      "verbose", po::value(&a.verbose)->default_value(a.verbose), "0 silent, 1 progress bar, 2 one line per epoch");
  po::variables_map vm;
  try {
    apps::store_command_line(options, argc, argv, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::ostringstream help;
    help << options;
    throw UsageError(std::string(e.what()) + "\n" + help.str());
  }
  if (vm.count("help")) {
    std::cout << options << "\n";
    std::exit(0);
  }
  a.cross_device_ops_given = !vm["cross-device-ops"].defaulted();
  if (a.model != "mlp" && a.model != "cnn") throw UsageError("--model must be mlp or cnn, got " + a.model);
  if (a.epochs < 0) throw UsageError(fmt::format("--epochs must be >= 0, got {}", a.epochs));
  if (a.batch_size <= 0) throw UsageError(fmt::format("--batch-size must be > 0, got {}", a.batch_size));
  if (!(a.lr >= 0 && a.lr <= std::numeric_limits<float>::max()))  // NaN and inf too; the updates compute in float32
    throw UsageError(fmt::format("--lr must be a finite number >= 0 that float32 can hold (at most {}), got {}; 0 means "
                                 "the optimizer's default", std::numeric_limits<float>::max(), a.lr));
  if (a.cpu_devices < 1) throw UsageError(fmt::format("--cpu-devices must be >= 1, got {}", a.cpu_devices));
  int max_cpu = 0;  // refused here, before any data is read (core/device.h says what the limit is)
  try {
    max_cpu = max_cpu_devices();
  } catch (const ValueError& e) {
    throw UsageError(e.what());
  }
  if (a.cpu_devices > max_cpu)
    throw UsageError(fmt::format("--cpu-devices {} is more CPU devices than the limit of {}: give fewer, or set the "
                                 "environment variable TOWER_MAX_CPU_DEVICES (at most {}: each CPU device is a thread "
                                 "of its own and holds a copy of the weights)",
                                 a.cpu_devices, max_cpu, kMaxCpuDevicesCeiling));
  if (a.cpu_devices > 1 && !a.gpus.empty()) throw UsageError("--cpu-devices and --gpus exclude each other; give one");
  if (a.micro_batches < 1) throw UsageError(fmt::format("--micro-batches must be >= 1, got {}", a.micro_batches));
  if (!vm["micro-batches"].defaulted() && a.pipeline_stages.empty())
    throw UsageError("--micro-batches cuts the batches of a pipeline: give its stages with --pipeline-stages DEVICE...");
  if (!a.pipeline_stages.empty() && (a.cpu_devices > 1 || !a.gpus.empty() || parallel::ProcessGroup::launched_size() > 1))
    throw UsageError("--pipeline-stages with towers (--cpu-devices, --gpus) or several workers (mpirun) is not built "
                     "yet: a pipeline trains on its stages' devices alone; leave out one or the other");
  if (!a.tensor_parallel.empty() &&
      (!a.pipeline_stages.empty() || a.cpu_devices > 1 || !a.gpus.empty() || parallel::ProcessGroup::launched_size() > 1))
    throw UsageError("--tensor-parallel with --pipeline-stages, towers (--cpu-devices, --gpus) or several workers "
                     "(mpirun) is not built yet; give it alone");
  a.auto_ratios = a.ratio_args.size() == 1 && a.ratio_args[0] == "auto";
  if (!a.auto_ratios)
    for (const auto& r : a.ratio_args) {
      std::size_t used = 0;
      long long value = -1;
      try {
        value = std::stoll(r, &used);
      } catch (const std::exception&) {
      }
      if (used != r.size() || value < 0)
        throw UsageError(fmt::format("--ratios takes integers >= 0 or auto, got {}", fmt::join(a.ratio_args, " ")));
      a.ratios.push_back(value);
    }
  std::int64_t ratio_sum = 0;
  try {  // their sum must fit (the split of each batch divides by it)
    for (auto r : a.ratios)
      ratio_sum = checked_add(
          ratio_sum, r, [&] { return fmt::format("the sum of {}", fmt::join(a.ratio_args, " ")); },
          "give smaller numbers: only their proportions count (3 2 is 60 % and 40 %)");
  } catch (const ValueError& e) {
    throw UsageError(std::string("--ratios: ") + e.what());
  }
  if (!a.ratios.empty() && ratio_sum == 0)
    throw UsageError(fmt::format("--ratios {}: at least one share must be above 0", fmt::join(a.ratio_args, " ")));
  if (a.verbose < 0 || a.verbose > 2) throw UsageError(fmt::format("--verbose must be 0, 1 or 2, got {}", a.verbose));
  if (a.backup_every < 0) throw UsageError(fmt::format("--backup-every must be >= 0, got {}", a.backup_every));
  if (a.train_samples < 0) throw UsageError(fmt::format("--train-samples must be >= 0, got {}", a.train_samples));
  if (a.backup_every > 0 && a.resume.empty()) throw UsageError("--backup-every needs --resume DIR");
  try {
    (void)optimizers::get(a.optimizer);
  } catch (const Error& e) {
    throw UsageError(std::string("--optimizer: ") + e.what());
  }
  if (const std::string why = a.load.empty() ? "" : io::unreadable_reason(a.load); !why.empty())
    throw UsageError("--load " + a.load + ": " + why);
  if (!a.resume.empty()) {  // a directory, or a name BackupAndRestore can create one under
    std::error_code ec;
    const auto status = fs::status(a.resume, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw UsageError(fmt::format("--resume {}: {}", a.resume, io::unreadable_reason(a.resume)));
    if (fs::exists(status) && !fs::is_directory(status))
      throw UsageError(fmt::format("--resume {}: this is a file; give the directory to keep the backup in", a.resume));
  }
  if (!a.save.empty()) {  // everything a save can find wrong, found before training rather than after it
    try {
      io::check_writable(a.save, "--save " + a.save);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  if (a.epochs == 0 && a.load.empty()) throw UsageError("--epochs 0 evaluates a model: give it with --load FILE");
  return a;
}

// --gpus as a list of device ids: "3" means GPUs 0, 1, 2; "0 2 3" those ids.
// The first n rows of a host array (n, ...).
Tensor first_rows(const Tensor& t, std::int64_t n) {
  auto dims = t.shape().dims();
  dims[0] = n;
  Tensor out = Tensor::zeros(Shape(dims), t.dtype());
  std::memcpy(out.raw_data(), t.raw_data(), out.nbytes());
  return out;
}

// Keras's mnist_mlp and mnist_cnn architectures.
Model build_model(const std::string& kind) {
  Sequential model;
  if (kind == "mlp") {
    model.add(layers::Input({28, 28}));
    model.add(layers::Flatten());
    model.add(layers::Dense(512, {.activation = "relu"}));
    model.add(layers::Dropout(0.2));
    model.add(layers::Dense(512, {.activation = "relu"}));
    model.add(layers::Dropout(0.2));
  } else {
    model.add(layers::Input({28, 28}));
    model.add(layers::Reshape({28, 28, 1}));
    model.add(layers::Conv2D(32, {3, 3}, {.activation = "relu"}));
    model.add(layers::Conv2D(64, {3, 3}, {.activation = "relu"}));
    model.add(layers::MaxPooling2D({2, 2}));
    model.add(layers::Dropout(0.25));
    model.add(layers::Flatten());
    model.add(layers::Dense(128, {.activation = "relu"}));
    model.add(layers::Dropout(0.5));
  }
  model.add(layers::Dense(10, {.activation = "softmax"}));
  return model;
}

optimizers::OptimizerPtr make_optimizer(const Args& a) {
  if (a.lr == 0.0) return optimizers::get(a.optimizer);
  auto config = optimizers::to_config(*optimizers::get(a.optimizer));
  config["config"]["learning_rate"] = a.lr;
  return optimizers::from_config(config);
}

// A full-model file, or else a weights file for the --model architecture.
Model load_or_build(const Args& a) {
  const bool full_model = io::hdf5::File::open(a.load).has_attr("model_config");
  if (full_model) {
    std::cout << "Loading the model from " << a.load << "\n";
    Model model = models::load_model(a.load);
    if (!model.compiled()) model.compile(make_optimizer(a), "sparse_categorical_crossentropy", {"accuracy"});
    return model;
  }
  std::cout << "Loading weights for the " << a.model << " model from " << a.load << "\n";
  Model model = build_model(a.model);
  model.load_weights(a.load);
  model.compile(make_optimizer(a), "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

// Keras 3's ModelParallel for `model` on a 1 x N mesh of `devices`: every Dense and Conv2D kernel and
// bias sharded by output units where they divide by N (`sharded` gets those layers' names).
std::shared_ptr<const distribution::ModelParallel> tensor_parallel(const Model& model, const std::vector<std::string>& devices,
                                                                   std::vector<std::string>& sharded) {
  const auto n = static_cast<std::int64_t>(devices.size());
  distribution::LayoutMap layout_map(distribution::DeviceMesh({1, n}, {"batch", "model"}, devices));
  for (const auto& layer : model.layers()) {
    const auto weights = layer->weights();
    if (weights.empty() || (!dynamic_cast<const layers::Dense*>(layer.get()) && !dynamic_cast<const layers::Conv2D*>(layer.get())))
      continue;
    const Shape& kernel = weights.front()->shape();
    if (kernel[kernel.rank() - 1] % n != 0) continue;
    std::vector<std::optional<std::string>> axes(static_cast<std::size_t>(kernel.rank()));
    axes.back() = "model";
    layout_map.set(layer->name() + "/kernel", axes);
    if (weights.size() > 1) layout_map.set(layer->name() + "/bias", {"model"});
    sharded.push_back(layer->name());
  }
  return std::make_shared<const distribution::ModelParallel>(layout_map, "batch");
}

// Where a worker other than the chief writes what it would print: nowhere.
std::ostream& quiet() {
  static std::ostream null(nullptr);
  return null;
}

// The devices to train on: one (no towers) or several (parallel::multi_gpu_model's towers).
std::vector<std::string> training_devices(const Args& a) {
  apps::split_gpu0(a.virtual_gpus);
  std::vector<std::string> devices;
  if (!a.gpus.empty()) {
    devices = apps::gpu_devices(a.gpus);
  } else {
    for (int i = 0; i < a.cpu_devices; ++i) devices.push_back(fmt::format("cpu:{}", i));
  }
  if (devices.size() == 1 && a.cross_device_ops_given && parallel::ProcessGroup::launched_size() <= 1)
    throw UsageError(fmt::format("--cross-device-ops {} chooses how several devices sum their gradients, and this run "
                                 "has one device ({}): give several (--gpus N or --cpu-devices N), or leave it out",
                                 a.cross_device_ops, devices.front()));
  if (!a.ratios.empty() && a.ratios.size() != devices.size())
    throw UsageError(fmt::format("--ratios gives {} shares for {} device(s) ({}); give one per device", a.ratios.size(),
                                 devices.size(), fmt::join(devices, ", ")));
  return devices;
}

int run(const Args& a) {
  const auto devices = training_devices(a);
  Device& where = device(devices.front());  // the weights; with towers, also where outputs merge
  // Started as several processes (mpirun -np 2 train_mnist ...): each is a worker with these devices.
  std::optional<parallel::MultiWorkerMirroredStrategy> workers;
  if (parallel::ProcessGroup::launched_size() > 1 && a.auto_ratios)
    throw UsageError("--ratios auto balances the towers of one process; as several workers give the ratios (--ratios "
                     "3 1), or run one process");
  if (parallel::ProcessGroup::launched_size() > 1)
    workers.emplace(devices, parallel::MultiGpuOptions{.ratios = a.ratios,
                                                       .cross_device_ops = apps::cross_device_ops(a.cross_device_ops)});
  const bool chief = !workers || workers->is_chief();  // prints what the job did (the others are quiet)
  std::ostream& out = chief ? std::cout : quiet();
  set_random_seed(a.seed);
  const std::string dir = choose_data(a);
  auto [train, test] = io::load_mnist(dir);
  auto [x_train, y_train] = train;
  auto [x_test, y_test] = test;
  if (a.train_samples > 0 && a.train_samples < x_train.shape()[0]) {
    x_train = first_rows(x_train, a.train_samples);
    y_train = first_rows(y_train, a.train_samples);
  }
  out << fmt::format("Data: {} ({} training, {} test samples)\n", dir, x_train.shape()[0], x_test.shape()[0]);
  x_train = io::to_float(x_train, 1.0 / 255, {-1, 28, 28});
  x_test = io::to_float(x_test, 1.0 / 255, {-1, 28, 28});

  const auto make_model = [&] { return a.load.empty() ? build_model(a.model) : load_or_build(a); };
  Model model = [&] {
    DefaultDeviceScope scope(where);  // the weights, and so the training, on that device
    if (!workers) return make_model();
    auto job = workers->scope();  // the model trains as this worker's part of the job
    Model m = make_model();
    if (!m.compiled()) m.compile(make_optimizer(a), "sparse_categorical_crossentropy", {"accuracy"});
    return m;
  }();
  if (workers) {
    out << fmt::format("Training as {} workers of {} device(s) each: {} replicas in sync\n", workers->num_workers(),
                       devices.size(), workers->num_replicas_in_sync());
  } else if (!a.pipeline_stages.empty()) {
    try {
      model = parallel::pipeline_model(model, a.pipeline_stages, {.micro_batches = a.micro_batches});
    } catch (const ValueError& e) {  // a device listed twice, more stages than layers with weights
      throw UsageError(std::string("--pipeline-stages: ") + e.what());
    } catch (const NotFoundError& e) {  // a device that does not exist
      throw UsageError(std::string("--pipeline-stages: ") + e.what());
    }
    std::vector<std::string> stages;
    for (const auto& stage : parallel::pipeline_of(model)->stages())
      stages.push_back(fmt::format("{} ({})", stage.device, fmt::join(stage.layers, ", ")));
    std::cout << fmt::format("Training as a pipeline of {} stages, {} micro-batch(es) a batch: {}\n",
                             stages.size(), a.micro_batches, fmt::join(stages, "; "));
  } else if (!a.tensor_parallel.empty()) {
    std::vector<std::string> sharded;
    try {
      model.set_replication(tensor_parallel(model, a.tensor_parallel, sharded)->replication());
    } catch (const ValueError& e) {
      throw UsageError(std::string("--tensor-parallel: ") + e.what());
    } catch (const NotFoundError& e) {
      throw UsageError(std::string("--tensor-parallel: ") + e.what());
    }
    std::cout << fmt::format("Training tensor parallel over {}: {} sharded by output units\n",
                             fmt::join(a.tensor_parallel, ", "), sharded.empty() ? "nothing" : fmt::format("{}", fmt::join(sharded, ", ")));
  } else if (devices.size() > 1) {
    model = parallel::multi_gpu_model(
        model, devices, {.ratios = a.ratios,
                                   .auto_ratios = a.auto_ratios,
                                   .merge_device = where.name(),
                                   .cross_device_ops = apps::cross_device_ops(a.cross_device_ops)});
    std::cout << fmt::format("Training on {} towers: {}{}\n", devices.size(), fmt::join(devices, ", "),
                             a.ratio_args.empty() ? "" : fmt::format(" (ratios {})", fmt::join(a.ratio_args, ":")));
  } else if (&where != &cpu_device()) {
    std::cout << "Training on " << where.name() << "\n";
  }
  if (!model.compiled()) model.compile(make_optimizer(a), "sparse_categorical_crossentropy", {"accuracy"});
  if (a.verbose > 0 && chief) model.summary();

  if (a.epochs > 0) {
    // A loss that turns NaN (--lr 1e30, or a loaded file's training configuration) ends the run with an
    // error (exit 1) rather than training on to "loss: nan" and saving a useless model.
    std::vector<CallbackPtr> callbacks{std::make_shared<callbacks::TerminateOnNaN>(/*raise_error=*/true)};
    if (!a.resume.empty())
      callbacks.push_back(std::make_shared<callbacks::BackupAndRestore>(
          a.resume, callbacks::BackupAndRestoreOptions{.save_freq = a.backup_every}));
    model.fit(x_train, y_train,
              {.batch_size = a.batch_size, .epochs = a.epochs, .verbose = a.verbose, .callbacks = callbacks,
               .seed = a.seed});
  }
  if (!a.save.empty()) {
    model.save(a.save);  // by the chief only, in a job of several workers
    out << "Saved the model to " << a.save << "\n";
  }
  auto score = model.evaluate(x_test, y_test, {.batch_size = a.batch_size, .verbose = 0});
  out << "Test loss: " << score[0] << "\n";
  out << "Test accuracy: " << score[1] << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const UsageError& e) {
    std::cerr << "train_mnist: " << e.what() << "\n(train_mnist --help lists the options)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "train_mnist: " << e.what() << "\n";
    return 1;
  }
}
