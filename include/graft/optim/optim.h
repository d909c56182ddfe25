// graft::optim: optimisers (SGD, Adam, AdamW, RMSprop, Adagrad) and learning-rate schedulers.
#pragma once

#include "graft/optim/adagrad.h"
#include "graft/optim/adam.h"
#include "graft/optim/adamw.h"
#include "graft/optim/lr_scheduler.h"
#include "graft/optim/optimizer.h"
#include "graft/optim/rmsprop.h"
#include "graft/optim/sgd.h"
