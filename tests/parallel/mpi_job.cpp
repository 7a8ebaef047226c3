// A small multi-worker training job for the fault tests (tests/parallel/test_multi_worker_faults.cpp),
// started by mpirun: the tower test model on 64 samples, batches of 8, 4 epochs, SGD, with
// BackupAndRestore and ModelCheckpoint in --dir. One worker can be made to misbehave:
//   --scenario train            as it should (the chief writes the final weights' bytes to --dir/weights.bin)
//   --scenario stall            worker 1 sleeps for ten minutes at epoch 0, step 2
//   --scenario different_model  worker 1 builds Dense(17) where the others build Dense(16)
//   --scenario fewer_batches    worker 1 reads 56 samples, the others 64
//   --scenario mismatch         worker 1 issues a barrier before fit, the others do not
//   --scenario throw            worker 1's callback throws a ValueError before step 2 of epoch 1
//   --scenario exit_early       worker 1 returns from main before fit (as after an error of its own)
//   --scenario disagree         one fit per option worker 1 gives otherwise (learning rate, optimizer,
//                               metrics, other data of the same size, batch_size, epochs, a
//                               ModelCheckpoint on the chief only, a BackupAndRestore on worker 1 only),
//                               each error printed as "mpi_job: <kind>: <error>", then a fit all agree on
// and, with MPI_JOB_KILL_AT=E:S:R in the environment (so that a rerun is the same command), worker R
// kills itself (SIGKILL) before step S of epoch E.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "tower/io/backup_and_restore.h"
#include "tower/io/model_checkpoint.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/multi_worker_mirrored_strategy.h"
#include "tests/parallel/tower_test_model.h"

using namespace tower;

namespace {

struct Args {
  std::string scenario = "train", dir = ".";
  int kill_epoch = -1, kill_step = -1, kill_rank = -1;
};

// Misbehaves as asked, before the step it names.
class Fault : public Callback {
 public:
  Fault(const Args& args, int rank) : args_(args), rank_(rank) {}
  void on_epoch_begin(int epoch, const Logs&) override { epoch_ = epoch; }
  void on_train_batch_begin(std::int64_t step, const Logs&) override {
    if (epoch_ == args_.kill_epoch && step == args_.kill_step && rank_ == args_.kill_rank) {
      std::fprintf(stderr, "mpi_job: worker %d kills itself at epoch %d step %ld\n", rank_, epoch_, static_cast<long>(step));
      std::fflush(stderr);
      ::kill(::getpid(), SIGKILL);
    }
    if (args_.scenario == "stall" && rank_ == 1 && epoch_ == 0 && step == 2) ::sleep(600);
    if (args_.scenario == "throw" && rank_ == 1 && epoch_ == 1 && step == 2)
      raise<ValueError>("mpi_job: worker 1 throws at epoch 1 step 2");
  }

 private:
  const Args& args_;
  int rank_, epoch_ = 0;
};

Sequential make_model(bool wider) {
  set_random_seed(4);
  return Sequential({layers::Input({6}), layers::Dense(wider ? 17 : 16, {.activation = "relu"}), layers::Dropout(0.25),
                     layers::Dense(8, {.activation = "tanh"}), layers::Dense(3, {.activation = "softmax"})});
}

// The disagree scenario: fits that worker 1 starts with one option the others give otherwise.
int disagree(const parallel::MultiWorkerMirroredStrategy& strategy, const Args& args) {
  const bool odd = strategy.worker_index() == 1;
  Sequential model;
  {
    auto scope = strategy.scope();
    model = make_model(false);
  }
  for (const std::string kind : {"learning_rate", "optimizer", "metrics", "data", "batch_size", "epochs",
                                 "checkpoint", "backup", "none"}) {
    const bool differs = odd && kind != "none";
    {
      auto scope = strategy.scope();
      optimizers::OptimizerPtr optimizer =
          std::make_shared<optimizers::SGD>(differs && kind == "learning_rate" ? 0.01 : 0.1);
      if (differs && kind == "optimizer") optimizer = std::make_shared<optimizers::Adam>(0.1);
      model.compile(optimizer, "sparse_categorical_crossentropy",
                    differs && kind == "metrics" ? MetricsArg() : MetricsArg({"accuracy"}));
    }
    auto [x, y] = testing::tower_test_data(64);
    if (differs && kind == "data") x = random_normal({64, 6}, 0.0, 1.0, 43);  // other data, as many samples
    FitOptions fit{.batch_size = differs && kind == "batch_size" ? 16 : 8,
                   .epochs = kind == "none" ? 1 : differs && kind == "epochs" ? 3 : 4, .verbose = 0, .seed = 17};
    if (kind == "checkpoint" && !odd)
      fit.callbacks.push_back(std::make_shared<callbacks::ModelCheckpoint>(args.dir + "/checkpoint.h5"));
    if (differs && kind == "backup")
      fit.callbacks.push_back(std::make_shared<callbacks::BackupAndRestore>(args.dir + "/backup"));
    try {
      model.fit(x, y, fit);
      std::cout << "mpi_job: " << kind << ": trained\n";
    } catch (const ValueError& e) {
      std::cout << "mpi_job: " << kind << ": " << e.what() << "\n";
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--scenario") args.scenario = value;
    else if (key == "--dir") args.dir = value;
  }
  if (const char* kill_at = std::getenv("MPI_JOB_KILL_AT"))
    std::sscanf(kill_at, "%d:%d:%d", &args.kill_epoch, &args.kill_step, &args.kill_rank);
  try {
    parallel::MultiWorkerMirroredStrategy strategy({"cpu:0"});
    const int rank = strategy.worker_index();
    if (args.scenario == "disagree") return disagree(strategy, args);
    if (args.scenario == "exit_early" && rank == 1) {
      std::cerr << "mpi_job: worker 1 returns before fit\n";
      return 1;
    }
    Sequential model;
    {
      auto scope = strategy.scope();
      model = make_model(args.scenario == "different_model" && rank == 1);
      model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy", {"accuracy"});
    }
    auto [x, y] = testing::tower_test_data(args.scenario == "fewer_batches" && rank == 1 ? 56 : 64);
    if (args.scenario == "mismatch" && rank == 1) parallel::ProcessGroup::world().barrier({.what = "an extra one"});
    FitOptions fit{.batch_size = 8, .epochs = 4, .verbose = 0, .shuffle = true, .seed = 17};
    fit.callbacks = {std::make_shared<callbacks::BackupAndRestore>(args.dir + "/backup"),
                     std::make_shared<callbacks::ModelCheckpoint>(args.dir + "/checkpoint.h5"),
                     std::make_shared<Fault>(args, rank)};
    const auto history = model.fit(x, y, fit);
    if (strategy.is_chief()) {
      std::ofstream out(args.dir + "/weights.bin", std::ios::binary);
      for (const auto& w : model.get_weights()) out.write(static_cast<const char*>(w.raw_data()), static_cast<std::streamsize>(w.nbytes()));
      std::cout << "mpi_job: final loss " << history.history.at("loss").back() << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "mpi_job: " << e.what() << "\n";
    return 1;
  }
}
