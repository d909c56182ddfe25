// LibTorch's print style (Note [Print styles] in include/graft/nn/module.h): each graft module's own
// line as LibTorch 1.13 writes it, with torch:: renamed graft::, in one place. Modules without an
// entry here print graft::nn::Name(extra_repr() with true/false) when they are graft's, their class
// name (LibTorch's name()) otherwise; a module may override Module::libtorch_repr.
#include <cxxabi.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <typeinfo>

#include "graft/nn/module.h"
#include "graft/nn/modules/activation.h"
#include "graft/nn/modules/container.h"
#include "graft/nn/modules/conv.h"
#include "graft/nn/modules/dropout.h"
#include "graft/nn/modules/linear.h"
#include "graft/nn/modules/normalization.h"
#include "expanding_array_util.h"

namespace graft::nn {

namespace {

std::string demangled(const std::type_info& type) {
  int status = 0;
  char* out = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string s = status == 0 && out ? out : type.name();
  std::free(out);
  return s;
}

// LibTorch prints an ExpandingArray as an ArrayRef: "[3, 3]".
template <size_t D> std::string array(const ExpandingArray<D>& a) {
  std::string s = "[";
  for (size_t i = 0; i < D; ++i) {
    if (i) s += ", ";
    s += std::to_string(a[i]);
  }
  return s + "]";
}
using graft::nn::detail::all_equal;

// ParameterList / ParameterDict: "graft::nn::ParameterList(\n(0): Parameter containing: [Float of size [2, 3]]\n)".
std::string parameter_container(const char* kind, const OrderedDict<std::string, Tensor>& params) {
  std::ostringstream s;
  s << "graft::nn::" << kind << "(\n";
  for (const auto& item : params) {
    const Tensor& p = item.value();
    s << "(" << item.key() << "): Parameter containing: [" << dtype_info(p.dtype()).scalar_type_name << " of size [";
    for (int64_t d = 0; d < p.dim(); ++d) s << (d ? ", " : "") << p.size(d);
    s << "]]\n";
  }
  s << ")";
  return s.str();
}

// Python's True/False as C++'s true/false, for the fallback from extra_repr().
std::string lower_booleans(std::string s) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"True", "true"}, {"False", "false"}})
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  return s;
}

template <class BN> std::string batch_norm(const char* kind, const BN& bn) {
  std::ostringstream s;
  const auto& o = bn.options;
  s << std::boolalpha << "graft::nn::" << kind << "(" << o.num_features() << ", eps=" << o.eps() << ", momentum=";
  if (o.momentum()) s << *o.momentum();
  else s << "None";
  s << ", affine=" << o.affine() << ", track_running_stats=" << o.track_running_stats() << ")";
  return s.str();
}

}  // namespace

std::string Module::libtorch_repr() const {
  std::ostringstream s;
  s << std::boolalpha;
  if (const auto* m = as<LinearImpl>()) {
    s << "graft::nn::Linear(in_features=" << m->options.in_features() << ", out_features=" << m->options.out_features()
      << ", bias=" << m->options.bias() << ")";
  } else if (const auto* m = as<Conv2dImpl>()) {
    const auto& o = m->options;
    s << "graft::nn::Conv2d(" << o.in_channels() << ", " << o.out_channels()
      << ", kernel_size=" << array(o.kernel_size()) << ", stride=" << array(o.stride());
    if (!all_equal(o.padding(), 0)) s << ", padding=" << array(o.padding());
    if (!all_equal(o.dilation(), 1)) s << ", dilation=" << array(o.dilation());
    if (o.groups() != 1) s << ", groups=" << o.groups();
    if (!o.bias()) s << ", bias=false";
    s << ")";
  } else if (const auto* m = as<BatchNorm1dImpl>()) {
    return batch_norm("BatchNorm1d", *m);
  } else if (const auto* m = as<BatchNorm2dImpl>()) {
    return batch_norm("BatchNorm2d", *m);
  } else if (const auto* m = as<ReLUImpl>()) {
    s << "graft::nn::ReLU(";
    if (m->options.inplace()) s << "inplace=true";
    s << ")";
  } else if (const auto* m = as<PReLUImpl>()) {
    s << "graft::nn::PReLU(num_parameters=" << m->options.num_parameters() << ")";
  } else if (const auto* m = as<RReLUImpl>()) {
    s << "graft::nn::RReLU(lower=" << m->options.lower() << ", upper=" << m->options.upper();
    if (m->options.inplace()) s << ", inplace=true";
    s << ")";
  } else if (const auto* m = as<CELUImpl>()) {
    s << "graft::nn::CELU(alpha=" << m->options.alpha();
    if (m->options.inplace()) s << ", inplace=true";
    s << ")";
  } else if (const auto* m = as<ThresholdImpl>()) {
    s << "graft::nn::Threshold(threshold=" << m->options.threshold() << ", value=" << m->options.value();
    if (m->options.inplace()) s << ", inplace=true";
    s << ")";
  } else if (const auto* m = as<SoftshrinkImpl>()) {
    s << "graft::nn::Softshrink(" << m->options.lambda() << ")";
  } else if (const auto* m = as<HardshrinkImpl>()) {
    s << "graft::nn::Hardshrink(" << m->options.lambda() << ")";
  } else if (const auto* m = as<DropoutImpl>()) {
    s << "graft::nn::Dropout(p=" << m->options.p() << ", inplace=" << m->options.inplace() << ")";
  } else if (const auto* m = as<Dropout2dImpl>()) {
    s << "graft::nn::Dropout2d(p=" << m->options.p() << ", inplace=" << m->options.inplace() << ")";
  } else if (as<SequentialImpl>()) {
    return "graft::nn::Sequential";
  } else if (as<ModuleListImpl>()) {
    return "graft::nn::ModuleList";
  } else if (as<ModuleDictImpl>()) {
    return "graft::nn::ModuleDict";
  } else if (as<FunctionalImpl>()) {
    return "graft::nn::Functional()";
  } else if (as<ParameterListImpl>()) {
    return parameter_container("ParameterList", parameters_);
  } else if (as<ParameterDictImpl>()) {
    return parameter_container("ParameterDict", parameters_);
  } else {
    // LibTorch's Module::pretty_print writes name(): the given name, or the full class name.
    if (given_name_) return name();
    const std::string full = demangled(typeid(*this));
    const std::string prefix = "graft::nn::";
    const bool graft_module =
        full.rfind(prefix, 0) == 0 && full.size() > 4 && full.compare(full.size() - 4, 4, "Impl") == 0;
    if (!graft_module) return full;
    return prefix + name() + "(" + lower_booleans(extra_repr()) + ")";
  }
  return s.str();
}

}  // namespace graft::nn
