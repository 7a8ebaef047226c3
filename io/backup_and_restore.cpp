// BackupAndRestore: the backup file's writer and reader, and when fit saves and restores it.
#include "tower/io/backup_and_restore.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tower/io/keras_model.h"
#include "tower/io/keras_weights.h"

namespace tower::callbacks {

namespace fs = std::filesystem;

BackupAndRestore::BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options)
    : dir_(std::move(backup_dir)), options_(options) {
  if (dir_.empty()) raise<ValueError>("BackupAndRestore: backup_dir is empty");
  if (options_.save_freq < 0)
    raise<ValueError>("BackupAndRestore: save_freq must be 0 (every epoch) or a number of batches, got {}",
                      options_.save_freq);
}

std::string BackupAndRestore::backup_path() const { return (fs::path(dir_) / "backup.h5").string(); }

void BackupAndRestore::on_train_begin(const Logs&) {
  batches_seen_ = 0;
  resumed_epoch_ = -1;
  resumed_step_ = -1;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    raise<io::FileError>("BackupAndRestore: cannot create the backup directory \"{}\": {}", dir_,
                         ec ? ec.message() : "a file of that name exists");
  const std::string path = backup_path();
  // Temporary files of saves that were killed before their rename (write_file_atomically's "<path>.tmp-<pid>").
  for (const auto& entry : fs::directory_iterator(dir_, ec))
    if (entry.path().filename().string().starts_with("backup.h5.tmp-")) fs::remove(entry.path(), ec);
  const std::string what = "BackupAndRestore(\"" + path + "\")";
  io::check_writable(path, what);  // now, not at the end of the first epoch
  if (!fs::exists(path)) return;
  io::hdf5::File file = io::hdf5::File::open(path);
  nlohmann::json position;
  try {
    position = nlohmann::json::parse(file.read_string_attr("training_metadata"));
  } catch (const nlohmann::json::exception& e) {
    raise<io::FileError>("{}: training_metadata is not valid JSON ({}); delete the file to start afresh", what,
                         e.what());
  }
  Model& m = model();
  try {
    io::load_weights_from_group(file.group("model_weights"), m.layers(), {}, what);
    if (file.is_group("optimizer_weights")) {
      auto state = io::read_optimizer_state(file.group("optimizer_weights"), m);
      m.optimizer().set_state(state.iterations, std::move(state.slots));
    }
  } catch (const io::ChecksumError& e) {
    raise<io::ChecksumError>("{}: {}; or delete the backup to start afresh", what, e.what());
  }
  resumed_epoch_ = position.at("epoch").get<int>();
  resumed_step_ = position.at("step").get<std::int64_t>();
  m.set_initial_position(resumed_epoch_, resumed_step_);
}

void BackupAndRestore::on_epoch_begin(int epoch, const Logs&) { epoch_ = epoch; }

void BackupAndRestore::on_train_batch_end(std::int64_t batch, const Logs&) {
  if (options_.save_freq == 0 || ++batches_seen_ % options_.save_freq != 0) return;
  if (batch + 1 < params_.steps) backup(epoch_, batch + 1);  // after the last batch, on_epoch_end saves
}

void BackupAndRestore::on_epoch_end(int epoch, Logs&) { backup(epoch + 1, 0); }

void BackupAndRestore::on_train_end(const Logs&) {
  if (!options_.delete_checkpoint) return;
  std::error_code ec;
  fs::remove(backup_path(), ec);
}

void BackupAndRestore::backup(int epoch, std::int64_t step) {
  const Model& m = model();
  const std::string path = backup_path();
  const nlohmann::json position = {{"epoch", epoch}, {"step", step}};
  io::hdf5::write_file_atomically(path, "BackupAndRestore(\"" + path + "\")", [&](io::hdf5::File& file) {
    file.write_string_attr("training_metadata", position.dump());
    io::hdf5::Group weights = file.create_group("model_weights");
    io::save_weights_to_group(weights, m.layers());
    io::hdf5::Group optimizer = file.create_group("optimizer_weights");
    io::write_optimizer_state(optimizer, m.optimizer());
  });
}

}  // namespace tower::callbacks
