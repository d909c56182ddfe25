// The one include graft users need.
#pragma once

#include "graft/autograd/engine.h"
#include "graft/autograd/grad_mode.h"
#include "graft/autograd/gradcheck.h"
#include "graft/autograd/node.h"
#include "graft/core/dtype.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/core/generator.h"
#include "graft/core/ordered_dict.h"
#include "graft/core/scalar.h"
#include "graft/core/shape.h"
#include "graft/core/tensor.h"
#include "graft/core/tensor_options.h"
#include "graft/nn/functional.h"
#include "graft/ops/op_list.h"
#include "graft/ops/ops.h"
