// Note [Memory-efficient attention]
// scaled_dot_product_attention computes, per batch-and-head b and query row i,
//   s_ij = scale q_i . k_j + mask_ij,   p_ij = softmax_j(s_ij),   out_i = sum_j p_ij v_j.
// The plain path (the formula as graft ops) materialises s and p: B L S values each, and keeps p
// for backward. At GPT-2 sizes (12 heads, T = 1024, float32) that is 48 MiB per layer and sample.
// This kernel never holds more than one tile of s: it walks the keys in tiles of kv_tile rows for
// each tile of q_tile query rows and keeps, per query row, the running maximum m, the running sum
// l of exp(s - m) and the running output acc (the online softmax of Milakov and Gimelshein, as in
// FlashAttention, Dao et al. 2022, and Rabe and Staats 2021). When a tile raises the maximum from
// m to m', what was accumulated is rescaled by exp(m - m'):
//   m' = max(m, max_j s_ij),  l' = l exp(m - m') + sum_j exp(s_ij - m'),
//   acc' = acc exp(m - m') + sum_j exp(s_ij - m') v_j,     finally out_i = acc_i / l_i.
// It saves only out and lse_i = m_i + log(l_i) (one value per query row): O(T d) per head, not
// O(T^2).
//
// Backward (FlashAttention-2, Dao 2023) recomputes each tile's probabilities from lse:
//   p_ij = exp(s_ij - lse_i),  D_i = sum_e dout_ie out_ie  (= sum_j dp_ij p_ij),
//   dv_j += sum_i p_ij dout_i,  dp_ij = dout_i . v_j,  ds_ij = p_ij (dp_ij - D_i),
//   dq_i += scale sum_j ds_ij k_j,  dk_j += scale sum_i ds_ij q_i.
// Each tile product is one single-threaded gemm (runtime::gemm, OpenBLAS). Work is split over
// graft's pool by (batch-and-head, query tile) forward and by batch-and-head backward (the loop
// over key tiles accumulates dq for every query tile, so one batch-and-head is one task); a task's
// arithmetic is the same whichever thread runs it, so the bits do not depend on the thread count
// (tests/ops/test_attention.cpp checks 1, 2 and 3 threads). They do depend on the tile sizes.
//
// Semantics and traps:
//  - Masked scores are -inf and get probability 0. A row with every score -inf (fully masked) gets
//    out = 0 and zero gradients, as PyTorch 2.5's math path (its "safe softmax") does, instead of
//    the 0/0 = nan of a plain softmax. Its lse is stored as +inf, so exp(s - lse) = 0 in backward.
//  - Large logits cannot overflow: every exp has an argument <= 0 (s - m, s - lse).
//  - A nan in q, k, v or the mask propagates to the rows it touches.
//  - Causal is top-left aligned (key j <= query i), PyTorch's is_causal; key tiles wholly above
//    the diagonal are skipped, forward and backward.
//  - Dropout multiplies p_ij by keep_ij / (1 - p) after the row sums (so l is the softmax's
//    normaliser); keep is a hash of (seed, index), regenerated in backward. D_i keeps its form
//    with dropout: sum_j dp_ij p_ij with dp through the dropout equals dout_i . out_i.
#include "attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "graft/core/factory.h"
#include "graft/runtime/parallel.h"
#include "../runtime/blas.h"
#include "vec_f32.h"
#include "vector_clones.h"

