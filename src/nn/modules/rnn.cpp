// RNN, LSTM, GRU, their cells, and nn::utils::rnn's packing (graft/nn/modules/rnn.h).
#include "graft/nn/modules/rnn.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "../../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"

namespace graft::nn {

// ---- packing ----
namespace utils::rnn {

namespace {

std::vector<int64_t> int_values(const Tensor& t) {
  const Tensor c = t.to(kInt64).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

Tensor int_tensor(const std::vector<int64_t>& v) {
  Tensor t = make_empty({static_cast<int64_t>(v.size())}, kInt64);
  std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return t;
}

// `idx` (a 1-D int64 tensor) holds each of 0 .. n - 1 exactly once.
void check_permutation(const Tensor& idx, int64_t n, const char* op, const char* what) {
  GRAFT_CHECK(idx.dim() == 1 && idx.size(0) == n && !idx.is_floating_point(), op,
              std::string(what) + ": a permutation of the " + std::to_string(n) + " sequences (int64 [" +
                  std::to_string(n) + "])",
              std::string(what) + " of shape " + shape_str(idx.sizes()) + " and dtype " + dtype_name(idx.dtype()),
              "leave it undefined for sequences already sorted by decreasing length");
  std::vector<bool> seen(static_cast<size_t>(n), false);
  const std::vector<int64_t> v = int_values(idx);
  for (size_t k = 0; k < v.size(); ++k) {
    const bool in_range = v[k] >= 0 && v[k] < n;
    GRAFT_CHECK(in_range && !seen[static_cast<size_t>(v[k])], op,
                std::string(what) + ": a permutation of 0 .. " + std::to_string(n - 1),
                std::string(what) + "[" + std::to_string(k) + "] = " + std::to_string(v[k]) +
                    (in_range ? " (repeated)" : " (out of range)"),
                "each sequence's index exactly once");
    seen[static_cast<size_t>(v[k])] = true;
  }
}

// Issue 34, item 7: a PackedSequence built by hand must be one pack_padded_sequence could have made,
// or unpacking it reads past its rows or builds a batch from nothing: batch_sizes 1-D int64, each
// step's count in [1, the previous step's], their sum the data's rows; the index tensors
// permutations of the batch. Errors name the op the user called, never an internal one.
void check_packed(const PackedSequence& p, const char* op) {
  GRAFT_CHECK(p.data().defined() && p.data().dim() >= 1, op, "packed data of shape (sum(batch_sizes), *)",
              p.data().defined() ? "data of shape " + shape_str(p.data().sizes()) : "undefined data",
              "build it with pack_padded_sequence or pack_sequence");
  GRAFT_CHECK(p.batch_sizes().defined() && p.batch_sizes().dim() == 1 && !p.batch_sizes().is_floating_point() &&
                  p.batch_sizes().dtype() != kBool,
              op, "batch_sizes: an integer tensor [T] (the sequences still running at each step)",
              p.batch_sizes().defined() ? "batch_sizes of shape " + shape_str(p.batch_sizes().sizes()) + " and dtype " +
                                               dtype_name(p.batch_sizes().dtype())
                                         : "undefined batch_sizes",
              "build it with pack_padded_sequence or pack_sequence");
  const std::vector<int64_t> bs = int_values(p.batch_sizes());
  int64_t rows = 0;
  for (size_t t = 0; t < bs.size(); ++t) {
    GRAFT_CHECK(bs[t] >= 1 && (t == 0 || bs[t] <= bs[t - 1]), op,
                "batch_sizes of at least 1 that never grow (sequences sorted by decreasing length)",
                "batch_sizes[" + std::to_string(t) + "] = " + std::to_string(bs[t]) +
                    (t == 0 ? std::string() : " after " + std::to_string(bs[t - 1])),
                "build it with pack_padded_sequence or pack_sequence");
    rows += bs[t];  // no overflow: each partial sum is checked against the data's rows
    GRAFT_CHECK(rows <= p.data().size(0), op, "data with sum(batch_sizes) rows",
                "data of shape " + shape_str(p.data().sizes()) + " for batch_sizes summing to more",
                "the data holds each step's running sequences, one row each");
  }
  GRAFT_CHECK(rows == p.data().size(0), op, "data with sum(batch_sizes) = " + std::to_string(rows) + " rows",
              "data of shape " + shape_str(p.data().sizes()) + " (extra rows)",
              "the data holds each step's running sequences, one row each");
  const int64_t N = bs.empty() ? 0 : bs[0];
  if (p.sorted_indices().defined()) check_permutation(p.sorted_indices(), N, op, "sorted_indices");
  if (p.unsorted_indices().defined()) check_permutation(p.unsorted_indices(), N, op, "unsorted_indices");
}

// The padded (total, N, *) batch of a packed one, in its sorted order (padding_value past each
// length). The steps past the longest sequence are one allocation, so that an impossible
// total_length fails at once with an out-of-memory error instead of growing a step at a time.
Tensor unpack_sorted(const PackedSequence& p, double padding_value, int64_t total) {
  const std::vector<int64_t> bs = int_values(p.batch_sizes());
  const int64_t N = bs.empty() ? 0 : bs[0];
  std::vector<int64_t> rest(p.data().sizes().begin() + 1, p.data().sizes().end());
  auto padding = [&](int64_t steps, int64_t rows) {
    std::vector<int64_t> shape{rows};
    if (steps >= 0) shape.insert(shape.begin(), steps);
    shape.insert(shape.end(), rest.begin(), rest.end());
    return full(shape, padding_value, p.data().dtype());
  };
  std::vector<Tensor> steps;
  int64_t offset = 0;
  for (int64_t b : bs) {
    Tensor step = p.data().narrow(0, offset, b);
    if (b < N) step = cat({step, padding(-1, N - b)}, 0);
    steps.push_back(step);
    offset += b;
  }
  const int64_t T = static_cast<int64_t>(bs.size());
  if (total == T) return stack(steps, 0);
  const Tensor tail = padding(total - T, N);
  return T == 0 ? tail : cat({stack(steps, 0), tail}, 0);
}

// Packs a padded (T, N, *) batch whose sequences are sorted by decreasing length.
Tensor pack_sorted(const Tensor& padded, const std::vector<int64_t>& batch_sizes) {
  std::vector<Tensor> steps;
  for (size_t t = 0; t < batch_sizes.size(); ++t)
    steps.push_back(padded.select(0, static_cast<int64_t>(t)).narrow(0, 0, batch_sizes[t]));
  return cat(steps, 0);
}

}  // namespace

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices, Tensor unsorted_indices)
    : data_(std::move(data)), batch_sizes_(std::move(batch_sizes)), sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(std::move(unsorted_indices)) {
  if (sorted_indices_.defined() && !unsorted_indices_.defined()) {
    // unsorted = the inverse permutation of sorted (which must be one: it indexes the inverse)
    check_permutation(sorted_indices_, sorted_indices_.numel(), "PackedSequence", "sorted_indices");
    const std::vector<int64_t> s = int_values(sorted_indices_);
    std::vector<int64_t> u(s.size());
    for (size_t i = 0; i < s.size(); ++i) u[static_cast<size_t>(s[i])] = static_cast<int64_t>(i);
    unsorted_indices_ = int_tensor(u);
  }
}

PackedSequence PackedSequence::to(DType dtype) const {
  return PackedSequence(data_.to(dtype), batch_sizes_, sorted_indices_, unsorted_indices_);
}

PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first, bool enforce_sorted) {
  const char* op = "pack_padded_sequence";
  GRAFT_CHECK(input.defined() && input.dim() >= 2, op, "a padded input (T, N, *) of at least 2 dims",
              input.defined() ? shape_str(input.sizes()) : "an undefined tensor",
              batch_first ? "with batch_first the input is (N, T, *)" : "the input is (T, N, *)");
  if (batch_first) input = input.transpose(0, 1);
  const int64_t T = input.size(0), N = input.size(1);
  GRAFT_CHECK(lengths.defined() && lengths.dim() == 1 && lengths.size(0) == N, op,
              "lengths of shape [" + std::to_string(N) + "] (one per sequence)",
              lengths.defined() ? "lengths of shape " + shape_str(lengths.sizes()) : "undefined lengths", "");
  std::vector<int64_t> len = int_values(lengths);
  for (int64_t l : len)
    GRAFT_CHECK(l > 0 && l <= T, op, "every length in [1, " + std::to_string(T) + "]", "length " + std::to_string(l),
                "drop empty sequences before packing");
  Tensor sorted_indices;
  if (enforce_sorted) {
    // The got carries LibTorch's sentence, which its tests look for.
    GRAFT_CHECK(std::is_sorted(len.rbegin(), len.rend()), op, "lengths sorted in decreasing order (enforce_sorted = true)",
                "lengths " + shape_str(len) + ". `lengths` array must be sorted in decreasing order when "
                "`enforce_sorted` is True",
                "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence (enforce_sorted = "
                "false), or sort the batch");
  } else {
    std::vector<int64_t> order(len.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return len[static_cast<size_t>(a)] > len[static_cast<size_t>(b)]; });
    sorted_indices = int_tensor(order);
    input = input.index_select(1, sorted_indices);
    std::vector<int64_t> sorted(len.size());
    for (size_t i = 0; i < order.size(); ++i) sorted[i] = len[static_cast<size_t>(order[i])];
    len = sorted;
  }
  std::vector<int64_t> batch_sizes(static_cast<size_t>(len.empty() ? 0 : len[0]));
  for (size_t t = 0; t < batch_sizes.size(); ++t)
    batch_sizes[t] = std::count_if(len.begin(), len.end(), [t](int64_t l) { return l > static_cast<int64_t>(t); });
  return PackedSequence(pack_sorted(input, batch_sizes), int_tensor(batch_sizes), sorted_indices);
}

