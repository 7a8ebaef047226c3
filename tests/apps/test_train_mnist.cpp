// apps/train_mnist as a user meets it: --help, bad values (a message and exit code 2), bad data and
// files (a message and exit code 1, never a crash), --save then --epochs 0 --load evaluating only.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/errors.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/grad_check.h"
#include "tower/io/keras_model.h"

using tower::testing::contains;
using tower::testing::ProcessResult;
using tower::testing::run_process;
using tower::testing::TempDir;
using tower::testing::write_idx_set;
namespace fs = std::filesystem;

namespace {

ProcessResult train_mnist(std::vector<std::string> args, const TempDir& dir) {
  args.insert(args.begin(), TOWER_TRAIN_MNIST);
  return run_process(args, dir);
}

// The number printed after `label` ("Test loss: 2.30163" -> "2.30163").
std::string value_after(const std::string& output, const std::string& label) {
  const auto at = output.find(label);
  if (at == std::string::npos) return "";
  const auto start = at + label.size();
  return output.substr(start, output.find('\n', start) - start);
}

}  // namespace

TEST_CASE("train_mnist --help lists every option with its default") {
  TempDir dir("app");
  const auto r = train_mnist({"--help"}, dir);
  CHECK(r.exit_code == 0);
  for (const char* option : {"--model arg (=mlp)", "--epochs arg (=5)", "--batch-size arg (=128)",
                             "--optimizer arg (=adam)", "--lr arg (=0)", "--data arg", "--gpus arg",
                             "--cpu-devices arg (=1)", "--seed arg (=1)", "--save arg", "--load arg", "--resume arg",
                             "--backup-every arg (=0)", "--train-samples arg (=0)", "--verbose arg (=1)",
                             "--ratios arg", "--virtual-gpus arg (=0)", "--cross-device-ops arg (=auto)"})
    CHECK_MESSAGE(contains(r.output, option), option << " is not in:\n" << r.output);
}

TEST_CASE("train_mnist: bad values end with a message naming the option and exit code 2") {
  TempDir dir("app");
  write_idx_set(dir.path, 64, 16);
  const std::string data = dir.path.string();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--model", "resnet"}, "--model must be mlp or cnn, got resnet"},
      {{"--epochs", "-1"}, "--epochs must be >= 0, got -1"},
      {{"--epochs", "two"}, "epochs"},
      {{"--batch-size", "0"}, "--batch-size must be > 0"},
      {{"--optimizer", "adamax2"}, "--optimizer"},
      {{"--lr", "-0.1"}, "--lr must be a finite number >= 0"},
      {{"--verbose", "3"}, "--verbose must be 0, 1 or 2"},
      {{"--cpu-devices", "0"}, "--cpu-devices must be >= 1"},
      {{"--data", data + "/missing"}, "no such directory"},
      {{"--data", (dir.path / "..").string()}, "lacks the four IDX files"},
      {{"--load", dir / "none.h5"}, "--load " + (dir / "none.h5") + ": no such file"},
      {{"--save", dir / "no/such/dir/m.h5"}, "does not exist"},
      {{"--epochs", "0"}, "--epochs 0 evaluates a model: give it with --load FILE"},
      {{"--backup-every", "5"}, "--backup-every needs --resume DIR"},
      {{"--gpus", "two"}, "--gpus takes a count or a list of GPU ids"},
      {{"--cpu-devices", "2", "--ratios", "1", "2", "3"}, "--ratios gives 3 shares for 2 device(s) (cpu:0, cpu:1)"},
      {{"--cpu-devices", "2", "--gpus", "1"}, "--cpu-devices and --gpus exclude each other"},
      {{"--ratios", "-1"}, "--ratios takes integers >= 0 or auto"},
      {{"--ratios", "fast"}, "--ratios takes integers >= 0 or auto"},
      {{"--cpu-devices", "2", "--cross-device-ops", "nccl"}, "--cross-device-ops takes auto, all_reduce or one_device"},
      {{"--no-such-option"}, "unrecognised option"},
      {{"--micro-batches", "0"}, "--micro-batches must be >= 1, got 0"},
      {{"--micro-batches", "4"}, "--micro-batches cuts the batches of a pipeline: give its stages with --pipeline-stages"},
      {{"--pipeline-stages", "cpu:1", "cpu:1"}, "--pipeline-stages: pipeline_model: device cpu:1 is listed twice"},
      {{"--pipeline-stages", "cpu:1", "cpu:2", "--cpu-devices", "2"}, "--pipeline-stages with towers (--cpu-devices, "
                                                                       "--gpus) or several workers (mpirun) is not built yet"},
      {{"--tensor-parallel", "cpu:1", "--pipeline-stages", "cpu:2"}, "--tensor-parallel with --pipeline-stages"},
      {{"--tensor-parallel", "cpu:1", "cpu:1"}, "--tensor-parallel: DeviceMesh: device cpu:1 is listed twice"},
      // Empty and stray values (issue 37): refused, not taken as "the default" or "nothing".
      {{"--data", ""}, "--data \"\": the value is empty; give one, or leave --data out"},
      {{"--save", ""}, "--save \"\": the value is empty"},
      {{"--resume", ""}, "--resume \"\": the value is empty"},
      {{"--load", ""}, "--load \"\": the value is empty"},
      {{"--epochs", "1", "model.h5"}, "unexpected argument \"model.h5\""},
      {{"--cross-device-ops", "all_reduce"}, "--cross-device-ops all_reduce chooses how several devices sum their "
                                             "gradients, and this run has one device (cpu:0)"},
  };
  for (const auto& c : cases) {
    auto args = c.args;
    if (args[0] != "--data") args.insert(args.end(), {"--data", data});
    const auto r = train_mnist(args, dir);
    CAPTURE(args[0]);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(contains(r.output, c.message), "expected \"" << c.message << "\" in:\n" << r.output);
  }
}

