// Upsample (every mode of F::interpolate), the padding modules' value repr, PixelShuffle, PixelUnshuffle.
#include "graft/nn/modules/resample.h"

#include <sstream>

#include "../../core/format.h"
#include "graft/nn/init.h"

namespace graft::nn {

namespace {
template <class T>
std::string tuple_repr(const std::vector<T>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    if constexpr (std::is_floating_point_v<T>) s += graft::detail::py_repr(v[i]);
    else s += std::to_string(v[i]);
  }
  return s + (v.size() == 1 ? ",)" : ")");
}
}  // namespace

UpsampleOptions& UpsampleOptions::mode(Nonlinearity m) {
  mode_ = functional::InterpolateFuncOptions().mode(m).mode();  // kLinear, or the options' error
  return *this;
}

std::string pad_value_repr(double v) { return graft::detail::py_repr(v); }

std::string libtorch_pad_repr(const char* name, const std::vector<int64_t>& padding, const double* value) {
  std::ostringstream s;
  s << "graft::nn::" << name << "(padding=[";
  for (size_t i = 0; i < padding.size(); ++i) s << (i ? ", " : "") << padding[i];
  s << "]";
  if (value) s << ", value=" << *value;
  s << ")";
  return s.str();
}

Tensor UpsampleImpl::forward(const Tensor& input) {
  return functional::interpolate(input, functional::InterpolateFuncOptions()
                                            .size(options.size())
                                            .scale_factor(options.scale_factor())
                                            .mode(options.mode())
                                            .align_corners(options.align_corners()));
}

// Python's: "scale_factor=(2.0, 2.0), mode='nearest'" or "size=(4, 6), mode='bilinear'".
std::string UpsampleImpl::extra_repr() const {
  std::string s = options.scale_factor() ? "scale_factor=" + tuple_repr(*options.scale_factor())
                                         : "size=" + (options.size() ? tuple_repr(*options.size()) : std::string("None"));
  return s + ", mode='" + interpolate_mode_name(options.mode()) + "'";
}

Tensor PixelShuffleImpl::forward(const Tensor& input) {
  return functional::pixel_shuffle(input, options.upscale_factor());
}
std::string PixelShuffleImpl::extra_repr() const { return "upscale_factor=" + std::to_string(options.upscale_factor()); }

Tensor PixelUnshuffleImpl::forward(const Tensor& input) {
  return functional::pixel_unshuffle(input, options.downscale_factor());
}
std::string PixelUnshuffleImpl::extra_repr() const {
  return "downscale_factor=" + std::to_string(options.downscale_factor());
}

}  // namespace graft::nn