std::tuple<Tensor, Tensor> pad_packed_sequence(PackedSequence sequence, bool batch_first, double padding_value,
                                               std::optional<int64_t> total_length) {
  check_packed(sequence, "pad_packed_sequence");
  const std::vector<int64_t> bs = int_values(sequence.batch_sizes());
  const int64_t T = static_cast<int64_t>(bs.size());
  GRAFT_CHECK(!total_length || *total_length >= T, "pad_packed_sequence",
              "total_length at least the longest sequence (" + std::to_string(T) + ")",
              "total_length = " + std::to_string(total_length.value_or(0)) +
                  ". Expected total_length to be at least the length of the longest sequence in input",
              "leave total_length out to pad to the longest sequence");
  Tensor padded = unpack_sorted(sequence, padding_value, total_length.value_or(T));
  const int64_t N = bs.empty() ? 0 : bs[0];
  std::vector<int64_t> len(static_cast<size_t>(N));
  for (int64_t b = 0; b < N; ++b)
    len[static_cast<size_t>(b)] = std::count_if(bs.begin(), bs.end(), [b](int64_t s) { return s > b; });
  Tensor lengths = int_tensor(len);
  if (sequence.unsorted_indices().defined()) {
    padded = padded.index_select(1, sequence.unsorted_indices());
    lengths = lengths.index_select(0, sequence.unsorted_indices());
  }
  if (batch_first) padded = padded.transpose(0, 1);
  return {padded, lengths};
}