namespace graft::kernels::attention {

// The row loops, compiled per vector width (vector_clones.h; a named namespace: target_clones
// needs external linkage).
namespace rows {

// s[c] = exp(s[c] - shift) for c < n (shift finite; -inf scores give 0). float32 uses
// Note [Fast float32 exp], vectorised, and gives exactly 0 below e^-87 (FLT_MIN is e^-87.3): a
// probability under 1e-38 of the row's largest changes no float sum it joins, and computing it goes
// through denormal products, a microcode assist each on x86 (with a causal float mask, half of
// every score tile is -inf: exp took a fifth of the step before). float64 calls libm.
GRAFT_VEC_CLONES void exp_shift_f32(float* s, int64_t n, float shift) {
  GRAFT_VEC_NO_CONTRACT
  for (int64_t c = 0; c < n; ++c) {
    const float x = s[c] - shift;
    const bool tiny = x < -87.0f;  // false for NaN: NaN stays NaN
    s[c] = vec_detail::select(tiny, 0.0f, exp_f32(vec_detail::select(tiny, -87.0f, x)));
  }
}
void exp_shift(float* s, int64_t n, float shift) { exp_shift_f32(s, n, shift); }
void exp_shift(double* s, int64_t n, double shift) {
  for (int64_t c = 0; c < n; ++c) s[c] = std::exp(s[c] - shift);
}

// ds = p * (dp - d), in place in dp.
GRAFT_VEC_CLONES void softmax_grad_f32(const float* __restrict p, float* __restrict dp, int64_t n, float d) {
  GRAFT_VEC_NO_CONTRACT
  for (int64_t c = 0; c < n; ++c) dp[c] = p[c] * (dp[c] - d);
}
void softmax_grad(const float* p, float* dp, int64_t n, float d) { softmax_grad_f32(p, dp, n, d); }
void softmax_grad(const double* p, double* dp, int64_t n, double d) {
  for (int64_t c = 0; c < n; ++c) dp[c] = p[c] * (dp[c] - d);
}

}  // namespace rows

namespace {

using rows::exp_shift;
using rows::softmax_grad;

constexpr const char* kAttentionKernelOp = "scaled_dot_product_attention";

// SplitMix64's finaliser (Steele, Lea and Flood 2014): a bijection of 64-bit integers whose output
// bits pass BigCrush even for consecutive inputs.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Elements are kept when their 53-bit uniform is >= p * 2^53.
uint64_t keep_threshold(double p) { return static_cast<uint64_t>(std::ceil(p * 0x1p53)); }
bool keep_with(uint64_t seed, uint64_t index, uint64_t threshold) {
  return (mix(seed + 0x9E3779B97F4A7C15ull * (index + 1)) >> 11) >= threshold;
}

template <class T>
struct Tiles {
  int64_t q, kv;
  explicit Tiles(const Args<T>& a)
      : q(a.q_tile > 0 ? a.q_tile : kDefaultQTile), kv(a.kv_tile > 0 ? a.kv_tile : kDefaultKvTile) {}
};

// Adds the mask and the causal -inf to a (rows, cols) tile of scores (leading dimension ld) for
// query rows i0.. and keys j0...
template <class T>
void mask_tile(const Args<T>& a, int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols, T* s, int64_t ld) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    T* sr = s + r * ld;
    const int64_t i = i0 + r;
    if (a.mask) {
      const T* mr = a.mask + (b / a.mask_inner) * a.mask_sb_outer + (b % a.mask_inner) * a.mask_sb_inner +
                    i * a.mask_sl + j0 * a.mask_ss;
      for (int64_t c = 0; c < cols; ++c) sr[c] += mr[c * a.mask_ss];
    }
    if (a.causal)
      for (int64_t c = std::max<int64_t>(0, i + 1 - j0); c < cols; ++c) sr[c] = kNegInf;
  }
}

// Multiplies a (rows, cols) tile of probabilities by keep / (1 - p).
template <class T>
void dropout_tile(const Args<T>& a, int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols, T* p, int64_t ld) {
  const uint64_t threshold = keep_threshold(a.dropout_p);
  const T kept = a.dropout_p < 1 ? static_cast<T>(1.0 / (1.0 - a.dropout_p)) : T(0);  // p = 1 keeps nothing
  for (int64_t r = 0; r < rows; ++r) {
    const uint64_t base = static_cast<uint64_t>((b * a.q_len + i0 + r) * a.kv_len + j0);
    for (int64_t c = 0; c < cols; ++c) p[r * ld + c] = keep_with(a.seed, base + c, threshold) ? p[r * ld + c] * kept : T(0);
  }
}

