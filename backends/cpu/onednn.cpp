// float32 conv2d, its gradients and sgemm through oneDNN. The convolutions split the batch over the
// device pool: each thread runs a single-threaded primitive on its images, so the pool stays the one
// source of threads (oneDNN's OpenMP team is kept at one thread) and the results do not depend on
// OpenMP's scheduling. sgemm runs on the calling thread, as the pool's OpenBLAS calls do.
#include "tower/backends/cpu/onednn.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tower/backends/cpu/kernels.h"

#ifdef TOWER_WITH_ONEDNN
#if __has_include(<omp.h>)
#include <omp.h>
#else
extern "C" void omp_set_num_threads(int);  // GNU's OpenMP runtime, which Debian's oneDNN uses
#endif

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <dnnl.hpp>

#include "tower/backends/cpu/onednn_shared.h"
#endif

namespace tower::cpu::onednn {

#ifdef TOWER_WITH_ONEDNN

dnnl::engine& cpu_engine() {
  static auto* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}
dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}
std::uint8_t* thread_buffer(int which, std::size_t bytes) {
  thread_local std::array<std::vector<std::uint8_t>, 2> buffers;
  if (buffers[which].size() < bytes) buffers[which].resize(bytes);
  return buffers[which].data();
}

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

// Fewer input channels than this: conv_kernels.cpp's small-K loops measured faster (bench_ops, the
// mnist_cnn 1->32 layer; docs/benchmarks.md).
constexpr std::int64_t kMinChannels = 4;
// A GEMM side shorter than this (a 10-class output layer): OpenBLAS measured faster (docs/benchmarks.md).
constexpr int kMinGemmSide = 32;

bool switched_on() {
  static const bool on = [] {
    const char* v = std::getenv("TOWER_ONEDNN");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}
std::atomic<bool> enabled_by_caller{true};

// oneDNN's reference and GEMM-based convolutions (what it falls back to without AVX2, or for an odd
// shape) are slower than conv_kernels.cpp's own loops: those run instead.
bool worth_running(const std::string& name) {
  return name.find("ref") == std::string::npos && name.find("gemm") == std::string::npos;
}

// forward_bias and forward_bias_relu: conv2d_bias's forward, the bias (and ReLU) added as the output is written.
enum class Kind : std::int64_t { forward, backward_data, backward_filter, forward_bias, forward_bias_relu };

// A primitive for one kind and sub-batch, with the kernel layout it wants and the reorder between
// that layout and Keras's (kh, kw, c_in, c_out) (none when they are the same).
struct Entry {
  dnnl::primitive primitive;
  memory::desc x, y, bias, kernel_plain, kernel_blocked, scratchpad;
  bool reorder = false;
  dnnl::reorder to_blocked, to_plain;
};

using Key = std::array<std::int64_t, 18>;

memory::dims dims(std::int64_t a, std::int64_t b) { return {a, b}; }

// Makes the primitive, or returns null where oneDNN has none for the shape.
std::unique_ptr<Entry> make_entry(Kind kind, const Conv2DShape& s, std::int64_t batch) {
  const Window2D& w = s.w;
  auto e = std::make_unique<Entry>();
  // oneDNN's dims are always (n, c, h, w) / (o, i, h, w); the tags give the memory order.
  e->x = memory::desc({batch, w.channels, w.in_h, w.in_w}, Dt::f32, Tag::nhwc);
  e->y = memory::desc({batch, s.filters, w.out_h, w.out_w}, Dt::f32, Tag::nhwc);
  e->kernel_plain = memory::desc({s.filters, w.channels, w.kernel_h, w.kernel_w}, Dt::f32, Tag::hwio);
  const memory::desc kernel_any({s.filters, w.channels, w.kernel_h, w.kernel_w}, Dt::f32, Tag::any);
  const memory::dims strides = dims(w.stride_h, w.stride_w), dilates = dims(w.dilation_h - 1, w.dilation_w - 1),
                     pad_l = dims(w.pad_top, w.pad_left), pad_r = dims(s.pad_bottom, s.pad_right);
  e->bias = memory::desc({s.filters}, Dt::f32, Tag::x);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // from thread_buffer: nothing allocated per step
  std::string impl;  // the implementation oneDNN picked, e.g. "brgconv:avx512_core"
  try {
    const dnnl::convolution_forward::primitive_desc forward(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                        e->x, kernel_any, e->y, strides, dilates, pad_l, pad_r),
        attr, cpu_engine());
    switch (kind) {
      case Kind::forward:
        e->kernel_blocked = forward.weights_desc();
        e->scratchpad = forward.scratchpad_desc();
        e->primitive = dnnl::convolution_forward(forward);
        impl = forward.impl_info_str();
        break;
      case Kind::forward_bias:
      case Kind::forward_bias_relu: {
        dnnl::primitive_attr fused = attr;
        if (kind == Kind::forward_bias_relu) {  // max(v, 0) as the relu op: NaN and -0 pass through
          dnnl::post_ops relu;
          relu.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
          fused.set_post_ops(relu);
        }
        const dnnl::convolution_forward::primitive_desc pd(
            dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                            e->x, kernel_any, e->bias, e->y, strides, dilates, pad_l, pad_r),
            fused, cpu_engine());
        e->kernel_blocked = pd.weights_desc();
        e->scratchpad = pd.scratchpad_desc();
        e->primitive = dnnl::convolution_forward(pd);
        impl = pd.impl_info_str();
        break;
      }
      case Kind::backward_data: {
        const dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, e->x, kernel_any, e->y,
                                                  strides, dilates, pad_l, pad_r),
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
      e->to_blocked = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), e->kernel_plain, cpu_engine(),
                                                                   e->kernel_blocked));
      e->to_plain = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), e->kernel_blocked, cpu_engine(),
                                                                e->kernel_plain));
    }
  } catch (const dnnl::error&) {
    return nullptr;  // unimplemented for this shape (a padding, a dilation): the caller's own loops run it
  }
  return e;
}

