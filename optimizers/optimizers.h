// Every optimizer and learning-rate schedule, for `#include "optimizers/optimizers.h"`.
#pragma once

#include "optimizers/adadelta.h"
#include "optimizers/adagrad.h"
#include "optimizers/adam.h"
#include "optimizers/adamw.h"
#include "optimizers/optimizer.h"
#include "optimizers/rmsprop.h"
#include "optimizers/schedules.h"
#include "optimizers/sgd.h"
