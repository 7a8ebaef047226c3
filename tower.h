// tower in one include: everything a Keras user touches. `#include <tower/tower.h>` once installed
// (find_package(tower), docs/using-tower.md), or from this source tree through the build's include/.
#pragma once

// The engine a user meets: tensors, devices (cpu:N, cuda:N, logical GPUs), seeds, errors.
#include "tower/core/config.h"
#include "tower/core/device.h"
#include "tower/core/error.h"
#include "tower/core/random.h"
#include "tower/core/tensor.h"

// Keras's API: every layer, Model, Sequential, losses, metrics, callbacks; the optimizers.
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"

// Pictures: a model's graph (utils::plot_model, through Graphviz) and a History's curves
// (utils::plot_history, through cairo).
#include "tower/layers/utils/plot_history.h"
#include "tower/layers/utils/plot_model.h"

// Files and data: Keras's HDF5 weights and models, ModelCheckpoint, BackupAndRestore, datasets.
#include "tower/io/backup_and_restore.h"
#include "tower/io/dataset.h"
#include "tower/io/datasets.h"
#include "tower/io/idx.h"
#include "tower/io/keras_model.h"
#include "tower/io/keras_weights.h"
#include "tower/io/model_checkpoint.h"
#include "tower/io/model_config.h"

// Several devices: multi_gpu_model and MirroredStrategy.
#include "tower/parallel/distribution.h"
#include "tower/parallel/mirrored_strategy.h"
#include "tower/parallel/multi_gpu_model.h"
#include "tower/parallel/multi_worker_mirrored_strategy.h"
#include "tower/parallel/pipeline_model.h"