// Runs body(task, workspace) for task < tasks over graft's pool, with one workspace of `per` values
// per chunk of tasks. The chunks only decide which thread runs a task.
template <class T, class Body>
void for_tasks(int64_t tasks, int64_t per, Body&& body) {
  if (tasks == 0) return;
  const int64_t chunks = std::min<int64_t>(get_num_threads(), tasks);
  Tensor ws = make_empty({chunks, per}, std::is_same_v<T, float> ? kFloat32 : kFloat64);
  T* wsp = ws.data_ptr<T>();
  parallel_for(0, chunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c)
      for (int64_t t = tasks * c / chunks; t < tasks * (c + 1) / chunks; ++t) body(t, wsp + c * per);
  });
}

}  // namespace

bool keep(uint64_t seed, uint64_t index, double p) { return keep_with(seed, index, keep_threshold(p)); }

void keep_mask(uint64_t seed, double p, int64_t n, bool* mask) {
  const uint64_t threshold = keep_threshold(p);
  for (int64_t i = 0; i < n; ++i) mask[i] = keep_with(seed, static_cast<uint64_t>(i), threshold);
}

template <class T>
void forward(const Args<T>& a, T* out, T* lse) {
  constexpr T kInf = std::numeric_limits<T>::infinity();
  const Tiles<T> t(a);
  const int64_t L = a.q_len, S = a.kv_len, E = a.head_dim, Ev = a.v_dim;
  const int64_t q_tiles = (L + t.q - 1) / t.q;
  // Workspace: the score tile, the output accumulator, m and l.
  const int64_t per = t.q * t.kv + t.q * Ev + 2 * t.q;
  for_tasks<T>(a.batch * q_tiles, per, [&](int64_t task, T* ws) {
    const int64_t b = task / q_tiles, i0 = (task % q_tiles) * t.q, rows = std::min(t.q, L - i0);
    T *s = ws, *acc = s + t.q * t.kv, *m = acc + t.q * Ev, *l = m + t.q;
    std::fill(acc, acc + rows * Ev, T(0));
    std::fill(m, m + rows, -kInf);
    std::fill(l, l + rows, T(0));
    const T* qb = a.q + (b * L + i0) * E;
    const T* kb = a.k + b * S * E;
    const T* vb = a.v + b * S * Ev;
    const int64_t kv_end = a.causal ? std::min(S, i0 + rows) : S;
    for (int64_t j0 = 0; j0 < kv_end; j0 += t.kv) {
      const int64_t cols = std::min(t.kv, kv_end - j0);
      runtime::gemm<T>(kAttentionKernelOp, false, true, rows, cols, E, a.scale, qb, E, kb + j0 * E, E, T(0), s, t.kv);
      mask_tile(a, b, i0, rows, j0, cols, s, t.kv);
      for (int64_t r = 0; r < rows; ++r) {
        T* sr = s + r * t.kv;
        T mx = m[r];
        for (int64_t c = 0; c < cols; ++c) mx = (sr[c] > mx || sr[c] != sr[c]) ? sr[c] : mx;
        if (mx == -kInf) {  // every score so far is masked: nothing to add
          std::fill(sr, sr + cols, T(0));
          continue;
        }
        const T alpha = m[r] == -kInf ? T(0) : std::exp(m[r] - mx);
        exp_shift(sr, cols, mx);
        T sum = 0;
        for (int64_t c = 0; c < cols; ++c) sum += sr[c];
        l[r] = l[r] * alpha + sum;
        m[r] = mx;
        if (alpha != T(1))
          for (int64_t e = 0; e < Ev; ++e) acc[r * Ev + e] *= alpha;
      }
      if (a.dropout_p > 0) dropout_tile(a, b, i0, rows, j0, cols, s, t.kv);
      runtime::gemm<T>(kAttentionKernelOp, false, false, rows, Ev, cols, T(1), s, t.kv, vb + j0 * Ev, Ev, T(1), acc, Ev);
    }
    for (int64_t r = 0; r < rows; ++r) {
      T* o = out + (b * L + i0 + r) * Ev;
      const bool empty = !(l[r] > T(0)) && l[r] == l[r];  // fully masked (a nan stays nan)
      const T inv = empty ? T(0) : T(1) / l[r];
      for (int64_t e = 0; e < Ev; ++e) o[e] = empty ? T(0) : acc[r * Ev + e] * inv;
      lse[b * L + i0 + r] = empty ? kInf : m[r] + std::log(l[r]);
    }
  });
}