Tensor pad_sequence(ArrayRef<Tensor> sequences, bool batch_first, double padding_value) {
  GRAFT_CHECK(!sequences.empty(), "pad_sequence", "at least one sequence", "none", "");
  int64_t max_len = 0;
  for (const Tensor& s : sequences) {
    GRAFT_CHECK(s.defined() && s.dim() >= 1 && s.dim() == sequences[0].dim(), "pad_sequence",
                "sequences (L_i, *) of one rank", s.defined() ? shape_str(s.sizes()) : "an undefined tensor", "");
    max_len = std::max(max_len, s.size(0));
  }
  std::vector<Tensor> padded;
  for (const Tensor& s : sequences) {
    if (s.size(0) == max_len) {
      padded.push_back(s);
      continue;
    }
    std::vector<int64_t> shape(s.sizes().begin(), s.sizes().end());
    shape[0] = max_len - s.size(0);
    padded.push_back(cat({s, full(shape, padding_value, s.dtype())}, 0));
  }
  return stack(padded, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(ArrayRef<Tensor> sequences, bool enforce_sorted) {
  std::vector<int64_t> len;
  for (const Tensor& s : sequences) len.push_back(s.defined() && s.dim() >= 1 ? s.size(0) : 0);
  return pack_padded_sequence(pad_sequence(sequences), int_tensor(len), false, enforce_sorted);
}

}  // namespace utils::rnn

// ---- RNN, LSTM, GRU ----
namespace detail {

namespace {
int64_t gates_of(RNNCellType c) { return c == RNNCellType::kLSTM ? 4 : c == RNNCellType::kGRU ? 3 : 1; }
}  // namespace

void RNNBase::register_rnn_parameters(Module& owner, const Config& config) {
  config_ = config;
  const char* op = config.cell == RNNCellType::kLSTM ? "LSTM" : config.cell == RNNCellType::kGRU ? "GRU" : "RNN";
  GRAFT_CHECK(config.input_size > 0 && config.hidden_size > 0 && config.num_layers > 0, op,
              "input_size, hidden_size and num_layers > 0",
              std::to_string(config.input_size) + ", " + std::to_string(config.hidden_size) + " and " +
                  std::to_string(config.num_layers),
              "");
  GRAFT_CHECK(config.dropout >= 0 && config.dropout <= 1, op, "dropout in [0, 1]", graft::detail::py_repr(config.dropout), "");
  flat_weights_.clear();
  flat_weights_names_.clear();
  const int64_t G = gates_of(config.cell), H = config.hidden_size, D = config.bidirectional ? 2 : 1;
  for (int64_t l = 0; l < config.num_layers; ++l)
    for (int64_t dir = 0; dir < D; ++dir) {
      const std::string suffix = "_l" + std::to_string(l) + (dir ? "_reverse" : "");
      const int64_t in = l == 0 ? config.input_size : H * D;
      auto add = [&](const std::string& name, std::vector<int64_t> shape) {
        flat_weights_.push_back(owner.register_parameter(name + suffix, graft::empty(shape)));
        flat_weights_names_.push_back(name + suffix);
      };
      add("weight_ih", {G * H, in});
      add("weight_hh", {G * H, H});
      if (config.bias) {
        add("bias_ih", {G * H});
        add("bias_hh", {G * H});
      }
    }
  reset_rnn_parameters();
}

void RNNBase::reset_rnn_parameters() {
  NoGradGuard ng;
  const double stdv = 1.0 / std::sqrt(static_cast<double>(config_.hidden_size));
  for (Tensor& w : flat_weights_) init::uniform_(w, -stdv, stdv);
}

std::vector<std::vector<Tensor>> RNNBase::all_weights() const {
  const size_t per = config_.bias ? 4 : 2;
  std::vector<std::vector<Tensor>> out;
  for (size_t i = 0; i < flat_weights_.size(); i += per)
    out.emplace_back(flat_weights_.begin() + static_cast<std::ptrdiff_t>(i), flat_weights_.begin() + static_cast<std::ptrdiff_t>(i + per));
  return out;
}

std::tuple<Tensor, Tensor, Tensor> RNNBase::run_padded(const Tensor& x, const std::vector<int64_t>& lengths, Tensor h0,
                                                       Tensor c0, bool training, const char* op) const {
  const int64_t D = config_.bidirectional ? 2 : 1, L = config_.num_layers, N = x.size(1), H = config_.hidden_size;
  const bool lstm = config_.cell == RNNCellType::kLSTM;
  for (Tensor* s : {&h0, &c0}) {
    if (s == &c0 && !lstm) continue;
    if (!s->defined()) {
      *s = zeros({L * D, N, H}, x.options());
      continue;
    }
    GRAFT_CHECK(s->dim() == 3 && s->size(0) == L * D && s->size(1) == N && s->size(2) == H, op,
                std::string(s == &h0 ? "h_0" : "c_0") + " of shape " + shape_str({L * D, N, H}),
                shape_str(s->sizes()), "the initial states are (num_layers * num_directions, batch, hidden_size)");
  }
  const size_t per = config_.bias ? 4 : 2;
  Tensor layer_in = x;
  std::vector<Tensor> hn, cn;
  for (int64_t l = 0; l < L; ++l) {
    std::vector<Tensor> outs;
    for (int64_t dir = 0; dir < D; ++dir) {
      const int64_t idx = l * D + dir;
      const Tensor* w = &flat_weights_[static_cast<size_t>(idx) * per];
      const RNNLayerResult r = rnn_layer(config_.cell, layer_in, h0.select(0, idx), lstm ? c0.select(0, idx) : Tensor(), w[0],
                                         w[1], config_.bias ? w[2] : Tensor(), config_.bias ? w[3] : Tensor(), lengths, dir == 1);
      outs.push_back(r.output);
      hn.push_back(r.h_n);
      if (lstm) cn.push_back(r.c_n);
    }
    layer_in = D == 2 ? cat(outs, 2) : outs[0];
    if (training && config_.dropout > 0 && l + 1 < L) layer_in = graft::dropout(layer_in, config_.dropout, true);
  }
  return {layer_in, stack(hn, 0), lstm ? stack(cn, 0) : Tensor()};
}

std::tuple<Tensor, Tensor, Tensor> RNNBase::run(const Tensor& input, const Tensor& h0, const Tensor& c0, bool training,
                                                const char* op) const {
  GRAFT_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 2), op,
              config_.batch_first ? "an input (N, T, input_size), or (T, input_size) unbatched"
                                  : "an input (T, N, input_size), or (T, input_size) unbatched",
              input.defined() ? "an input of shape " + shape_str(input.sizes()) : "an undefined input", "");
  GRAFT_CHECK(input.size(-1) == config_.input_size, op, "input_size " + std::to_string(config_.input_size) + " features",
              "an input of shape " + shape_str(input.sizes()), "the last dim is the feature dim");
  const bool batched = input.dim() == 3;
  Tensor x = !batched ? input.unsqueeze(1) : config_.batch_first ? input.transpose(0, 1) : input;
  auto unbatch_state = [&](const Tensor& s) { return s.defined() && !batched ? s.unsqueeze(1) : s; };
  auto [out, hn, cn] = run_padded(x, {}, unbatch_state(h0), unbatch_state(c0), training, op);
  if (!batched) {
    out = out.squeeze(1);
    hn = hn.squeeze(1);
    if (cn.defined()) cn = cn.squeeze(1);
  } else if (config_.batch_first) {
    out = out.transpose(0, 1);
  }
  return {out, hn, cn};
}

