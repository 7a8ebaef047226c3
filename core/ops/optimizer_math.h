// Scalar formulas the optimizer update kernels share on the host and on CUDA devices.
#pragma once

#include <cfloat>
#include <cmath>

#ifdef __CUDACC__
#define TOWER_HOST_DEVICE __host__ __device__
#else
#define TOWER_HOST_DEVICE
#endif

namespace tower {

// Keras 3 Nadam's u_product after step t (Nadam._backend_update_step): the product over s = 1..t of
// beta_1 (1 - 0.5 * 0.96^s), multiplied in T in Keras's order. Keras keeps it in a variable; here it is
// recomputed from t, which needs no state. Once it falls below a quarter of T's epsilon, 1 - u_product
// (the only way Nadam uses it) rounds to 1 for every later t, so the loop stops there and returns 0:
// the result is Keras's bit for bit, in a few hundred multiplications at most for beta_1 = 0.9.
template <typename T>
TOWER_HOST_DEVICE T nadam_u_product(T beta_1, T t) {
  const T negligible = sizeof(T) == sizeof(float) ? T(FLT_EPSILON / 4) : T(DBL_EPSILON / 4);  // T's epsilon / 4
  T product = T(1);
  for (T s = T(1); s <= t; s += T(1)) {
#ifdef __CUDA_ARCH__
    product = product * beta_1 * (T(1) - T(0.5) * pow(T(0.96), s));
#else
    product = product * beta_1 * (T(1) - T(0.5) * std::pow(T(0.96), s));
#endif
    if (product < negligible) return T(0);
  }
  return product;
}

}  // namespace tower