template <class T>
void backward(const Args<T>& a, const T* out, const T* lse, const T* grad_out, T* grad_q, T* grad_k, T* grad_v) {
  const Tiles<T> t(a);
  const int64_t L = a.q_len, S = a.kv_len, E = a.head_dim, Ev = a.v_dim;
  // Workspace: p, p after dropout, dp (each one tile), and D (one value per query row).
  const int64_t tile = t.q * t.kv;
  const int64_t per = 3 * tile + L;
  for_tasks<T>(a.batch, per, [&](int64_t b, T* ws) {
    T *p = ws, *pd = p + tile, *dp = pd + tile, *D = dp + tile;
    const T* qb = a.q + b * L * E;
    const T* kb = a.k + b * S * E;
    const T* vb = a.v + b * S * Ev;
    const T* ob = out + b * L * Ev;
    const T* gob = grad_out + b * L * Ev;
    const T* lseb = lse + b * L;
    T* gqb = grad_q + b * L * E;
    T* gkb = grad_k + b * S * E;
    T* gvb = grad_v + b * S * Ev;
    for (int64_t i = 0; i < L; ++i) {
      T d = 0;
      for (int64_t e = 0; e < Ev; ++e) d += gob[i * Ev + e] * ob[i * Ev + e];
      D[i] = d;
    }
    std::fill(gqb, gqb + L * E, T(0));
    std::fill(gkb, gkb + S * E, T(0));
    std::fill(gvb, gvb + S * Ev, T(0));
    for (int64_t j0 = 0; j0 < S; j0 += t.kv) {
      const int64_t cols = std::min(t.kv, S - j0);
      // Causal: query rows i < j0 see none of these keys.
      for (int64_t i0 = a.causal ? (j0 / t.q) * t.q : 0; i0 < L; i0 += t.q) {
        const int64_t rows = std::min(t.q, L - i0);
        runtime::gemm<T>(kAttentionKernelOp, false, true, rows, cols, E, a.scale, qb + i0 * E, E, kb + j0 * E, E, T(0), p, t.kv);
        mask_tile(a, b, i0, rows, j0, cols, p, t.kv);
        for (int64_t r = 0; r < rows; ++r) exp_shift(p + r * t.kv, cols, lseb[i0 + r]);
        const T* pv = p;  // the probabilities v is multiplied by
        if (a.dropout_p > 0) {
          for (int64_t r = 0; r < rows; ++r) std::copy(p + r * t.kv, p + r * t.kv + cols, pd + r * t.kv);
          dropout_tile(a, b, i0, rows, j0, cols, pd, t.kv);
          pv = pd;
        }
        // dv_j += pv^T dout_i;  dp = dout_i v_j^T (through the dropout);  ds = p (dp - D)
        runtime::gemm<T>(kAttentionKernelOp, true, false, cols, Ev, rows, T(1), pv, t.kv, gob + i0 * Ev, Ev, T(1), gvb + j0 * Ev, Ev);
        runtime::gemm<T>(kAttentionKernelOp, false, true, rows, cols, Ev, T(1), gob + i0 * Ev, Ev, vb + j0 * Ev, Ev, T(0), dp, t.kv);
        if (a.dropout_p > 0) dropout_tile(a, b, i0, rows, j0, cols, dp, t.kv);
        for (int64_t r = 0; r < rows; ++r) softmax_grad(p + r * t.kv, dp + r * t.kv, cols, D[i0 + r]);
        // dq_i += scale ds k_j;  dk_j += scale ds^T q_i
        runtime::gemm<T>(kAttentionKernelOp, false, false, rows, E, cols, a.scale, dp, t.kv, kb + j0 * E, E, T(1), gqb + i0 * E, E);
        runtime::gemm<T>(kAttentionKernelOp, true, false, cols, E, rows, a.scale, dp, t.kv, qb + i0 * E, E, T(1), gkb + j0 * E, E);
      }
    }
  });
}

template void forward<float>(const Args<float>&, float*, float*);
template void forward<double>(const Args<double>&, double*, double*);
template void backward<float>(const Args<float>&, const float*, const float*, const float*, float*, float*, float*);
template void backward<double>(const Args<double>&, const double*, const double*, const double*, double*, double*,
                               double*);

