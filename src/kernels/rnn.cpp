// The fused recurrent layer's loops: src/kernels/rnn.h; the formulas are Note [Fused recurrent
// layers] in src/ops/rnn.cpp.
#include "rnn.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "../runtime/blas.h"
#include "activation_math.h"
#include "vec_f32.h"

namespace graft::kernels::rnn {

namespace {

constexpr const char* kRnnKernelOp = "rnn_layer";

namespace act = kernels::activation;

// The cells' forward: vec_f32.h's fast float32 sigmoid and tanh, activation_math.h's in float64.
float sigm(float x) { return kernels::sigmoid_f32(x); }
double sigm(double x) { return act::sigmoid(x); }
float tanh_(float x) { return kernels::tanh_f32(x); }
double tanh_(double x) { return std::tanh(x); }

// Buffers' pointers (null where undefined).
template <class T>
struct Ptrs {
  const T *h0, *c0, *w_hh;
  T* gates;  // (T, N, G H) after the nonlinearities (GRU: r z n)
  T* hs;     // (T, N, H) states after each step (the op's output rows when there are no lengths)
  T* cs;     // (T, N, H) LSTM cell states
  T* ghn;    // (T, N, H) GRU: W_hn h + b_hn
};

template <class T>
void fused_forward(Cell cell, const Dims& d, const Ptrs<T>& bf, const T* b_hh_gru, const T* gx,
                   const std::vector<int64_t>& lengths, bool reverse) {
  const int64_t N = d.N, H = d.H, GH = d.G * d.H;
  std::vector<T> gh(static_cast<size_t>(N * GH));
  // The GRU's recurrent bias when the layer has none (the vectorised cell adds it either way).
  const std::vector<T> zero_bias(cell == Cell::kGRU && !b_hh_gru ? static_cast<size_t>(GH) : 0, T(0));
  for (int64_t s = 0; s < d.T; ++s) {
    const int64_t t = reverse ? d.T - 1 - s : s, tp = reverse ? t + 1 : t - 1;
    const T* hp = s == 0 ? bf.h0 : bf.hs + tp * N * H;
    const T* cp = cell == Cell::kLSTM ? (s == 0 ? bf.c0 : bf.cs + tp * N * H) : nullptr;
    runtime::gemm<T>(kRnnKernelOp, false, true, N, GH, H, T(1), hp, H, bf.w_hh, H, T(0), gh.data(), GH);
    T* hn = bf.hs + t * N * H;
    T* gt = bf.gates + t * N * GH;
    for (int64_t b = 0; b < N; ++b) {
      const bool active = lengths.empty() || t < lengths[static_cast<size_t>(b)];
      const T* gxb = gx + (t * N + b) * GH;
      const T* ghb = gh.data() + b * GH;
      T* gtb = gt + b * GH;
      T* hb = hn + b * H;
      const T* hpb = hp + b * H;
      if (!active) {
        std::copy(hpb, hpb + H, hb);
        std::fill(gtb, gtb + GH, T(0));
        if (cell == Cell::kLSTM) std::copy(cp + b * H, cp + (b + 1) * H, bf.cs + (t * N + b) * H);
        if (cell == Cell::kGRU) std::fill(bf.ghn + (t * N + b) * H, bf.ghn + (t * N + b + 1) * H, T(0));
        continue;
      }
      switch (cell) {
        case Cell::kRNNTanh:
        case Cell::kRNNReLU:
          for (int64_t j = 0; j < H; ++j) {
            const T pre = gxb[j] + ghb[j];
            hb[j] = cell == Cell::kRNNTanh ? tanh_(pre) : (pre > T(0) ? pre : T(0));
          }
          break;
        case Cell::kLSTM: {
          const T* cpb = cp + b * H;
          T* cb = bf.cs + (t * N + b) * H;
          if constexpr (std::is_same_v<T, float>) {  // the same formulas, vectorised
            kernels::lstm_cell_f32(gxb, ghb, cpb, gtb, cb, hb, H);
            break;
          }
          for (int64_t j = 0; j < H; ++j) {
            const T i = sigm(gxb[j] + ghb[j]), f = sigm(gxb[H + j] + ghb[H + j]);
            const T g = tanh_(gxb[2 * H + j] + ghb[2 * H + j]), o = sigm(gxb[3 * H + j] + ghb[3 * H + j]);
            gtb[j] = i, gtb[H + j] = f, gtb[2 * H + j] = g, gtb[3 * H + j] = o;
            cb[j] = f * cpb[j] + i * g;
            hb[j] = o * tanh_(cb[j]);
          }
          break;
        }
        case Cell::kGRU: {
          T* ghnb = bf.ghn + (t * N + b) * H;
          if constexpr (std::is_same_v<T, float>) {  // the same formulas, vectorised
            kernels::gru_cell_f32(gxb, ghb, b_hh_gru ? b_hh_gru : zero_bias.data(), hpb, gtb, ghnb, hb, H);
            break;
          }
          for (int64_t j = 0; j < H; ++j) {
            const T bh = b_hh_gru ? b_hh_gru[2 * H + j] : T(0);
            const T r = sigm(gxb[j] + ghb[j] + (b_hh_gru ? b_hh_gru[j] : T(0)));
            const T z = sigm(gxb[H + j] + ghb[H + j] + (b_hh_gru ? b_hh_gru[H + j] : T(0)));
            ghnb[j] = ghb[2 * H + j] + bh;
            const T n = tanh_(gxb[2 * H + j] + r * ghnb[j]);
            gtb[j] = r, gtb[H + j] = z, gtb[2 * H + j] = n;
            hb[j] = (T(1) - z) * n + z * hpb[j];
          }
          break;
        }
      }
    }
  }
}

// Gradients of the fused forward. gY (T + 2, N, H); writes dG_x (T N, G H), dG_h (T N, G H; the
// same buffer as dG_x but for the GRU), dh0, dc0.
template <class T>
void fused_backward_steps(Cell cell, const Dims& d, const Ptrs<T>& bf, const T* gY,
                          const std::vector<int64_t>& lengths, bool reverse, T* dgx, T* dgh, T* dh0, T* dc0) {
  const int64_t N = d.N, H = d.H, GH = d.G * d.H;
  std::vector<T> dh(gY + d.T * N * H, gY + (d.T + 1) * N * H), dc(gY + (d.T + 1) * N * H, gY + (d.T + 2) * N * H);
  std::vector<T> dh_prev(static_cast<size_t>(N * H));
  for (int64_t s = d.T - 1; s >= 0; --s) {
    const int64_t t = reverse ? d.T - 1 - s : s, tp = reverse ? t + 1 : t - 1;
    const T* hp = s == 0 ? bf.h0 : bf.hs + tp * N * H;
    const T* cp = cell == Cell::kLSTM ? (s == 0 ? bf.c0 : bf.cs + tp * N * H) : nullptr;
    const T* gt = bf.gates + t * N * GH;
    T* dgxt = dgx + t * N * GH;
    T* dght = dgh + t * N * GH;
    for (int64_t b = 0; b < N; ++b) {
      const bool active = lengths.empty() || t < lengths[static_cast<size_t>(b)];
      T* dgxb = dgxt + b * GH;
      T* dghb = dght + b * GH;
      T* dhb = dh.data() + b * H;
      T* dhpb = dh_prev.data() + b * H;
      if (!active) {  // the state passed through: so do its gradients
        std::fill(dgxb, dgxb + GH, T(0));
        if (dgh != dgx) std::fill(dghb, dghb + GH, T(0));
        std::copy(dhb, dhb + H, dhpb);
        continue;
      }
      const T* gout = gY + (t * N + b) * H;
      const T* gtb = gt + b * GH;
      const T* hb = bf.hs + (t * N + b) * H;
      switch (cell) {
        case Cell::kRNNTanh:
        case Cell::kRNNReLU:
          for (int64_t j = 0; j < H; ++j) {
            const T g = dhb[j] + gout[j];
            dgxb[j] = cell == Cell::kRNNTanh ? g * act::tanh_grad(hb[j]) : act::relu_grad_times(g, hb[j]);
            dhpb[j] = 0;
          }
          break;
        case Cell::kLSTM: {
          const T* cb = bf.cs + (t * N + b) * H;
          const T* cpb = cp + b * H;
          T* dcb = dc.data() + b * H;
          if constexpr (std::is_same_v<T, float>) {  // the same formulas, vectorised
            kernels::lstm_cell_backward_f32(gtb, cb, cpb, dhb, gout, dcb, dgxb, dhpb, H);
            break;
          }
          for (int64_t j = 0; j < H; ++j) {
            const T i = gtb[j], f = gtb[H + j], g = gtb[2 * H + j], o = gtb[3 * H + j];
            const T dht = dhb[j] + gout[j];
            const T tc = tanh_(cb[j]);
            const T dct = dcb[j] + dht * o * act::tanh_grad(tc);
            dgxb[j] = act::sigmoid_grad_times(dct * g, i);
            dgxb[H + j] = act::sigmoid_grad_times(dct * cpb[j], f);
            dgxb[2 * H + j] = dct * i * act::tanh_grad(g);
            dgxb[3 * H + j] = act::sigmoid_grad_times(dht * tc, o);
            dcb[j] = dct * f;  // dc_prev
            dhpb[j] = 0;
          }
          break;
        }
        case Cell::kGRU: {
          const T* ghnb = bf.ghn + (t * N + b) * H;
          const T* hpb = hp + b * H;
          if constexpr (std::is_same_v<T, float>) {  // the same formulas, vectorised
            kernels::gru_cell_backward_f32(gtb, ghnb, hpb, dhb, gout, dgxb, dghb, dhpb, H);
            break;
          }
          for (int64_t j = 0; j < H; ++j) {
            const T r = gtb[j], z = gtb[H + j], n = gtb[2 * H + j];
            const T dht = dhb[j] + gout[j];
            const T dn_pre = dht * (T(1) - z) * act::tanh_grad(n);
            const T dz_pre = act::sigmoid_grad_times(dht * (hpb[j] - n), z);
            const T dr_pre = act::sigmoid_grad_times(dn_pre * ghnb[j], r);
            dgxb[j] = dr_pre, dgxb[H + j] = dz_pre, dgxb[2 * H + j] = dn_pre;
            dghb[j] = dr_pre, dghb[H + j] = dz_pre, dghb[2 * H + j] = dn_pre * r;
            dhpb[j] = dht * z;
          }
          break;
        }
      }
    }
    // dh_prev += dG_h W_hh for the active rows (inactive rows have dG_h = 0).
    runtime::gemm<T>(kRnnKernelOp, false, false, N, H, GH, T(1), dght, GH, bf.w_hh, H, T(1), dh_prev.data(), H);
    dh.swap(dh_prev);
  }
  std::copy(dh.begin(), dh.end(), dh0);
  if (dc0) std::copy(dc.begin(), dc.end(), dc0);
}

template <class T>
T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

template <class T>
Ptrs<T> pointers(const Buffers& bf) {
  return {bf.h0.data_ptr<T>(), ptr_or_null<T>(bf.c0), bf.w_hh.data_ptr<T>(), bf.gates.data_ptr<T>(),
          bf.hs.data_ptr<T>(), ptr_or_null<T>(bf.cs), ptr_or_null<T>(bf.ghn)};
}

}  // namespace

void forward(Cell cell, const Dims& d, const Buffers& bf, const Tensor& gx, const Tensor& b_hh_gru,
             const std::vector<int64_t>& lengths, bool reverse) {
  auto run = [&]<class T>() {
    fused_forward<T>(cell, d, pointers<T>(bf), ptr_or_null<T>(b_hh_gru), gx.data_ptr<T>(), lengths, reverse);
  };
  if (gx.dtype() == kFloat32) run.operator()<float>();
  else run.operator()<double>();
}

void backward(Cell cell, const Dims& d, const Buffers& bf, const Tensor& gY, const std::vector<int64_t>& lengths,
              bool reverse, Tensor& dgx, Tensor& dgh, Tensor& dh0, Tensor& dc0) {
  auto run = [&]<class T>() {
    fused_backward_steps<T>(cell, d, pointers<T>(bf), gY.data_ptr<T>(), lengths, reverse, dgx.data_ptr<T>(),
                            dgh.data_ptr<T>(), dh0.data_ptr<T>(), ptr_or_null<T>(dc0));
  };
  if (dgx.dtype() == kFloat32) run.operator()<float>();
  else run.operator()<double>();
}

void length_mask(Tensor& mask, int64_t t0, int64_t steps, const std::vector<int64_t>& lengths) {
  bool* m = mask.data_ptr<bool>();
  const auto N = static_cast<int64_t>(lengths.size());
  for (int64_t s = 0; s < steps; ++s)
    for (int64_t b = 0; b < N; ++b) m[s * N + b] = t0 + s < lengths[static_cast<size_t>(b)];
}

}  // namespace graft::kernels::rnn
