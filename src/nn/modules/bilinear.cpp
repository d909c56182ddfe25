// Bilinear (issue 32): the module over the op graft::bilinear (src/ops/embedding_bag.cpp), which
// is also F::bilinear.
#include <cmath>

#include "../../core/format.h"
#include "graft/core/factory.h"
#include "graft/nn/init.h"
#include "graft/nn/modules/linear.h"

namespace graft::nn {

BilinearImpl::BilinearImpl(const BilinearOptions& options_) : options(options_) {
  GRAFT_CHECK(options.in1_features() >= 0 && options.in2_features() >= 0 && options.out_features() >= 0, "Bilinear",
              "non-negative in1_features, in2_features and out_features",
              "in1_features " + std::to_string(options.in1_features()) + ", in2_features " +
                  std::to_string(options.in2_features()) + ", out_features " + std::to_string(options.out_features()),
              "pass feature counts >= 0");
  reset();
}

void BilinearImpl::reset() {
  weight = register_parameter("weight",
                              graft::empty({options.out_features(), options.in1_features(), options.in2_features()}));
  bias = register_parameter("bias", options.bias() ? graft::empty({options.out_features()}) : Tensor(), options.bias());
  reset_parameters();
}

// PyTorch's: bound = 1 / sqrt(weight.size(1)) (in1_features) for both weight and bias.
void BilinearImpl::reset_parameters() {
  const int64_t in1 = options.in1_features();
  const double bound = in1 > 0 ? 1.0 / std::sqrt(static_cast<double>(in1)) : 0.0;
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& input1, const Tensor& input2) {
  return graft::bilinear(input1, input2, weight, bias);
}

// LibTorch's style is the default one built from this: graft::nn::Bilinear(..., bias=true).
std::string BilinearImpl::extra_repr() const {
  return "in1_features=" + std::to_string(options.in1_features()) +
         ", in2_features=" + std::to_string(options.in2_features()) +
         ", out_features=" + std::to_string(options.out_features()) +
         ", bias=" + graft::detail::py_bool(options.bias());
}

}  // namespace graft::nn
