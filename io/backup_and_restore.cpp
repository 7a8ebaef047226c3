// BackupAndRestore: the backup file's writer and reader, and when fit saves and restores it.
#include "tower/io/backup_and_restore.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "tower/io/keras_model.h"
#include "tower/io/keras_weights.h"
#include "tower/layers/engine/replication.h"
#include "tower/layers/layer_config.h"

namespace tower::callbacks {

namespace fs = std::filesystem;

namespace {

// Where a backup resumes: the next batch to train is `step` of `epoch`.
struct Position {
  int epoch = 0;
  std::int64_t step = 0;
};

// The backup's training_metadata ({"epoch": E, "step": S}), every field checked, before anything is
// restored: a damaged backup gives an error naming the file, the field and the fix.
Position read_position(const io::hdf5::File& file, const std::string& what, const std::string& fix) {
  if (!file.has_attr("training_metadata"))
    raise<io::FileError>("{}: the attribute training_metadata (where to resume) is missing; {}", what, fix);
  std::string text;
  try {
    text = file.read_string_attr("training_metadata");
  } catch (const io::FileError& e) {
    raise<io::FileError>("{}: training_metadata is not one string ({}); {}", what, e.what(), fix);
  }
  nlohmann::json position;
  try {
    position = layers::parse_json(text, what + ": training_metadata");
  } catch (const ValueError& e) {  // nested too deep
    raise<io::FileError>("{}; {}", e.what(), fix);
  } catch (const nlohmann::json::exception& e) {
    raise<io::FileError>("{}: training_metadata is not valid JSON ({}); {}", what, e.what(), fix);
  }
  if (!position.is_object())
    raise<io::FileError>("{}: training_metadata is {}, not a JSON object {{\"epoch\": ..., \"step\": ...}}; {}", what,
                         position.dump().substr(0, 100), fix);
  auto field = [&](const char* name, const char* meaning, std::int64_t max) {
    if (!position.contains(name))
      raise<io::FileError>("{}: training_metadata has no field \"{}\" ({}); {}", what, name, meaning, fix);
    const nlohmann::json& value = position.at(name);
    const bool in_range = value.is_number_unsigned() ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)
                                                     : value.is_number_integer() && value.get<std::int64_t>() >= 0;
    if (!in_range)
      raise<io::FileError>("{}: training_metadata field \"{}\" ({}) must be an integer from 0 to {}, got {}; {}", what,
                           name, meaning, max, value.dump().substr(0, 100), fix);
    return value.get<std::int64_t>();
  };
  return {static_cast<int>(field("epoch", "the next epoch to train", std::numeric_limits<int>::max())),
          field("step", "the next batch of that epoch", std::numeric_limits<std::int64_t>::max())};
}

// Whether `entry` is the temporary file of a backup save that was killed before its rename, and only
// then: named "<backup>.tmp-<pid>" (io::hdf5::temporary_name) for a process that no longer runs (or
// this one), a regular file, and empty or an HDF5 file. A user's file of a like name stays.
bool is_stale_temporary(const fs::directory_entry& entry, const std::string& backup_name) {
  const std::string name = entry.path().filename().string();
  const std::string prefix = backup_name + ".tmp-";
  if (!name.starts_with(prefix) || name.size() == prefix.size() || name.size() > prefix.size() + 9) return false;
  const std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  const auto pid = static_cast<pid_t>(std::stol(digits));
  if (pid != ::getpid() && !(::kill(pid, 0) != 0 && errno == ESRCH)) return false;  // a save still running
  std::error_code ec;
  if (!entry.is_regular_file(ec) || entry.is_symlink(ec)) return false;
  std::ifstream in(entry.path(), std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == 0 || (in.gcount() == 8 && std::memcmp(magic, "\x89HDF\r\n\x1a\n", 8) == 0);
}

}  // namespace

BackupAndRestore::BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options)
    : dir_(std::move(backup_dir)), options_(options) {
  if (dir_.empty()) raise<ValueError>("BackupAndRestore: backup_dir is empty");
  if (options_.save_freq < 0)
    raise<ValueError>("BackupAndRestore: save_freq must be 0 (every epoch) or a number of batches, got {}",
                      options_.save_freq);
}

