// The fused recurrent layer's loops behind rnn_layer (float32, float64): the forward through time
// and the per-step gate gradients of the backward through time (Note [Fused recurrent layers] in
// src/ops/rnn.cpp, which keeps the checks, the input products gx = x W_ih^T + b, the products of
// the backward after the loop, the composite and the node). Not installed.
//
// Shapes (every tensor contiguous, all of one dtype; G H = Dims::G * Dims::H, gate blocks in the
// order i f g o for the LSTM, r z n for the GRU):
//   h0, c0 (N, H)   w_hh (G H, H)   gx (T, N, G H) = x W_ih^T + b (b_ih + b_hh; the GRU: b_ih)
//   gates (T, N, G H) after the nonlinearities, hs (T, N, H) the state after each step, cs (T, N, H)
//   the LSTM's cell states, ghn (T, N, H) the GRU's W_hn h + b_hn
// Step t reads the state of step t - 1 (t + 1 when reverse; h0, c0 for the first step taken).
// With lengths (one per batch element), step t of sequence b is inactive when t >= lengths[b]: its
// state is copied through, its gates (and ghn) are 0, its gate gradients are 0 and its state
// gradient passes through unchanged. On meta tensors the caller runs nothing (Note [Meta device]).
#pragma once

#include <cstdint>
#include <vector>

#include "graft/core/tensor.h"

namespace graft::kernels::rnn {

enum class Cell { kRNNTanh, kRNNReLU, kLSTM, kGRU };

struct Dims {
  int64_t T = 0, N = 0, I = 0, H = 0, G = 1;  // steps, batch, input features, hidden size, gates
};

// The layer's saved buffers (undefined where the cell has none: c0 and cs but for the LSTM, ghn but
// for the GRU). The forward writes gates, hs, cs and ghn; the backward reads them.
struct Buffers {
  Tensor h0, c0, w_hh;
  Tensor gates, hs, cs, ghn;
};

// Per step: gh = h_prev W_hh^T (one product), then the gates and the new state in one pass over
// (N, G H). b_hh_gru: the GRU's recurrent bias (G H), added inside r (...); undefined: none.
void forward(Cell cell, const Dims& d, const Buffers& bf, const Tensor& gx, const Tensor& b_hh_gru,
             const std::vector<int64_t>& lengths, bool reverse);

// The steps of the backward through time, in reverse, given gY (T + 2, N, H) = the gradients of
// [outputs; h_n; c_n]: writes the gate gradients dgx (T N, G H) (with respect to gx) and dgh
// (T N, G H) (with respect to gh; the same tensor as dgx but for the GRU, whose n block is
// dn_pre r), and dh0, dc0 (N, H) (dc0 undefined but for the LSTM). Per step dh_prev += dG_h W_hh.
void backward(Cell cell, const Dims& d, const Buffers& bf, const Tensor& gY, const std::vector<int64_t>& lengths,
              bool reverse, Tensor& dgx, Tensor& dgh, Tensor& dh0, Tensor& dc0);

// mask[s N + b] = (t0 + s < lengths[b]) for s < steps, b < N = lengths.size(): which sequences are
// still running at steps t0 .. t0 + steps - 1. mask: a contiguous bool tensor of steps N elements.
void length_mask(Tensor& mask, int64_t t0, int64_t steps, const std::vector<int64_t>& lengths);

}  // namespace graft::kernels::rnn
