// Recurrent layers as one op: one direction of one layer of an Elman RNN (tanh or relu), an LSTM
// or a GRU over a whole sequence, with PyTorch's gate formulas (Note [Fused recurrent layers] in
// src/ops/rnn.cpp). graft::nn's RNN, LSTM, GRU and their cells are built on it.
//
//   RNN   h' = act(W_ih x + b_ih + W_hh h + b_hh)                                 gates: 1
//   LSTM  i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of (W_ih x + b_ih + W_hh h + b_hh)
//         c' = f c + i g,  h' = o tanh(c')                                        gates: 4 (i f g o)
//   GRU   r, z = sigmoid(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z})
//         n = tanh(W_in x + b_in + r (W_hn h + b_hn)),  h' = (1 - z) n + z h       gates: 3 (r z n)
#pragma once

#include <cstdint>
#include <vector>

#include "graft/core/tensor.h"

namespace graft {

enum class RNNCellType { kRNNTanh, kRNNReLU, kLSTM, kGRU };

// How rnn_layer runs:
//   kFused      (the default) the input products of every step in one matrix product, one product
//               per step for the recurrence, the gate nonlinearities in one pass, and a
//               hand-written backward through time that saves only the gates and the states.
//               Under create_graph its backward differentiates the kComposite formulas instead
//               (Note [The create_graph policy]), so it too differentiates any number of times.
//   kComposite  the formulas above as graft ops, step by step: slower and saves more, but
//               differentiable any number of times (for gradgradcheck and higher-order terms).
enum class RNNBackend { kFused, kComposite };

// Sets the backend on this thread until destroyed, then restores the previous one.
class RNNBackendGuard {
 public:
  explicit RNNBackendGuard(RNNBackend backend);
  ~RNNBackendGuard();
  RNNBackendGuard(const RNNBackendGuard&) = delete;
  RNNBackendGuard& operator=(const RNNBackendGuard&) = delete;

 private:
  RNNBackend previous_;
};
RNNBackend current_rnn_backend();

struct RNNLayerResult {
  Tensor output;  // (T, N, H): the hidden state after each step (0 past a sequence's length)
  Tensor h_n;     // (N, H): the last hidden state of each sequence
  Tensor c_n;     // (N, H): the LSTM's last cell state; undefined for the others
};

// input (T, N, I); h0 (N, H); c0 (N, H) for the LSTM (undefined otherwise); w_ih (G H, I) and
// w_hh (G H, H) with G the gate count above; b_ih, b_hh (G H), or both undefined. lengths: one
// per batch element, each in [0, T], or empty for all T; a sequence's steps past its length leave
// its state unchanged and output 0 (so a padded batch gives PyTorch's packed-sequence results).
// reverse: the backward direction of a bidirectional layer (each sequence from its last valid
// step to its first).
RNNLayerResult rnn_layer(RNNCellType cell, const Tensor& input, const Tensor& h0, const Tensor& c0, const Tensor& w_ih,
                         const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh,
                         const std::vector<int64_t>& lengths = {}, bool reverse = false);

}  // namespace graft
