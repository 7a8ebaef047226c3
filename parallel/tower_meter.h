// TowerMeter: the callback through which fit reports each tower's throughput, and balances devices of
// different speed. parallel::Towers adds one to every fit of a model run as several towers.
//
// After each epoch it prints "cpu:0[96] 1190 sps  cpu:1[32] 410 sps  total[128] 1600 sps": per device
// the samples of its shares over the seconds its lane ran (Plan::busy_seconds), the brackets holding
// its share of a full batch; so a device that does nothing, or holds the others up, shows. With
// ratios "auto" (MultiGpuOptions::auto_ratios), after the first epoch it gives the model towers whose
// shares follow each device's measured speed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tower/layers/callbacks/callback.h"

namespace tower {
class Device;
}

namespace tower::parallel {

class Towers;

class TowerMeter : public Callback {
 public:
  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;

  // The line printed after an epoch.
  std::string line() const;
  // Shares in proportion to each device's measured samples per busy second (out of 1000), so that the
  // devices finish their parts of a step together; empty when a device has no measurement.
  std::vector<std::int64_t> balanced_ratios() const;

 private:
  std::shared_ptr<const Towers> towers_;  // the model's towers at the last step
  std::vector<Device*> resolved_;         // their devices
  std::vector<std::int64_t> shares_;      // of a batch of shares_of_ samples
  std::int64_t shares_of_ = -1;
  std::vector<std::int64_t> samples_;
  std::vector<double> busy_;
  std::int64_t total_ = 0, full_batch_ = 0, steps_ = 0;
  bool first_epoch_ = true;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tower::parallel