TEST_CASE("train_mnist: bad data and bad files end with a message and exit code 1, never a crash") {
  TempDir dir("app");
  write_idx_set(dir.path, 64, 16);
  const std::vector<std::string> quick = {"--data", dir.path.string(), "--epochs", "1", "--verbose", "0"};
  auto with = [&](std::vector<std::string> extra) {
    auto args = quick;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };

  SUBCASE("a truncated image file") {
    fs::resize_file(dir.path / "train-images-idx3-ubyte", 1000);
    const auto r = train_mnist(quick, dir);
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(contains(r.output, "train-images-idx3-ubyte"), r.output);
  }
  SUBCASE("a label out of range for the 10-unit softmax") {
    std::fstream labels(dir.path / "train-labels-idx1-ubyte", std::ios::in | std::ios::out | std::ios::binary);
    labels.seekp(8 + 3);  // the fourth label, after the 8-byte header
    labels.put(static_cast<char>(12));
    labels.close();
    const auto r = train_mnist(quick, dir);
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(contains(r.output, "label 12"), r.output);
  }
  SUBCASE("--lr 1e30: the loss turns NaN, and the run ends there (TerminateOnNaN), saving nothing") {
    const auto r = train_mnist(with({"--optimizer", "sgd", "--lr", "1e30", "--batch-size", "8", "--save", dir / "m.h5"}), dir);
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(contains(r.output, "Warning: fit: the loss of model"), r.output);
    CHECK_MESSAGE(contains(r.output, "NaN or Inf loss encountered at batch"), r.output);
    CHECK_FALSE(fs::exists(dir / "m.h5"));
  }
  SUBCASE("--load of a file that is not HDF5") {
    std::ofstream(dir / "text.h5") << "not a model";
    const auto r = train_mnist(with({"--load", dir / "text.h5"}), dir);
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(contains(r.output, "is not an HDF5 file"), r.output);
  }
  SUBCASE("--load of a cnn model's weights into the mlp") {
    REQUIRE(train_mnist(with({"--model", "cnn", "--train-samples", "8", "--save", dir / "cnn.h5"}), dir).exit_code ==
            0);
    const auto r = train_mnist(with({"--model", "mlp", "--load", dir / "cnn.h5"}), dir);
    CHECK(r.exit_code == 0);  // a full-model file brings its own architecture: the cnn, whatever --model says
    CHECK(contains(r.output, "Loading the model from"));
  }
}

