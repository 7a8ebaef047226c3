// Learning-rate schedules (keras.optimizers.schedules): the rate as a function of the step count.
#pragma once

#include <cstdint>
#include <memory>

namespace tower::optimizers {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The learning rate at `step` (the optimizer's iterations before the update).
  virtual double operator()(std::int64_t step) const = 0;
};

}  // namespace tower::optimizers
