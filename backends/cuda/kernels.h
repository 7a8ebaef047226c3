// The CUDA kernel groups (glue in backends/cuda/*_ops.cpp, kernels in *.cu). The CUDA backend grows to every CPU op in its own issue.
#pragma once

namespace tower::cuda {
void register_elementwise_kernels();  // elementwise_ops.cpp + elementwise_kernels.cu: views, arithmetic, compare_mask
void register_activation_kernels();   // activation_ops.cpp + activation_kernels.cu: unary math, activations, grads
void register_reduce_kernels();       // reduce_ops.cpp + reduce_kernels.cu: sum, mean, max, sum_to
void register_softmax_kernels();      // softmax_ops.cpp + softmax_kernels.cu: softmax family, cross-entropies
void register_optimizer_kernels();    // optimizer_ops.cpp + optimizer_kernels.cu: apply_sgd ... apply_adadelta
void register_dropout_kernels();      // dropout_ops.cpp + dropout_kernels.cu: the CPU's masks, bit for bit
void register_math_kernels();         // math_ops.cpp + math_kernels.cu: matmul (cuBLAS), bias_add
void register_array_kernels();        // array_ops.cpp + array_kernels.cu: transpose, concat, slice, pad, gather ...
void register_loss_kernels();         // loss_ops.cpp + loss_kernels.cu: mean squared / absolute error
void register_conv_kernels();         // conv_ops.cpp: conv2d and its two backward ops (cuDNN)
void register_pool_kernels();         // pool_ops.cpp + pool_kernels.cu: max/avg pooling and their gradients
void register_batch_norm_kernels();   // batch_norm_ops.cpp + batch_norm_kernels.cu: the five batch-norm ops
void register_collective_kernels();   // collective_ops.cpp + nccl.cpp: all_reduce through NCCL
}
