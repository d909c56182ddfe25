// The array forms of the float32 fast paths (Note [Fast float32 kernels] in vec_f32.h): each loop is
// a function compiled once per vector width (GCC target_clones), called on chunks by parallel_for.
#include "vec_f32.h"

#include <algorithm>
#include <vector>

#include "graft/runtime/parallel.h"

#include "vector_clones.h"

namespace graft::kernels {

namespace vec_detail {

// Transcendental element costs a few ns at SSE2 width: smaller chunks than plain arithmetic.
constexpr int64_t kTranscendentalGrain = kElementwiseGrain / 4;

enum class Unary { Exp, Sigmoid, Gelu, GeluTanh };

GRAFT_VEC_CLONES
void unary_block(Unary op, const float* __restrict in, float* __restrict out, int64_t n) {
  GRAFT_VEC_NO_CONTRACT
  switch (op) {
    case Unary::Exp:
      for (int64_t i = 0; i < n; ++i) out[i] = exp_f32(in[i]);
      break;
    case Unary::Sigmoid:
      for (int64_t i = 0; i < n; ++i) out[i] = sigmoid_f32(in[i]);
      break;
    case Unary::Gelu:
      for (int64_t i = 0; i < n; ++i) out[i] = gelu_f32(in[i]);
      break;
    case Unary::GeluTanh:
      for (int64_t i = 0; i < n; ++i) out[i] = gelu_tanh_f32(in[i]);
      break;
  }
}

// tanh on one thread, as before the fold into this file (the parallel split is the other unary ops').
GRAFT_VEC_CLONES
void tanh_block(const float* __restrict in, float* __restrict out, int64_t n) {
  GRAFT_VEC_NO_CONTRACT
  for (int64_t i = 0; i < n; ++i) out[i] = tanh_f32(in[i]);
}

GRAFT_VEC_CLONES
void lstm_cell_block(const float* __restrict gx, const float* __restrict gh, const float* __restrict c_prev,
                     float* __restrict gates, float* __restrict c, float* __restrict h, int64_t H) {
  GRAFT_VEC_NO_CONTRACT
  for (int64_t j = 0; j < H; ++j) {
    const float i = sigmoid_f32(gx[j] + gh[j]), f = sigmoid_f32(gx[H + j] + gh[H + j]);
    const float g = tanh_f32(gx[2 * H + j] + gh[2 * H + j]), o = sigmoid_f32(gx[3 * H + j] + gh[3 * H + j]);
    gates[j] = i, gates[H + j] = f, gates[2 * H + j] = g, gates[3 * H + j] = o;
    const float cj = f * c_prev[j] + i * g;
    c[j] = cj;
    h[j] = o * tanh_f32(cj);
  }
}

GRAFT_VEC_CLONES
void lstm_cell_backward_block(const float* __restrict gates, const float* __restrict c, const float* __restrict c_prev,
                              const float* __restrict dh_next, const float* __restrict gout, float* __restrict dc,
                              float* __restrict dgates, float* __restrict dh_prev, int64_t H) {
  GRAFT_VEC_NO_CONTRACT
  for (int64_t j = 0; j < H; ++j) {
    const float i = gates[j], f = gates[H + j], g = gates[2 * H + j], o = gates[3 * H + j];
    const float dht = dh_next[j] + gout[j];
    const float tc = tanh_f32(c[j]);
    const float dct = dc[j] + dht * o * activation::tanh_grad(tc);
    dgates[j] = activation::sigmoid_grad_times(dct * g, i);
    dgates[H + j] = activation::sigmoid_grad_times(dct * c_prev[j], f);
    dgates[2 * H + j] = dct * i * activation::tanh_grad(g);
    dgates[3 * H + j] = activation::sigmoid_grad_times(dht * tc, o);
    dc[j] = dct * f;
    dh_prev[j] = 0.0f;
  }
}

GRAFT_VEC_CLONES
void gru_cell_block(const float* __restrict gx, const float* __restrict gh, const float* __restrict bh,
                    const float* __restrict h_prev, float* __restrict gates, float* __restrict ghn_out,
                    float* __restrict h, int64_t H) {
  GRAFT_VEC_NO_CONTRACT
  for (int64_t j = 0; j < H; ++j) {
    const float r = sigmoid_f32(gx[j] + gh[j] + bh[j]);
    const float z = sigmoid_f32(gx[H + j] + gh[H + j] + bh[H + j]);
    const float ghn = gh[2 * H + j] + bh[2 * H + j];
    const float n = tanh_f32(gx[2 * H + j] + r * ghn);
    ghn_out[j] = ghn;
    gates[j] = r, gates[H + j] = z, gates[2 * H + j] = n;
    h[j] = (1.0f - z) * n + z * h_prev[j];
  }
}

GRAFT_VEC_CLONES
void gru_cell_backward_block(const float* __restrict gates, const float* __restrict ghn, const float* __restrict h_prev,
                             const float* __restrict dh_next, const float* __restrict gout, float* __restrict dgx,
                             float* __restrict dgh, float* __restrict dh_prev, int64_t H) {
  GRAFT_VEC_NO_CONTRACT
  for (int64_t j = 0; j < H; ++j) {
    const float r = gates[j], z = gates[H + j], n = gates[2 * H + j];
    const float dht = dh_next[j] + gout[j];
    const float dn_pre = dht * (1.0f - z) * activation::tanh_grad(n);
    const float dz_pre = activation::sigmoid_grad_times(dht * (h_prev[j] - n), z);
    const float dr_pre = activation::sigmoid_grad_times(dn_pre * ghn[j], r);
    dgx[j] = dr_pre, dgx[H + j] = dz_pre, dgx[2 * H + j] = dn_pre;
    dgh[j] = dr_pre, dgh[H + j] = dz_pre, dgh[2 * H + j] = dn_pre * r;
    dh_prev[j] = dht * z;
  }
}

void unary(Unary op, const float* in, float* out, int64_t n) {
  parallel_for(0, n, kTranscendentalGrain, [&](int64_t b, int64_t e) { unary_block(op, in + b, out + b, e - b); });
}

enum class Backward { Sigmoid, Gelu, GeluTanh, Relu };

GRAFT_VEC_CLONES
void relu_block(const float* __restrict in, float* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = select(in[i] < 0.0f, 0.0f, in[i]);
}

GRAFT_VEC_CLONES
void backward_block(Backward op, const float* __restrict g, const float* __restrict v, float* __restrict out,
                    int64_t n) {
  GRAFT_VEC_NO_CONTRACT
  switch (op) {
    case Backward::Sigmoid:  // v = y
      for (int64_t i = 0; i < n; ++i) out[i] = g[i] * activation::sigmoid_grad(v[i]);
      break;
    case Backward::Gelu:  // v = x
      for (int64_t i = 0; i < n; ++i) out[i] = g[i] * gelu_grad_f32(v[i]);
      break;
    case Backward::GeluTanh:
      for (int64_t i = 0; i < n; ++i) out[i] = g[i] * gelu_tanh_grad_f32(v[i]);
      break;
    case Backward::Relu:  // v = y
      for (int64_t i = 0; i < n; ++i) out[i] = select(v[i] > 0.0f, g[i], 0.0f);
      break;
  }
}

void backward(Backward op, const float* g, const float* v, float* out, int64_t n, int64_t grain) {
  parallel_for(0, n, grain, [&](int64_t b, int64_t e) { backward_block(op, g + b, v + b, out + b, e - b); });
}

GRAFT_VEC_CLONES
void binary_block(BinaryOp op, const float* __restrict a, const float* __restrict b, float alpha,
                  float* __restrict out, int64_t n) {
  GRAFT_VEC_NO_CONTRACT
  switch (op) {
    case BinaryOp::Add:
      if (alpha == 1.0f) {
        for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];  // 1 * b == b exactly
      } else {
        for (int64_t i = 0; i < n; ++i) out[i] = a[i] + alpha * b[i];
      }
      break;
    case BinaryOp::Sub:
      if (alpha == 1.0f) {
        for (int64_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
      } else {
        for (int64_t i = 0; i < n; ++i) out[i] = a[i] - alpha * b[i];
      }
      break;
    case BinaryOp::Mul:
      for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
      break;
    case BinaryOp::Div:
      for (int64_t i = 0; i < n; ++i) out[i] = a[i] / b[i];
      break;
  }
}

GRAFT_VEC_CLONES
void scalar_block(BinaryOp op, const float* __restrict a, float s, float* __restrict out, int64_t n) {
  GRAFT_VEC_NO_CONTRACT
  switch (op) {
    case BinaryOp::Add:
      for (int64_t i = 0; i < n; ++i) out[i] = a[i] + s;
      break;
    case BinaryOp::Sub:
      for (int64_t i = 0; i < n; ++i) out[i] = a[i] - s;
      break;
    case BinaryOp::Mul:
      for (int64_t i = 0; i < n; ++i) out[i] = a[i] * s;
      break;
    case BinaryOp::Div:
      for (int64_t i = 0; i < n; ++i) out[i] = a[i] / s;
      break;
  }
}

// 64 lanes, then pairwise (Note [Fast float32 sum]); n <= kSumBlock.
constexpr int kSumLanes = 64;

GRAFT_VEC_CLONES
float sum_block(const float* __restrict x, int64_t n) {
  float acc[kSumLanes] = {};
  int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes)
    for (int j = 0; j < kSumLanes; ++j) acc[j] += x[i + j];
  for (int j = 0; i + j < n; ++j) acc[j] += x[i + j];
  for (int w = kSumLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

int64_t num_sum_blocks(int64_t n) { return (n + kSumBlock - 1) / kSumBlock; }

// The blocks in order, combined in double: what sum_f32 computes, on one thread.
float sum_serial(const float* x, int64_t n) {
  if (n <= kSumBlock) return sum_block(x, n);
  double s = 0;
  for (int64_t b = 0; b < n; b += kSumBlock) s += static_cast<double>(sum_block(x + b, std::min(kSumBlock, n - b)));
  return static_cast<float>(s);
}

// One row of softmax / log_softmax (Note [Fast float32 softmax]): four flat passes, each a loop
// the compiler vectorises on its own (a first version fused the exp and the sum into one loop over
// 16 lane accumulators; GCC vectorised it poorly and it ran at a third of exp's speed).
GRAFT_VEC_CLONES
float row_max(const float* __restrict x, int64_t n) {
  // A NaN may or may not win here (the vector max's NaN rule is unspecified); either way the row
  // comes out all NaN, through x - max or through the sum, as PyTorch's does.
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

GRAFT_VEC_CLONES
void exp_shifted(const float* __restrict x, float* __restrict y, int64_t n, float m) {
  GRAFT_VEC_NO_CONTRACT
  for (int64_t i = 0; i < n; ++i) y[i] = exp_f32(x[i] - m);
}

GRAFT_VEC_CLONES
void scale_row(float* __restrict y, int64_t n, float inv) {
  GRAFT_VEC_NO_CONTRACT
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

GRAFT_VEC_CLONES
void log_softmax_from(const float* __restrict x, float* __restrict y, int64_t n, float m, float ls) {
  GRAFT_VEC_NO_CONTRACT
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - ls;
}

void softmax_row(const float* x, float* y, int64_t n, bool log) {
  const float m = row_max(x, n);
  exp_shifted(x, y, n, m);  // log_softmax too: y holds e^(x - max) until the last pass
  const float sum = sum_serial(y, n);
  if (log) log_softmax_from(x, y, n, m, std::log(sum));
  else scale_row(y, n, 1.0f / sum);
}

// Rows per chunk so that a chunk holds about `elems` elements.
int64_t row_grain(int64_t cols, int64_t elems) { return std::max<int64_t>(1, elems / std::max<int64_t>(cols, 1)); }

}  // namespace vec_detail

using namespace vec_detail;

void exp_f32(const float* in, float* out, int64_t n) { unary(Unary::Exp, in, out, n); }
void sigmoid_f32(const float* in, float* out, int64_t n) { unary(Unary::Sigmoid, in, out, n); }
void tanh_f32(const float* in, float* out, int64_t n) { tanh_block(in, out, n); }
void lstm_cell_f32(const float* gx, const float* gh, const float* c_prev, float* gates, float* c, float* h, int64_t H) {
  lstm_cell_block(gx, gh, c_prev, gates, c, h, H);
}
void gru_cell_f32(const float* gx, const float* gh, const float* bh, const float* h_prev, float* gates, float* ghn_out,
                  float* h, int64_t H) {
  gru_cell_block(gx, gh, bh, h_prev, gates, ghn_out, h, H);
}
void gru_cell_backward_f32(const float* gates, const float* ghn, const float* h_prev, const float* dh_next,
                           const float* gout, float* dgx, float* dgh, float* dh_prev, int64_t H) {
  gru_cell_backward_block(gates, ghn, h_prev, dh_next, gout, dgx, dgh, dh_prev, H);
}
void lstm_cell_backward_f32(const float* gates, const float* c, const float* c_prev, const float* dh_next,
                            const float* gout, float* dc, float* dgates, float* dh_prev, int64_t H) {
  lstm_cell_backward_block(gates, c, c_prev, dh_next, gout, dc, dgates, dh_prev, H);
}
void gelu_f32(const float* in, float* out, int64_t n) { unary(Unary::Gelu, in, out, n); }
void gelu_tanh_f32(const float* in, float* out, int64_t n) { unary(Unary::GeluTanh, in, out, n); }

void relu_f32(const float* in, float* out, int64_t n) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t b, int64_t e) { relu_block(in + b, out + b, e - b); });
}
void relu_backward_f32(const float* g, const float* y, float* out, int64_t n) {
  backward(Backward::Relu, g, y, out, n, kElementwiseGrain);
}
void sigmoid_backward_f32(const float* g, const float* y, float* out, int64_t n) {
  backward(Backward::Sigmoid, g, y, out, n, kElementwiseGrain);
}
void gelu_backward_f32(const float* g, const float* x, float* out, int64_t n, bool tanh_form) {
  backward(tanh_form ? Backward::GeluTanh : Backward::Gelu, g, x, out, n, kTranscendentalGrain);
}

void binary_f32(BinaryOp op, const float* a, const float* b, float alpha, float* out, int64_t n) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    binary_block(op, a + lo, b + lo, alpha, out + lo, hi - lo);
  });
}

