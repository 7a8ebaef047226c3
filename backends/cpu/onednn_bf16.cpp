// bfloat16 matmul, batch_matmul, dense and conv2d (forward, backward data, backward filter) through
// oneDNN's native bfloat16 primitives, asked by the half adapter before it widens. As onednn.cpp does for
// float32, the work is split over the device pool: each thread runs a single-threaded primitive (OpenMP
// kept at one thread) on its rows, batch items or images; primitives are cached per shape.
#include "tower/backends/cpu/onednn_bf16.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "tower/backends/cpu/kernels.h"
#include "tower/backends/cpu/nn_kernels.h"
#include "tower/core/half.h"
#include "tower/core/op_names.h"

#ifdef TOWER_WITH_ONEDNN
#if __has_include(<omp.h>)
#include <omp.h>
#else
extern "C" void omp_set_num_threads(int);  // GNU's OpenMP runtime, which Debian's oneDNN uses
#endif

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "tower/backends/cpu/onednn_shared.h"
#endif

namespace tower::cpu::onednn_bf16 {

namespace {

std::atomic<bool> enabled_by_caller{true};
std::atomic<std::int64_t> steps{0};

}  // namespace

#ifdef TOWER_WITH_ONEDNN

namespace {

using onednn::cpu_engine;  // onednn_shared.h: one engine, and each thread's stream and buffers, for both paths
using onednn::thread_buffer;
using onednn::thread_stream;

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::strcmp(v, "0") != 0;
}

using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;
using bf16 = bfloat16_t;

// A GEMM with a side shorter than this is left to the widening path (tiny products, where it keeps the
// float32 kernel's bits); oneDNN's bfloat16 matmul measured ~1.7x float32 already at 128x10x128.
constexpr std::int64_t kMinGemmSide = 8;

bool native_isa() {
  static const bool yes = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto want = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);  // a bit set: AMX includes it
    return (isa & want) == want;
  }();
  return yes;
}

// oneDNN's reference implementations (what it picks for a layout or shape its JIT code does not cover)
// are slower than widening to the float32 kernels: those run instead.
bool worth_running(const std::string& impl) { return impl.find("ref") == std::string::npos; }

memory wrap(const memory::desc& desc, const void* data) {
  return memory(desc, cpu_engine(), const_cast<void*>(data));
}
memory scratchpad(const memory::desc& desc) {
  return memory(desc, cpu_engine(), thread_buffer(0, desc.get_size()));
}

// Parts of the work, one per pool thread (one part for work too small to share), at most `limit`.
std::int64_t parts_for(KernelContext& ctx, double flops, std::int64_t limit) {
  const std::int64_t threads = flops < kParallelFlops ? 1 : static_cast<std::int64_t>(cpu_pool(ctx).size());
  return std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(limit, 1));
}

// A cache of primitives made on first use with OpenMP at one thread, as they will run (oneDNN picks its
// blocking for the threads it will have); null entries remember "no primitive worth running".
template <typename Entry, std::size_t N>
class Cache {
 public:
  template <typename Make>
  const Entry* get(const std::array<std::int64_t, N>& key, Make make) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      omp_set_num_threads(1);
      std::unique_ptr<Entry> e;
      try {
        e = make();
      } catch (const dnnl::error&) {
        // unimplemented for this shape or layout: the widening path runs it
      }
      it = entries_.emplace(key, std::move(e)).first;
    }
    return it->second.get();
  }

 private:
  std::mutex mutex_;
  std::map<std::array<std::int64_t, N>, std::unique_ptr<Entry>> entries_;
};

// ---- GEMMs ----------------------------------------------------------------------------------------

// y (batch, m, n) = op(a) (batch, m, k) op(b) (batch, k, n) [+ bias (n)] [ReLU], every item row-major:
// a (batch, m, k) or, transposed, (batch, k, m); b (batch, k, n) or (batch, n, k).
struct Gemm {
  std::int64_t batch, m, n, k;
  bool ta, tb, bias, relu;
};

struct MatmulEntry {
  dnnl::matmul primitive;
  memory::desc a, b, bias, y, scratchpad;
};

