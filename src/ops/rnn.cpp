// rnn_layer: one direction of one recurrent layer over a sequence (graft/ops/rnn.h).
//
// Note [Fused recurrent layers]
// The fused path (float32, float64) does per layer:
//   1. gx = x W_ih^T + b (T N rows at once: one large matrix product instead of T small ones;
//      b = b_ih + b_hh for RNN and LSTM, b_ih for the GRU, whose b_hn sits inside r (...));
//   2. per step, gh = h W_hh^T (+ b_hh for the GRU) into one buffer, then the gates and the new
//      state in one pass over (N, G H);
//   3. saves only what backward needs: the inputs, the post-nonlinearity gates (T, N, G H), the
//      states, the LSTM's cell states, the GRU's W_hn h + b_hn (for an LSTM of T 32, N 8, H 64:
//      490 KiB, against 544 KiB for the same formula as graft ops; tests/ops/records_rnn.cpp).
//      What it gains is time: one large product for the inputs, no op dispatch per gate.
// Backward through time walks the steps in reverse: per step the gate gradients dG (N, G H) from
// dh, dc and the saved gates, then dh_prev = dG_h W_hh (one product); after the loop,
//   dW_ih = dG_x^T x,  dx = dG_x W_ih,  dW_hh = dG_h^T h_prev,  db = column sums of dG
// as three large products over all T N rows. Gate derivatives (src/kernels/activation_math.h's
// sigmoid_grad_times, tanh_grad, relu_grad_times): sigmoid' = s (1 - s),
// tanh' = 1 - t^2, relu' = [h > 0]; LSTM: dc_t = dc_{t+1} f_{t+1} + dh_t o (1 - tanh(c_t)^2);
// GRU: dh_prev = dh z + dG_h W_hh with dG_h's n part = dn_pre r (dn_pre = dh (1 - z)(1 - n^2)).
// In float32 the LSTM's and GRU's per-row gate passes, forward and backward, are the array kernels
// lstm_cell_f32 / gru_cell_f32 and their _backward_f32 (src/kernels/vec_f32.cpp), the same formulas
// vectorised per vector width with the scalar bits (they had been a fifth of an LSTM step).
// Variable lengths: a sequence's steps past its length are inactive: its state is copied through,
// its output is 0 and its gate gradients are 0, so its gradients flow past them unchanged.
// Outputs: the node has one output Y (T + 2, N, H) = [outputs; h_n; c_n] (c_n row zero but for the
// LSTM) and rnn_layer returns views of it, so that one node serves the three results.
// The fused backward is once differentiable; the composite path (graft ops, step by step) is the
// reference it is tested against, and under create_graph the node differentiates it (Note [The
// create_graph policy] in src/autograd/composite_backward.h).
#include <cmath>
#include <string>
#include <type_traits>

#include "../autograd/composite_backward.h"
#include "../kernels/activation_math.h"
#include "../kernels/vec_f32.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "graft/ops/rnn.h"
#include "ops_common.h"
#include "runtime/blas.h"

