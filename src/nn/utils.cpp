// Gradient clipping and penalty helpers: see include/graft/nn/utils.h and Note [Gradient clipping].
#include "graft/nn/utils.h"

#include <cmath>
#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>
#include <string>

#include "../core/format.h"
#include "../kernels/vector_clones.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/runtime/parallel.h"
#include "graft/ops/ops.h"

namespace graft::nn::utils {

using graft::detail::shortest;

namespace {

constexpr const char* kClipNorm = "clip_grad_norm_";

std::string norm_name(double p) {
  if (std::isinf(p)) return p > 0 ? std::string("inf") : std::string("-inf");
  return shortest(p);
}

// The p-norm of a vector as torch.norm(x, p) computes it, for any p: max |x| for p = inf, min |x|
// for p = -inf, the count of nonzero elements for p = 0, and (sum |x|^p)^(1/p) otherwise, negative
// p included (then a zero element makes the sum inf and the norm 0). Accumulated in double; nan
// propagates (and counts as nonzero for p = 0).
struct NormAccumulator {
  double p;
  double acc = std::isinf(p) && p < 0 ? std::numeric_limits<double>::infinity() : 0;
  void add(double x) {
    const double a = std::fabs(x);
    if (std::isinf(p)) {
      if (std::isnan(a) || std::isnan(acc)) acc = std::numeric_limits<double>::quiet_NaN();
      else if (p > 0 ? a > acc : a < acc) acc = a;
    } else if (p == 0) {
      acc += a != 0 ? 1 : 0;
    } else if (p == 1) {
      acc += a;
    } else if (p == 2) {
      acc += a * a;
    } else {
      acc += std::pow(a, p);
    }
  }
  double result() const {
    if (std::isinf(p) || p == 0 || p == 1) return acc;
    if (p == 2) return std::sqrt(acc);
    return std::pow(acc, 1.0 / p);
  }
};

// Note [Fast gradient norms]
// The 2-norm (the default) has a fast path: the squares are summed in double, in fixed blocks of
// kNormBlock elements whose partial sums are added in block order, so the result does not depend
// on the number of threads; within a block the compiler may sum in 2, 4 or 8 double lanes
// (`omp simd reduction`; the processor picks the widest clone), which can change the last bit of
// the double sum but not, short of a tie, the norm rounded to float32. Summing float32 squares in
// double loses nothing until 2^29 terms. Over 10M float32 gradients on one core, the whole
// clip_grad_norm_ (norm and scaling) took 13.1 ms with the general loop below (a branchy
// per-element accumulator in double) and 2.1 ms with this path, against LibTorch's 2.8
// (BENCHMARKS.md, the suite).
constexpr int64_t kNormBlock = int64_t{1} << 15;

template <class T>
[[gnu::always_inline]] inline double sum_squares_body(const T* __restrict x, int64_t n) {
  double acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    acc += v * v;
  }
  return acc;
}

GRAFT_VEC_CLONES double sum_squares(const float* x, int64_t n) { return sum_squares_body(x, n); }
GRAFT_VEC_CLONES double sum_squares(const double* x, int64_t n) { return sum_squares_body(x, n); }

// x *= c over contiguous data, as Tensor::mul_(c) rounds (one product per element).
template <class T>
[[gnu::always_inline]] inline void scale_body(T* __restrict x, int64_t n, T c) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * c;
}
GRAFT_VEC_CLONES void scale_in_place(float* x, int64_t n, float c) { scale_body(x, n, c); }
GRAFT_VEC_CLONES void scale_in_place(double* x, int64_t n, double c) { scale_body(x, n, c); }

template <class T>
double blocked_sum_squares(const T* d, int64_t n) {
  const int64_t blocks = (n + kNormBlock - 1) / kNormBlock;
  if (blocks <= 1) return sum_squares(d, n);
  std::vector<double> partial(static_cast<size_t>(blocks));
  parallel_for(0, blocks, 4, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t lo = k * kNormBlock;
      partial[static_cast<size_t>(k)] = sum_squares(d + lo, std::min(n, lo + kNormBlock) - lo);
    }
  });
  double total = 0;
  for (double v : partial) total += v;
  return total;
}

