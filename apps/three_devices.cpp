// TensorFlow's manual device placement example, in tower's graph API: two variables squared on two
// devices, their sum on a third, minimized by gradient descent (GradientDescentOptimizer(0.1).minimize).
//
//   with tf.device("/gpu:0"): a = tf.Variable(3.0); a2 = a * a
//   with tf.device("/gpu:1"): b = tf.Variable(4.0); b2 = b * b
//   with tf.device("/cpu:0"): total = a2 + b2
//   train = tf.train.GradientDescentOptimizer(0.1).minimize(total)
//
// Each variable lives, and is updated, on its device; the plan copies a2 and b2 to the third device and
// the gradients back. Usage: three_devices [DEVICE_A DEVICE_B DEVICE_SUM] (default cpu:1 cpu:2 cpu:0;
// cuda:0 cuda:1 cpu:0 on two GPUs). Prints a, b and the total after each of 5 steps.
#include <iostream>
#include <string>

#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/core/variable.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;

int main(int argc, char** argv) try {
  if (argc != 1 && argc != 4) {
    std::cerr << "usage: three_devices [DEVICE_A DEVICE_B DEVICE_SUM]\n";
    return 2;
  }
  const std::string on_a = argc == 4 ? argv[1] : "cpu:1", on_b = argc == 4 ? argv[2] : "cpu:2",
                    on_sum = argc == 4 ? argv[3] : "cpu:0";
  Graph graph;
  const VariablePtr a = make_variable("a", Tensor::scalar(3.0, DType::float32, device(on_a)));
  const VariablePtr b = make_variable("b", Tensor::scalar(4.0, DType::float32, device(on_b)));
  SymbolicTensor a2, b2, total;
  {
    Graph::DeviceScope on(graph, on_a);
    a2 = ops::multiply(graph.variable(a), graph.variable(a));
  }
  {
    Graph::DeviceScope on(graph, on_b);
    b2 = ops::multiply(graph.variable(b), graph.variable(b));
  }
  {
    Graph::DeviceScope on(graph, on_sum);
    total = ops::add(a2, b2);
  }
  optimizers::SGD gradient_descent(0.1);
  const auto train = gradient_descent.minimize(graph, total, {a, b}, graph.constant(Tensor::scalar(0.1)),
                                               graph.constant(Tensor::scalar(1.0)));
  Executor executor(device(on_sum));
  for (int step = 1; step <= 5; ++step) {
    const double value = executor.run({}, {total}, train)[0].to(cpu_device()).item();
    std::cout << "step " << step << ": total " << value << " -> a " << a->value().to(cpu_device()).item() << " on "
              << a->value().device().name() << ", b " << b->value().to(cpu_device()).item() << " on "
              << b->value().device().name() << " (" << executor.last_plan()->num_copies() << " copies a step)\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "three_devices: " << e.what() << "\n";
  return 1;
}
