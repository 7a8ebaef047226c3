// The timed training of the model benchmarks (bench_rnn, bench_text): a warm-up epoch (the plans are
// compiled), then `epochs` timed epochs; prints "tower <label>: N samples/s, peak RSS M MiB, loss L",
// the line scripts/bench/*.sh compare with PyTorch's and tf.keras's.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <iostream>
#include <string>

#include "tower/layers/layers.h"

namespace tower::apps {

inline void timed_fit(Model& model, const Tensor& x, const Tensor& y, std::int64_t batch_size, int epochs,
                      const std::string& label) {
  model.fit(x, y, {.batch_size = batch_size, .epochs = 1, .verbose = 0});  // warm-up: plans compiled
  const auto start = std::chrono::steady_clock::now();
  auto history = model.fit(x, y, {.batch_size = batch_size, .epochs = epochs, .verbose = 0});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::cout << "tower " << label << ": " << static_cast<double>(x.shape()[0] * epochs) / seconds
            << " samples/s, peak RSS " << usage.ru_maxrss / 1024 << " MiB, loss " << history.history.at("loss").back()
            << "\n";
}

}  // namespace tower::apps