// The p-norm of one gradient, read once, rounded to T (the gradient's dtype).
template <class T>
T grad_norm(const Tensor& g, double p) {
  const Tensor c = g.is_contiguous() ? g : g.contiguous();
  const T* d = c.data_ptr<T>();
  const int64_t n = c.numel();
  if (p == 2) return static_cast<T>(std::sqrt(blocked_sum_squares(d, n)));  // Note [Fast gradient norms]
  NormAccumulator acc{p};
  for (int64_t i = 0; i < n; ++i) acc.add(static_cast<double>(d[i]));
  return static_cast<T>(acc.result());
}

// g *= coef, as g.mul_(coef) does (the factor rounded to g's dtype), split over graft's threads
// for contiguous float32/float64 gradients.
void scale_gradient(Tensor g, double coef) {
  if (!g.is_contiguous() || (g.dtype() != kFloat32 && g.dtype() != kFloat64)) {
    g.mul_(coef);
    return;
  }
  auto run = [&]<class T>(T* d) {
    const T c = static_cast<T>(coef);
    parallel_for(0, g.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) { scale_in_place(d + b, e - b, c); });
  };
  if (g.dtype() == kFloat32) run(g.data_ptr<float>());
  else run(g.data_ptr<double>());
  g.impl().storage->bump_version("clip_grad_norm_");
}

double grad_norm_as_double(const Tensor& g, double p) {
  if (g.dtype() == kFloat64) return grad_norm<double>(g, p);
  GRAFT_CHECK(g.dtype() == kFloat32, kClipNorm, "float32 or float64 gradients",
              std::string("a ") + dtype_name(g.dtype()) + " gradient", "clip the gradients of floating-point parameters");
  return static_cast<double>(grad_norm<float>(g, p));
}

// The parameters marked by detail::set_grad_consumed_in_backward, with their mark counts. The
// marker (optim::StepInBackward) holds the parameters while they are marked, so an address is
// never reused under a mark. `consumed_count` skips the lock when nothing is marked.
std::mutex consumed_mutex;
std::unordered_map<const TensorImpl*, int> consumed;
std::atomic<size_t> consumed_count{0};

bool is_consumed(const Tensor& p) {
  if (consumed_count.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard<std::mutex> lock(consumed_mutex);
  return consumed.count(p.unsafe_impl()) != 0;
}

// The gradients of `parameters` that exist, in order.
std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters, const char* op) {
  std::vector<Tensor> grads;
  grads.reserve(parameters.size());
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Tensor& p = parameters[i];
    GRAFT_CHECK(p.defined(), op, "defined parameter tensors", "an undefined tensor",
                "pass the parameters themselves, e.g. model->parameters()");
    if (p.grad().defined()) {
      grads.push_back(p.grad());
      continue;
    }
    // Note [Optimizer step in backward]: its gradient was used and freed inside backward.
    GRAFT_CHECK(!is_consumed(p), op, "every gradient of the list still there to clip",
                "parameter " + std::to_string(i) + " of the list (shape " + shape_str(p.sizes()) +
                    ") updated during backward by optim::StepInBackward, its gradient freed",
                "with step-in-backward no moment holds every gradient, so global clipping is impossible; clip "
                "each parameter's gradient in backward instead: StepInBackward(opt, StepInBackwardOptions()"
                ".clip_grad_value(v)) or .max_grad_norm(m) (per-parameter norms, a different method), or train "
                "with the plain loop (zero_grad, backward, clip, step)");
  }
  return grads;
}