// A matmul over `items` batch items and `rows` rows of op(a) (a part of g), with g's strides.
std::unique_ptr<MatmulEntry> make_matmul(const Gemm& g, std::int64_t items, std::int64_t rows) {
  // One item: the 2-D matmul oneDNN optimizes most; several: a leading batch dimension.
  auto desc = [&](std::int64_t d0, std::int64_t d1, std::int64_t item_stride, std::int64_t s0, std::int64_t s1) {
    if (g.batch == 1) return memory::desc({d0, d1}, Dt::bf16, memory::dims{s0, s1});
    return memory::desc({items, d0, d1}, Dt::bf16, memory::dims{item_stride, s0, s1});
  };
  auto e = std::make_unique<MatmulEntry>();
  e->a = g.ta ? desc(rows, g.k, g.m * g.k, 1, g.m) : desc(rows, g.k, g.m * g.k, g.k, 1);
  e->b = g.tb ? desc(g.k, g.n, g.k * g.n, 1, g.k) : desc(g.k, g.n, g.k * g.n, g.n, 1);
  e->y = desc(rows, g.n, g.m * g.n, g.n, 1);
  if (g.bias) e->bias = desc(1, g.n, g.n, g.n, 1);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // from thread_buffer: nothing allocated per step
  if (g.relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd(g.bias ? dnnl::matmul::desc(e->a, e->b, e->bias, e->y)
                                               : dnnl::matmul::desc(e->a, e->b, e->y),
                                        attr, cpu_engine());
  if (!worth_running(pd.impl_info_str())) return nullptr;
  e->scratchpad = pd.scratchpad_desc();
  e->primitive = dnnl::matmul(pd);
  return e;
}

const MatmulEntry* matmul_entry(const Gemm& g, std::int64_t items, std::int64_t rows) {
  static Cache<MatmulEntry, 10> cache;
  return cache.get({g.batch, g.m, g.n, g.k, g.ta, g.tb, g.bias, g.relu, items, rows},
                   [&] { return make_matmul(g, items, rows); });
}

// Runs g split over the pool: over batch items when there are several, else over rows of op(a).
// False, with nothing run, where a part has no primitive.
bool run_gemm(KernelContext& ctx, const Gemm& g, const bf16* a, const bf16* b, const bf16* bias, bf16* y) {
  if (std::min({g.m, g.n, g.k}) < kMinGemmSide || g.batch == 0) return false;
  const double flops = 2.0 * static_cast<double>(g.batch) * static_cast<double>(g.m * g.n * g.k);
  const bool by_item = g.batch > 1;
  const std::int64_t total = by_item ? g.batch : g.m;
  const std::int64_t parts = parts_for(ctx, flops, by_item ? g.batch : g.m / kMinGemmSide);
  std::vector<const MatmulEntry*> es(static_cast<std::size_t>(parts));  // at most two part sizes
  for (std::int64_t p = 0; p < parts; ++p) {
    const std::int64_t size = total * (p + 1) / parts - total * p / parts;
    es[static_cast<std::size_t>(p)] = by_item ? matmul_entry(g, size, g.m) : matmul_entry(g, 1, size);
    if (es[static_cast<std::size_t>(p)] == nullptr) return false;
  }
  parallel_for(ctx, parts, 1, [&](std::int64_t p0, std::int64_t p1) {
    omp_set_num_threads(1);
    dnnl::stream& stream = thread_stream();
    for (std::int64_t p = p0; p < p1; ++p) {
      const MatmulEntry& e = *es[static_cast<std::size_t>(p)];
      const std::int64_t first = total * p / parts;
      // Where the part starts in a, b and y: its first item, or its first row of op(a) (a column of a
      // when transposed) and of y.
      const std::int64_t a_at = by_item ? first * g.m * g.k : (g.ta ? first : first * g.k);
      const std::int64_t b_at = by_item ? first * g.k * g.n : 0;
      const std::int64_t y_at = by_item ? first * g.m * g.n : first * g.n;
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(e.a, a + a_at)},
                                           {DNNL_ARG_WEIGHTS, wrap(e.b, b + b_at)},
                                           {DNNL_ARG_DST, wrap(e.y, y + y_at)},
                                           {DNNL_ARG_SCRATCHPAD, scratchpad(e.scratchpad)}};
      if (g.bias) args.emplace(DNNL_ARG_BIAS, wrap(e.bias, bias));
      e.primitive.execute(stream, args);
    }
    stream.wait();
  });
  return true;
}

