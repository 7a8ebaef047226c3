// One registration function per op group (core/ops/*.cpp); register_all_ops calls them all.
#pragma once

namespace tower {

void register_basic_ops();
void register_math_ops();
void register_activation_ops();
void register_reduce_ops();
void register_conv_ops();
void register_pool_ops();
void register_conv3d_ops();
void register_image_ops();
void register_normalization_ops();
void register_dropout_ops();
void register_attention_ops();
void register_array_ops();
void register_recurrent_ops();
void register_loss_ops();
void register_optimizer_ops();
void register_collective_ops();

inline void register_all_ops() {
  register_basic_ops();
  register_math_ops();
  register_activation_ops();
  register_reduce_ops();
  register_conv_ops();
  register_pool_ops();
  register_conv3d_ops();
  register_image_ops();
  register_normalization_ops();
  register_dropout_ops();
  register_attention_ops();
  register_array_ops();
  register_recurrent_ops();
  register_loss_ops();
  register_optimizer_ops();
  register_collective_ops();
}

}  // namespace tower