std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> RNNBase::run_packed(const utils::rnn::PackedSequence& input,
                                                                          const Tensor& h0, const Tensor& c0, bool training,
                                                                          const char* op) const {
  GRAFT_CHECK(input.data().defined() && input.data().dim() == 2 && input.data().size(1) == config_.input_size, op,
              "packed data (sum of lengths, " + std::to_string(config_.input_size) + ")",
              input.data().defined() ? shape_str(input.data().sizes()) : "empty packed data", "");
  utils::rnn::check_packed(input, op);
  const Tensor bs_t = input.batch_sizes().to(kInt64).contiguous();
  const std::vector<int64_t> bs(bs_t.data_ptr<int64_t>(), bs_t.data_ptr<int64_t>() + bs_t.numel());
  const int64_t N = bs.empty() ? 0 : bs[0];
  // The padded batch in the packed (sorted) order, with each sequence's length.
  auto [padded, lengths_t] = utils::rnn::pad_packed_sequence(utils::rnn::PackedSequence(input.data(), input.batch_sizes()));
  std::vector<int64_t> lengths(static_cast<size_t>(N));
  for (int64_t b = 0; b < N; ++b) lengths[static_cast<size_t>(b)] = lengths_t.data_ptr<int64_t>()[b];
  auto sorted_state = [&](const Tensor& s) {
    return s.defined() && input.sorted_indices().defined() ? s.index_select(1, input.sorted_indices()) : s;
  };
  auto [out, hn, cn] = run_padded(padded, lengths, sorted_state(h0), sorted_state(c0), training, op);
  std::vector<Tensor> steps;
  for (size_t t = 0; t < bs.size(); ++t) steps.push_back(out.select(0, static_cast<int64_t>(t)).narrow(0, 0, bs[t]));
  utils::rnn::PackedSequence packed(cat(steps, 0), input.batch_sizes(), input.sorted_indices(), input.unsorted_indices());
  if (input.unsorted_indices().defined()) {
    hn = hn.index_select(1, input.unsorted_indices());
    if (cn.defined()) cn = cn.index_select(1, input.unsorted_indices());
  }
  return {packed, hn, cn};
}