// The cached primitive for (kind, shape, batch); null where there is none. Made with OpenMP at one
// thread, as it will run (oneDNN picks its blocking for the threads it will have).
const Entry* entry(Kind kind, const Conv2DShape& s, std::int64_t batch) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Entry>> cache;
  const Window2D& w = s.w;
  const Key key{static_cast<std::int64_t>(kind), batch, w.in_h, w.in_w, w.channels, w.out_h, w.out_w, s.filters,
                w.kernel_h, w.kernel_w, w.stride_h, w.stride_w, w.dilation_h, w.dilation_w, w.pad_top, w.pad_left,
                s.pad_bottom, s.pad_right};
  std::lock_guard lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) {
    omp_set_num_threads(1);
    it = cache.emplace(key, make_entry(kind, s, batch)).first;
  }
  return it->second.get();
}

// The batch split into parts, one per pool thread (one part for work too small to share).
struct Split {
  std::int64_t parts;
  std::int64_t begin(std::int64_t p, std::int64_t batch) const { return batch * p / parts; }
};

Split split(KernelContext& ctx, const Conv2DShape& s) {
  const Window2D& w = s.w;
  const std::int64_t flops = 2 * w.batch * w.out_h * w.out_w * s.filters * w.kernel_h * w.kernel_w * w.channels;
  const std::int64_t threads = flops < kParallelFlops ? 1 : static_cast<std::int64_t>(cpu_pool(ctx).size());
  return Split{std::clamp<std::int64_t>(threads, 1, w.batch)};
}

// The primitives of every part (at most two sub-batch sizes), or false when one is missing.
bool entries(Kind kind, const Conv2DShape& s, const Split& sp, std::vector<const Entry*>* out) {
  out->resize(static_cast<std::size_t>(sp.parts));
  for (std::int64_t p = 0; p < sp.parts; ++p) {
    const std::int64_t n = sp.begin(p + 1, s.w.batch) - sp.begin(p, s.w.batch);
    (*out)[static_cast<std::size_t>(p)] = entry(kind, s, n);
    if ((*out)[static_cast<std::size_t>(p)] == nullptr) return false;
  }
  return true;
}

memory wrap(const memory::desc& desc, const float* data) {
  return memory(desc, cpu_engine(), const_cast<float*>(data));
}

// Runs e's primitive on one part: `args` names its x-side and y-side memories; the kernel goes in as
// `kernel_arg` (reordered to the primitive's layout first when `kernel_in`), or comes out of it; the
// bias, when not null, goes in as the forward's.
void run(const Entry& e, std::unordered_map<int, memory> args, int kernel_arg, const float* kernel_in,
         float* kernel_out, const float* bias) {
  omp_set_num_threads(1);
  dnnl::stream& stream = thread_stream();
  args.emplace(DNNL_ARG_SCRATCHPAD, memory(e.scratchpad, cpu_engine(), thread_buffer(0, e.scratchpad.get_size())));
  if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, wrap(e.bias, bias));
  memory plain = wrap(e.kernel_plain, kernel_in != nullptr ? kernel_in : kernel_out);
  memory blocked =
      e.reorder ? memory(e.kernel_blocked, cpu_engine(), thread_buffer(1, e.kernel_blocked.get_size())) : plain;
  if (e.reorder && kernel_in != nullptr) e.to_blocked.execute(stream, plain, blocked);
  args.emplace(kernel_arg, blocked);
  e.primitive.execute(stream, args);
  if (e.reorder && kernel_out != nullptr) e.to_plain.execute(stream, blocked, plain);
  stream.wait();
}

// One tensor of a part's call: its oneDNN argument and the whole batch's data (x-shaped or y-shaped).
struct BatchArg {
  int arg;
  const float* data;
};

