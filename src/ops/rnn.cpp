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
// The per-step loops of both directions are src/kernels/rnn.cpp's (kernels::rnn::forward, backward);
// the products over all steps (gx, dx, dW_ih, dW_hh, db) stay here, as graft ops.
// Outputs: the node has one output Y (T + 2, N, H) = [outputs; h_n; c_n] (c_n row zero but for the
// LSTM) and rnn_layer returns views of it, so that one node serves the three results.
// The fused backward is once differentiable; the composite path (graft ops, step by step) is the
// reference it is tested against, and under create_graph the node differentiates it (Note [The
// create_graph policy] in src/autograd/composite_backward.h).
#include <string>

#include "../autograd/composite_backward.h"
#include "../kernels/rnn.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "graft/ops/rnn.h"
#include "ops_common.h"

namespace graft {

using autograd::Node;
using autograd::set_history;

namespace {

constexpr const char* kRnnOp = "rnn_layer";
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

using kernels::rnn::Dims;

kernels::rnn::Cell kernel_cell(RNNCellType c) {
  switch (c) {
    case RNNCellType::kRNNTanh: return kernels::rnn::Cell::kRNNTanh;
    case RNNCellType::kRNNReLU: return kernels::rnn::Cell::kRNNReLU;
    case RNNCellType::kLSTM: return kernels::rnn::Cell::kLSTM;
    case RNNCellType::kGRU: return kernels::rnn::Cell::kGRU;
  }
  return kernels::rnn::Cell::kRNNTanh;
}

void check_shape(const Tensor& t, IntArrayRef want, const char* what, const char* hint) {
  GRAFT_CHECK(t.defined() && t.sizes().equals(want), kRnnOp, std::string(what) + " of shape " + shape_str(want),
              t.defined() ? std::string(what) + " of shape " + shape_str(t.sizes()) : std::string("no ") + what, hint);
}

Dims check(RNNCellType cell, const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih, const Tensor& w_hh,
           const Tensor& b_ih, const Tensor& b_hh, const std::vector<int64_t>& lengths) {
  GRAFT_CHECK(x.defined() && x.dim() == 3, kRnnOp, "an input (T, N, I) of 3 dims",
              x.defined() ? "an input of shape " + shape_str(x.sizes()) : "an undefined input",
              "recurrent layers take (sequence, batch, features); unsqueeze(1) a single sequence");
  GRAFT_CHECK(x.is_floating_point(), kRnnOp, "a floating-point input", std::string("a ") + dtype_name(x.dtype()) + " input",
              "convert it: .to(graft::kFloat32)");
  Dims d;
  d.T = x.size(0), d.N = x.size(1), d.I = x.size(2), d.G = gate_count(cell);
  GRAFT_CHECK(w_hh.defined() && w_hh.dim() == 2, kRnnOp, "weight_hh of 2 dims (G H, H)",
              w_hh.defined() ? shape_str(w_hh.sizes()) : "none", "");
  d.H = w_hh.size(1);
  const std::string gates = std::to_string(d.G) + " H for the " + cell_name(cell);
  check_shape(w_ih, {d.G * d.H, d.I}, "weight_ih", ("weight_ih is (" + gates + ", input features)").c_str());
  check_shape(w_hh, {d.G * d.H, d.H}, "weight_hh", ("weight_hh is (" + gates + ", H)").c_str());
  GRAFT_CHECK(b_ih.defined() == b_hh.defined(), kRnnOp, "both biases or neither", "one bias", "");
  if (b_ih.defined()) {
    check_shape(b_ih, {d.G * d.H}, "bias_ih", "");
    check_shape(b_hh, {d.G * d.H}, "bias_hh", "");
  }
  check_shape(h0, {d.N, d.H}, "h0", "the initial hidden state is (batch, hidden)");
  if (cell == RNNCellType::kLSTM) check_shape(c0, {d.N, d.H}, "c0", "the LSTM's initial cell state is (batch, hidden)");
  for (const Tensor* t : {&h0, &c0, &w_ih, &w_hh, &b_ih, &b_hh})
    if (t->defined())
      GRAFT_CHECK(t->dtype() == x.dtype(), kRnnOp, std::string("every tensor of the input's dtype (") + dtype_name(x.dtype()) + ")",
                  std::string("a ") + dtype_name(t->dtype()) + " tensor", "convert the parameters with module->to(dtype)");
  GRAFT_CHECK(lengths.empty() || static_cast<int64_t>(lengths.size()) == d.N, kRnnOp,
              "one length per batch element (" + std::to_string(d.N) + ")", std::to_string(lengths.size()) + " lengths", "");
  for (int64_t len : lengths)
    GRAFT_CHECK(len >= 0 && len <= d.T, kRnnOp, "lengths in [0, " + std::to_string(d.T) + "]", "length " + std::to_string(len), "");
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
      if (!m.is_meta()) kernels::rnn::length_mask(m, t, 1, lengths);  // Note [Meta device]
      h = where(m, hn, h);
      if (cn.defined()) c = where(m, cn, c);
      outputs[static_cast<size_t>(t)] = hn.masked_fill(m.logical_not(), 0.0);
    }
  }
  Tensor output = d.T > 0 ? stack(outputs, 0) : zeros({0, d.N, d.H}, x.dtype());
  return {output, h, cell == RNNCellType::kLSTM ? c : Tensor()};
}

// ---- the fused path ----

DType result_check_dtype(const Tensor& x) {
  GRAFT_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64, kRnnOp, "a float32 or float64 input",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: .to(graft::kFloat32)");
  return x.dtype();
}

RNNLayerResult fused(RNNCellType cell, const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                     const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh, const std::vector<int64_t>& lengths,
                     bool reverse, const Dims& d) {
  const DType dt = result_check_dtype(x);
  memory::OpScope op_scope(kRnnOp);
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
    if (!Y.is_meta())  // Note [Meta device]: no kernel
      kernels::rnn::forward(kernel_cell(cell), d, {h0c, c0c, w_hhc, gates, hs, cs, ghn}, gx, b_hhc, lengths, reverse);
    // Outputs (zero past each length), h_n, c_n.
    if (!lengths.empty()) {
      Tensor mask = make_empty({d.T, N, 1}, kBool);
      if (!mask.is_meta()) kernels::rnn::length_mask(mask, 0, d.T, lengths);
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
        memory::OpScope op_scope(kRnnOp);
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
        if (!dgx.is_meta())  // Note [Meta device]: no kernel
          kernels::rnn::backward(kernel_cell(cell), d, {h0c, c0c, w_hhc, gates, hs, cs, ghn}, gYc, lengths, reverse, dgx,
                                 dgh, dh0, dc0);
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
  const detail::MetaOpScope meta_scope(kRnnOp, {&input, &h0, &c0, &w_ih, &w_hh, &b_ih, &b_hh});  // Note [Meta device]
  const Dims d = check(cell, input, h0, c0, w_ih, w_hh, b_ih, b_hh, lengths);
  const Tensor c = cell == RNNCellType::kLSTM ? c0 : Tensor();
  if (t_rnn_backend == RNNBackend::kComposite) {
    memory::OpScope op_scope(kRnnOp);
    return composite(cell, input, h0, c, w_ih, w_hh, b_ih, b_hh, lengths, reverse, d);
  }
  return fused(cell, input, h0, c, w_ih, w_hh, b_ih, b_hh, lengths, reverse, d);
}

}  // namespace graft