void binary_scalar_f32(BinaryOp op, const float* a, float s, float* out, int64_t n) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) { scalar_block(op, a + lo, s, out + lo, hi - lo); });
}

void binary_row_f32(BinaryOp op, const float* a, const float* b, float alpha, float* out, int64_t rows, int64_t cols) {
  parallel_for(0, rows, row_grain(cols, kElementwiseGrain), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) binary_block(op, a + r * cols, b, alpha, out + r * cols, cols);
  });
}

float sum_f32(const float* x, int64_t n) {
  const int64_t nb = num_sum_blocks(n);
  if (nb <= 2 * (kElementwiseGrain / kSumBlock)) return sum_serial(x, n);  // one thread would run it anyway
  std::vector<float> partial(static_cast<size_t>(nb));
  parallel_for(0, nb, kElementwiseGrain / kSumBlock, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b)
      partial[static_cast<size_t>(b)] = sum_block(x + b * kSumBlock, std::min(kSumBlock, n - b * kSumBlock));
  });
  double s = 0;
  for (float p : partial) s += static_cast<double>(p);  // block order, as sum_serial
  return static_cast<float>(s);
}

void sum_rows_f32(const float* x, float* out, int64_t rows, int64_t cols) {
  parallel_for(0, rows, row_grain(cols, kElementwiseGrain), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) out[r] = sum_serial(x + r * cols, cols);
  });
}

void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t cols, bool log) {
  parallel_for(0, rows, row_grain(cols, kTranscendentalGrain), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) softmax_row(x + r * cols, y + r * cols, cols, log);
  });
}

}  // namespace graft::kernels