// clip_coef = (1 / (total + 1e-6)) * max_norm clamped to 1, in T (PyTorch's arithmetic on the
// 0-dim norm tensor, whose `max_norm / t` is `t.reciprocal() * max_norm`).
template <class T>
double clip_coefficient(double total, double max_norm) {
  const T denom = static_cast<T>(total) + static_cast<T>(1e-6);
  T coef = (static_cast<T>(1) / denom) * static_cast<T>(max_norm);
  if (coef > static_cast<T>(1)) coef = static_cast<T>(1);  // nan stays nan, as torch.clamp's does
  return static_cast<double>(coef);
}

template <class F>
Tensor sum_over(const std::vector<Tensor>& parameters, const char* op, F&& per_param) {
  Tensor total;
  for (const Tensor& p : parameters) {
    GRAFT_CHECK(p.defined(), op, "defined parameter tensors", "an undefined tensor",
                "pass the parameters themselves, e.g. model->parameters()");
    GRAFT_CHECK(p.is_floating_point(), op, "floating-point parameters",
                std::string("a ") + dtype_name(p.dtype()) + " tensor", "penalise the model's (float) parameters");
    Tensor term = per_param(p);
    total = total.defined() ? total + term : term;
  }
  return total.defined() ? total : tensor(0.0, kFloat32);
}

}  // namespace

void detail::set_grad_consumed_in_backward(const Tensor& param, bool on) {
  std::lock_guard<std::mutex> lock(consumed_mutex);
  const TensorImpl* key = param.unsafe_impl();
  if (on) {
    ++consumed[key];
  } else {
    auto it = consumed.find(key);
    if (it != consumed.end() && --it->second == 0) consumed.erase(it);
  }
  consumed_count.store(consumed.size(), std::memory_order_release);
}

bool detail::grad_consumed_in_backward(const Tensor& param) { return is_consumed(param); }

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  // Any order torch.norm takes, as LibTorch's: negative ones, 0 (a count) and -inf (min |x|) too.
  GRAFT_CHECK(!std::isnan(norm_type), kClipNorm, "a norm_type that is a number (any p, or +-infinity)",
              "norm_type = nan", "use 2 (Euclidean), 1, std::numeric_limits<double>::infinity() (max abs) or another p");
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(parameters, kClipNorm);
  if (grads.empty()) return 0.0;

  DType dtype = grads[0].dtype();
  for (const Tensor& g : grads) dtype = promote_types(dtype, g.dtype());

  // One read of each gradient: its norm, rounded to its dtype, then the norm of the norms.
  NormAccumulator total_acc{norm_type};
  for (const Tensor& g : grads) total_acc.add(grad_norm_as_double(g, norm_type));
  double total = total_acc.result();
  if (dtype == kFloat32) total = static_cast<double>(static_cast<float>(total));

  GRAFT_CHECK(!error_if_nonfinite || std::isfinite(total), kClipNorm, "a finite total norm of the gradients",
              "total norm of order " + norm_name(norm_type) + " = " + shortest(total),
              "a gradient holds nan or inf (check the loss and the learning rate; graft::DetectAnomalyGuard finds "
              "the op that made it); to scale the gradients by the non-finite norm anyway, pass "
              "error_if_nonfinite = false");

  const double coef =
      dtype == kFloat64 ? clip_coefficient<double>(total, max_norm) : clip_coefficient<float>(total, max_norm);
  for (const Tensor& g : grads) scale_gradient(g, coef);
  return total;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  GRAFT_CHECK(clip_value >= 0, "clip_grad_value_", "clip_value >= 0", "clip_value = " + shortest(clip_value),
              "gradients are clamped to [-clip_value, clip_value]");
  NoGradGuard no_grad;
  for (Tensor g : grads_of(parameters, "clip_grad_value_")) g.clamp_(-clip_value, clip_value);
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

Tensor l1_penalty(const std::vector<Tensor>& parameters) {
  return sum_over(parameters, "l1_penalty", [](const Tensor& p) { return graft::sum(graft::abs(p)); });
}

Tensor l2_penalty(const std::vector<Tensor>& parameters) {
  return sum_over(parameters, "l2_penalty", [](const Tensor& p) { return graft::sum(graft::square(p)); });
}

}  // namespace graft::nn::utils
