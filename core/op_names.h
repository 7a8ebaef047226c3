// Every op's name, written once: the op table (core/ops/<family>_ops.cpp), the graph builders and
// the kernel tables (backends/cpu/<family>_kernels.cpp, backends/cuda/<family>_ops.cpp) all spell
// an op through these constants. Grouped by family; a family has the same file stem in core/ops,
// backends/cpu and backends/cuda. Adding an op: docs/adding-an-op.md.
#pragma once

namespace tower::op_names {

// basic: graph sources (placeholder, constant, variable), identity, fills, cast, assignment (core/ops/basic_ops.cpp)
inline constexpr char placeholder[] = "placeholder";
inline constexpr char constant[] = "constant";
inline constexpr char variable[] = "variable";
inline constexpr char identity[] = "identity";
inline constexpr char stop_gradient[] = "stop_gradient";
inline constexpr char fill_like[] = "fill_like";
inline constexpr char cast[] = "cast";
inline constexpr char assign[] = "assign";
inline constexpr char assign_add[] = "assign_add";

// math: broadcasting arithmetic, scale, sum_to/broadcast_like, matmul, batch_matmul, dense, bias_add
// (core/ops/math_ops.cpp)
inline constexpr char add[] = "add";
inline constexpr char subtract[] = "subtract";
inline constexpr char multiply[] = "multiply";
inline constexpr char divide[] = "divide";
inline constexpr char maximum[] = "maximum";
inline constexpr char minimum[] = "minimum";
inline constexpr char compare_mask[] = "compare_mask";
inline constexpr char scale[] = "scale";
inline constexpr char sum_to[] = "sum_to";
inline constexpr char broadcast_like[] = "broadcast_like";
inline constexpr char matmul[] = "matmul";
inline constexpr char batch_matmul[] = "batch_matmul";
inline constexpr char dense[] = "dense";
inline constexpr char bias_add[] = "bias_add";
inline constexpr char bias_add_grad[] = "bias_add_grad";

// activation: unary math, activations, softmax and their gradients (core/ops/activation_ops.cpp)
inline constexpr char negative[] = "negative";
inline constexpr char exp[] = "exp";
inline constexpr char log[] = "log";
inline constexpr char erf[] = "erf";
inline constexpr char sqrt[] = "sqrt";
inline constexpr char square[] = "square";
inline constexpr char abs[] = "abs";
inline constexpr char sign[] = "sign";
inline constexpr char relu[] = "relu";
inline constexpr char leaky_relu[] = "leaky_relu";
inline constexpr char elu[] = "elu";
inline constexpr char sigmoid[] = "sigmoid";
inline constexpr char tanh[] = "tanh";
inline constexpr char relu_grad[] = "relu_grad";
inline constexpr char bias_add_relu_grad[] = "bias_add_relu_grad";
inline constexpr char leaky_relu_grad[] = "leaky_relu_grad";
inline constexpr char elu_grad[] = "elu_grad";
inline constexpr char sigmoid_grad[] = "sigmoid_grad";
inline constexpr char tanh_grad[] = "tanh_grad";
inline constexpr char softmax[] = "softmax";
inline constexpr char log_softmax[] = "log_softmax";
inline constexpr char softmax_grad[] = "softmax_grad";
inline constexpr char log_softmax_grad[] = "log_softmax_grad";

// reduce: reductions, argmax and the reductions' gradient (core/ops/reduce_ops.cpp)
inline constexpr char reduce_sum[] = "reduce_sum";
inline constexpr char reduce_mean[] = "reduce_mean";
inline constexpr char reduce_max[] = "reduce_max";
inline constexpr char reduce_max_grad[] = "reduce_max_grad";
inline constexpr char broadcast_reduced[] = "broadcast_reduced";
inline constexpr char argmax[] = "argmax";

// array: reshapes, transpose, reverse, concat, slice, split, pad, one_hot, gather, batch shares (core/ops/array_ops.cpp)
inline constexpr char reshape[] = "reshape";
inline constexpr char reshape_like[] = "reshape_like";
inline constexpr char transpose[] = "transpose";
inline constexpr char reverse[] = "reverse";
inline constexpr char concat[] = "concat";
inline constexpr char concat_grad[] = "concat_grad";
inline constexpr char slice[] = "slice";
inline constexpr char slice_grad[] = "slice_grad";
inline constexpr char batch_share[] = "batch_share";
inline constexpr char batch_share_grad[] = "batch_share_grad";
inline constexpr char batch_share_start[] = "batch_share_start";
inline constexpr char split[] = "split";
inline constexpr char pad[] = "pad";
inline constexpr char pad_grad[] = "pad_grad";
inline constexpr char one_hot[] = "one_hot";
inline constexpr char hashing_bins[] = "hashing_bins";
inline constexpr char gather[] = "gather";
inline constexpr char gather_grad[] = "gather_grad";

// conv: convolution, NHWC (core/ops/conv_ops.cpp)
inline constexpr char conv2d[] = "conv2d";
inline constexpr char conv2d_bias[] = "conv2d_bias";
inline constexpr char conv2d_backward_data[] = "conv2d_backward_data";
inline constexpr char conv2d_backward_filter[] = "conv2d_backward_filter";
inline constexpr char conv2d_transpose[] = "conv2d_transpose";

// image: resizing, projective transforms, NHWC (core/ops/image_ops.cpp)
inline constexpr char resize[] = "resize";
inline constexpr char resize_grad[] = "resize_grad";
inline constexpr char image_transform[] = "image_transform";
inline constexpr char rotation_transform[] = "rotation_transform";

// conv3d: 3-D convolution and pooling, NDHWC (core/ops/conv3d_ops.cpp)
inline constexpr char conv3d[] = "conv3d";
inline constexpr char conv3d_backward_data[] = "conv3d_backward_data";
inline constexpr char conv3d_backward_filter[] = "conv3d_backward_filter";
inline constexpr char conv3d_transpose[] = "conv3d_transpose";
inline constexpr char max_pool3d[] = "max_pool3d";
inline constexpr char avg_pool3d[] = "avg_pool3d";
inline constexpr char max_pool3d_grad[] = "max_pool3d_grad";
inline constexpr char avg_pool3d_grad[] = "avg_pool3d_grad";
// pool: pooling, NHWC (core/ops/pool_ops.cpp)
inline constexpr char max_pool2d[] = "max_pool2d";
inline constexpr char avg_pool2d[] = "avg_pool2d";
inline constexpr char max_pool2d_grad[] = "max_pool2d_grad";
inline constexpr char avg_pool2d_grad[] = "avg_pool2d_grad";
inline constexpr char max_pool2d_with_argmax[] = "max_pool2d_with_argmax";
inline constexpr char max_pool2d_with_argmax_grad[] = "max_pool2d_with_argmax_grad";

// normalization: batch and layer normalization (core/ops/normalization_ops.cpp)
inline constexpr char batch_norm_training[] = "batch_norm_training";
inline constexpr char batch_norm_training_grad[] = "batch_norm_training_grad";
inline constexpr char batch_norm_stats_grad[] = "batch_norm_stats_grad";
inline constexpr char batch_norm_inference[] = "batch_norm_inference";
inline constexpr char batch_norm_inference_grad[] = "batch_norm_inference_grad";
inline constexpr char layer_norm[] = "layer_norm";
inline constexpr char layer_norm_grad[] = "layer_norm_grad";

// attention: scaled dot-product attention per head (core/ops/attention_ops.cpp)
inline constexpr char dot_product_attention[] = "dot_product_attention";
inline constexpr char dot_product_attention_grad[] = "dot_product_attention_grad";

// dropout and random tensors: dropout, random_uniform, random_normal (core/ops/dropout_ops.cpp)
inline constexpr char dropout[] = "dropout";
inline constexpr char random_uniform[] = "random_uniform";
inline constexpr char random_normal[] = "random_normal";

// recurrent: SimpleRNN, LSTM and GRU cells over whole sequences and their gradients (core/ops/recurrent_ops.cpp)
inline constexpr char simple_rnn[] = "simple_rnn";
inline constexpr char simple_rnn_grad[] = "simple_rnn_grad";
inline constexpr char lstm[] = "lstm";
inline constexpr char lstm_grad[] = "lstm_grad";
inline constexpr char gru[] = "gru";
inline constexpr char gru_grad[] = "gru_grad";

// loss: losses (core/ops/loss_ops.cpp)
inline constexpr char softmax_cross_entropy[] = "softmax_cross_entropy";
inline constexpr char sparse_softmax_cross_entropy[] = "sparse_softmax_cross_entropy";
inline constexpr char softmax_cross_entropy_grad[] = "softmax_cross_entropy_grad";
inline constexpr char mean_squared_error[] = "mean_squared_error";
inline constexpr char mean_absolute_error[] = "mean_absolute_error";
inline constexpr char mean_squared_error_grad[] = "mean_squared_error_grad";
inline constexpr char mean_absolute_error_grad[] = "mean_absolute_error_grad";

// optimizer: optimizer updates (core/ops/optimizer_ops.cpp)
inline constexpr char apply_sgd[] = "apply_sgd";
inline constexpr char apply_rmsprop[] = "apply_rmsprop";
inline constexpr char apply_adam[] = "apply_adam";
inline constexpr char apply_adagrad[] = "apply_adagrad";
inline constexpr char apply_adadelta[] = "apply_adadelta";
inline constexpr char apply_adamax[] = "apply_adamax";
inline constexpr char apply_nadam[] = "apply_nadam";
inline constexpr char apply_lion[] = "apply_lion";
inline constexpr char apply_ftrl[] = "apply_ftrl";
inline constexpr char apply_ema[] = "apply_ema";

// collective: collectives (core/ops/collective_ops.cpp)
inline constexpr char all_reduce[] = "all_reduce";

}  // namespace tower::op_names