std::string BackupAndRestore::backup_path() const { return (fs::path(dir_) / "backup.h5").string(); }
std::string BackupAndRestore::writes_to() const { return "BackupAndRestore(\"" + dir_ + "\")"; }

void BackupAndRestore::on_train_begin(const Logs&) {
  batches_seen_ = 0;
  resumed_epoch_ = -1;
  resumed_step_ = -1;
  // In a multi-worker job only the chief writes the backup; the others read it where they can see it
  // (the chief's weights, optimizer state and position reach them in fit anyway: Replication::begin_fit).
  std::error_code ec;
  if (!writes_files(model())) {
    if (fs::exists(backup_path(), ec)) restore();
    return;
  }
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_, ec))
    raise<io::FileError>("BackupAndRestore: cannot create the backup directory \"{}\": {}", dir_,
                         ec ? ec.message() : "a file of that name exists");
  const std::string path = backup_path();
  const std::string what = "BackupAndRestore(\"" + path + "\")";
  // Checked now, not at the end of the first epoch; the target is backup.h5, or the file it links to.
  const fs::path target = io::hdf5::check_can_create(path, what);
  for (const auto& entry : fs::directory_iterator(target.parent_path().empty() ? "." : target.parent_path(), ec))
    if (is_stale_temporary(entry, target.filename().string())) fs::remove(entry.path(), ec);
  if (fs::exists(path, ec)) restore();
}

void BackupAndRestore::restore() {
  const std::string path = backup_path();
  const std::string what = "BackupAndRestore(\"" + path + "\")";
  const std::string fix = "the backup is damaged; delete the backup directory \"" + dir_ + "\" to start training over";
  io::hdf5::File file = [&] {
    try {
      return io::hdf5::File::open(path);
    } catch (const io::FileError& e) {
      raise<io::FileError>("BackupAndRestore: {}; {}", e.what(), fix);
    }
  }();
  const Position position = read_position(file, what, fix);
  Model& m = model();
  try {
    io::load_weights_from_group(file.group("model_weights"), m.layers(), {}, what);
    if (file.is_group("optimizer_weights")) {
      // A state of another optimizer or model: the backup was made by another run (slots that do not
      // fit are found when they are made, at the first step, and name the backup then).
      const std::string other_run = fmt::format("the backup was saved by a run with another optimizer or model: train "
                                                "as that run did, or delete the backup directory \"{}\" to start over",
                                                dir_);
      io::OptimizerState state;
      try {
        state = io::read_optimizer_state(file.group("optimizer_weights"), m);
      } catch (const ValueError& e) {
        raise<io::FileError>("{}: {}; {}", what, e.what(), other_run);
      }
      m.optimizer().set_state(state.iterations, std::move(state.slots), what + ": " + other_run);
    }
  } catch (const io::ChecksumError& e) {
    raise<io::ChecksumError>("{}: {}; or delete the backup to start afresh", what, e.what());
  }
  resumed_epoch_ = position.epoch;
  resumed_step_ = position.step;
  m.set_initial_position(resumed_epoch_, resumed_step_);
  if (resumed_epoch_ >= params_.epochs)  // as in Keras, fit then trains nothing (and deletes the backup): say so
    std::cerr << fmt::format("BackupAndRestore: the backup in {} has finished epoch {}; fit(epochs={}) has nothing "
                             "left to train{}\n", dir_, resumed_epoch_, params_.epochs,
                             options_.delete_checkpoint ? ", and deletes the backup as it ends (delete_checkpoint)" : "");
}

void BackupAndRestore::on_epoch_begin(int epoch, const Logs&) { epoch_ = epoch; }

void BackupAndRestore::on_train_batch_end(std::int64_t batch, const Logs&) {
  if (options_.save_freq == 0 || ++batches_seen_ % options_.save_freq != 0) return;
  if (batch + 1 < params_.steps) backup(epoch_, batch + 1);  // after the last batch, on_epoch_end saves
}

void BackupAndRestore::on_epoch_end(int epoch, Logs&) { backup(epoch + 1, 0); }

void BackupAndRestore::on_train_end(const Logs&) {
  if (!options_.delete_checkpoint || !writes_files(model())) return;
  std::error_code ec;
  fs::remove(backup_path(), ec);
}

void BackupAndRestore::backup(int epoch, std::int64_t step) {
  const Model& m = model();
  if (!writes_files(m)) return;
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
