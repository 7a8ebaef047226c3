// Logical GPUs (set_logical_device_configuration) on a fake GPU backend: the cuda:N numbering, the
// memory limits handed to each device, peer copies, and the errors. Its own executable, because it
// replaces the CUDA device factory for the whole process.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tests/support/errors.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

// A "GPU" in host memory that remembers where the layout put it.
class FakeGpu final : public Device {
 public:
  FakeGpu(int index, LogicalGpu where) : Device(DeviceKind::cuda, index), where(where) {}
  bool host_accessible() const override { return false; }
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_within(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  bool copy_from_peer(void* dst, Device& from, const void* src, std::size_t bytes) override {
    if (!dynamic_cast<FakeGpu*>(&from)) return false;
    ++peer_copies;
    std::memcpy(dst, src, bytes);
    return true;
  }
  LogicalGpu where;
  int peer_copies = 0;

 protected:
  void* do_allocate(std::size_t bytes) override { return ::operator new(bytes); }
  void do_deallocate(void* ptr, std::size_t) override { ::operator delete(ptr); }
};

}  // namespace

TEST_CASE("logical_gpu_layout: GPUs not split stay whole; split ones give one cuda:N per logical GPU") {
  CHECK(logical_gpu_layout(0, {}).empty());
  auto whole = logical_gpu_layout(2, {});
  REQUIRE(whole.size() == 2);
  CHECK(whole[1].physical == 1);
  CHECK(whole[1].memory_limit == 0);

  auto split = logical_gpu_layout(2, {{0, {{.memory_limit = 100}, {.memory_limit = 200}, {}}}});
  REQUIRE(split.size() == 4);
  CHECK(split[0].physical == 0);
  CHECK(split[0].memory_limit == 100);
  CHECK(split[1].memory_limit == 200);
  CHECK(split[2].physical == 0);
  CHECK(split[2].memory_limit == 0);
  CHECK(split[3].physical == 1);
}

TEST_CASE("set_logical_device_configuration: three logical GPUs on one, then no more changes") {
  (void)device_count(DeviceKind::cuda);  // the built-in backends register first; then the fake replaces CUDA
  register_device_factory(DeviceKind::cuda,
                          {.count = [] { return 1; },
                           .make = nullptr,
                           .make_logical = [](int index, LogicalGpu where) -> std::unique_ptr<Device> {
                             return std::make_unique<FakeGpu>(index, where);
                           }});
  CHECK(device_count(DeviceKind::cuda) == 1);

  CHECK(contains(message_of<NotFoundError>([] { set_logical_device_configuration(1, {{}}); }),
                 "GPU 1 does not exist; GPUs 0 to 0 are visible"));
  CHECK(contains(message_of<ValueError>([] { set_logical_device_configuration(0, {}); }),
                 "give at least one LogicalDeviceConfiguration"));

  set_logical_device_configuration(0, {{.memory_limit = 1 << 20}, {.memory_limit = 2 << 20}, {.memory_limit = 3 << 20}});
  CHECK(device_count(DeviceKind::cuda) == 3);
  auto& second = dynamic_cast<FakeGpu&>(device("cuda:1"));
  CHECK(second.name() == "cuda:1");
  CHECK(second.where.physical == 0);
  CHECK(second.where.memory_limit == std::size_t{2} << 20);
  CHECK(list_devices(DeviceKind::cuda).size() == 3);
  CHECK(contains(message_of<NotFoundError>([] { device("cuda:3"); }), "cuda:0 to cuda:2"));

  // Between two logical GPUs a copy goes device to device, not through the host.
  auto& first = dynamic_cast<FakeGpu&>(device("cuda:0"));
  void* a = first.allocate(64);
  void* b = second.allocate(64);
  std::memset(a, 7, 64);
  copy_between(second, b, first, a, 64);
  CHECK(second.peer_copies == 1);
  CHECK(static_cast<unsigned char*>(b)[63] == 7);
  first.deallocate(a, 64);
  second.deallocate(b, 64);

  CHECK(contains(message_of<Error>([] { set_logical_device_configuration(0, {{}, {}}); }),
                 "is in use already, and GPUs cannot be split once used"));
  CHECK(device_count(DeviceKind::cuda) == 3);
}
