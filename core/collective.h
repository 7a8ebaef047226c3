// Where the replicas of an all_reduce op (core/ops.h) meet on the host: the CPU kernel's rendezvous.
// Each replica runs on its device's lane, a thread of its own (Plan), and blocks here until all have
// come.
#pragma once

#include <string>

#include "tower/core/tensor.h"

namespace tower {

// Replica `rank` of `size` gives `in` (host memory, float32 or float64). Returns once every replica of
// `group` has come, with `out` holding the sum of their `in`s added in rank order: the same bits in
// every replica's `out`. The replicas add at the same time, each a 1/size part of the elements into
// every `out` (so the sum takes a 1/size of the time one thread would). Throws ValueError when the
// replicas disagree on the size, shape or dtype, and Error when abort_collective(group) is called
// while this replica waits.
void host_all_reduce(const std::string& group, int rank, int size, const Tensor& in, Tensor& out);

// A replica of `group` failed and will not come: those waiting in host_all_reduce throw, and so do
// those that come later, until reset_collective(group). A round whose replicas all came ends as usual.
// Backends whose collectives wait on the device end theirs too (NCCL aborts the group's communicators:
// DeviceFactory::abort_collective).
void abort_collective(const std::string& group);
// Lets `group` meet again after abort_collective (the executor calls it when a run starts).
void reset_collective(const std::string& group);

}  // namespace tower