// ---- Tensor-level entries ----

namespace {

// Fills the kernel's mask pointer and strides; `held` keeps a materialised copy alive when the
// broadcast mask's leading dims do not collapse into (outer, inner) strides.
template <class T>
void bind_mask(const Options& o, int64_t L, int64_t S, Args<T>& a, Tensor& held) {
  if (!o.mask.defined()) return;
  Shape full = o.batch;
  full.push_back(L);
  full.push_back(S);
  Tensor m = o.mask.detach().expand(full);
  const int64_t nb = static_cast<int64_t>(o.batch.size());
  // The outer leading dims (all but the last) must collapse into one stride: each one's stride is
  // the next one's times its size (size-1 dims do not count). A broadcast (stride 0) or contiguous
  // mask always does; anything else is copied once.
  auto outer_dims = [&] {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d + 1 < nb; ++d)
      if (m.size(d) > 1) dims.push_back(d);
    return dims;
  };
  std::vector<int64_t> dims = outer_dims();
  for (size_t i = 0; i + 1 < dims.size(); ++i)
    if (m.stride(dims[i]) != m.stride(dims[i + 1]) * m.size(dims[i + 1])) {
      m = m.contiguous();
      break;
    }
  held = m;
  a.mask = static_cast<const T*>(m.data_ptr());
  a.mask_sl = m.stride(-2);
  a.mask_ss = m.stride(-1);
  a.mask_sb_outer = dims.empty() ? 0 : m.stride(dims.back());
  a.mask_inner = nb >= 1 ? std::max<int64_t>(1, m.size(nb - 1)) : 1;
  a.mask_sb_inner = nb >= 1 && m.size(nb - 1) > 1 ? m.stride(nb - 1) : 0;
}

// The kernel's arguments for q (B, L, E), k (B, S, E), v (B, S, Ev); `held_mask` as bind_mask's.
template <class T>
Args<T> kernel_args(const Options& o, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& held_mask) {
  Args<T> a;
  a.batch = q.size(0), a.q_len = q.size(1), a.kv_len = k.size(1), a.head_dim = q.size(2), a.v_dim = v.size(2);
  a.q = q.data_ptr<T>(), a.k = k.data_ptr<T>(), a.v = v.data_ptr<T>();
  bind_mask(o, a.q_len, a.kv_len, a, held_mask);
  a.causal = o.causal;
  a.scale = static_cast<T>(o.scale);
  a.dropout_p = o.dropout_p;
  a.seed = o.seed;
  a.q_tile = o.q_tile, a.kv_tile = o.kv_tile;
  return a;
}

}  // namespace

void forward(const Tensor& q, const Tensor& k, const Tensor& v, const Options& o, Tensor& out, Tensor& lse) {
  Tensor held;
  if (q.dtype() == kFloat32)
    forward(kernel_args<float>(o, q, k, v, held), out.data_ptr<float>(), lse.data_ptr<float>());
  else
    forward(kernel_args<double>(o, q, k, v, held), out.data_ptr<double>(), lse.data_ptr<double>());
}

void backward(const Tensor& q, const Tensor& k, const Tensor& v, const Options& o, const Tensor& out,
              const Tensor& lse, const Tensor& grad_out, Tensor& grad_q, Tensor& grad_k, Tensor& grad_v) {
  Tensor held;
  if (q.dtype() == kFloat32)
    backward(kernel_args<float>(o, q, k, v, held), out.data_ptr<float>(), lse.data_ptr<float>(),
             grad_out.data_ptr<float>(), grad_q.data_ptr<float>(), grad_k.data_ptr<float>(), grad_v.data_ptr<float>());
  else
    backward(kernel_args<double>(o, q, k, v, held), out.data_ptr<double>(), lse.data_ptr<double>(),
             grad_out.data_ptr<double>(), grad_q.data_ptr<double>(), grad_k.data_ptr<double>(),
             grad_v.data_ptr<double>());
}

void keep_mask(uint64_t seed, double p, Tensor& keep) { keep_mask(seed, p, keep.numel(), keep.data_ptr<bool>()); }

}  // namespace graft::kernels::attention
