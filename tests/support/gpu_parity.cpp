#include "tests/support/gpu_parity.h"

#include <doctest/doctest.h>

#include <string>

#include "tower/core/executor.h"
#include "tests/support/grad_check.h"

namespace tower::testing {

void check_parity(const std::vector<Tensor>& inputs, const ParityBuild& build, double rtol, double atol) {
  Graph g;
  std::vector<SymbolicTensor> xs;
  FeedMap feeds;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    xs.push_back(g.placeholder(inputs[i].shape(), inputs[i].dtype(), "x" + std::to_string(i)));
    feeds.emplace_back(xs.back(), inputs[i]);
  }
  SymbolicTensor on_cpu = build(xs), on_gpu;
  {
    Graph::DeviceScope scope(g, "cuda:0");
    on_gpu = build(xs);
  }
  Executor executor;
  auto r = executor.run(feeds, {on_cpu, on_gpu});
  REQUIRE(r[1].device().kind() == DeviceKind::cuda);
  check_close(r[1].to(cpu_device()), r[0], rtol, atol);
}

}  // namespace tower::testing
