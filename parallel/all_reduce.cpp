// In-process all-reduce: fixed-order buckets, reduced on the first replica, broadcast back.
#include "parallel/all_reduce.h"

#include "core/device.h"
#include "core/error.h"
#include "core/ops.h"

namespace tower::parallel {

namespace {

// A run of variables (indices into a replica's gradient list) reduced as one flat tensor.
struct Bucket {
  std::vector<std::size_t> variables;
  std::vector<Shape> shapes;
  std::vector<std::int64_t> sizes;  // elements of each
  DType dtype = DType::float32;
  std::size_t bytes = 0;
};

// The variables that have a gradient on some replica, last first, cut into buckets.
std::vector<Bucket> make_buckets(const std::vector<std::vector<SymbolicTensor>>& grads, std::size_t bucket_bytes) {
  std::vector<Bucket> buckets;
  const std::size_t n = grads.front().size();
  for (std::size_t k = n; k-- > 0;) {
    const SymbolicTensor* any = nullptr;  // a replica's gradient, for the shape and dtype
    for (const auto& replica : grads)
      if (replica[k].defined()) any = &replica[k];
    if (!any) continue;
    const std::int64_t elements = any->shape().num_elements();
    const std::size_t bytes = static_cast<std::size_t>(elements) * dtype_size(any->dtype());
    if (buckets.empty() || buckets.back().dtype != any->dtype() ||
        buckets.back().bytes + bytes > bucket_bytes)
      buckets.push_back({.dtype = any->dtype()});
    Bucket& b = buckets.back();
    b.variables.push_back(k);
    b.shapes.push_back(any->shape());
    b.sizes.push_back(elements);
    b.bytes += bytes;
  }
  return buckets;
}

}  // namespace

std::vector<std::vector<SymbolicTensor>> all_reduce_sum(Graph& graph, const std::vector<std::string>& devices,
                                                        const std::vector<std::vector<SymbolicTensor>>& grads,
                                                        std::size_t bucket_bytes) {
  if (devices.empty() || grads.size() != devices.size())
    raise<ValueError>("all_reduce_sum: {} gradient lists for {} devices; give one list per device", grads.size(),
                      devices.size());
  for (const auto& replica : grads)
    if (replica.size() != grads.front().size())
      raise<ValueError>("all_reduce_sum: the replicas have {} and {} gradients; every replica needs one entry per "
                        "variable",
                        grads.front().size(), replica.size());
  if (devices.size() == 1) return grads;

  const std::size_t replicas = devices.size();
  std::vector<std::vector<SymbolicTensor>> sums(replicas, std::vector<SymbolicTensor>(grads.front().size()));
  for (const Bucket& bucket : make_buckets(grads, bucket_bytes)) {
    // Each replica's bucket, flat, on its device (zeros for a gradient that replica lacks).
    std::vector<SymbolicTensor> flat(replicas);
    for (std::size_t r = 0; r < replicas; ++r) {
      Graph::DeviceScope on(graph, devices[r]);
      std::vector<SymbolicTensor> parts;
      for (std::size_t j = 0; j < bucket.variables.size(); ++j) {
        const SymbolicTensor& g = grads[r][bucket.variables[j]];
        parts.push_back(g.defined() ? ops::reshape(g, {-1})
                                    : graph.constant(Tensor::zeros(Shape({bucket.sizes[j]}), bucket.dtype,
                                                                   device(devices[r]))));
      }
      flat[r] = parts.size() == 1 ? parts.front() : ops::concat(parts, 0);
    }
    // The sum, on the first replica, in replica order.
    SymbolicTensor sum = flat.front();
    {
      Graph::DeviceScope on(graph, devices.front());
      for (std::size_t r = 1; r < replicas; ++r) sum = ops::add(sum, flat[r]);
    }
    // Copied to every replica (the executor copies `sum` once per device) and cut back into gradients.
    for (std::size_t r = 0; r < replicas; ++r) {
      Graph::DeviceScope on(graph, devices[r]);
      const auto pieces = bucket.variables.size() == 1 ? std::vector<SymbolicTensor>{sum} : ops::split(sum, 0, bucket.sizes);
      for (std::size_t j = 0; j < bucket.variables.size(); ++j)
        sums[r][bucket.variables[j]] = ops::reshape(pieces[j], bucket.shapes[j].dims());
    }
  }
  return sums;
}

}  // namespace tower::parallel
