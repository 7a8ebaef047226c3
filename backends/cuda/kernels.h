// The CUDA kernel groups, one per op family as in core/ops and backends/cpu (adapters in
// backends/cuda/<family>_ops.cpp, kernels in <family>_kernels.cu); every op has a CUDA kernel.
#pragma once

namespace tower::cuda {
void register_basic_kernels();        // basic_ops.cpp + elementwise_kernels.cu: identity, fill_like, cast, assign
void register_activation_kernels();   // activation_ops.cpp + activation_kernels.cu: unary math, activations, softmax
void register_reduce_kernels();       // reduce_ops.cpp + reduce_kernels.cu: sum, mean, max, argmax, broadcast_reduced
void register_optimizer_kernels();    // optimizer_ops.cpp + optimizer_kernels.cu: apply_sgd ... apply_adadelta
void register_dropout_kernels();      // dropout_ops.cpp + dropout_kernels.cu: the CPU's masks, bit for bit
void register_math_kernels();         // math_ops.cpp + math_kernels.cu: arithmetic, sum_to, matmul (cuBLAS), bias_add
void register_array_kernels();        // array_ops.cpp + array_kernels.cu: reshape, transpose, concat, slice, pad ...
void register_loss_kernels();         // loss_ops.cpp + loss_kernels.cu: cross-entropies, mean squared / absolute error
void register_conv_kernels();         // conv_ops.cpp: conv2d, conv3d and their backward ops (cuDNN)
void register_image_kernels();        // image_ops.cpp + image_kernels.cu: resize and its gradient
void register_pool_kernels();         // pool_ops.cpp + pool_kernels.cu: max/avg pooling and their gradients
void register_pool3d_kernels();       // pool3d_ops.cpp + pool3d_kernels.cu: 3-D max/avg pooling and their gradients
void register_normalization_kernels();   // normalization_ops.cpp + normalization_kernels.cu: batch and layer norm
void register_recurrent_kernels();    // recurrent_ops.cpp + recurrent_kernels.cu: simple_rnn, lstm, gru and gradients
void register_attention_kernels();    // attention_ops.cpp + attention_kernels.cu: dot_product_attention (cuBLAS)
void register_collective_kernels();   // collective_ops.cpp + nccl.cpp: all_reduce through NCCL
void register_half_support();         // half_ops.cpp: float16/bfloat16 steps, natively or widened to float32
}
