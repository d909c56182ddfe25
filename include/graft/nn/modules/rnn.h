// Recurrent layers in LibTorch's spelling: RNN (tanh / relu), LSTM, GRU, RNNCell, LSTMCell,
// GRUCell, and nn::utils::rnn's PackedSequence, pack_padded_sequence, pad_packed_sequence,
// pad_sequence and pack_sequence. Each layer runs graft::rnn_layer (graft/ops/rnn.h): fused
// kernels with a hand-written backward through time.
//
// Shapes as in PyTorch: input (T, N, I) ((N, T, I) with batch_first; (T, I) unbatched); h_0 and
// c_0 (num_layers * num_directions, N, H); output (T, N, num_directions * H). Parameters
// weight_ih_l<k>[_reverse] (G H, I or num_directions H), weight_hh_l<k>[_reverse] (G H, H),
// bias_ih_l<k>[_reverse], bias_hh_l<k>[_reverse] (G H), G = 1, 4 (i f g o), 3 (r z n), all
// initialised U(-1/sqrt(H), 1/sqrt(H)) as PyTorch does. Dropout applies to every layer's output
// but the last, in training.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "graft/core/util.h"
#include "graft/nn/functional.h"
#include "graft/nn/init.h"
#include "graft/nn/module.h"
#include "graft/ops/rnn.h"

namespace graft::nn {

namespace utils::rnn {

// A batch of variable-length sequences, packed time-major: data holds, for each step t, the
// batch_sizes[t] sequences still running at t (sorted by decreasing length). Built by
// pack_padded_sequence / pack_sequence.
class PackedSequence {
 public:
  PackedSequence() = default;
  explicit PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = {}, Tensor unsorted_indices = {});
  const Tensor& data() const { return data_; }
  const Tensor& batch_sizes() const { return batch_sizes_; }  // int64 (T)
  const Tensor& sorted_indices() const { return sorted_indices_; }
  const Tensor& unsorted_indices() const { return unsorted_indices_; }
  PackedSequence to(DType dtype) const;
  bool is_pinned() const { return false; }

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

// input (T, N, *) ((N, T, *) with batch_first) and lengths (N, each in [1, T]); enforce_sorted
// requires decreasing lengths, otherwise the batch is sorted and the order kept in the result.
PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first = false, bool enforce_sorted = true);
// The inverse: (padded (T, N, *) or (N, T, *), lengths (N) int64), in the original batch order.
std::tuple<Tensor, Tensor> pad_packed_sequence(PackedSequence sequence, bool batch_first = false,
                                               double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt);
// Stacks sequences (L_i, *) into (max L, N, *) ((N, max L, *) with batch_first), padded.
Tensor pad_sequence(ArrayRef<Tensor> sequences, bool batch_first = false, double padding_value = 0);
PackedSequence pack_sequence(ArrayRef<Tensor> sequences, bool enforce_sorted = true);

}  // namespace utils::rnn

struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  GRAFT_ARG(int64_t, input_size);
  GRAFT_ARG(int64_t, hidden_size);
  GRAFT_ARG(int64_t, num_layers) = 1;
  GRAFT_ARG(Nonlinearity, nonlinearity) = kTanh;  // kTanh or kReLU
  GRAFT_ARG(bool, bias) = true;
  GRAFT_ARG(bool, batch_first) = false;
  GRAFT_ARG(double, dropout) = 0.0;
  GRAFT_ARG(bool, bidirectional) = false;
};

struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  GRAFT_ARG(int64_t, input_size);
  GRAFT_ARG(int64_t, hidden_size);
  GRAFT_ARG(int64_t, num_layers) = 1;
  GRAFT_ARG(bool, bias) = true;
  GRAFT_ARG(bool, batch_first) = false;
  GRAFT_ARG(double, dropout) = 0.0;
  GRAFT_ARG(bool, bidirectional) = false;
  GRAFT_ARG(int64_t, proj_size) = 0;  // graft supports 0 only (no projections): other values are an error
};

struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  GRAFT_ARG(int64_t, input_size);
  GRAFT_ARG(int64_t, hidden_size);
  GRAFT_ARG(int64_t, num_layers) = 1;
  GRAFT_ARG(bool, bias) = true;
  GRAFT_ARG(bool, batch_first) = false;
  GRAFT_ARG(double, dropout) = 0.0;
  GRAFT_ARG(bool, bidirectional) = false;
};

namespace detail {

// What RNN, LSTM and GRU share: the parameters by layer and direction, and the forward over a
// padded batch with optional lengths.
class RNNBase {
 public:
  struct Config {
    RNNCellType cell;
    int64_t input_size, hidden_size, num_layers;
    bool bias, batch_first, bidirectional;
    double dropout;
  };

  // Registers the parameters on `owner` in PyTorch's order and initialises them.
  void register_rnn_parameters(Module& owner, const Config& config);
  void reset_rnn_parameters();
  // PyTorch's flat weight list and its names (weight_ih_l0, weight_hh_l0, bias_ih_l0, ...).
  const std::vector<Tensor>& flat_weights() const { return flat_weights_; }
  const std::vector<std::string>& flat_weights_names() const { return flat_weights_names_; }
  // all_weights()[layer * num_directions + direction] = {w_ih, w_hh[, b_ih, b_hh]}.
  std::vector<std::vector<Tensor>> all_weights() const;