// matmul: (a (m, k), b (k, n)) -> (m, n), each transposed by its attr.
bool matmul(KernelContext& ctx) {
  const Tensor& a = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const bool ta = ctx.attrs().get_bool("transpose_a"), tb = ctx.attrs().get_bool("transpose_b");
  const Gemm g{1, y.shape()[0], y.shape()[1], a.shape()[ta ? 0 : 1], ta, tb, false, false};
  return run_gemm(ctx, g, a.data<bf16>(), ctx.inputs[1].data<bf16>(), nullptr, y.data<bf16>());
}

// batch_matmul: (a (..., m, k), b (..., k, n)) -> (..., m, n), the leading axes folded into one.
bool batch_matmul(KernelContext& ctx) {
  const Tensor& a = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const bool ta = ctx.attrs().get_bool("transpose_a"), tb = ctx.attrs().get_bool("transpose_b");
  const int r = y.shape().rank();
  const std::int64_t m = y.shape()[r - 2], n = y.shape()[r - 1];
  if (m * n == 0) return false;
  const Gemm g{y.num_elements() / (m * n), m, n, a.shape()[ta ? r - 2 : r - 1], ta, tb, false, false};
  return run_gemm(ctx, g, a.data<bf16>(), ctx.inputs[1].data<bf16>(), nullptr, y.data<bf16>());
}

// dense: (x (m, k), kernel (k, n), bias (n)) -> activation(x kernel + bias) (m, n); ReLU or none, as
// math_kernels.cpp's dense.
bool dense(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const bool relu = ctx.attrs().get_string("activation") == "relu";
  const Gemm g{1, y.shape()[0], y.shape()[1], x.shape()[1], false, false, true, relu};
  return run_gemm(ctx, g, x.data<bf16>(), ctx.inputs[1].data<bf16>(), ctx.inputs[2].data<bf16>(), y.data<bf16>());
}

// ---- convolutions -------------------------------------------------------------------------------

enum class Kind : std::int64_t { forward, backward_data, backward_filter };

// One 2-D convolution in NHWC with a (kh, kw, c_in, c_out) kernel, with oneDNN's right padding (may be
// negative: "valid" rows the window never reaches); forward, it may add a bias (c_out) and a ReLU.
struct Conv {
  Window2D w;  // over x (batch, in_h, in_w, c_in)
  std::int64_t filters, pad_bottom, pad_right;
  bool bias = false, relu = false;
};

// A primitive for one kind and sub-batch, with the kernel layout it wants and the reorder between that
// layout and Keras's (kh, kw, c_in, c_out) (none when they are the same). The kernel is bfloat16, but
// float32 as backward filter's output: the images' partial sums are added in float32 and rounded once.
struct ConvEntry {
  dnnl::primitive primitive;
  memory::desc x, y, bias, kernel_plain, kernel_blocked, scratchpad;
  bool reorder = false;
  dnnl::reorder to_blocked, to_plain;
};

memory::dims dims(std::int64_t a, std::int64_t b) { return {a, b}; }

