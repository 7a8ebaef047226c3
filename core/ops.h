// The op contract: one builder per op, with its shapes, dtypes and semantics. Each builds a node in
// the inputs' Graph; shape functions and gradients live in core/ops/*.cpp, kernels in backends/*/.
// Shapes use Keras's order (batch first, channels last). "float" means float32 or float64 (and the
// GPU's float16/bfloat16 where a backend has them). Broadcasting follows NumPy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tower/core/graph.h"

namespace tower::ops {

using Ints = std::vector<std::int64_t>;

// ---- basic (core/ops/basic_ops.cpp) -------------------------------------------------------------
SymbolicTensor identity(const SymbolicTensor& x);
SymbolicTensor stop_gradient(const SymbolicTensor& x);                // identity without gradient
SymbolicTensor fill_like(const SymbolicTensor& x, double value);      // same shape and dtype as x
SymbolicTensor zeros_like(const SymbolicTensor& x);
SymbolicTensor ones_like(const SymbolicTensor& x);
SymbolicTensor cast(const SymbolicTensor& x, DType dtype);
// Side effects on variables (no outputs; run them as plan targets). `var` must be Graph::variable.
Node* assign(const SymbolicTensor& var, const SymbolicTensor& value);      // var = value
Node* assign_add(const SymbolicTensor& var, const SymbolicTensor& value);  // var += value

// ---- elementwise arithmetic with broadcasting (core/ops/math_ops.cpp) -------------------------
// a, b: same dtype, shapes broadcastable; result: the broadcast shape.
SymbolicTensor add(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor subtract(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor multiply(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor divide(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor maximum(const SymbolicTensor& a, const SymbolicTensor& b);  // gradient to a where a >= b
SymbolicTensor minimum(const SymbolicTensor& a, const SymbolicTensor& b);  // gradient to a where a <= b
SymbolicTensor scale(const SymbolicTensor& x, double factor);             // x * factor
// Comparisons: 1 where the relation holds, else 0, in a's dtype and the broadcast shape; no gradient.
// mode: "gt", "ge", "lt", "le" or "eq".
SymbolicTensor compare_mask(const SymbolicTensor& a, const SymbolicTensor& b, const char* mode);
SymbolicTensor greater(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor greater_equal(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor less(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor less_equal(const SymbolicTensor& a, const SymbolicTensor& b);
SymbolicTensor equal(const SymbolicTensor& a, const SymbolicTensor& b);
// Sums x over the axes that `like` was broadcast along, giving like's shape (gradient of broadcasting).
SymbolicTensor sum_to(const SymbolicTensor& x, const SymbolicTensor& like);
// Broadcasts x to like's shape.
SymbolicTensor broadcast_like(const SymbolicTensor& x, const SymbolicTensor& like);

// ---- unary math and activations (core/ops/activation_ops.cpp) ---------------------------------
SymbolicTensor negative(const SymbolicTensor& x);
SymbolicTensor exp(const SymbolicTensor& x);
SymbolicTensor log(const SymbolicTensor& x);
SymbolicTensor erf(const SymbolicTensor& x);  // the error function (gelu)
SymbolicTensor sqrt(const SymbolicTensor& x);
SymbolicTensor square(const SymbolicTensor& x);
SymbolicTensor abs(const SymbolicTensor& x);
SymbolicTensor sign(const SymbolicTensor& x);  // -1, 0, 1; no gradient
SymbolicTensor relu(const SymbolicTensor& x);
SymbolicTensor leaky_relu(const SymbolicTensor& x, double alpha = 0.3);  // Keras LeakyReLU default
SymbolicTensor elu(const SymbolicTensor& x, double alpha = 1.0);
SymbolicTensor sigmoid(const SymbolicTensor& x);
SymbolicTensor tanh(const SymbolicTensor& x);
// Gradient kernels: dy and the forward output y (relu, sigmoid, tanh) or input x (leaky_relu, elu).
SymbolicTensor relu_grad(const SymbolicTensor& dy, const SymbolicTensor& y);
SymbolicTensor leaky_relu_grad(const SymbolicTensor& dy, const SymbolicTensor& x, double alpha);
SymbolicTensor elu_grad(const SymbolicTensor& dy, const SymbolicTensor& x, double alpha);
SymbolicTensor sigmoid_grad(const SymbolicTensor& dy, const SymbolicTensor& y);
SymbolicTensor tanh_grad(const SymbolicTensor& dy, const SymbolicTensor& y);

// ---- softmax (core/ops/activation_ops.cpp) -----------------------------------------------------
SymbolicTensor softmax(const SymbolicTensor& x, int axis = -1);
SymbolicTensor log_softmax(const SymbolicTensor& x, int axis = -1);
SymbolicTensor softmax_grad(const SymbolicTensor& dy, const SymbolicTensor& y, int axis);      // y = softmax
SymbolicTensor log_softmax_grad(const SymbolicTensor& dy, const SymbolicTensor& y, int axis);  // y = log_softmax

// ---- reductions (core/ops/reduce_ops.cpp) ---------------------------------------------------
// axes empty = all axes; negative axes count from the end.
SymbolicTensor reduce_sum(const SymbolicTensor& x, Ints axes = {}, bool keepdims = false);
SymbolicTensor reduce_mean(const SymbolicTensor& x, Ints axes = {}, bool keepdims = false);
SymbolicTensor reduce_max(const SymbolicTensor& x, Ints axes = {}, bool keepdims = false);
// Gradient of reduce_max: dy routed to the positions equal to the max (split evenly among ties).
SymbolicTensor reduce_max_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const SymbolicTensor& y,
                               Ints axes, bool keepdims);
// Index of the largest value along `axis` (first one on ties); int64; no gradient.
SymbolicTensor argmax(const SymbolicTensor& x, int axis = -1);

// ---- dense (core/ops/math_ops.cpp) ------------------------------------------------------------
// a: (m, k) (or (k, m) if transpose_a), b: (k, n) (or (n, k) if transpose_b) -> (m, n).
SymbolicTensor matmul(const SymbolicTensor& a, const SymbolicTensor& b, bool transpose_a = false,
                      bool transpose_b = false);
// One matmul per batch item (attention's scores and weighted sums): a (..., m, k) (or (..., k, m) if
// transpose_a), b (..., k, n) (or (..., n, k) if transpose_b) -> (..., m, n). Rank >= 3, both the same
// rank with equal batch dimensions (...) (no broadcasting between them); transposes act on the last two axes.
SymbolicTensor batch_matmul(const SymbolicTensor& a, const SymbolicTensor& b, bool transpose_a = false,
                            bool transpose_b = false);
// Dense's forward in one op: y (m, n) = activation(x (m, k) · kernel (k, n) + bias (n,)), activation
// "linear" or "relu". The same numbers as matmul, bias_add and relu one after another; on a GPU one
// cuBLASLt call with the bias and ReLU in its epilogue.
SymbolicTensor dense(const SymbolicTensor& x, const SymbolicTensor& kernel, const SymbolicTensor& bias,
                     const std::string& activation = "linear");
// x: (..., c), bias: (c,) -> activation(x + bias), activation "linear" or "relu": a convolution layer's
// bias and ReLU in one pass over its output (the same numbers as bias_add, then relu).
SymbolicTensor bias_add(const SymbolicTensor& x, const SymbolicTensor& bias, const std::string& activation = "linear");
// dy: (..., c) -> (c,): sum over every axis but the last.
SymbolicTensor bias_add_grad(const SymbolicTensor& dy);
// The gradients of bias_add(x, bias, "relu") from dy and its output y (..., c), in one pass over dy:
// {dz = relu_grad(dy, y) (..., c), bias_add_grad(dz) (c,)}, the same numbers as those two ops. Where
// dy is a max pooling's gradient over y (conv, relu, pool), both come from the pooled gradient (as
// relu_grad does), the bias's summed over it: each pooled value lands on one position of dz, so the
// sum is the same up to rounding (the order of the additions differs). Built in core/ops/activation_ops.cpp.
std::vector<SymbolicTensor> bias_add_relu_grad(const SymbolicTensor& dy, const SymbolicTensor& y);

// ---- convolution and pooling, NHWC (core/ops/conv_ops.cpp, core/ops/pool_ops.cpp) -----------
// padding: "valid" or "same" (TF's rule: out = ceil(in / stride), extra padding at the end).
struct Conv2DArgs {
  Ints strides = {1, 1};
  std::string padding = "valid";
  Ints dilation_rate = {1, 1};
  std::int64_t groups = 1;  // c_in and c_out split into this many independent convolutions
};
// x: (batch, h, w, c_in), kernel: (kh, kw, c_in / groups, c_out) -> (batch, out_h, out_w, c_out). Group
// g convolves channels [g c_in/groups, (g+1) c_in/groups) into filters [g c_out/groups, (g+1)
// c_out/groups); groups = c_in is a depthwise convolution.
SymbolicTensor conv2d(const SymbolicTensor& x, const SymbolicTensor& kernel, const Conv2DArgs& args = {});
// A convolution layer's forward in one op: activation(conv2d(x, kernel) + bias (c_out,)), activation
// "linear" or "relu". The same numbers as conv2d, then bias_add; on the CPU oneDNN adds the bias and
// ReLU as the convolution writes its output, instead of a second pass over it.
SymbolicTensor conv2d_bias(const SymbolicTensor& x, const SymbolicTensor& kernel, const SymbolicTensor& bias,
                           const Conv2DArgs& args = {}, const std::string& activation = "linear");
// dy: (batch, out_h, out_w, c_out) -> dx with x's shape (x supplies only its shape).
SymbolicTensor conv2d_backward_data(const SymbolicTensor& dy, const SymbolicTensor& kernel,
                                    const SymbolicTensor& x, const Conv2DArgs& args);
// -> dkernel with kernel's shape (kernel supplies only its shape).
SymbolicTensor conv2d_backward_filter(const SymbolicTensor& x, const SymbolicTensor& dy,
                                      const SymbolicTensor& kernel, const Conv2DArgs& args);
// Keras's DepthwiseConv2D: x (batch, h, w, c), kernel (kh, kw, c, m) -> (batch, out_h, out_w, c·m), output
// channel c·m + j = channel c convolved with kernel[:, :, c, j]: conv2d with c groups (composite).
SymbolicTensor depthwise_conv2d(const SymbolicTensor& x, const SymbolicTensor& kernel, Conv2DArgs args = {});
// Keras's Conv2DTranspose: conv2d_backward_data of x. x: (batch, h, w, c_in), kernel (kh, kw, c_out,
// c_in) -> (batch, out_h, out_w, c_out), out_h = Keras's deconv_output_length: h·stride ("same"), h·stride
// + max(span - stride, 0) ("valid"), or with output_padding (2 values, each < max(stride, dilation)):
// (h - 1)·stride + span - 2·(span / 2 if "same") + output_padding. args.groups must be 1.
SymbolicTensor conv2d_transpose(const SymbolicTensor& x, const SymbolicTensor& kernel, const Conv2DArgs& args = {},
                                const Ints& output_padding = {});

// tf.image.resize (TF 2: half-pixel centers, no antialiasing): x (batch, h, w, c) -> (batch, height,
// width, c); interpolation "bilinear" or "nearest" (core/resize.h says which pixels each output reads).
SymbolicTensor resize(const SymbolicTensor& x, std::int64_t height, std::int64_t width,
                      const std::string& interpolation = "bilinear");
// TF's ImageProjectiveTransformV3 (keras.ops.image.affine_transform): images (batch, h, w, c), transforms
// (batch, 8) of images' dtype -> (batch, output_height, output_width, c); output pixel (x, y) samples
// ((a0 x + a1 y + a2) / k, (a3 x + a4 y + a5) / k), k = a6 x + a7 y + 1, folded inside by fill_mode
// ("reflect", "wrap", "constant" with fill_value, "nearest"), read "nearest" or "bilinear"
// (core/image_transform.h). No gradient: differentiating through it raises.
SymbolicTensor image_transform(const SymbolicTensor& images, const SymbolicTensor& transforms,
                               std::int64_t output_height, std::int64_t output_width,
                               const std::string& interpolation = "bilinear", const std::string& fill_mode = "constant",
                               double fill_value = 0.0);
// Keras's rotation transforms about the centre of a (height, width) image: angles (batch, 1) in radians
// -> (batch, 8) for image_transform. No gradient.
SymbolicTensor rotation_transform(const SymbolicTensor& angles, std::int64_t height, std::int64_t width);

struct Pool2DArgs {
  Ints pool_size = {2, 2};
  Ints strides = {};  // empty: pool_size (the Keras default)
  std::string padding = "valid";
};
// x: (batch, h, w, c) -> (batch, out_h, out_w, c). Average pooling with "same" padding divides by
// the number of input elements in the window (padding excluded), as Keras does. max_pool2d builds
// max_pool2d_with_argmax (below) where x's height and width are known and a window has at most 255
// positions.
SymbolicTensor max_pool2d(const SymbolicTensor& x, const Pool2DArgs& args = {});
SymbolicTensor avg_pool2d(const SymbolicTensor& x, const Pool2DArgs& args = {});
SymbolicTensor max_pool2d_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const SymbolicTensor& y,
                               const Pool2DArgs& args);
SymbolicTensor avg_pool2d_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const Pool2DArgs& args);
// max_pool2d that also keeps, for the gradient, where each max came from: {y (batch, out_h, out_w, c),
// argmax (batch, out_h, out_w, c) uint8: the window position kh_index * kernel_w + kw_index (counted from
// the window's corner, padding included) of the first element equal to y, row-major, 255 where y is
// NaN}. Windows of at most 255 positions. max_pool2d builds it (and returns y), so that the gradient
// reads the pooled gradient and argmax instead of x and y, and x need not live until the backward pass.
std::vector<SymbolicTensor> max_pool2d_with_argmax(const SymbolicTensor& x, const Pool2DArgs& args = {});
// dy, argmax: (batch, out_h, out_w, c) -> dx (batch, in_h, in_w, c), x's size given by `input_hw`: each
// dy added to its argmax's position (windows in output order), the numbers of max_pool2d_grad.
SymbolicTensor max_pool2d_with_argmax_grad(const SymbolicTensor& dy, const SymbolicTensor& argmax, const Ints& input_hw,
                                           const Pool2DArgs& args);

// ---- 3-D convolution and pooling, NDHWC (core/ops/conv3d_ops.cpp) ---------------------------------
// The 2-D ops' contracts with a depth axis in front of height and width (same padding rule).
struct Conv3DArgs {
  Ints strides = {1, 1, 1};
  std::string padding = "valid";
  Ints dilation_rate = {1, 1, 1};
  std::int64_t groups = 1;
};
// x: (batch, d, h, w, c_in), kernel: (kd, kh, kw, c_in / groups, c_out) -> (batch, out_d, out_h, out_w,
// c_out); groups as conv2d's.
SymbolicTensor conv3d(const SymbolicTensor& x, const SymbolicTensor& kernel, const Conv3DArgs& args = {});
// dy: (batch, out_d, out_h, out_w, c_out) -> dx with x's shape (x supplies only its shape).
SymbolicTensor conv3d_backward_data(const SymbolicTensor& dy, const SymbolicTensor& kernel,
                                    const SymbolicTensor& x, const Conv3DArgs& args);
// -> dkernel with kernel's shape (kernel supplies only its shape).
SymbolicTensor conv3d_backward_filter(const SymbolicTensor& x, const SymbolicTensor& dy,
                                      const SymbolicTensor& kernel, const Conv3DArgs& args);
// Keras's Conv3DTranspose: conv3d_backward_data of x. x: (batch, d, h, w, c_in), kernel (kd, kh, kw,
// c_out, c_in) -> (batch, out_d, out_h, out_w, c_out), each length Keras's deconv_output_length as in
// conv2d_transpose (output_padding: empty or 3 values). args.groups must be 1.
SymbolicTensor conv3d_transpose(const SymbolicTensor& x, const SymbolicTensor& kernel, const Conv3DArgs& args = {},
                                const Ints& output_padding = {});

struct Pool3DArgs {
  Ints pool_size = {2, 2, 2};
  Ints strides = {};  // empty: pool_size (the Keras default)
  std::string padding = "valid";
};
// x: (batch, d, h, w, c) -> (batch, out_d, out_h, out_w, c); max_pool2d's and avg_pool2d's rules
// (average over the window's part inside x; max gradient to the first maximum in (d, h, w) order).
SymbolicTensor max_pool3d(const SymbolicTensor& x, const Pool3DArgs& args = {});
SymbolicTensor avg_pool3d(const SymbolicTensor& x, const Pool3DArgs& args = {});
SymbolicTensor max_pool3d_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const SymbolicTensor& y,
                               const Pool3DArgs& args);
SymbolicTensor avg_pool3d_grad(const SymbolicTensor& dy, const SymbolicTensor& x, const Pool3DArgs& args);

// ---- batch normalization over the last axis (core/ops/normalization_ops.cpp) -----------------------
// Training: x: (..., c), gamma, beta: (c,) -> {y (x's shape), batch mean (c,), batch variance (c,)
// (biased, divided by the count), inv_std (c,) = 1 / sqrt(variance + epsilon)}.
std::vector<SymbolicTensor> batch_norm_training(const SymbolicTensor& x, const SymbolicTensor& gamma,
                                                const SymbolicTensor& beta, double epsilon = 1e-3);
// -> {dx, dgamma, dbeta}.
std::vector<SymbolicTensor> batch_norm_training_grad(const SymbolicTensor& dy, const SymbolicTensor& x,
                                                     const SymbolicTensor& gamma, const SymbolicTensor& mean,
                                                     const SymbolicTensor& inv_std);
// Inference with moving statistics: y = gamma * (x - mean) / sqrt(variance + epsilon) + beta.
SymbolicTensor batch_norm_inference(const SymbolicTensor& x, const SymbolicTensor& gamma,
                                    const SymbolicTensor& beta, const SymbolicTensor& mean,
                                    const SymbolicTensor& variance, double epsilon = 1e-3);

// ---- layer normalization over the last axis (core/ops/normalization_ops.cpp) -----------------------
// x: (..., n), gamma, beta: (n,) -> y (x's shape): each row of n normalized as Keras does,
// y = x * inv + (beta - mean * inv) with inv = gamma / sqrt(variance + epsilon), the row's mean and
// biased variance in two passes (16 partial sums in x's dtype on the CPU, double on a GPU). One op
// instead of the dozen a composition takes; its gradient (layer_norm_grad) recomputes the row
// statistics and has no gradient itself.
SymbolicTensor layer_norm(const SymbolicTensor& x, const SymbolicTensor& gamma, const SymbolicTensor& beta,
                          double epsilon = 1e-3);
// (dy, x, gamma) -> {dx, dgamma, dbeta}.
std::vector<SymbolicTensor> layer_norm_grad(const SymbolicTensor& dy, const SymbolicTensor& x,
                                            const SymbolicTensor& gamma, double epsilon = 1e-3);

// ---- scaled dot-product attention (core/ops/attention_ops.cpp) ---------------------------------------
// MultiHeadAttention's core for every batch item b and head n at once, in the layout of its
// projections (no transposes): q (B, T, N, H), k (B, S, N, H), v (B, S, N, Hv); mask (optional;
// 1 = attend) of shape (B or 1, N or 1, T, S). Per (b, n): logits = scale q k^T (T, S), where the mask
// is 0 the logit is -1e9 (Keras's where), p = softmax over S, o = p v. -> {o (B, T, N, Hv),
// probabilities p (B, N, T, S)}. p is kept for the gradient and is not differentiable itself.
std::vector<SymbolicTensor> dot_product_attention(const SymbolicTensor& q, const SymbolicTensor& k,
                                                  const SymbolicTensor& v, const SymbolicTensor& mask, double scale);
// (do, q, k, v, p[, mask]) -> {dq, dk, dv}; the logits' gradient is 0 where the mask is 0 (a fully
// masked row's p is uniform, yet its logits were constants).
std::vector<SymbolicTensor> dot_product_attention_grad(const SymbolicTensor& d_out, const SymbolicTensor& q,
                                                       const SymbolicTensor& k, const SymbolicTensor& v,
                                                       const SymbolicTensor& probabilities,
                                                       const SymbolicTensor& mask, double scale);

// ---- dropout (core/ops/dropout_ops.cpp) ----------------------------------------------------------
// Inverted dropout: keeps each element with probability 1 - rate and scales it by 1 / (1 - rate).
// -> {y, mask} where mask (x's shape and dtype) holds 0 or 1 / (1 - rate). The mask comes from a
// counter-based generator keyed by (seed, run count of this node): reproducible per seed.
// row_offset (optional int64 scalar): x's first row in a larger batch, whose mask x then gets for its
// rows: parallel towers draw, between them, the masks one device draws for the whole batch.
std::vector<SymbolicTensor> dropout(const SymbolicTensor& x, double rate, std::uint64_t seed,
                                    const SymbolicTensor& row_offset = {});
// Random tensors for layers (GaussianNoise, GaussianDropout, AlphaDropout), drawn like dropout's
// masks: element i of draw number n (a fresh one per run of the node) of stream `seed` comes from the
// Philox words of uniform_at(seed, n, o + i), o = row_offset * the output's row size (0 without one),
// so towers draw between them what one device draws for the whole batch, on every backend alike.
// The output has x's dtype and the shape `shape`, whose -1 entries take x's size on that axis (empty:
// x's shape); x only gives the shape and dtype (no gradient flows through either op).
// random_uniform: minval + (maxval - minval) u, u in [0, 1) as uniform_at.
SymbolicTensor random_uniform(const SymbolicTensor& x, double minval, double maxval, std::uint64_t seed,
                              const SymbolicTensor& row_offset = {}, const std::vector<std::int64_t>& shape = {});
// random_normal: mean + stddev z, z standard normal by Box-Muller from the uniform words of its pair
// (elements 4q + 2p and 4q + 2p + 1 share words 2p and 2p + 1 of Philox block q: cos and sin).
SymbolicTensor random_normal(const SymbolicTensor& x, double mean, double stddev, std::uint64_t seed,
                             const SymbolicTensor& row_offset = {}, const std::vector<std::int64_t>& shape = {});

// ---- recurrent cells over whole sequences (core/ops/recurrent_ops.cpp) ---------------------------
// SimpleRNN, LSTM and GRU run each as one op over all time steps (one GEMM per step with the
// recurrent kernel and a fused gate update; the whole sequence's input projection is one GEMM the
// layer makes before). Time-major: x_proj (time, batch, k·units) is the input times the layer's
// kernel plus its input bias. Step s reads x_proj[s] (x_proj[time - 1 - s] when go_backwards) and
// writes states[s]: outputs are in step order, as Keras returns go_backwards sequences.
// mask (batch, time), optional (x_proj's dtype, 0 = masked): a masked step leaves the row's state
// as it was, so its states[s] repeats states[s - 1] (h0 at s = 0). Activations by Keras name:
// linear, tanh, sigmoid, relu, softsign, hard_sigmoid (Keras 2's), hard_sigmoid_keras3
// (core/gate_activation.h); anything else throws ValueError.
struct RecurrentArgs {
  std::string activation = "tanh";
  std::string recurrent_activation = "sigmoid";  // the gates (LSTM, GRU)
  bool go_backwards = false;
  bool reset_after = true;  // GRU only
};
// Each also returns the final state (B, U) on its own (the state after the last step, h0 when time
// is 0), so that a layer needs no time length to take it; its gradient enters the last step.
// h_s = activation(x_proj[s] + h_{s-1} · recurrent_kernel). x_proj (T, B, U), recurrent_kernel
// (U, U), h0 (B, U) -> {states (T, B, U), final h (B, U)}.
std::vector<SymbolicTensor> simple_rnn(const SymbolicTensor& x_proj, const SymbolicTensor& recurrent_kernel,
                                       const SymbolicTensor& h0, const SymbolicTensor& mask, const RecurrentArgs& args);
// Keras's gate order i, f, c, o: z = x_proj[s] + h_{s-1} · recurrent_kernel (B, 4U); i, f, o =
// recurrent_activation(z_i, z_f, z_o), g = activation(z_c); c_s = f c_{s-1} + i g; h_s = o
// activation(c_s). x_proj (T, B, 4U), recurrent_kernel (U, 4U), h0, c0 (B, U) -> {h states (T, B, U),
// c states (T, B, U), gates (T, B, 4U): i, f, g, o as activated, kept for the gradient (which
// passes nothing back through them), final h (B, U), final c (B, U)}.
std::vector<SymbolicTensor> lstm(const SymbolicTensor& x_proj, const SymbolicTensor& recurrent_kernel,
                                 const SymbolicTensor& h0, const SymbolicTensor& c0, const SymbolicTensor& mask,
                                 const RecurrentArgs& args);
// Keras's gate order z, r, h; recurrent_bias (3U,) is added to the recurrent product. reset_after:
// q = h_{s-1} · recurrent_kernel + recurrent_bias, z, r = recurrent_activation(x_z + q_z, x_r + q_r),
// n = activation(x_h + r q_h). Otherwise z and r likewise from the first 2U columns and n =
// activation(x_h + (r h_{s-1}) · recurrent_kernel[:, 2U:] + recurrent_bias[2U:]). Then h_s = z
// h_{s-1} + (1 - z) n. x_proj (T, B, 3U), recurrent_kernel (U, 3U), h0 (B, U) -> {states (T, B, U),
// gates (T, B, 4U): z, r, n and q_h (reset_after) or r h_{s-1}, kept for the gradient, final h (B, U)}.
std::vector<SymbolicTensor> gru(const SymbolicTensor& x_proj, const SymbolicTensor& recurrent_kernel,
                                const SymbolicTensor& recurrent_bias, const SymbolicTensor& h0,
                                const SymbolicTensor& mask, const RecurrentArgs& args);

// ---- array manipulation (core/ops/array_ops.cpp) -------------------------------------------------
// shape may hold one -1, inferred from the element count (Keras Reshape's (-1) or the batch).
SymbolicTensor reshape(const SymbolicTensor& x, Ints shape);
// x viewed as (like's first `keep` dimensions (all of them when -1)..., tail...), like's taken when a
// Plan is compiled: a reshape whose target has several dimensions unknown at build time, such as
// (time, batch, width) from (time·batch, width). tail may hold one -1, inferred from the element
// count. ShapeError where the element counts are known to differ. Gradient: dy viewed back as x.
SymbolicTensor reshape_like(const SymbolicTensor& x, const SymbolicTensor& like, int keep = -1, Ints tail = {});
SymbolicTensor transpose(const SymbolicTensor& x, Ints perm);
// x with `axis` reversed (x[::-1] along it), its length taken at run time. Gradient: dy reversed.
SymbolicTensor reverse(const SymbolicTensor& x, int axis);
SymbolicTensor concat(const std::vector<SymbolicTensor>& xs, int axis);
// size entries of -1 mean "to the end of that axis".
SymbolicTensor slice(const SymbolicTensor& x, Ints begin, Ints size);
// x (n, ...) -> share `share` of its rows when n is split by the integer `ratios` by largest
// remainder (largest_remainder_split): a tower's part of the batch, whatever n is at run time (the
// last partial batch included; a share may be empty). Gradient: batch_share_grad.
SymbolicTensor batch_share(const SymbolicTensor& x, Ints ratios, int share);
SymbolicTensor batch_share_grad(const SymbolicTensor& dy, const SymbolicTensor& x, Ints ratios, int share);
// x (n, ...) -> int64 scalar: the first row of that share (the rows of the shares before it).
SymbolicTensor batch_share_start(const SymbolicTensor& x, Ints ratios, int share);
// Gradient of slice: dy placed at `begin` inside zeros of x's shape.
SymbolicTensor slice_grad(const SymbolicTensor& dy, const SymbolicTensor& x, Ints begin);
// sizes: length of each piece along axis; they must add up to that axis's length.
std::vector<SymbolicTensor> split(const SymbolicTensor& x, int axis, Ints sizes);
// paddings: {before_0, after_0, before_1, after_1, ...}, one pair per axis.
SymbolicTensor pad(const SymbolicTensor& x, Ints paddings, double value = 0.0);
// indices: integer (...) -> (..., depth) of dtype; indices outside [0, depth) give all off_value.
SymbolicTensor one_hot(const SymbolicTensor& indices, std::int64_t depth, DType dtype = DType::float32,
                       double on_value = 1.0, double off_value = 0.0);
// x: integer or floating (...) -> int64 (...): Keras's Hashing bins (core/hash.h's hashing_bin): each
// value (floats truncated to int64) written in decimal and hashed with FarmHash Fingerprint64, or with
// SipHash-2-4 keyed (key0, key1) when salted, modulo num_bins; with has_mask, mask_value gives 0 and the
// others 1 + hash % (num_bins - 1) (num_bins > 1). No gradient.
SymbolicTensor hashing_bins(const SymbolicTensor& x, std::int64_t num_bins, bool has_mask = false,
                            std::int64_t mask_value = 0, bool salted = false, std::int64_t key0 = 0,
                            std::int64_t key1 = 0);
// params: (n, ...), indices: integer (...) -> (indices..., params[1:]...); rows along axis 0.
// Indices outside [0, n) throw ValueError at run time.
SymbolicTensor gather(const SymbolicTensor& params, const SymbolicTensor& indices);
// Gradient of gather: dy summed into zeros of params' shape at rows `indices`.
SymbolicTensor gather_grad(const SymbolicTensor& dy, const SymbolicTensor& indices, const SymbolicTensor& params);

// ---- losses (core/ops/loss_ops.cpp) -------------------------------------------------------------
// logits, labels: (batch, classes) -> per-example loss (batch,). Fused with its gradient: the
// node's second output holds softmax(logits) - labels.
SymbolicTensor softmax_cross_entropy(const SymbolicTensor& logits, const SymbolicTensor& labels);
// logits: (batch, classes), labels: integer (batch,) in [0, classes) -> (batch,); fused likewise.
// A label out of range throws ValueError at run time naming it and the class count.
SymbolicTensor sparse_softmax_cross_entropy(const SymbolicTensor& logits, const SymbolicTensor& labels);
// y_true, y_pred: same shape (..., d) -> (...): the mean over the last axis, as Keras's losses.
SymbolicTensor mean_squared_error(const SymbolicTensor& y_true, const SymbolicTensor& y_pred);
SymbolicTensor mean_absolute_error(const SymbolicTensor& y_true, const SymbolicTensor& y_pred);

// ---- collectives (core/ops/collective_ops.cpp) ---------------------------------------------------
// x on replica `rank` of the replicas on `devices` (one all_reduce node per replica, each placed on its
// device, all with the same `group`, a name no other collective uses) -> the sum of every replica's
// x, the same bits on each. The replicas meet when the plan runs, each on its device's lane: a plan
// with an all_reduce needs concurrent lanes (PlanOptions::concurrent_devices). Every replica must
// reach its all_reduces in the same order. Kernels: NCCL on GPUs (one physical GPU per replica),
// threads that meet on the host (core/collective.h) on CPU devices. Not differentiable.
SymbolicTensor all_reduce(const SymbolicTensor& x, const std::string& group, const std::vector<std::string>& devices,
                          int rank);

// ---- optimizer updates (core/ops/optimizer_ops.cpp) ----------------------------------------------
// Each writes var and its slots in place (all must be Graph::variable reads on the same device)
// following Keras 3's update rules. grad: var's shape. lr: scalar of var's dtype. Slots that a
// configuration does not use are passed undefined. Returned nodes have no outputs: run them as targets.
// weight_decay: Keras 3's decoupled decay, var -= var * weight_decay * lr before the update (0: none).
Node* apply_sgd(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                const SymbolicTensor& momentum_slot, double momentum = 0.0, bool nesterov = false,
                double weight_decay = 0.0);
Node* apply_rmsprop(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                    const SymbolicTensor& velocity, const SymbolicTensor& momentum_slot,
                    const SymbolicTensor& average_grad, double rho = 0.9, double momentum = 0.0,
                    double epsilon = 1e-7, bool centered = false, double weight_decay = 0.0);
// iteration: scalar of var's dtype, the 1-based number of this step (bias correction).
Node* apply_adam(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                 const SymbolicTensor& iteration, const SymbolicTensor& m, const SymbolicTensor& v,
                 const SymbolicTensor& v_hat, double beta_1 = 0.9, double beta_2 = 0.999,
                 double epsilon = 1e-7, bool amsgrad = false, double weight_decay = 0.0);
Node* apply_adagrad(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                    const SymbolicTensor& accumulator, double epsilon = 1e-7, double weight_decay = 0.0);
Node* apply_adadelta(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                     const SymbolicTensor& accumulated_grad, const SymbolicTensor& accumulated_delta,
                     double rho = 0.95, double epsilon = 1e-7, double weight_decay = 0.0);
// Adamax: m (Keras's "momentum") and u ("norm", the weighted infinity norm).
Node* apply_adamax(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                   const SymbolicTensor& iteration, const SymbolicTensor& m, const SymbolicTensor& u,
                   double beta_1 = 0.9, double beta_2 = 0.999, double epsilon = 1e-7, double weight_decay = 0.0);
// Nadam: m ("momentum"), v ("velocity"). Keras's u_product (the product of the momentum schedule
// over the steps so far) is recomputed from iteration, so it needs no state.
Node* apply_nadam(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                  const SymbolicTensor& iteration, const SymbolicTensor& m, const SymbolicTensor& v,
                  double beta_1 = 0.9, double beta_2 = 0.999, double epsilon = 1e-7, double weight_decay = 0.0);
// Lion: m ("momentum").
Node* apply_lion(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                 const SymbolicTensor& m, double beta_1 = 0.9, double beta_2 = 0.99, double weight_decay = 0.0);
// Ftrl: accumulator, linear.
struct FtrlParams {
  double learning_rate_power = -0.5, l1 = 0.0, l2 = 0.0, l2_shrinkage = 0.0, beta = 0.0;
};
Node* apply_ftrl(const SymbolicTensor& var, const SymbolicTensor& grad, const SymbolicTensor& lr,
                 const SymbolicTensor& accumulator, const SymbolicTensor& linear, const FtrlParams& params,
                 double weight_decay = 0.0);
// The optimizers' use_ema: average = m * average + (1 - m) * var, m = momentum except at iteration 1
// (the first update copies). var is read after the step's updates (update ops run in creation order).
Node* apply_ema(const SymbolicTensor& average, const SymbolicTensor& var, const SymbolicTensor& iteration,
                double momentum = 0.99);

}  // namespace tower::ops
