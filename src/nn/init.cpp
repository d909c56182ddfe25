// graft::nn::init: values are drawn in double by plain loops over the generator, then copied into
// the tensor (any dtype of float, any strides) under NoGradGuard.
#include "graft/nn/init.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/shape.h"
#include "graft/ops/ops.h"

namespace graft {

const char* nonlinearity_name(Nonlinearity n) {
  switch (n) {
    case Nonlinearity::Linear: return "linear";
    case Nonlinearity::Conv1D: return "conv1d";
    case Nonlinearity::Conv2D: return "conv2d";
    case Nonlinearity::Conv3D: return "conv3d";
    case Nonlinearity::ConvTranspose1D: return "conv_transpose1d";
    case Nonlinearity::ConvTranspose2D: return "conv_transpose2d";
    case Nonlinearity::ConvTranspose3D: return "conv_transpose3d";
    case Nonlinearity::Sigmoid: return "sigmoid";
    case Nonlinearity::Tanh: return "tanh";
    case Nonlinearity::ReLU: return "relu";
    case Nonlinearity::LeakyReLU: return "leaky_relu";
    case Nonlinearity::SELU: return "selu";
  }
  return "?";
}

namespace nn::init {

namespace {

constexpr Nonlinearity kAllNonlinearities[] = {kLinear, kConv1D, kConv2D, kConv3D, kConvTranspose1D, kConvTranspose2D,
                                              kConvTranspose3D, kSigmoid, kTanh, kReLU, kLeakyReLU, kSELU};

void check_float(const Tensor& t, const char* op) {
  GRAFT_CHECK(t.defined(), op, "a defined tensor", "an undefined tensor", "");
  GRAFT_CHECK(t.is_floating_point(), op, "a floating-point tensor", std::string("a ") + dtype_name(t.dtype()) + " tensor",
              "initialisers fill float32/float64 weights");
}

// Writes `values` (row-major, t.numel() of them) into t.
Tensor write(Tensor t, const std::vector<double>& values) {
  if (t.is_meta()) return t;  // Note [Meta device]: no values to write
  NoGradGuard no_grad;
  std::vector<double> copy = values;
  Tensor src = from_blob(copy.data(), t.sizes(), kFloat64);
  t.copy_(src);
  return t;
}

template <class F>
std::vector<double> draw(int64_t n, Generator* gen, F&& f) {
  Generator& g = gen ? *gen : default_generator();
  std::vector<double> v(static_cast<size_t>(n));
  std::lock_guard<std::mutex> lock(g.mutex());
  for (auto& x : v) x = f(g);
  return v;
}

double standard_normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Inverse of the standard normal CDF for p in (cdf(lo), cdf(hi)), by Newton steps kept inside a
// shrinking bracket [lo, hi] (bisection when a step leaves it).
double standard_normal_icdf(double p, double lo, double hi) {
  double x = std::clamp(0.0, lo, hi);
  for (int it = 0; it < 200; ++it) {
    const double f = standard_normal_cdf(x) - p;
    if (f > 0) hi = x;
    else lo = x;
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    double next = pdf > 0 ? x - f / pdf : 0.5 * (lo + hi);
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (std::abs(next - x) <= 1e-15 * std::max(1.0, std::abs(x))) return next;
    x = next;
  }
  return x;
}

}  // namespace

NonlinearityType::NonlinearityType(const std::string& name) : value_(kLinear) {
  std::string known;
  for (Nonlinearity n : kAllNonlinearities) {
    if (name == nonlinearity_name(n)) {
      value_ = n;
      return;
    }
    known += (known.empty() ? "" : ", ") + std::string(nonlinearity_name(n));
  }
  throw Error("calculate_gain", "one of the nonlinearities " + known, "'" + name + "'",
              "or use the enum values graft::kReLU, graft::kLeakyReLU, ...");
}

FanModeType::FanModeType(const std::string& name) : value_(kFanIn) {
  if (name == "fan_in") value_ = kFanIn;
  else if (name == "fan_out") value_ = kFanOut;
  else throw Error("kaiming init", "mode 'fan_in' or 'fan_out'", "'" + name + "'", "or use graft::kFanIn / graft::kFanOut");
}

double calculate_gain(NonlinearityType nonlinearity, double param) {
  switch (nonlinearity.value()) {
    case Nonlinearity::Linear:
    case Nonlinearity::Conv1D:
    case Nonlinearity::Conv2D:
    case Nonlinearity::Conv3D:
    case Nonlinearity::ConvTranspose1D:
    case Nonlinearity::ConvTranspose2D:
    case Nonlinearity::ConvTranspose3D:
    case Nonlinearity::Sigmoid: return 1.0;
    case Nonlinearity::Tanh: return 5.0 / 3.0;
    case Nonlinearity::ReLU: return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU: return std::sqrt(2.0 / (1.0 + param * param));
    case Nonlinearity::SELU: return 3.0 / 4.0;
  }
  return 1.0;
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  GRAFT_CHECK(tensor.defined(), "calculate_fan_in_and_fan_out", "a defined tensor", "an undefined tensor", "");
  GRAFT_CHECK(tensor.dim() >= 2, "calculate_fan_in_and_fan_out", "a tensor of at least 2 dims",
              "shape " + shape_str(tensor.sizes()),
              "fan in and fan out cannot be computed for fewer than 2 dims; use uniform_/normal_ for biases");
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

Tensor uniform_(Tensor tensor, double low, double high, Generator* generator) {
  check_float(tensor, "uniform_");
  GRAFT_CHECK(low <= high, "uniform_", "low <= high", "low " + std::to_string(low) + ", high " + std::to_string(high),
              "swap low and high");
  // LibTorch's: the tensor's own uniform_ (Note [PyTorch's random streams]), outside autograd.
  NoGradGuard no_grad;
  tensor.uniform_(low, high, generator);
  return tensor;
}

Tensor normal_(Tensor tensor, double mean, double stddev, Generator* generator) {
  check_float(tensor, "normal_");
  GRAFT_CHECK(stddev >= 0, "normal_", "std >= 0", "std " + std::to_string(stddev), "pass std >= 0");
  NoGradGuard no_grad;
  tensor.normal_(mean, stddev, generator);
  return tensor;
}

Tensor constant_(Tensor tensor, const Scalar& value) {
  GRAFT_CHECK(tensor.defined(), "constant_", "a defined tensor", "an undefined tensor", "");
  NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
}

Tensor zeros_(Tensor tensor) { return constant_(std::move(tensor), 0); }
Tensor ones_(Tensor tensor) { return constant_(std::move(tensor), 1); }

Tensor eye_(Tensor matrix) {
  GRAFT_CHECK(matrix.defined() && matrix.dim() == 2, "eye_", "a 2-D tensor",
              matrix.defined() ? "shape " + shape_str(matrix.sizes()) : "an undefined tensor",
              "eye_ fills a matrix; reshape to 2-D first");
  const int64_t n = matrix.size(0), m = matrix.size(1);
  std::vector<double> v(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < std::min(n, m); ++i) v[static_cast<size_t>(i * m + i)] = 1.0;
  return write(matrix, v);
}

Tensor dirac_(Tensor tensor, int64_t groups) {
  GRAFT_CHECK(tensor.defined() && tensor.dim() >= 3 && tensor.dim() <= 5, "dirac_", "a 3-, 4- or 5-D tensor",
              tensor.defined() ? "shape " + shape_str(tensor.sizes()) : "an undefined tensor",
              "dirac_ initialises conv weights (out, in, k...); pass a 3-, 4- or 5-D weight");
  GRAFT_CHECK(groups >= 1 && tensor.size(0) % groups == 0, "dirac_", "groups dividing size(0) = " + std::to_string(tensor.size(0)),
              "groups = " + std::to_string(groups), "pass groups that divide out_channels");
  const int64_t out_per_group = tensor.size(0) / groups;
  const int64_t min_dim = std::min(out_per_group, tensor.size(1));
  std::vector<int64_t> strides(static_cast<size_t>(tensor.dim()), 1);
  for (int64_t d = tensor.dim() - 2; d >= 0; --d) strides[d] = strides[d + 1] * tensor.size(d + 1);
  std::vector<double> v(static_cast<size_t>(tensor.numel()), 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t d = 0; d < min_dim; ++d) {
      int64_t at = (g * out_per_group + d) * strides[0] + d * strides[1];
      for (int64_t k = 2; k < tensor.dim(); ++k) at += (tensor.size(k) / 2) * strides[k];
      v[static_cast<size_t>(at)] = 1.0;
    }
  }
  return write(tensor, v);
}

Tensor xavier_uniform_(Tensor tensor, double gain, Generator* generator) {
  check_float(tensor, "xavier_uniform_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double a = std::sqrt(3.0) * gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return uniform_(tensor, -a, a, generator);
}

Tensor xavier_normal_(Tensor tensor, double gain, Generator* generator) {
  check_float(tensor, "xavier_normal_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return normal_(tensor, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), generator);
}

namespace {
double kaiming_std(const Tensor& tensor, double a, FanModeType mode, NonlinearityType nonlinearity, const char* op) {
  check_float(tensor, op);
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const int64_t fan = mode.value() == kFanIn ? fan_in : fan_out;
  GRAFT_CHECK(fan > 0, op, "a tensor with a non-zero fan", "shape " + shape_str(tensor.sizes()),
              "the tensor has no elements along its fan; check its shape");
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}
}  // namespace

Tensor kaiming_uniform_(Tensor tensor, double a, FanModeType mode, NonlinearityType nonlinearity, Generator* generator) {
  if (tensor.defined() && tensor.numel() == 0) return tensor;  // nothing to fill, as PyTorch
  const double bound = std::sqrt(3.0) * kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_");
  return uniform_(tensor, -bound, bound, generator);
}

Tensor kaiming_normal_(Tensor tensor, double a, FanModeType mode, NonlinearityType nonlinearity, Generator* generator) {
  if (tensor.defined() && tensor.numel() == 0) return tensor;
  return normal_(tensor, 0.0, kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_"), generator);
}

Tensor orthogonal_(Tensor tensor, double gain, Generator* generator) {
  check_float(tensor, "orthogonal_");
  GRAFT_CHECK(tensor.dim() >= 2, "orthogonal_", "a tensor of at least 2 dims", "shape " + shape_str(tensor.sizes()),
              "only matrices (or tensors flattened to size(0) x rest) can be made orthogonal");
  if (tensor.numel() == 0 || tensor.is_meta()) return tensor;  // Note [Meta device]: no values
  const int64_t rows = tensor.size(0), cols = tensor.numel() / rows;
  // Work on the tall orientation m x n (m >= n): orthonormal columns, then transpose back if needed.
  const bool transposed = rows < cols;
  const int64_t m = transposed ? cols : rows, n = transposed ? rows : cols;
  // Column-major m x n standard normal matrix (column j at a[j*m ...]), drawn as LibTorch draws it:
  // randn(rows, cols) in float32 (Note [PyTorch's random streams]), transposed when rows < cols.
  const Tensor drawn = graft::randn({rows, cols}, kFloat32, generator).to(kFloat64);
  const double* dp = drawn.data_ptr<double>();
  std::vector<double> a(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)  // the tall matrix's (i, j) is drawn (r, c) or (c, r)
      a[static_cast<size_t>(transposed ? r * m + c : c * m + r)] = dp[r * cols + c];
  // Modified Gram-Schmidt, each column orthogonalised twice ("twice is enough"): Q with the
  // positive-diagonal R of the QR decomposition, i.e. PyTorch's sign-corrected q.
  for (int64_t j = 0; j < n; ++j) {
    double* cj = a.data() + j * m;
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t k = 0; k < j; ++k) {
        const double* ck = a.data() + k * m;
        double dot = 0;
        for (int64_t i = 0; i < m; ++i) dot += ck[i] * cj[i];
        for (int64_t i = 0; i < m; ++i) cj[i] -= dot * ck[i];
      }
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += cj[i] * cj[i];
    norm = std::sqrt(norm);
    GRAFT_ASSERT(norm > 0, "orthogonal_: a random column was linearly dependent");
    for (int64_t i = 0; i < m; ++i) cj[i] /= norm;
  }
  // Row-major rows x cols result: Q (m x n) when not transposed, Q^T when transposed.
  std::vector<double> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(r * cols + c)] = gain * (transposed ? a[r * m + c] : a[c * m + r]);
  return write(tensor, out);
}

Tensor trunc_normal_(Tensor tensor, double mean, double stddev, double a, double b, Generator* generator) {
  check_float(tensor, "trunc_normal_");
  GRAFT_CHECK(stddev > 0, "trunc_normal_", "std > 0", "std " + std::to_string(stddev), "pass std > 0");
  GRAFT_CHECK(a < b, "trunc_normal_", "a < b", "a " + std::to_string(a) + ", b " + std::to_string(b),
              "a and b are the absolute bounds of the values");
  if (tensor.is_meta()) return tensor;  // Note [Meta device]: no values to draw
  // Standardised bounds; a mirrored interval keeps the CDF of far tails accurate.
  double lo = (a - mean) / stddev, hi = (b - mean) / stddev;
  const bool mirror = lo > 0;
  if (mirror) {
    const double mirrored_lo = -hi;
    hi = -lo;
    lo = mirrored_lo;
  }
  const double clo = std::max(lo, -40.0), chi = std::min(hi, 40.0);
  const double plo = standard_normal_cdf(clo), phi = standard_normal_cdf(chi);
  const bool rejection = phi - plo >= 0.25;  // at most 4 draws per value on average
  std::vector<double> v = draw(tensor.numel(), generator, [&](Generator& g) {
    double z;
    if (rejection) {
      do z = g.next_normal();
      while (z < lo || z > hi);
    } else {
      z = standard_normal_icdf(plo + (phi - plo) * g.next_double(), clo, chi);
    }
    if (mirror) z = -z;
    return std::clamp(mean + stddev * z, a, b);
  });
  return write(tensor, v);
}

}  // namespace nn::init
}  // namespace graft