std::unique_ptr<ConvEntry> make_conv(Kind kind, const Conv& s, std::int64_t batch) {
  const Window2D& w = s.w;
  auto e = std::make_unique<ConvEntry>();
  const Dt kernel_type = kind == Kind::backward_filter ? Dt::f32 : Dt::bf16;
  // oneDNN's dims are always (n, c, h, w) / (o, i, h, w); the tags give the memory order.
  const memory::dims kernel_dims{s.filters, w.channels, w.kernel_h, w.kernel_w};
  e->x = memory::desc({batch, w.channels, w.in_h, w.in_w}, Dt::bf16, Tag::nhwc);
  e->y = memory::desc({batch, s.filters, w.out_h, w.out_w}, Dt::bf16, Tag::nhwc);
  e->kernel_plain = memory::desc(kernel_dims, kernel_type, Tag::hwio);
  const memory::desc kernel_any(kernel_dims, kernel_type, Tag::any), forward_kernel(kernel_dims, Dt::bf16, Tag::any);
  const memory::dims strides = dims(w.stride_h, w.stride_w), dilates = dims(w.dilation_h - 1, w.dilation_w - 1),
                     pad_l = dims(w.pad_top, w.pad_left), pad_r = dims(s.pad_bottom, s.pad_right);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // from thread_buffer: nothing allocated per step
  // The backward passes' hint is the plain convolution; only a forward step adds the bias and ReLU.
  const bool bias = kind == Kind::forward && s.bias, relu = kind == Kind::forward && s.relu;
  dnnl::primitive_attr forward_attr = attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    forward_attr.set_post_ops(ops);
  }
  e->bias = memory::desc({s.filters}, Dt::bf16, Tag::a);
  const dnnl::convolution_forward::primitive_desc forward(
      bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                             e->x, forward_kernel, e->bias, e->y, strides, dilates, pad_l, pad_r)
           : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                             e->x, forward_kernel, e->y, strides, dilates, pad_l, pad_r),
      forward_attr, cpu_engine());
  std::string impl;  // the implementation oneDNN picked, e.g. "jit_bf16:avx512_core_bf16"
  switch (kind) {
    case Kind::forward:
      e->kernel_blocked = forward.weights_desc();
      e->scratchpad = forward.scratchpad_desc();
      e->primitive = dnnl::convolution_forward(forward);
      impl = forward.impl_info_str();
      break;
    case Kind::backward_data: {
      const dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, e->x, kernel_any, e->y, strides,
                                                dilates, pad_l, pad_r),
          attr, cpu_engine(), forward);
      e->kernel_blocked = pd.weights_desc();
      e->scratchpad = pd.scratchpad_desc();
      e->primitive = dnnl::convolution_backward_data(pd);
      impl = pd.impl_info_str();
      break;
    }
    case Kind::backward_filter: {
      const dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, e->x, kernel_any, e->y,
                                                   strides, dilates, pad_l, pad_r),
          attr, cpu_engine(), forward);
      e->kernel_blocked = pd.diff_weights_desc();
      e->scratchpad = pd.scratchpad_desc();
      e->primitive = dnnl::convolution_backward_weights(pd);
      impl = pd.impl_info_str();
      break;
    }
  }
  if (!worth_running(impl)) return nullptr;
  e->reorder = e->kernel_blocked != e->kernel_plain;
  if (e->reorder) {
    e->to_blocked = dnnl::reorder(
        dnnl::reorder::primitive_desc(cpu_engine(), e->kernel_plain, cpu_engine(), e->kernel_blocked));
    e->to_plain = dnnl::reorder(
        dnnl::reorder::primitive_desc(cpu_engine(), e->kernel_blocked, cpu_engine(), e->kernel_plain));
  }
  return e;
}

const ConvEntry* conv_entry(Kind kind, const Conv& s, std::int64_t batch) {
  static Cache<ConvEntry, 20> cache;
  const Window2D& w = s.w;
  return cache.get({static_cast<std::int64_t>(kind), batch, w.in_h, w.in_w, w.channels, w.out_h, w.out_w, s.filters,
                    w.kernel_h, w.kernel_w, w.stride_h, w.stride_w, w.dilation_h, w.dilation_w, w.pad_top, w.pad_left,
                    s.pad_bottom, s.pad_right, s.bias, s.relu},
                   [&] { return make_conv(kind, s, batch); });
}

