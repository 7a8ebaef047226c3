// TowerMeter: each tower's samples per busy second during fit, and automatic ratios.
#include "tower/parallel/tower_meter.h"

#include <fmt/format.h>

#include <cmath>
#include <iostream>

#include "tower/core/executor.h"
#include "tower/core/ops/shape_utils.h"
#include "tower/layers/engine/model.h"
#include "tower/parallel/towers.h"

namespace tower::parallel {

void TowerMeter::on_train_begin(const Logs&) { first_epoch_ = true; }

void TowerMeter::on_epoch_begin(int, const Logs&) {
  towers_.reset();  // the towers may have changed (auto ratios): read again at the next step
  total_ = full_batch_ = steps_ = 0;
  start_ = std::chrono::steady_clock::now();
}

void TowerMeter::on_train_batch_end(std::int64_t, const Logs&) {
  const auto towers = towers_of(model());
  const Plan* plan = model().last_plan(Model::Mode::train);
  const std::int64_t batch = model().last_batch_size(Model::Mode::train);
  if (!towers || !plan) return;
  if (towers != towers_) {  // new towers (the first step, or new ratios): counts start again
    towers_ = towers;
    resolved_.clear();
    for (const auto& name : towers->devices()) resolved_.push_back(&device(name));
    samples_.assign(resolved_.size(), 0);
    busy_.assign(resolved_.size(), 0.0);
    shares_of_ = -1;
  }
  if (full_batch_ == 0) full_batch_ = batch;
  if (batch != shares_of_) {  // once per batch size: no allocation in a steady step
    shares_ = largest_remainder_split(batch, towers->ratios());
    shares_of_ = batch;
  }
  for (std::size_t k = 0; k < resolved_.size(); ++k) {
    samples_[k] += shares_[k];
    busy_[k] += plan->busy_seconds(*resolved_[k]);
  }
  total_ += batch;
  ++steps_;
}

void TowerMeter::on_epoch_end(int, Logs&) {
  const bool first = std::exchange(first_epoch_, false);
  if (steps_ == 0) return;
  if (params_.verbose > 0) std::cout << line() << "\n";
  const auto towers = towers_of(model());
  if (!first || !towers || !towers->options().auto_ratios) return;
  if (auto balanced = balanced_ratios(); !balanced.empty() && balanced != towers->ratios()) {
    if (params_.verbose > 0)
      std::cout << fmt::format("auto ratios: {} -> {}\n", fmt::join(towers->ratios(), ":"), fmt::join(balanced, ":"));
    model().set_replication(towers->with_ratios(std::move(balanced)));  // the engine graphs are built again
  }
}

std::string TowerMeter::line() const {
  if (!towers_) return {};  // no step measured yet
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const auto shares = largest_remainder_split(full_batch_, towers_->ratios());
  std::string out;
  for (std::size_t k = 0; k < samples_.size(); ++k)
    out += fmt::format("{}[{}] {:.0f} sps  ", towers_->devices()[k], shares[k],
                       busy_[k] > 0 ? static_cast<double>(samples_[k]) / busy_[k] : 0.0);
  return out + fmt::format("total[{}] {:.0f} sps", full_batch_, wall > 0 ? static_cast<double>(total_) / wall : 0.0);
}

std::vector<std::int64_t> TowerMeter::balanced_ratios() const {
  std::vector<double> speed;
  double total = 0;
  for (std::size_t k = 0; k < samples_.size(); ++k) {
    if (busy_[k] <= 0 || samples_[k] == 0) return {};
    speed.push_back(static_cast<double>(samples_[k]) / busy_[k]);
    total += speed.back();
  }
  std::vector<std::int64_t> ratios;
  for (double v : speed) ratios.push_back(std::max<std::int64_t>(1, std::llround(1000 * v / total)));
  return ratios;
}

}  // namespace tower::parallel
