// In-process all-reduce: fixed-order buckets, reduced on the first replica, broadcast back.
#include "tower/parallel/all_reduce.h"

#include <algorithm>
#include <atomic>

#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tower/core/ops.h"

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

// The replicas that join one all_reduce op per bucket (indices into devices), as `how` says; empty:
// reduce on the first replica.
std::vector<std::size_t> collective_members(const std::vector<std::string>& devices, CrossDeviceOps how) {
  if (how == CrossDeviceOps::reduction_to_one_device) return {};
  // The replicas on devices of `kind`, and why an all_reduce cannot run on them ("" when it can).
  const auto of_kind = [&](DeviceKind kind) {
    std::vector<std::size_t> members;
    std::vector<Device*> on;
    for (std::size_t r = 0; r < devices.size(); ++r)
      if (Device& d = device(devices[r]); d.kind() == kind) {
        members.push_back(r);
        on.push_back(&d);
      }
    return std::pair{members, all_reduce_unsupported(on)};
  };
  if (how == CrossDeviceOps::automatic) {
    // NCCL across physical GPUs; on CPU devices alone the lanes meet and add at the same time.
    if (auto [gpus, why] = of_kind(DeviceKind::cuda); why.empty()) return gpus;
    if (auto [cpus, why] = of_kind(DeviceKind::cpu); why.empty() && cpus.size() == devices.size()) return cpus;
    return {};
  }
  const auto [members, why] = of_kind(device(devices.front()).kind());
  if (why.empty()) return members;
  std::string names;
  for (std::size_t r : members) names += (names.empty() ? "" : ", ") + devices[r];
  raise<ValueError>("all_reduce_sum: cross_device_ops all_reduce cannot run on {}: {}; use reduction_to_one_device "
                    "(or automatic)",
                    names, why);
}

// A name for one bucket's all_reduce that no other collective of this process has.
std::string collective_name(const std::vector<std::string>& names) {
  static std::atomic<std::uint64_t> made{0};
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ",") + n;
  return fmt::format("{} #{}", s, made++);
}

}  // namespace

std::vector<std::vector<SymbolicTensor>> all_reduce_sum(Graph& graph, const std::vector<std::string>& devices,
                                                        const std::vector<std::vector<SymbolicTensor>>& grads,
                                                        CrossDeviceOps how, std::size_t bucket_bytes,
                                                        const AcrossWorkers& across) {
  if (devices.empty() || grads.size() != devices.size())
    raise<ValueError>("all_reduce_sum: {} gradient lists for {} devices; give one list per device", grads.size(),
                      devices.size());
  for (const auto& replica : grads)
    if (replica.size() != grads.front().size())
      raise<ValueError>("all_reduce_sum: the replicas have {} and {} gradients; every replica needs one entry per "
                        "variable",
                        grads.front().size(), replica.size());
  if (devices.size() == 1 && !across) return grads;

  const std::size_t replicas = devices.size();
  // Across workers the first replica's sum is what crosses: the others reduce to it.
  const std::vector<std::size_t> members = across ? std::vector<std::size_t>{} : collective_members(devices, how);
  std::vector<std::string> member_names;
  for (std::size_t r : members) member_names.push_back(devices[r]);
  // The replica whose sum the others copy, and which adds the non-members' buckets to its own first.
  const std::size_t lead = members.empty() ? 0 : members.front();

  std::vector<std::vector<SymbolicTensor>> sums(replicas, std::vector<SymbolicTensor>(grads.front().size()));
  int index = 0;
  for (const Bucket& bucket : make_buckets(grads, bucket_bytes)) {
    // Each replica's bucket, flat, on its device (zeros for a gradient it lacks); undefined for a
    // replica with none of the bucket's gradients, which adds nothing.
    std::vector<SymbolicTensor> flat(replicas);
    for (std::size_t r = 0; r < replicas; ++r) {
      const bool any = std::any_of(bucket.variables.begin(), bucket.variables.end(),
                                   [&](std::size_t k) { return grads[r][k].defined(); });
      const bool member = std::find(members.begin(), members.end(), r) != members.end();
      if (!any && !member && r != lead) continue;
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
    // The buckets of the replicas outside the collective (all of them but the lead without one), added
    // to the lead's in replica order.
    SymbolicTensor lead_sum = flat[lead];
    {
      Graph::DeviceScope on(graph, devices[lead]);
      for (std::size_t r = 0; r < replicas; ++r)
        if (r != lead && flat[r].defined() && std::find(members.begin(), members.end(), r) == members.end())
          lead_sum = ops::add(lead_sum, flat[r]);
    }
    // The collective: one all_reduce per member, made one after another (the executor's lanes meet in
    // them in this order); the other replicas copy the lead's sum.
    std::vector<SymbolicTensor> sum(replicas, lead_sum);
    if (!members.empty()) {
      const std::string group = collective_name(member_names);
      for (std::size_t m = 0; m < members.size(); ++m) {
        const std::size_t r = members[m];
        Graph::DeviceScope on(graph, devices[r]);
        sum[r] = ops::all_reduce(r == lead ? lead_sum : flat[r], group, member_names, static_cast<int>(m));
      }
      for (std::size_t r = 0; r < replicas; ++r)
        if (std::find(members.begin(), members.end(), r) == members.end()) sum[r] = sum[lead];
    }
    if (across) sum.assign(replicas, across(sum[lead], index));  // the other workers' sums join
    ++index;
    // Cut back into gradients on every replica (the executor copies a sum made elsewhere once per device).
    for (std::size_t r = 0; r < replicas; ++r) {
      Graph::DeviceScope on(graph, devices[r]);
      const auto pieces =
          bucket.variables.size() == 1 ? std::vector<SymbolicTensor>{sum[r]} : ops::split(sum[r], 0, bucket.sizes);
      for (std::size_t j = 0; j < bucket.variables.size(); ++j)
        sums[r][bucket.variables[j]] = ops::reshape(pieces[j], bucket.shapes[j].dims());
    }
  }
  return sums;
}

}  // namespace tower::parallel