std::string RNNBase::rnn_extra_repr() const {
  std::string s = std::to_string(config_.input_size) + ", " + std::to_string(config_.hidden_size);
  if (config_.num_layers != 1) s += ", num_layers=" + std::to_string(config_.num_layers);
  if (!config_.bias) s += ", bias=False";
  if (config_.batch_first) s += ", batch_first=True";
  if (config_.dropout != 0) s += ", dropout=" + graft::detail::py_repr(config_.dropout);
  if (config_.bidirectional) s += ", bidirectional=True";
  return s;
}

}  // namespace detail

namespace {
RNNCellType rnn_cell_type(Nonlinearity n, const char* op) {
  GRAFT_CHECK(n == Nonlinearity::Tanh || n == Nonlinearity::ReLU, op, "nonlinearity graft::kTanh or graft::kReLU",
              std::string("graft::k") + nonlinearity_name(n), "");
  return n == Nonlinearity::Tanh ? RNNCellType::kRNNTanh : RNNCellType::kRNNReLU;
}
}  // namespace

RNNImpl::RNNImpl(const RNNOptions& options_) : options(options_) { reset(); }
void RNNImpl::reset() {
  const auto& o = options;
  register_rnn_parameters(*this, {rnn_cell_type(o.nonlinearity(), "RNN"), o.input_size(), o.hidden_size(), o.num_layers(),
                                  o.bias(), o.batch_first(), o.bidirectional(), o.dropout()});
}
std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, Tensor hx) {
  auto [out, hn, cn] = run(input, hx, {}, is_training(), "RNN");
  return {out, hn};
}
std::tuple<utils::rnn::PackedSequence, Tensor> RNNImpl::forward_with_packed_input(const utils::rnn::PackedSequence& packed_input,
                                                                                 Tensor hx) {
  auto [out, hn, cn] = run_packed(packed_input, hx, {}, is_training(), "RNN");
  return {out, hn};
}

