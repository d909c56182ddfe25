// Bias + activation after a matrix product, and its backward with the bias gradient (see
// linear_epilogue.h and Note [Fused linear + activation] in src/ops/linalg.cpp).
#include "linear_epilogue.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "graft/runtime/parallel.h"

#include "activation_math.h"
#include "vec_f32.h"
#include "vector_clones.h"

namespace graft::kernels {

namespace {

using Act = EpilogueActivation;

// ---- the activations and their derivatives, one element ----
// float32: the formulas of the float32 activation ops (vec_f32.h; relu's `v < 0 ? 0 : v` as a mask,
// which keeps NaN and -0 as relu does and vectorises). double: the formulas of elementwise.cpp's
// double paths (activation_math.h), so a fused layer returns the bits of the unfused one.
namespace math = activation;

inline float activate(Act act, float v) {
  switch (act) {
    case Act::ReLU: return vec_detail::select(v < 0.0f, 0.0f, v);
    case Act::Sigmoid: return sigmoid_f32(v);
    case Act::Tanh: return tanh_f32(v);
    case Act::Gelu: return gelu_f32(v);
    case Act::GeluTanh: return gelu_tanh_f32(v);
  }
  return v;
}

inline double activate(Act act, double v) {
  switch (act) {
    case Act::ReLU: return math::relu(v);
    case Act::Sigmoid: return math::sigmoid(v);
    case Act::Tanh: return std::tanh(v);
    case Act::Gelu: return math::gelu(v);
    case Act::GeluTanh: return math::gelu_tanh(v);
  }
  return v;
}

// g * act'(s); s is y for ReLU / Sigmoid / Tanh and z for gelu (as the activation ops save them).
inline float derivative_times(Act act, float g, float s) {
  switch (act) {
    case Act::ReLU: return vec_detail::select(s > 0.0f, g, 0.0f);  // math::relu_grad_times as a mask
    case Act::Sigmoid: return g * math::sigmoid_grad(s);
    case Act::Tanh: return g * math::tanh_grad(s);
    case Act::Gelu: return g * gelu_grad_f32(s);
    case Act::GeluTanh: return g * gelu_tanh_grad_f32(s);
  }
  return g;
}

inline double derivative_times(Act act, double g, double s) {
  switch (act) {
    case Act::ReLU: return math::relu_grad_times(g, s);
    case Act::Sigmoid: return g * math::sigmoid_grad(s);
    case Act::Tanh: return g * math::tanh_grad(s);
    case Act::Gelu: return g * math::gelu_grad(s);
    case Act::GeluTanh: return g * math::gelu_tanh_grad(s);
  }
  return g;
}

// ---- the loops ----
// The activation is a template parameter so that each loop body is one branch-free formula (a
// switch inside the loop would stop vectorisation).

template <Act A, bool HasBias, bool SaveZ, class T>
inline void forward_rows_as(T* y, const T* bias, T* z_out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * cols;
    T* zrow = SaveZ ? z_out + r * cols : nullptr;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) {
      const T z = HasBias ? row[c] + bias[c] : row[c];  // no bias: z is the product itself (keeps -0)
      if constexpr (SaveZ) zrow[c] = z;
      row[c] = activate(A, z);
    }
  }
}

template <Act A, class T>
inline void forward_rows(T* y, const T* bias, T* z_out, int64_t rows, int64_t cols) {
  if (bias && z_out) forward_rows_as<A, true, true>(y, bias, z_out, rows, cols);
  else if (bias) forward_rows_as<A, true, false>(y, bias, z_out, rows, cols);
  else if (z_out) forward_rows_as<A, false, true>(y, bias, z_out, rows, cols);
  else forward_rows_as<A, false, false>(y, bias, z_out, rows, cols);
}

template <Act A, class T>
inline void backward_columns(const T* g, const T* s, T* gz, T* bias_grad, int64_t rows, int64_t cols, int64_t c0,
                             int64_t c1) {
  const int64_t width = c1 - c0;
  std::vector<double> sums(bias_grad ? static_cast<size_t>(width) : 0, 0.0);
  double* acc = sums.data();
  for (int64_t r = 0; r < rows; ++r) {
    const T* grow = g + r * cols + c0;
    const T* srow = s + r * cols + c0;
    T* out = gz + r * cols + c0;
    if (bias_grad) {
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) {
        const T d = derivative_times(A, grow[c], srow[c]);
        out[c] = d;
        acc[c] += static_cast<double>(d);
      }
    } else {
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) out[c] = derivative_times(A, grow[c], srow[c]);
    }
  }
  if (bias_grad)
    for (int64_t c = 0; c < width; ++c) bias_grad[c0 + c] = static_cast<T>(sums[static_cast<size_t>(c)]);
}

