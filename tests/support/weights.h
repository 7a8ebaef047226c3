// A model's weights as one flat vector of floats (every weight widened or rounded to float32, in
// get_weights() order): for tests that compare two trainings, or a model before and after a step.
#pragma once

#include <vector>

#include "tower/layers/engine/model.h"

namespace tower::testing {

inline std::vector<float> flat_weights(const Model& model) {
  std::vector<float> out;
  for (const auto& w : model.get_weights())
    for (float v : w.to_vector<float>()) out.push_back(v);
  return out;
}

}  // namespace tower::testing
