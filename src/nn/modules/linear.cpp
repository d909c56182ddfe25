// Linear, Identity, Flatten.
#include "graft/nn/modules/linear.h"

#include <charconv>
#include <cmath>

#include "graft/core/factory.h"
#include "graft/nn/init.h"

namespace graft::nn {

namespace detail {
std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  // Python's repr switches to exponent form below 1e-4 and from 1e16.
  const double a = std::abs(v);
  const bool sci = a != 0 && (a < 1e-4 || a >= 1e16);
  auto res = std::to_chars(buf, buf + sizeof buf, v, sci ? std::chars_format::scientific : std::chars_format::fixed);
  std::string s(buf, res.ptr);
  if (sci) {
    // "1e-05": at least two exponent digits, as Python prints.
    const size_t e = s.find('e');
    std::string mant = s.substr(0, e), exp = s.substr(e + 1);
    std::string sign = exp[0] == '-' ? "-" : "+";
    if (exp[0] == '-' || exp[0] == '+') exp = exp.substr(1);
    if (exp.size() < 2) exp = "0" + exp;
    return mant + "e" + sign + exp;
  }
  if (s.find('.') == std::string::npos) s += ".0";
  return s;
}
}  // namespace detail

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  GRAFT_CHECK(options.in_features() >= 0 && options.out_features() >= 0, "Linear",
              "non-negative in_features and out_features",
              "in_features " + std::to_string(options.in_features()) + ", out_features " +
                  std::to_string(options.out_features()),
              "");
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
  return "in_features=" + std::to_string(options.in_features()) + ", out_features=" +
         std::to_string(options.out_features()) + ", bias=" + detail::py_bool(options.bias());
}

std::string FlattenImpl::extra_repr() const {
  return "start_dim=" + std::to_string(options.start_dim()) + ", end_dim=" + std::to_string(options.end_dim());
}

}  // namespace graft::nn
