// Every optimizer and learning-rate schedule, for `#include "tower/optimizers/optimizers.h"`.
#pragma once

#include "tower/optimizers/adadelta.h"
#include "tower/optimizers/adafactor.h"
#include "tower/optimizers/adagrad.h"
#include "tower/optimizers/adam.h"
#include "tower/optimizers/adamax.h"
#include "tower/optimizers/adamw.h"
#include "tower/optimizers/ftrl.h"
#include "tower/optimizers/loss_scale_optimizer.h"
#include "tower/optimizers/lion.h"
#include "tower/optimizers/nadam.h"
#include "tower/optimizers/optimizer.h"
#include "tower/optimizers/rmsprop.h"
#include "tower/optimizers/schedules.h"
#include "tower/optimizers/sgd.h"