// The convolution of the step: x (batch, in_h, in_w, c_in) with a kernel (kh, kw, c_in, c_out) to y
// (batch, out_h, out_w, c_out), from the node's attrs; false for groups or empty tensors.
bool conv_of(const KernelContext& ctx, const Shape& x, const Shape& kernel, const Shape& y, Conv* s) {
  if (ctx.attrs().get_int("groups", 1) != 1) return false;
  const Window2D w = make_window(ctx, x, kernel[0], kernel[1], y[1], y[2]);
  if (w.batch == 0 || w.channels == 0 || w.out_h == 0 || w.out_w == 0 || kernel[3] == 0) return false;
  // The rows past the last window's reach are (negative) right padding, as oneDNN counts it.
  *s = Conv{w, kernel[3], (w.out_h - 1) * w.stride_h + (w.kernel_h - 1) * w.dilation_h + 1 - w.in_h - w.pad_top,
            (w.out_w - 1) * w.stride_w + (w.kernel_w - 1) * w.dilation_w + 1 - w.in_w - w.pad_left};
  return true;
}

// The parts the batch of s is split into, one per pool thread.
std::int64_t conv_parts(KernelContext& ctx, const Conv& s) {
  const Window2D& w = s.w;
  const double flops = 2.0 * static_cast<double>(w.batch * w.out_h * w.out_w) *
                       static_cast<double>(s.filters * w.kernel_h * w.kernel_w * w.channels);
  return parts_for(ctx, flops, w.batch);
}

// Runs `kind` on the batch split into `parts` over the pool: each part's images of x_side (batch, in_h,
// in_w, c_in) and y_side (batch, out_h, out_w, c_out) with the kernel read from kernel_in (bfloat16) or
// written, in float32, to kernel_out + part · kernel size, and forward s's bias (c_out). False, with
// nothing run, where a part has no primitive.
bool run_conv(KernelContext& ctx, Kind kind, const Conv& s, std::int64_t parts, int x_arg, const bf16* x_side,
              int y_arg, const bf16* y_side, int kernel_arg, const bf16* kernel_in, float* kernel_out,
              const bf16* bias = nullptr) {
  const Window2D& w = s.w;
  std::vector<const ConvEntry*> es(static_cast<std::size_t>(parts));  // at most two sub-batch sizes
  for (std::int64_t p = 0; p < parts; ++p) {
    es[static_cast<std::size_t>(p)] = conv_entry(kind, s, w.batch * (p + 1) / parts - w.batch * p / parts);
    if (es[static_cast<std::size_t>(p)] == nullptr) return false;
  }
  const std::int64_t x_image = w.in_h * w.in_w * w.channels, y_image = w.out_h * w.out_w * s.filters;
  const std::int64_t kernel_size = w.kernel_h * w.kernel_w * w.channels * s.filters;
  parallel_for(ctx, parts, 1, [&](std::int64_t p0, std::int64_t p1) {
    omp_set_num_threads(1);
    dnnl::stream& stream = thread_stream();
    for (std::int64_t p = p0; p < p1; ++p) {
      const ConvEntry& e = *es[static_cast<std::size_t>(p)];
      const std::int64_t n = w.batch * p / parts;
      std::unordered_map<int, memory> args{{x_arg, wrap(e.x, x_side + n * x_image)},
                                           {y_arg, wrap(e.y, y_side + n * y_image)},
                                           {DNNL_ARG_SCRATCHPAD, scratchpad(e.scratchpad)}};
      if (s.bias) args.emplace(DNNL_ARG_BIAS, wrap(e.bias, bias));
      memory plain = kernel_in != nullptr ? wrap(e.kernel_plain, kernel_in)
                                          : wrap(e.kernel_plain, kernel_out + p * kernel_size);
      memory blocked =
          e.reorder ? memory(e.kernel_blocked, cpu_engine(), thread_buffer(1, e.kernel_blocked.get_size())) : plain;
      if (e.reorder && kernel_in != nullptr) e.to_blocked.execute(stream, plain, blocked);
      args.emplace(kernel_arg, blocked);
      e.primitive.execute(stream, args);
      if (e.reorder && kernel_in == nullptr) e.to_plain.execute(stream, blocked, plain);
    }
    stream.wait();
  });
  return true;
}