namespace graft {

using autograd::Node;
using autograd::set_history;

namespace {

constexpr const char* kOp = "rnn_layer";
thread_local RNNBackend t_rnn_backend = RNNBackend::kFused;

int64_t gate_count(RNNCellType c) { return c == RNNCellType::kLSTM ? 4 : c == RNNCellType::kGRU ? 3 : 1; }
const char* cell_name(RNNCellType c) {
  switch (c) {
    case RNNCellType::kRNNTanh: return "RNN (tanh)";
    case RNNCellType::kRNNReLU: return "RNN (relu)";
    case RNNCellType::kLSTM: return "LSTM";
    case RNNCellType::kGRU: return "GRU";
  }
  return "?";
}

namespace act = kernels::activation;

// The cells' forward: vec_f32.h's fast float32 sigmoid and tanh, activation_math.h's in float64.
float sigm(float x) { return kernels::sigmoid_f32(x); }
double sigm(double x) { return act::sigmoid(x); }
float tanh_(float x) { return kernels::tanh_f32(x); }
double tanh_(double x) { return std::tanh(x); }

struct Dims {
  int64_t T = 0, N = 0, I = 0, H = 0, G = 1;
};

void check_shape(const Tensor& t, IntArrayRef want, const char* what, const char* hint) {
  GRAFT_CHECK(t.defined() && t.sizes().equals(want), kOp, std::string(what) + " of shape " + shape_str(want),
              t.defined() ? std::string(what) + " of shape " + shape_str(t.sizes()) : std::string("no ") + what, hint);
}

Dims check(RNNCellType cell, const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh,
           const Tensor& b_ih, const Tensor& b_hh, const std::vector<int64_t>& lengths) {
  GRAFT_CHECK(x.defined() && x.dim() == 3, kOp, "an input (T, N, I) of 3 dims",
              x.defined() ? "an input of shape " + shape_str(x.sizes()) : "an undefined input",
              "recurrent layers take (sequence, batch, features); unsqueeze(1) a single sequence");
  GRAFT_CHECK(x.is_floating_point(), kOp, "a floating-point input", std::string("a ") + dtype_name(x.dtype()) + " input",
              "convert it: .to(graft::kFloat32)");
  Dims d;
  d.T = x.size(0), d.N = x.size(1), d.I = x.size(2), d.G = gate_count(cell);
  GRAFT_CHECK(w_hh.defined() && w_hh.dim() == 2, kOp, "weight_hh of 2 dims (G H, H)",
              w_hh.defined() ? shape_str(w_hh.sizes()) : "none", "");
  d.H = w_hh.size(1);
  const std::string gates = std::to_string(d.G) + " H for the " + cell_name(cell);
  check_shape(w_ih, {d.G * d.H, d.I}, "weight_ih", ("weight_ih is (" + gates + ", input features)").c_str());
  check_shape(w_hh, {d.G * d.H, d.H}, "weight_hh", ("weight_hh is (" + gates + ", H)").c_str());
  GRAFT_CHECK(b_ih.defined() == b_hh.defined(), kOp, "both biases or neither", "one bias", "");
  if (b_ih.defined()) {
    check_shape(b_ih, {d.G * d.H}, "bias_ih", "");
    check_shape(b_hh, {d.G * d.H}, "bias_hh", "");
  }
  check_shape(h0, {d.N, d.H}, "h0", "the initial hidden state is (batch, hidden)");
  if (cell == RNNCellType::kLSTM) check_shape(c0, {d.N, d.H}, "c0", "the LSTM's initial cell state is (batch, hidden)");
  for (const Tensor* t : {&h0, &c0, &w_ih, &w_hh, &b_ih, &b_hh})
    if (t->defined())
      GRAFT_CHECK(t->dtype() == x.dtype(), kOp, std::string("every tensor of the input's dtype (") + dtype_name(x.dtype()) + ")",
                  std::string("a ") + dtype_name(t->dtype()) + " tensor", "convert the parameters with module->to(dtype)");
  GRAFT_CHECK(lengths.empty() || static_cast<int64_t>(lengths.size()) == d.N, kOp,
              "one length per batch element (" + std::to_string(d.N) + ")", std::to_string(lengths.size()) + " lengths", "");
  for (int64_t len : lengths)
    GRAFT_CHECK(len >= 0 && len <= d.T, kOp, "lengths in [0, " + std::to_string(d.T) + "]", "length " + std::to_string(len), "");
  return d;
}

// ---- the composite formula, as graft ops ----

RNNLayerResult composite(RNNCellType cell, const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                         const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, const std::vector<int64_t>& lengths,
                         bool reverse, const Dims& d) {
  Tensor h = h0, c = c0;
  std::vector<Tensor> outputs(static_cast<size_t>(d.T));
  for (int64_t s = 0; s < d.T; ++s) {
    const int64_t t = reverse ? d.T - 1 - s : s;
    const Tensor gi = linear(x.select(0, t), w_ih, b_ih), gh = linear(h, w_hh, b_hh);
    Tensor hn, cn;
    switch (cell) {
      case RNNCellType::kRNNTanh: hn = tanh(gi + gh); break;
      case RNNCellType::kRNNReLU: hn = relu(gi + gh); break;
      case RNNCellType::kLSTM: {
        const auto g = (gi + gh).chunk(4, 1);
        cn = sigmoid(g[1]) * c + sigmoid(g[0]) * tanh(g[2]);
        hn = sigmoid(g[3]) * tanh(cn);
        break;
      }
      case RNNCellType::kGRU: {
        const auto a = gi.chunk(3, 1), b = gh.chunk(3, 1);
        const Tensor r = sigmoid(a[0] + b[0]), z = sigmoid(a[1] + b[1]);
        const Tensor n = tanh(a[2] + r * b[2]);
        hn = (1 - z) * n + z * h;
        break;
      }
    }
    if (lengths.empty()) {
      h = hn, c = cn;
      outputs[static_cast<size_t>(t)] = hn;
    } else {
      Tensor m = make_empty({d.N, 1}, kBool);  // the sequences still running at t
      if (!m.is_meta())  // Note [Meta device]
        for (int64_t b = 0; b < d.N; ++b) m.data_ptr<bool>()[b] = t < lengths[static_cast<size_t>(b)];
      h = where(m, hn, h);
      if (cn.defined()) c = where(m, cn, c);
      outputs[static_cast<size_t>(t)] = hn.masked_fill(m.logical_not(), 0.0);
    }
  }
  Tensor output = d.T > 0 ? stack(outputs, 0) : zeros({0, d.N, d.H}, x.dtype());
  return {output, h, cell == RNNCellType::kLSTM ? c : Tensor()};
}

// ---- the fused path ----

template <class T>
struct Buffers {
  const T *x, *h0, *c0, *w_ih, *w_hh;
  T* Y;      // (T + 2, N, H): outputs, h_n, c_n
  T* gates;  // (T, N, G H) after the nonlinearities (GRU: r z n)
  T* hs;     // (T, N, H) states after each step (Y's rows when there are no lengths)
  T* cs;     // (T, N, H) LSTM cell states
  T* ghn;    // (T, N, H) GRU: W_hn h + b_hn
};

template <class T>
void fused_forward(RNNCellType cell, const Dims& d, const Buffers<T>& bf, const T* b_hh_gru, const T* gx,
                   const std::vector<int64_t>& lengths, bool reverse) {
  const int64_t N = d.N, H = d.H, GH = d.G * d.H;
  std::vector<T> gh(static_cast<size_t>(N * GH));
  // The GRU's recurrent bias when the layer has none (the vectorised cell adds it either way).
  const std::vector<T> zero_bias(cell == RNNCellType::kGRU && !b_hh_gru ? static_cast<size_t>(GH) : 0, T(0));
  for (int64_t s = 0; s < d.T; ++s) {
    const int64_t t = reverse ? d.T - 1 - s : s, tp = reverse ? t + 1 : t - 1;
    const T* hp = s == 0 ? bf.h0 : bf.hs + tp * N * H;
    const T* cp = cell == RNNCellType::kLSTM ? (s == 0 ? bf.c0 : bf.cs + tp * N * H) : nullptr;
    runtime::gemm<T>(kOp, false, true, N, GH, H, T(1), hp, H, bf.w_hh, H, T(0), gh.data(), GH);
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
        if (cell == RNNCellType::kLSTM) std::copy(cp + b * H, cp + (b + 1) * H, bf.cs + (t * N + b) * H);
        if (cell == RNNCellType::kGRU) std::fill(bf.ghn + (t * N + b) * H, bf.ghn + (t * N + b + 1) * H, T(0));
        continue;
      }
      switch (cell) {
        case RNNCellType::kRNNTanh:
        case RNNCellType::kRNNReLU:
          for (int64_t j = 0; j < H; ++j) {
            const T pre = gxb[j] + ghb[j];
            hb[j] = cell == RNNCellType::kRNNTanh ? tanh_(pre) : (pre > T(0) ? pre : T(0));
          }
          break;
        case RNNCellType::kLSTM: {
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
        case RNNCellType::kGRU: {
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
void fused_backward_steps(RNNCellType cell, const Dims& d, const Buffers<T>& bf, const T* gY,
                          const std::vector<int64_t>& lengths, bool reverse, T* dgx, T* dgh, T* dh0, T* dc0) {
  const int64_t N = d.N, H = d.H, GH = d.G * d.H;
  std::vector<T> dh(gY + d.T * N * H, gY + (d.T + 1) * N * H), dc(gY + (d.T + 1) * N * H, gY + (d.T + 2) * N * H);
  std::vector<T> dh_prev(static_cast<size_t>(N * H));
  for (int64_t s = d.T - 1; s >= 0; --s) {
    const int64_t t = reverse ? d.T - 1 - s : s, tp = reverse ? t + 1 : t - 1;
    const T* hp = s == 0 ? bf.h0 : bf.hs + tp * N * H;
    const T* cp = cell == RNNCellType::kLSTM ? (s == 0 ? bf.c0 : bf.cs + tp * N * H) : nullptr;
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
        case RNNCellType::kRNNTanh:
        case RNNCellType::kRNNReLU:
          for (int64_t j = 0; j < H; ++j) {
            const T g = dhb[j] + gout[j];
            dgxb[j] = cell == RNNCellType::kRNNTanh ? g * act::tanh_grad(hb[j]) : act::relu_grad_times(g, hb[j]);
            dhpb[j] = 0;
          }
          break;
        case RNNCellType::kLSTM: {
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
        case RNNCellType::kGRU: {
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
    runtime::gemm<T>(kOp, false, false, N, H, GH, T(1), dght, GH, bf.w_hh, H, T(1), dh_prev.data(), H);
    dh.swap(dh_prev);
  }
  std::copy(dh.begin(), dh.end(), dh0);
  if (dc0) std::copy(dc.begin(), dc.end(), dc0);
}

DType result_check_dtype(const Tensor& x) {
  GRAFT_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64, kOp, "a float32 or float64 input",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: .to(graft::kFloat32)");
  return x.dtype();
}

template <class T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

RNNLayerResult fused(RNNCellType cell, const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                     const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, const std::vector<int64_t>& lengths,
                     bool reverse, const Dims& d) {
  const DType dt = result_check_dtype(x);
  memory::OpScope op_scope(kOp);
  const int64_t N = d.N, H = d.H, GH = d.G * d.H;
  const bool lstm = cell == RNNCellType::kLSTM, gru = cell == RNNCellType::kGRU;
  Tensor Y, gates, hs, cs, ghn;
  {
    NoGradGuard ng;
    const Tensor xc = x.detach().contiguous(), h0c = h0.detach().contiguous(), w_ihc = w_ih.detach().contiguous(),
                 w_hhc = w_hh.detach().contiguous();
    const Tensor c0c = lstm ? c0.detach().contiguous() : Tensor();
    // gx = x W_ih^T + bias (b_ih + b_hh, or b_ih for the GRU)
    Tensor gx = matmul(xc.reshape({d.T * N, d.I}), w_ihc.t());
    if (b_ih.defined()) gx = gx + (gru ? b_ih.detach() : b_ih.detach() + b_hh.detach());
    gx = gx.contiguous();
    Y = zeros({d.T + 2, N, H}, dt);
    gates = make_empty({d.T, N, GH}, dt);
    hs = lengths.empty() ? Y.narrow(0, 0, d.T) : make_empty({d.T, N, H}, dt);
    if (lstm) cs = make_empty({d.T, N, H}, dt);
    if (gru) ghn = make_empty({d.T, N, H}, dt);
    const Tensor b_hhc = gru && b_hh.defined() ? b_hh.detach().contiguous() : Tensor();
    auto run = [&]<class T>() {
      Buffers<T> bf{xc.data_ptr<T>(), h0c.data_ptr<T>(), ptr_or_null<T>(c0c), w_ihc.data_ptr<T>(), w_hhc.data_ptr<T>(),
                    Y.data_ptr<T>(), gates.data_ptr<T>(), hs.data_ptr<T>(),
                    lstm ? cs.data_ptr<T>() : nullptr, gru ? ghn.data_ptr<T>() : nullptr};
      fused_forward<T>(cell, d, bf, ptr_or_null<T>(b_hhc), gx.data_ptr<T>(), lengths, reverse);
    };
    if (Y.is_meta()) {  // Note [Meta device]: no kernel
    } else if (dt == kFloat32) run.operator()<float>();
    else run.operator()<double>();
    // Outputs (zero past each length), h_n, c_n.
    if (!lengths.empty()) {
      Tensor mask = make_empty({d.T, N, 1}, kBool);
      for (int64_t t = 0; t < d.T; ++t)
        for (int64_t b = 0; b < N && !mask.is_meta(); ++b) mask.data_ptr<bool>()[t * N + b] = t < lengths[static_cast<size_t>(b)];
      Y.narrow(0, 0, d.T).copy_(hs.masked_fill(mask.logical_not(), 0.0));
    }
    const int64_t last = reverse ? 0 : d.T - 1;
    Y.select(0, d.T).copy_(d.T > 0 ? hs.select(0, last) : h0c);
    if (lstm) Y.select(0, d.T + 1).copy_(d.T > 0 ? cs.select(0, last) : c0c);
  }
  if (auto node = make_node("RnnLayerBackward0", OpId::rnn_layer, TensorList{x, h0, c0, w_ih, w_hh, b_ih, b_hh},
                            [cell, d, lengths, reverse, lstm, gru, has_bias = b_ih.defined()](Node& n, const Tensor& gY) -> TensorList {
        if (GradMode::is_enabled())  // Note [The create_graph policy]: the step-by-step composite, differentiated
          return autograd::differentiate_composite(
              n, {n.saved(0), n.saved(1), lstm ? n.saved(9) : Tensor(), n.saved(2), n.saved(3), n.saved(10), n.saved(11)},
              [&](const TensorList& in) {
                const RNNLayerResult r = composite(cell, in[0], in[1], in[2], in[3], in[4], in[5], in[6], lengths, reverse, d);
                // Packed as the node's output Y: [outputs; h_n; c_n] (c_n zero but for the LSTM).
                const Tensor c_n = lstm ? r.c_n : zeros({d.N, d.H}, r.h_n.dtype());
                return cat({r.output, r.h_n.unsqueeze(0), c_n.unsqueeze(0)}, 0);
              },
              gY);
        memory::OpScope op_scope(kOp);
        const Tensor x = n.saved(0), h0 = n.saved(1), w_ih = n.saved(2), w_hh = n.saved(3), Y = n.saved(4),
                     gates = n.saved(5);
        const Tensor hs = lengths.empty() ? Y.narrow(0, 0, d.T) : n.saved(6);
        const Tensor cs = lstm ? n.saved(7) : Tensor(), ghn = gru ? n.saved(8) : Tensor();
        const Tensor c0 = lstm ? n.saved(9) : Tensor();
        const DType dt = x.dtype();
        const Tensor xc = x.contiguous(), gYc = gY.contiguous(), w_ihc = w_ih.contiguous(), w_hhc = w_hh.contiguous(),
                     h0c = h0.contiguous(), c0c = lstm ? c0.contiguous() : Tensor();
        const int64_t N = d.N, H = d.H, GH = d.G * d.H;
        Tensor dgx = make_empty({d.T * N, GH}, dt), dgh = gru ? make_empty({d.T * N, GH}, dt) : dgx;
        Tensor dh0 = make_empty({N, H}, dt), dc0 = lstm ? make_empty({N, H}, dt) : Tensor();
        auto run = [&]<class T>() {
          Buffers<T> bf{xc.data_ptr<T>(), h0c.data_ptr<T>(), ptr_or_null<T>(c0c), w_ihc.data_ptr<T>(), w_hhc.data_ptr<T>(),
                        const_cast<T*>(Y.data_ptr<T>()), const_cast<T*>(gates.data_ptr<T>()),
                        const_cast<T*>(hs.data_ptr<T>()), lstm ? const_cast<T*>(cs.data_ptr<T>()) : nullptr,
                        gru ? const_cast<T*>(ghn.data_ptr<T>()) : nullptr};
          fused_backward_steps<T>(cell, d, bf, gYc.data_ptr<T>(), lengths, reverse, dgx.data_ptr<T>(), dgh.data_ptr<T>(),
                                  dh0.data_ptr<T>(), lstm ? dc0.data_ptr<T>() : nullptr);
        };
        if (dgx.is_meta()) {  // Note [Meta device]: no kernel
        } else if (dt == kFloat32) run.operator()<float>();
        else run.operator()<double>();
        // The previous state of every step, (T N, H), for dW_hh.
        Tensor hprev = make_empty({d.T, N, H}, dt);
        for (int64_t s = 0; s < d.T; ++s) {
          const int64_t t = reverse ? d.T - 1 - s : s, tp = reverse ? t + 1 : t - 1;
          hprev.select(0, t).copy_(s == 0 ? h0c : hs.select(0, tp));
        }
        const Tensor dx = matmul(dgx, w_ihc).reshape({d.T, N, d.I});
        const Tensor dw_ih = matmul(dgx.t(), xc.reshape({d.T * N, d.I}));
        const Tensor dw_hh = matmul(dgh.t(), hprev.reshape({d.T * N, H}));
        Tensor db_ih, db_hh;
        if (has_bias) {
          db_ih = dgx.sum({0});
          db_hh = gru ? dgh.sum({0}) : db_ih;
        }
        return {dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh};
      })) {
    node->save(x);
    node->save(h0);
    node->save(w_ih);
    node->save(w_hh);
    set_history(Y, node);
    node->save(Y, /*is_output=*/true);
    node->save(gates);
    node->save(lengths.empty() ? Tensor() : hs);
    node->save(cs);
    node->save(ghn);
    node->save(c0);
    node->save(b_ih);  // for the composite (Note [The create_graph policy])
    node->save(b_hh);
  }
  RNNLayerResult r;
  r.output = Y.narrow(0, 0, d.T);
  r.h_n = Y.select(0, d.T);
  if (lstm) r.c_n = Y.select(0, d.T + 1);
  return r;
}

}  // namespace

RNNBackendGuard::RNNBackendGuard(RNNBackend backend) : previous_(t_rnn_backend) { t_rnn_backend = backend; }
RNNBackendGuard::~RNNBackendGuard() { t_rnn_backend = previous_; }
RNNBackend current_rnn_backend() { return t_rnn_backend; }

RNNLayerResult rnn_layer(RNNCellType cell, const Tensor& input, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                         const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, const std::vector<int64_t>& lengths,
                         bool reverse) {
  const detail::MetaOpScope meta_scope(kOp, {&input, &h0, &c0, &w_ih, &w_hh, &b_ih, &b_hh});  // Note [Meta device]
  const Dims d = check(cell, input, h0, c0, w_ih, w_hh, b_ih, b_hh, lengths);
  const Tensor c = cell == RNNCellType::kLSTM ? c0 : Tensor();
  if (t_rnn_backend == RNNBackend::kComposite) {
    memory::OpScope op_scope(kOp);
    return composite(cell, input, h0, c, w_ih, w_hh, b_ih, b_hh, lengths, reverse, d);
  }
  return fused(cell, input, h0, c, w_ih, w_hh, b_ih, b_hh, lengths, reverse, d);
}

}  // namespace graft