// float32 bodies, compiled per vector width (not templates: target_clones wants plain functions).
// The switch sits outside the loops, so that each loop body is one branch-free formula.
GRAFT_VEC_CLONES void forward_rows_f32(Act act, float* y, const float* bias, float* z_out, int64_t rows, int64_t cols) {
  GRAFT_VEC_NO_CONTRACT
  switch (act) {
    case Act::ReLU: forward_rows<Act::ReLU, float>(y, bias, z_out, rows, cols); break;
    case Act::Sigmoid: forward_rows<Act::Sigmoid, float>(y, bias, z_out, rows, cols); break;
    case Act::Tanh: forward_rows<Act::Tanh, float>(y, bias, z_out, rows, cols); break;
    case Act::Gelu: forward_rows<Act::Gelu, float>(y, bias, z_out, rows, cols); break;
    case Act::GeluTanh: forward_rows<Act::GeluTanh, float>(y, bias, z_out, rows, cols); break;
  }
}

GRAFT_VEC_CLONES void backward_columns_f32(Act act, const float* g, const float* s, float* gz, float* bias_grad,
                                           int64_t rows, int64_t cols, int64_t c0, int64_t c1) {
  GRAFT_VEC_NO_CONTRACT
  switch (act) {
    case Act::ReLU: backward_columns<Act::ReLU, float>(g, s, gz, bias_grad, rows, cols, c0, c1); break;
    case Act::Sigmoid: backward_columns<Act::Sigmoid, float>(g, s, gz, bias_grad, rows, cols, c0, c1); break;
    case Act::Tanh: backward_columns<Act::Tanh, float>(g, s, gz, bias_grad, rows, cols, c0, c1); break;
    case Act::Gelu: backward_columns<Act::Gelu, float>(g, s, gz, bias_grad, rows, cols, c0, c1); break;
    case Act::GeluTanh: backward_columns<Act::GeluTanh, float>(g, s, gz, bias_grad, rows, cols, c0, c1); break;
  }
}

// double: plain loops (libm per element; double is for checking, not speed).
template <class F>
void with_activation(Act act, F&& f) {
  switch (act) {
    case Act::ReLU: f.template operator()<Act::ReLU>(); break;
    case Act::Sigmoid: f.template operator()<Act::Sigmoid>(); break;
    case Act::Tanh: f.template operator()<Act::Tanh>(); break;
    case Act::Gelu: f.template operator()<Act::Gelu>(); break;
    case Act::GeluTanh: f.template operator()<Act::GeluTanh>(); break;
  }
}

// Transcendental activations cost several times plain arithmetic: smaller chunks for them.
int64_t element_grain(Act act) { return act == Act::ReLU ? kElementwiseGrain : kElementwiseGrain / 4; }

}  // namespace

template <class T>
void bias_activation(Act act, T* y, const T* bias, T* z_out, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t grain_rows = std::max<int64_t>(1, element_grain(act) / cols);
  parallel_for(0, rows, grain_rows, [&](int64_t r0, int64_t r1) {
    T* yb = y + r0 * cols;
    T* zb = z_out ? z_out + r0 * cols : nullptr;
    if constexpr (std::is_same_v<T, float>) {
      forward_rows_f32(act, yb, bias, zb, r1 - r0, cols);
    } else {
      with_activation(act, [&]<Act A>() { forward_rows<A, T>(yb, bias, zb, r1 - r0, cols); });
    }
  });
}

template <class T>
void activation_backward(Act act, const T* g, const T* s, T* gz, T* bias_grad, int64_t rows, int64_t cols) {
  if (cols <= 0) return;
  if (rows <= 0) {
    if (bias_grad) std::fill(bias_grad, bias_grad + cols, T(0));
    return;
  }
  // Columns in chunks of at least 16 (a cache line of float32 per row).
  const int64_t grain_cols = std::max<int64_t>(16, element_grain(act) / rows);
  parallel_for(0, cols, grain_cols, [&](int64_t c0, int64_t c1) {
    if constexpr (std::is_same_v<T, float>) {
      backward_columns_f32(act, g, s, gz, bias_grad, rows, cols, c0, c1);
    } else {
      with_activation(act, [&]<Act A>() { backward_columns<A, T>(g, s, gz, bias_grad, rows, cols, c0, c1); });
    }
  });
}

template void bias_activation<float>(Act, float*, const float*, float*, int64_t, int64_t);
template void bias_activation<double>(Act, double*, const double*, double*, int64_t, int64_t);
template void activation_backward<float>(Act, const float*, const float*, float*, float*, int64_t, int64_t);
template void activation_backward<double>(Act, const double*, const double*, double*, double*, int64_t, int64_t);

}  // namespace graft::kernels