// conv2d: (x (batch, h, w, c_in), kernel (kh, kw, c_in, c_out)) -> y (batch, oh, ow, c_out); conv2d_bias
// adds a bias (c_out) and, with activation "relu", a ReLU to it.
bool conv2d(KernelContext& ctx, bool with_bias) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  Conv s;
  if (!conv_of(ctx, x.shape(), kernel.shape(), y.shape(), &s)) return false;
  s.bias = with_bias;
  s.relu = with_bias && ctx.attrs().get_string("activation") == "relu";
  return run_conv(ctx, Kind::forward, s, conv_parts(ctx, s), DNNL_ARG_SRC, x.data<bf16>(), DNNL_ARG_DST,
                  y.data<bf16>(), DNNL_ARG_WEIGHTS, kernel.data<bf16>(), nullptr,
                  with_bias ? ctx.inputs[2].data<bf16>() : nullptr);
}

// conv2d_backward_data: (dy, kernel, x) -> dx, x's shape.
bool conv2d_backward_data(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& kernel = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  Conv s;
  return conv_of(ctx, dx.shape(), kernel.shape(), dy.shape(), &s) &&
         run_conv(ctx, Kind::backward_data, s, conv_parts(ctx, s), DNNL_ARG_DIFF_SRC, dx.data<bf16>(), DNNL_ARG_DIFF_DST,
                  dy.data<bf16>(), DNNL_ARG_WEIGHTS, kernel.data<bf16>(), nullptr);
}

// conv2d_backward_filter: (x, dy, kernel) -> dkernel (kh, kw, c_in, c_out): each part's float32 sum,
// added in part order (the same sum on every run) and rounded once.
bool conv2d_backward_filter(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dk = ctx.outputs[0];
  Conv s;
  if (!conv_of(ctx, x.shape(), dk.shape(), dy.shape(), &s)) return false;
  const std::int64_t size = dk.num_elements(), parts = conv_parts(ctx, s);
  std::vector<float> sums(static_cast<std::size_t>(parts * size));  // (parts, kh, kw, c_in, c_out)
  if (!run_conv(ctx, Kind::backward_filter, s, parts, DNNL_ARG_SRC, x.data<bf16>(), DNNL_ARG_DIFF_DST,
                dy.data<bf16>(), DNNL_ARG_DIFF_WEIGHTS, nullptr, sums.data()))
    return false;
  bf16* out = dk.data<bf16>();
  for (std::int64_t i = 0; i < size; ++i) {
    float sum = sums[static_cast<std::size_t>(i)];
    for (std::int64_t p = 1; p < parts; ++p) sum += sums[static_cast<std::size_t>(p * size + i)];
    out[i] = bf16(sum);
  }
  return true;
}

}  // namespace

bool available() {
  static const bool switched_on = env_on("TOWER_ONEDNN") && env_on("TOWER_ONEDNN_BF16");
  return switched_on && enabled_by_caller.load() && native_isa();
}

const char* isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx2: return "avx2";
    default: return "older than avx2";
  }
}

bool run(KernelContext& ctx) {
  if (!available()) return false;
  for (const auto* list : {&ctx.inputs, &ctx.outputs})
    for (const Tensor& t : *list)
      if (!t.defined() || t.dtype() != DType::bfloat16) return false;
  const std::string& op = ctx.node.op();
  bool done = false;
  if (op == op_names::matmul) done = matmul(ctx);
  else if (op == op_names::batch_matmul) done = batch_matmul(ctx);
  else if (op == op_names::dense) done = dense(ctx);
  else if (op == op_names::conv2d) done = conv2d(ctx, false);
  else if (op == op_names::conv2d_bias) done = conv2d(ctx, true);
  else if (op == op_names::conv2d_backward_data) done = conv2d_backward_data(ctx);
  else if (op == op_names::conv2d_backward_filter) done = conv2d_backward_filter(ctx);
  if (done) steps.fetch_add(1, std::memory_order_relaxed);
  return done;
}

#else  // without oneDNN: the half adapter always widens

bool available() { return false; }
const char* isa_name() { return "none"; }
bool run(KernelContext&) { return false; }

#endif

void set_enabled(bool enabled) { enabled_by_caller.store(enabled); }
std::int64_t steps_run() { return steps.load(); }

}  // namespace tower::cpu::onednn_bf16
