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
#include "graft/nn/init.h"
#include "graft/nn/modules/activation.h"
#include "graft/nn/modules/container.h"
#include "graft/nn/modules/conv.h"
#include "graft/nn/modules/distance.h"
#include "graft/nn/modules/dropout.h"
#include "graft/nn/modules/linear.h"
#include "graft/nn/modules/loss.h"
#include "graft/nn/modules/normalization.h"
#include "graft/nn/modules/pooling.h"
#include "graft/nn/modules/resample.h"
#include "graft/nn/modules/rnn.h"
#include "graft/nn/modules/transformer.h"
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

// LibTorch prints an ExpandingArray as an ArrayRef, "[3, 3]", but a 1-D one as its value, "5".
template <size_t D> std::string array(const ExpandingArray<D>& a) {
  if constexpr (D == 1) return std::to_string(a[0]);
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

// A std::vector as LibTorch's ArrayRef prints it: "[2, 4, 4]", each value as the stream writes it
// (a double 2.0 as "2").
template <class T> std::string list(const std::vector<T>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << "]";
  return s.str();
}

// The pads: "graft::nn::ZeroPad2d(padding=[1, 1, 2, 0])", with ", value=0.5" for the constant ones.
template <size_t N> std::string pad(const char* kind, const ExpandingArray<N>& padding, const double* value) {
  std::ostringstream s;
  s << "graft::nn::" << kind << "(padding=" << array(padding);
  if (value) s << ", value=" << *value;
  s << ")";
  return s.str();
}

// The convolutions: "graft::nn::ConvTranspose2d(4, 6, kernel_size=[3, 3], stride=[2, 2], padding=[1, 1],
// dilation=[2, 2], output_padding=[1, 1], groups=2, bias=false)", each argument after the stride
// only where it differs from its default (graft's padding_mode is kZeros, never printed).
template <size_t D> std::string conv(const char* kind, const ConvNdOptions<D>& o) {
  std::ostringstream s;
  s << "graft::nn::" << kind << "(" << o.in_channels() << ", " << o.out_channels()
    << ", kernel_size=" << array(o.kernel_size()) << ", stride=" << array(o.stride());
  if (!all_equal(o.padding(), 0)) s << ", padding=" << array(o.padding());
  if (!all_equal(o.dilation(), 1)) s << ", dilation=" << array(o.dilation());
  if (o.transposed() && !all_equal(o.output_padding(), 0)) s << ", output_padding=" << array(o.output_padding());
  if (o.groups() != 1) s << ", groups=" << o.groups();
  if (!o.bias()) s << ", bias=false";
  s << ")";
  return s.str();
}

// LibTorch's enum names (torch::enumtype::get_enum_name).
const char* libtorch_mode_name(InterpolateMode m) {
  switch (m) {
    case InterpolateMode::Nearest: return "kNearest";
    case InterpolateMode::Linear: return "kLinear";
    case InterpolateMode::Bilinear: return "kBilinear";
    case InterpolateMode::Bicubic: return "kBicubic";
    case InterpolateMode::Trilinear: return "kTrilinear";
    case InterpolateMode::Area: return "kArea";
    case InterpolateMode::NearestExact: return "kNearestExact";
  }
  return "kNearest";
}

// MaxPool1d/2d: "graft::nn::MaxPool2d(kernel_size=[5, 5], stride=[5, 5], padding=[0, 0], dilation=[1, 1],
// ceil_mode=false)"; the 1-D sizes as plain values.
template <class Options> std::string max_pool(const char* kind, const Options& o) {
  return std::string("graft::nn::") + kind + "(kernel_size=" + array(o.kernel_size()) + ", stride=" + array(o.stride()) +
         ", padding=" + array(o.padding()) + ", dilation=" + array(o.dilation()) +
         ", ceil_mode=" + (o.ceil_mode() ? "true" : "false") + ")";
}
// AvgPool1d/2d: kernel_size, stride and padding only (not ceil_mode, count_include_pad, divisor_override).
template <class Options> std::string avg_pool(const char* kind, const Options& o) {
  return std::string("graft::nn::") + kind + "(kernel_size=" + array(o.kernel_size()) + ", stride=" + array(o.stride()) +
         ", padding=" + array(o.padding()) + ")";
}
template <class Options> std::string adaptive_pool(const char* kind, const Options& o) {
  return std::string("graft::nn::") + kind + "(output_size=" + array(o.output_size()) + ")";
}

// RNN, LSTM, GRU: every option by name (RNN's nonlinearity not among them), LSTM's proj_size when set.
template <class Options> std::string rnn(const char* kind, const Options& o, int64_t proj_size) {
  std::ostringstream s;
  s << std::boolalpha << "graft::nn::" << kind << "(input_size=" << o.input_size() << ", hidden_size=" << o.hidden_size()
    << ", num_layers=" << o.num_layers() << ", bias=" << o.bias() << ", batch_first=" << o.batch_first()
    << ", dropout=" << o.dropout() << ", bidirectional=" << o.bidirectional();
  if (proj_size > 0) s << ", proj_size=" << proj_size;
  s << ")";
  return s.str();
}

}  // namespace

