// A small multi-worker training job for the fault tests (tests/parallel/test_multi_worker_faults.cpp),
// started by mpirun: the tower test model on 64 samples, batches of 8, 4 epochs, SGD, with
// BackupAndRestore and ModelCheckpoint in --dir. One worker can be made to misbehave:
//   --scenario train            as it should (the chief writes the final weights' bytes to --dir/weights.bin)
//   --scenario stall            worker 1 sleeps for ten minutes at epoch 0, step 2
//   --scenario different_model  worker 1 builds Dense(17) where the others build Dense(16)
//   --scenario fewer_batches    worker 1 reads 56 samples, the others 64
//   --scenario mismatch         worker 1 issues a barrier before fit, the others do not
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
