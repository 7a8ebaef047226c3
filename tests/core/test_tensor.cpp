// Tensor, Shape, device registry and thread pool basics.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tower/backends/cpu/cpu_device.h"
#include "tower/core/tensor.h"

using namespace tower;

TEST_CASE("shape: printing, element count, axes") {
  Shape s{-1, 28, 28, 1};
  CHECK(s.to_string() == "(None, 28, 28, 1)");
  CHECK(Shape{5}.to_string() == "(5,)");
  CHECK(s.dim(-1) == 1);
  CHECK_FALSE(s.is_fully_known());
  CHECK_THROWS_AS(s.num_elements(), ShapeError);
  CHECK(Shape{2, 3, 4}.num_elements() == 24);
  CHECK(Shape{}.num_elements() == 1);
  CHECK(s.compatible_with(Shape{128, 28, 28, 1}));
  CHECK_FALSE(s.compatible_with(Shape{128, 28, 28, 3}));
  CHECK_THROWS_AS(s.normalize_axis(4), ShapeError);
}

TEST_CASE("shape: negative indices count from the end, out of range is a ShapeError") {
  Shape s{-1, 28, 14, 3};
  CHECK(s[-1] == 3);  // input_shape[-1] in a custom layer, as in Keras
  CHECK(s[-2] == 14);
  CHECK(s[-4] == -1);
  CHECK(s[0] == -1);
  s[-1] = 8;
  CHECK(s[3] == 8);
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no ShapeError");
  };
  const std::string high = message([&] { (void)s[4]; });
  CHECK(high.find("index 4 is out of range for shape (None, 28, 14, 8) of rank 4") != std::string::npos);
  CHECK(high.find("-4 to -1") != std::string::npos);
  CHECK(message([&] { (void)s[-5]; }).find("index -5") != std::string::npos);
  CHECK(message([] { (void)Shape{}[-1]; }).find("scalar") != std::string::npos);
  CHECK_THROWS_AS((void)s.dim(7), Error);  // the tower::Error family, not std::out_of_range
}

TEST_CASE("tensor: from_vector, to_vector, reshaped, copies between cpu devices") {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(t.dtype() == DType::float32);
  CHECK(t.nbytes() == 24);
  CHECK(t.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
  Tensor r = t.reshaped({3, 2});
  CHECK(r.raw_data() == t.raw_data());
  CHECK_THROWS_AS(t.reshaped({4}), ShapeError);
  Tensor on1 = t.to(cpu_device(1));
  CHECK(&on1.device() == &device("cpu:1"));
  CHECK(on1.to_vector<float>() == t.to_vector<float>());
  CHECK_THROWS_AS(t.data<double>(), DTypeError);
  CHECK_THROWS_AS(Tensor::from_vector<float>({2, 2}, {1, 2, 3}), ShapeError);
  CHECK(Tensor::scalar(2.5).item() == 2.5);
  CHECK(Tensor::full({2}, 7, DType::int32).to_vector<int>() == std::vector<int>{7, 7});
}

TEST_CASE("device: registry names, TF spellings and unknown devices") {
  CHECK(&device("cpu") == &cpu_device(0));
  CHECK(&device("/device:CPU:2") == &cpu_device(2));
  CHECK(device("cpu:2").name() == "cpu:2");
  CHECK_THROWS_AS(device("tpu:0"), NotFoundError);
  CHECK_THROWS_AS(device("cpu:x"), NotFoundError);
  // cpu:N is created on demand up to a documented limit, which an environment variable raises.
  CHECK(max_cpu_devices() == kDefaultMaxCpuDevices);
  try {
    device("cpu:99");
    FAIL("expected NotFoundError");
  } catch (const NotFoundError& e) {
    CHECK(std::string(e.what()).find("cpu:0 to cpu:63") != std::string::npos);
    CHECK(std::string(e.what()).find("TOWER_MAX_CPU_DEVICES") != std::string::npos);
  }
  CHECK_THROWS_AS(device("cpu:-1"), NotFoundError);
  if (device_count(DeviceKind::cuda) == 0) {
    try {
      device("cuda:5");
      FAIL("expected NotFoundError");
    } catch (const NotFoundError& e) {
      CHECK(std::string(e.what()).find("visible") != std::string::npos);
    }
  }
}

TEST_CASE("device: memory statistics follow allocations") {
  Device& d = cpu_device(3);
  auto before = d.memory_stats();
  {
    Tensor t({1000}, DType::float64, d);
    CHECK(d.memory_stats().in_use == before.in_use + 8000);
  }
  CHECK(d.memory_stats().in_use == before.in_use);
  CHECK(d.memory_stats().peak >= before.in_use + 8000);
}

TEST_CASE("thread pool: parallel_for covers every index once, nested calls run inline") {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  pool.parallel_for(1000, 10, [&](std::int64_t b, std::int64_t e) {
    for (auto i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
    pool.parallel_for(4, 1, [](std::int64_t, std::int64_t) {});
  });
  for (auto& h : hits) CHECK(h.load() == 1);
  int calls = 0;
  ThreadPool single(1);
  std::int64_t span = 0;
  single.parallel_for(100, 1, [&](std::int64_t b, std::int64_t e) { calls++, span = e - b; });
  CHECK(span == 100);
  CHECK(calls == 1);
}

TEST_CASE("thread pool: loops back to back, after idle pauses and from two threads at once") {
  ThreadPool pool(3);
  std::atomic<std::int64_t> total = 0;
  const auto sum_loop = [&](int n) {
    pool.parallel_for(n, 1, [&](std::int64_t b, std::int64_t e) {
      for (auto i = b; i < e; ++i) total += i;
    });
  };
  std::int64_t expected = 0;
  for (int round = 0; round < 200; ++round) {  // workers still spinning between loops
    sum_loop(round + 2);
    expected += static_cast<std::int64_t>(round + 2) * (round + 1) / 2;
  }
  CHECK(total == expected);
  for (int round = 0; round < 3; ++round) {  // workers asleep by the time the next loop starts
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    sum_loop(1000);
    expected += 1000 * 999 / 2;
  }
  CHECK(total == expected);
  std::thread other([&] {
    for (int round = 0; round < 100; ++round) sum_loop(50);
  });
  for (int round = 0; round < 100; ++round) sum_loop(50);
  other.join();
  CHECK(total == expected + 200 * (50 * 49 / 2));
}