std::string Module::libtorch_repr() const {
  std::ostringstream s;
  s << std::boolalpha;
  if (const auto* m = as<LinearImpl>()) {
    s << "graft::nn::Linear(in_features=" << m->options.in_features() << ", out_features=" << m->options.out_features()
      << ", bias=" << m->options.bias() << ")";
  } else if (const auto* m = as<Conv1dImpl>()) {
    return conv("Conv1d", m->options);
  } else if (const auto* m = as<Conv2dImpl>()) {
    return conv("Conv2d", m->options);
  } else if (const auto* m = as<Conv3dImpl>()) {
    return conv("Conv3d", m->options);
  } else if (const auto* m = as<ConvTranspose1dImpl>()) {
    return conv("ConvTranspose1d", m->options);
  } else if (const auto* m = as<ConvTranspose2dImpl>()) {
    return conv("ConvTranspose2d", m->options);
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
  } else if (const auto* m = as<HardtanhImpl>()) {
    s << "graft::nn::Hardtanh(min_val=" << m->options.min_val() << ", max_val=" << m->options.max_val();
    if (m->options.inplace()) s << ", inplace=true";
    s << ")";
  } else if (const auto* m = as<MaxPool1dImpl>()) {
    return max_pool("MaxPool1d", m->options);
  } else if (const auto* m = as<MaxPool2dImpl>()) {
    return max_pool("MaxPool2d", m->options);
  } else if (const auto* m = as<AvgPool1dImpl>()) {
    return avg_pool("AvgPool1d", m->options);
  } else if (const auto* m = as<AvgPool2dImpl>()) {
    return avg_pool("AvgPool2d", m->options);
  } else if (const auto* m = as<AdaptiveAvgPool1dImpl>()) {
    return adaptive_pool("AdaptiveAvgPool1d", m->options);
  } else if (const auto* m = as<AdaptiveAvgPool2dImpl>()) {
    return adaptive_pool("AdaptiveAvgPool2d", m->options);
  } else if (const auto* m = as<AdaptiveMaxPool2dImpl>()) {
    return adaptive_pool("AdaptiveMaxPool2d", m->options);
  } else if (const auto* m = as<LayerNormImpl>()) {
    s << "graft::nn::LayerNorm(" << list(m->options.normalized_shape()) << ", eps=" << m->options.eps()
      << ", elementwise_affine=" << m->options.elementwise_affine() << ")";
  } else if (const auto* m = as<PairwiseDistanceImpl>()) {
    s << "graft::nn::PairwiseDistance(p=" << m->options.p() << ", eps=" << m->options.eps()
      << ", keepdim=" << m->options.keepdim() << ")";
  } else if (const auto* m = as<CosineEmbeddingLossImpl>()) {
    s << "graft::nn::CosineEmbeddingLoss(margin=" << m->options.margin() << ")";
  } else if (const auto* m = as<TripletMarginLossImpl>()) {
    s << "graft::nn::TripletMarginLoss(margin=" << m->options.margin() << ", p=" << m->options.p()
      << ", eps=" << m->options.eps() << ", swap=" << m->options.swap() << ")";
  } else if (const auto* m = as<ReflectionPad1dImpl>()) {
    return pad("ReflectionPad1d", m->options.padding(), nullptr);
  } else if (const auto* m = as<ReflectionPad2dImpl>()) {
    return pad("ReflectionPad2d", m->options.padding(), nullptr);
  } else if (const auto* m = as<ReplicationPad1dImpl>()) {
    return pad("ReplicationPad1d", m->options.padding(), nullptr);
  } else if (const auto* m = as<ReplicationPad2dImpl>()) {
    return pad("ReplicationPad2d", m->options.padding(), nullptr);
  } else if (const auto* m = as<ZeroPad2dImpl>()) {
    return pad("ZeroPad2d", m->options.padding(), nullptr);
  } else if (const auto* m = as<ConstantPad1dImpl>()) {
    const double v = m->options.value();
    return pad("ConstantPad1d", m->options.padding(), &v);
  } else if (const auto* m = as<ConstantPad2dImpl>()) {
    const double v = m->options.value();
    return pad("ConstantPad2d", m->options.padding(), &v);
  } else if (const auto* m = as<UpsampleImpl>()) {
    // The scale factors when given, else the size; align_corners is not printed.
    const auto& o = m->options;
    s << "graft::nn::Upsample(";
    if (o.scale_factor()) s << "scale_factor=" << list(*o.scale_factor());
    else if (o.size()) s << "size=" << list(*o.size());
    else s << "size=None";
    s << ", mode=" << libtorch_mode_name(o.mode()) << ")";
  } else if (const auto* m = as<RNNCellImpl>()) {
    s << "graft::nn::RNNCell(" << m->options.input_size() << ", " << m->options.hidden_size();
    if (!m->options.bias()) s << ", bias=false";
    if (m->options.nonlinearity() == Nonlinearity::ReLU) s << ", nonlinearity=kReLU";
    s << ")";
  } else if (const auto* m = as<RNNImpl>()) {
    return rnn("RNN", m->options, 0);
  } else if (const auto* m = as<LSTMImpl>()) {
    return rnn("LSTM", m->options, m->options.proj_size());
  } else if (const auto* m = as<GRUImpl>()) {
    return rnn("GRU", m->options, 0);
  } else if (as<GELUImpl>()) {
    return "graft::nn::GELU()";  // approximate is not printed
  } else if (as<SmoothL1LossImpl>()) {
    return "graft::nn::SmoothL1Loss";  // LibTorch writes these two without parentheses
  } else if (as<HuberLossImpl>()) {
    return "graft::nn::HuberLoss";
  } else if (as<TransformerImpl>()) {
    // The transformer modules print LibTorch's name(), the class name with its Impl.
    return "graft::nn::TransformerImpl";
  } else if (as<TransformerEncoderImpl>()) {
    return "graft::nn::TransformerEncoderImpl";
  } else if (as<TransformerDecoderImpl>()) {
    return "graft::nn::TransformerDecoderImpl";
  } else if (as<TransformerEncoderLayerImpl>()) {
    return "graft::nn::TransformerEncoderLayerImpl";
  } else if (as<TransformerDecoderLayerImpl>()) {
    return "graft::nn::TransformerDecoderLayerImpl";
  } else if (as<MultiheadAttentionImpl>()) {
    return "graft::nn::MultiheadAttention";  // no arguments: LibTorch prints only its out_proj child
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