// Runs `kind` on each part of the batch split sp, on the pool: the part's slices of x_side (batch, in_h,
// in_w, c_in) and y_side (batch, out_h, out_w, c_out), the kernel read from kernel_in or written to
// kernel_out(part), the bias (c_out,) read when not null. False, with nothing run, where a part has no
// primitive.
template <typename KernelOut>
bool run_parts(KernelContext& ctx, Kind kind, const Conv2DShape& s, const Split& sp, BatchArg x_side, BatchArg y_side,
               int kernel_arg, const float* kernel_in, KernelOut kernel_out, const float* bias = nullptr) {
  std::vector<const Entry*> es;
  if (!entries(kind, s, sp, &es)) return false;
  const Window2D& w = s.w;
  const std::int64_t x_image = w.in_h * w.in_w * w.channels, y_image = w.out_h * w.out_w * s.filters;
  parallel_for(ctx, sp.parts, 1, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const Entry& e = *es[static_cast<std::size_t>(p)];
      const std::int64_t n = sp.begin(p, w.batch);
      run(e, {{x_side.arg, wrap(e.x, x_side.data + n * x_image)}, {y_side.arg, wrap(e.y, y_side.data + n * y_image)}},
          kernel_arg, kernel_in, kernel_out(p), bias);
    }
  });
  return true;
}

}  // namespace

bool conv2d_shape(const Window2D& w, std::int64_t filters, std::int64_t groups, Conv2DShape* shape) {
  if (!switched_on() || !enabled_by_caller.load() || groups != 1 || w.channels < kMinChannels) return false;
  if (w.batch == 0 || w.out_h == 0 || w.out_w == 0 || filters == 0) return false;
  shape->w = w;
  shape->filters = filters;
  // The rows past the last window's reach are (negative) right padding, as oneDNN counts it.
  shape->pad_bottom = (w.out_h - 1) * w.stride_h + (w.kernel_h - 1) * w.dilation_h + 1 - w.in_h - w.pad_top;
  shape->pad_right = (w.out_w - 1) * w.stride_w + (w.kernel_w - 1) * w.dilation_w + 1 - w.in_w - w.pad_left;
  return true;
}

bool conv2d_forward(KernelContext& ctx, const Conv2DShape& s, const float* x, const float* kernel, float* y,
                    const float* bias, bool relu) {
  const Kind kind = bias == nullptr ? Kind::forward : relu ? Kind::forward_bias_relu : Kind::forward_bias;
  return run_parts(ctx, kind, s, split(ctx, s), {DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}, DNNL_ARG_WEIGHTS, kernel,
                   [](std::int64_t) -> float* { return nullptr; }, bias);
}

bool conv2d_backward_data(KernelContext& ctx, const Conv2DShape& s, const float* dy, const float* kernel,
                          float* dx) {
  return run_parts(ctx, Kind::backward_data, s, split(ctx, s), {DNNL_ARG_DIFF_SRC, dx}, {DNNL_ARG_DIFF_DST, dy},
                   DNNL_ARG_WEIGHTS, kernel, [](std::int64_t) -> float* { return nullptr; });
}

bool conv2d_backward_filter(KernelContext& ctx, const Conv2DShape& s, const float* x, const float* dy,
                            float* dkernel) {
  const Split sp = split(ctx, s);
  const Window2D& w = s.w;
  const std::int64_t size = w.kernel_h * w.kernel_w * w.channels * s.filters;
  std::vector<float> partials(static_cast<std::size_t>((sp.parts - 1) * size));  // (parts - 1, kh, kw, c_in, c_out)
  if (!run_parts(ctx, Kind::backward_filter, s, sp, {DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, DNNL_ARG_DIFF_WEIGHTS,
                 nullptr, [&](std::int64_t p) { return p == 0 ? dkernel : partials.data() + (p - 1) * size; }))
    return false;
  for (std::int64_t p = 1; p < sp.parts; ++p) {  // in part order: the same sum on every run
    const float* part = partials.data() + (p - 1) * size;
    for (std::int64_t i = 0; i < size; ++i) dkernel[i] += part[i];
  }
  return true;
}

bool sgemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta,
           float* c, int ldc) {
  if (!switched_on() || !enabled_by_caller.load() || std::min({m, n, k}) < kMinGemmSide) return false;
  omp_set_num_threads(1);
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
}

void set_enabled(bool enabled) { enabled_by_caller.store(enabled); }
bool built_in() { return true; }

#else  // without oneDNN: conv_kernels.cpp always runs its own loops

bool conv2d_shape(const Window2D&, std::int64_t, std::int64_t, Conv2DShape*) { return false; }
bool conv2d_forward(KernelContext&, const Conv2DShape&, const float*, const float*, float*, const float*, bool) {
  return false;
}
bool conv2d_backward_data(KernelContext&, const Conv2DShape&, const float*, const float*, float*) { return false; }
bool conv2d_backward_filter(KernelContext&, const Conv2DShape&, const float*, const float*, float*) { return false; }
bool sgemm(bool, bool, int, int, int, const float*, int, const float*, int, float, float*, int) { return false; }
void set_enabled(bool) {}
bool built_in() { return false; }

#endif

}  // namespace tower::cpu::onednn
