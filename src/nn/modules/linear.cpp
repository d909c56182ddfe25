// Linear, Identity, Flatten.
#include "graft/nn/modules/linear.h"

#include <cmath>

#include "../../core/format.h"
#include "graft/core/factory.h"
#include "graft/nn/init.h"

namespace graft::nn {

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  GRAFT_CHECK(options.in_features() >= 0 && options.out_features() >= 0, "Linear",
              "non-negative in_features and out_features",
              "in_features " + std::to_string(options.in_features()) + ", out_features " +
                  std::to_string(options.out_features()),
              "pass in_features and out_features >= 0");
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter("weight", graft::empty({options.out_features(), options.in_features()}));
  bias = register_parameter("bias", options.bias() ? graft::empty({options.out_features()}) : Tensor(), options.bias());
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearImpl::forward(const Tensor& input) { return functional::linear(input, weight, bias); }

std::string LinearImpl::extra_repr() const {
  return "in_features=" + std::to_string(options.in_features()) +
         ", out_features=" + std::to_string(options.out_features()) +
         ", bias=" + graft::detail::py_bool(options.bias());
}

std::string FlattenImpl::extra_repr() const {
  return "start_dim=" + std::to_string(options.start_dim()) + ", end_dim=" + std::to_string(options.end_dim());
}

}  // namespace graft::nn