  // input (T, N, I) (or as the options say), h0 / c0 (layers * dirs, N, H) or undefined.
  // Returns output, h_n, c_n (c_n undefined but for the LSTM).
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0, bool training,
                                         const char* op) const;
  // The same over a packed batch.
  std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> run_packed(const utils::rnn::PackedSequence& input,
                                                                     const Tensor& h0, const Tensor& c0, bool training,
                                                                     const char* op) const;
  std::string rnn_extra_repr() const;

 private:
  std::tuple<Tensor, Tensor, Tensor> run_padded(const Tensor& x, const std::vector<int64_t>& lengths, Tensor h0,
                                                Tensor c0, bool training, const char* op) const;
  Config config_{};
  std::vector<Tensor> flat_weights_;
  std::vector<std::string> flat_weights_names_;
};

}  // namespace detail

// Elman RNN: h' = tanh or relu of (W_ih x + b_ih + W_hh h + b_hh). forward returns (output, h_n).
class RNNImpl : public Cloneable<RNNImpl>, public detail::RNNBase {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& packed_input,
                                                                          Tensor hx = {});
  void reset() override;
  void reset_parameters() { reset_rnn_parameters(); }
  std::string extra_repr() const override { return rnn_extra_repr(); }
  RNNOptions options;
};
GRAFT_MODULE(RNN);

// LSTM (Hochreiter and Schmidhuber 1997, with PyTorch's gates i f g o). forward returns
// (output, (h_n, c_n)).
class LSTMImpl : public Cloneable<LSTMImpl>, public detail::RNNBase {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  void reset() override;
  void reset_parameters() { reset_rnn_parameters(); }
  std::string extra_repr() const override { return rnn_extra_repr(); }
  LSTMOptions options;
};
GRAFT_MODULE(LSTM);

// GRU (Cho et al. 2014, PyTorch's form: r gates W_hn h + b_hn). forward returns (output, h_n).
class GRUImpl : public Cloneable<GRUImpl>, public detail::RNNBase {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& packed_input,
                                                                          Tensor hx = {});
  void reset() override;
  void reset_parameters() { reset_rnn_parameters(); }
  std::string extra_repr() const override { return rnn_extra_repr(); }
  GRUOptions options;
};
GRAFT_MODULE(GRU);

struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  GRAFT_ARG(int64_t, input_size);
  GRAFT_ARG(int64_t, hidden_size);
  GRAFT_ARG(bool, bias) = true;
  GRAFT_ARG(Nonlinearity, nonlinearity) = kTanh;
};
struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  GRAFT_ARG(int64_t, input_size);
  GRAFT_ARG(int64_t, hidden_size);
  GRAFT_ARG(bool, bias) = true;
};
struct GRUCellOptions {
  GRUCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  GRAFT_ARG(int64_t, input_size);
  GRAFT_ARG(int64_t, hidden_size);
  GRAFT_ARG(bool, bias) = true;
};

namespace detail {
// One step: the cells' parameters (weight_ih, weight_hh, bias_ih, bias_hh) and their forward.
class RNNCellBase {
 public:
  void register_cell_parameters(Module& owner, RNNCellType cell, int64_t input_size, int64_t hidden_size, bool bias);
  void reset_cell_parameters();
  // input (N, I) or (I); hx, cx (N, H) or (H), or undefined (zeros). Returns h' (and c').
  std::pair<Tensor, Tensor> step(const Tensor& input, const Tensor& hx, const Tensor& cx, const char* op) const;
  std::string cell_extra_repr() const;

  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 private:
  RNNCellType cell_ = RNNCellType::kRNNTanh;
  int64_t input_size_ = 0, hidden_size_ = 0;
};
}  // namespace detail

class RNNCellImpl : public Cloneable<RNNCellImpl>, public detail::RNNCellBase {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options);
  Tensor forward(const Tensor& input, Tensor hx = {});
  void reset() override;
  void reset_parameters() { reset_cell_parameters(); }
  std::string extra_repr() const override { return cell_extra_repr(); }
  RNNCellOptions options;
};
GRAFT_MODULE(RNNCell);

class LSTMCellImpl : public Cloneable<LSTMCellImpl>, public detail::RNNCellBase {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  void reset() override;
  void reset_parameters() { reset_cell_parameters(); }
  std::string extra_repr() const override { return cell_extra_repr(); }
  LSTMCellOptions options;
};
GRAFT_MODULE(LSTMCell);

class GRUCellImpl : public Cloneable<GRUCellImpl>, public detail::RNNCellBase {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options);
  Tensor forward(const Tensor& input, Tensor hx = {});
  void reset() override;
  void reset_parameters() { reset_cell_parameters(); }
  std::string extra_repr() const override { return cell_extra_repr(); }
  GRUCellOptions options;
};
GRAFT_MODULE(GRUCell);

}  // namespace graft::nn