TEST_CASE("train_mnist --save, then --epochs 0 --load evaluates the saved model without training") {
  TempDir dir("app");
  write_idx_set(dir.path, 256, 64);
  const std::string model = dir / "m.h5";
  const auto trained =
      train_mnist({"--data", dir.path.string(), "--epochs", "1", "--verbose", "0", "--save", model}, dir);
  REQUIRE_MESSAGE(trained.exit_code == 0, trained.output);
  CHECK(contains(trained.output, "Data: " + dir.path.string() + " (256 training, 64 test samples)"));
  CHECK(contains(trained.output, "Saved the model to " + model));

  const auto evaluated =
      train_mnist({"--data", dir.path.string(), "--epochs", "0", "--verbose", "0", "--load", model}, dir);
  REQUIRE_MESSAGE(evaluated.exit_code == 0, evaluated.output);
  CHECK(value_after(trained.output, "Test loss: ") != "");
  CHECK(value_after(evaluated.output, "Test loss: ") == value_after(trained.output, "Test loss: "));
  CHECK(value_after(evaluated.output, "Test accuracy: ") == value_after(trained.output, "Test accuracy: "));
}

TEST_CASE("train_mnist --cpu-devices 2 --ratios 3 1 trains through towers; the saved file is the plain model's") {
  // --cross-device-ops all_reduce: the towers' lanes meet in all_reduce ops, as GPUs' NCCL ranks do.
  // (Dropout draws other masks in towers than on one device, so the numbers differ from a plain run.)
  TempDir dir("app");
  write_idx_set(dir.path, 256, 64);
  const std::string towers = dir / "towers.h5";
  const auto r = train_mnist({"--data", dir.path.string(), "--epochs", "1", "--verbose", "0", "--cpu-devices", "2",
                              "--ratios", "3", "1", "--cross-device-ops", "all_reduce", "--save", towers},
                             dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(contains(r.output, "Training on 2 towers: cpu:0, cpu:1 (ratios 3:1)"));
  CHECK(std::isfinite(std::stod(value_after(r.output, "Test loss: "))));
  // The file is the plain model's: it loads without towers and evaluates the same.
  const auto loaded = train_mnist({"--data", dir.path.string(), "--epochs", "0", "--verbose", "0", "--load", towers}, dir);
  REQUIRE_MESSAGE(loaded.exit_code == 0, loaded.output);
  CHECK(value_after(loaded.output, "Test loss: ") == value_after(r.output, "Test loss: "));
}

TEST_CASE("train_mnist --pipeline-stages and --tensor-parallel give the one-device weights (SGD, --seed)") {
  TempDir dir("app");
  write_idx_set(dir.path, 256, 32);
  const std::vector<std::string> common = {"--data", dir.path.string(), "--epochs", "1", "--verbose", "0",
                                           "--optimizer", "sgd", "--lr", "0.1", "--seed", "3"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return more;
  };
  const std::string one = dir / "one.h5";
  const auto a = train_mnist(with({"--save", one}), dir);
  REQUIRE_MESSAGE(a.exit_code == 0, a.output);
  const tower::Model ma = tower::models::load_model(one);
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : {Case{{"--pipeline-stages", "cpu:1", "cpu:2", "--micro-batches", "4"},
                             "Training as a pipeline of 2 stages, 4 micro-batch(es) a batch: cpu:1 (flatten, dense, dropout"},
                        Case{{"--tensor-parallel", "cpu:1", "cpu:2"},
                             "Training tensor parallel over cpu:1, cpu:2: dense, dense_1, dense_2 sharded by output units"}}) {
    CAPTURE(c.args[0]);
    const std::string file = dir / (c.args[0].substr(2) + ".h5");
    auto args = with(c.args);
    args.insert(args.end(), {"--save", file});
    const auto b = train_mnist(args, dir);
    REQUIRE_MESSAGE(b.exit_code == 0, b.output);
    CHECK_MESSAGE(contains(b.output, c.says), b.output);
    // The file is the one-device file, with the one-device weights (Dropout draws the same masks).
    const tower::Model mb = tower::models::load_model(file);
    const auto wa = ma.get_weights(), wb = mb.get_weights();
    REQUIRE(wa.size() == wb.size());
    for (std::size_t i = 0; i < wa.size(); ++i) tower::testing::check_close(wb[i], wa[i], 1e-5, 1e-5);
  }
}
