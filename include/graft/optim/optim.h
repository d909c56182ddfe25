// graft::optim: optimisers (SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS), learning-rate schedulers and the
// optimiser step inside backward (StepInBackward).
#pragma once

#include "graft/optim/adagrad.h"
#include "graft/optim/adam.h"
#include "graft/optim/adamw.h"
#include "graft/optim/lbfgs.h"
#include "graft/optim/lr_scheduler.h"
#include "graft/optim/optimizer.h"
#include "graft/optim/rmsprop.h"
#include "graft/optim/sgd.h"
#include "graft/optim/step_in_backward.h"