LSTMImpl::LSTMImpl(const LSTMOptions& options_) : options(options_) { reset(); }
void LSTMImpl::reset() {
  const auto& o = options;
  GRAFT_CHECK(o.proj_size() == 0, "LSTM", "proj_size 0", "proj_size " + std::to_string(o.proj_size()),
              "graft's LSTM has no projections (docs/porting.md lists the differences)");
  register_rnn_parameters(*this, {RNNCellType::kLSTM, o.input_size(), o.hidden_size(), o.num_layers(), o.bias(),
                                  o.batch_first(), o.bidirectional(), o.dropout()});
}
std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  auto [out, hn, cn] = run(input, hx_opt ? std::get<0>(*hx_opt) : Tensor(), hx_opt ? std::get<1>(*hx_opt) : Tensor(),
                           is_training(), "LSTM");
  return {out, {hn, cn}};
}
std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> LSTMImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  auto [out, hn, cn] = run_packed(packed_input, hx_opt ? std::get<0>(*hx_opt) : Tensor(),
                                  hx_opt ? std::get<1>(*hx_opt) : Tensor(), is_training(), "LSTM");
  return {out, {hn, cn}};
}

GRUImpl::GRUImpl(const GRUOptions& options_) : options(options_) { reset(); }
void GRUImpl::reset() {
  const auto& o = options;
  register_rnn_parameters(*this, {RNNCellType::kGRU, o.input_size(), o.hidden_size(), o.num_layers(), o.bias(),
                                  o.batch_first(), o.bidirectional(), o.dropout()});
}
std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, Tensor hx) {
  auto [out, hn, cn] = run(input, hx, {}, is_training(), "GRU");
  return {out, hn};
}
std::tuple<utils::rnn::PackedSequence, Tensor> GRUImpl::forward_with_packed_input(const utils::rnn::PackedSequence& packed_input,
                                                                                 Tensor hx) {
  auto [out, hn, cn] = run_packed(packed_input, hx, {}, is_training(), "GRU");
  return {out, hn};
}

// ---- cells ----
namespace detail {

void RNNCellBase::register_cell_parameters(Module& owner, RNNCellType cell, int64_t input_size, int64_t hidden_size,
                                           bool bias) {
  GRAFT_CHECK(input_size > 0 && hidden_size > 0, owner.name().c_str(), "input_size and hidden_size > 0",
              std::to_string(input_size) + " and " + std::to_string(hidden_size), "");
  cell_ = cell, input_size_ = input_size, hidden_size_ = hidden_size;
  const int64_t G = gates_of(cell);
  weight_ih = owner.register_parameter("weight_ih", graft::empty({G * hidden_size, input_size}));
  weight_hh = owner.register_parameter("weight_hh", graft::empty({G * hidden_size, hidden_size}));
  bias_ih = owner.register_parameter("bias_ih", bias ? graft::empty({G * hidden_size}) : Tensor(), bias);
  bias_hh = owner.register_parameter("bias_hh", bias ? graft::empty({G * hidden_size}) : Tensor(), bias);
  reset_cell_parameters();
}

void RNNCellBase::reset_cell_parameters() {
  NoGradGuard ng;
  const double stdv = 1.0 / std::sqrt(static_cast<double>(hidden_size_));
  for (Tensor* w : {&weight_ih, &weight_hh, &bias_ih, &bias_hh})
    if (w->defined()) init::uniform_(*w, -stdv, stdv);
}

std::pair<Tensor, Tensor> RNNCellBase::step(const Tensor& input, const Tensor& hx, const Tensor& cx, const char* op) const {
  GRAFT_CHECK(input.defined() && (input.dim() == 1 || input.dim() == 2) && input.size(-1) == input_size_, op,
              "an input (N, " + std::to_string(input_size_) + ") or (" + std::to_string(input_size_) + ")",
              input.defined() ? "an input of shape " + shape_str(input.sizes()) : "an undefined input", "");
  const bool batched = input.dim() == 2;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const int64_t N = x.size(0);
  auto state = [&](const Tensor& s, const char* name) {
    if (!s.defined()) return zeros({N, hidden_size_}, x.options());
    const Tensor b = batched ? s : s.unsqueeze(0);
    GRAFT_CHECK(b.dim() == 2 && b.size(0) == N && b.size(1) == hidden_size_, op,
                std::string(name) + " of shape " + shape_str({N, hidden_size_}), shape_str(s.sizes()), "");
    return b;
  };
  const bool lstm = cell_ == RNNCellType::kLSTM;
  const RNNLayerResult r = rnn_layer(cell_, x.unsqueeze(0), state(hx, "hx"), lstm ? state(cx, "cx") : Tensor(), weight_ih,
                                     weight_hh, bias_ih, bias_hh);
  Tensor h = r.h_n, c = r.c_n;
  if (!batched) {
    h = h.squeeze(0);
    if (c.defined()) c = c.squeeze(0);
  }
  return {h, c};
}

std::string RNNCellBase::cell_extra_repr() const {
  std::string s = std::to_string(input_size_) + ", " + std::to_string(hidden_size_);
  if (!bias_ih.defined()) s += ", bias=False";
  if (cell_ == RNNCellType::kRNNReLU) s += ", nonlinearity=relu";
  return s;
}

}  // namespace detail

RNNCellImpl::RNNCellImpl(const RNNCellOptions& options_) : options(options_) { reset(); }
void RNNCellImpl::reset() {
  register_cell_parameters(*this, rnn_cell_type(options.nonlinearity(), "RNNCell"), options.input_size(),
                           options.hidden_size(), options.bias());
}
Tensor RNNCellImpl::forward(const Tensor& input, Tensor hx) { return step(input, hx, {}, "RNNCell").first; }

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& options_) : options(options_) { reset(); }
void LSTMCellImpl::reset() {
  register_cell_parameters(*this, RNNCellType::kLSTM, options.input_size(), options.hidden_size(), options.bias());
}
std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  auto [h, c] = step(input, hx_opt ? std::get<0>(*hx_opt) : Tensor(), hx_opt ? std::get<1>(*hx_opt) : Tensor(), "LSTMCell");
  return {h, c};
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& options_) : options(options_) { reset(); }
void GRUCellImpl::reset() {
  register_cell_parameters(*this, RNNCellType::kGRU, options.input_size(), options.hidden_size(), options.bias());
}
Tensor GRUCellImpl::forward(const Tensor& input, Tensor hx) { return step(input, hx, {}, "GRUCell").first; }

}  // namespace graft::nn
