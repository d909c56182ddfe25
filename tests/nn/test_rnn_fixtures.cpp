// RNN, LSTM, GRU, their cells and packed sequences against PyTorch 1.13: outputs, final states and
// the gradients of every input and named parameter; and 20-step Adam trajectories of a tiny LSTM and
// a tiny Transformer in float64, to 1e-8 relative. tests/fixtures/rnn_fixtures.txt is written by
// tests/fixtures/gen_rnn_fixtures.py; this test needs no PyTorch. Layers run with the fused kernels
// and with the composite formula.
#include <gtest/gtest.h>

#include "../support/fixture_file.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

int64_t num(const FixtureCase& c, const std::string& k, int64_t fallback) {
  return c.params.count(k) ? static_cast<int64_t>(c.number(k)) : fallback;
}
bool flag(const FixtureCase& c, const std::string& k, bool fallback = false) {
  return c.params.count(k) ? c.flag(k) : fallback;
}
Nonlinearity nonlinearity(const FixtureCase& c) {
  return c.params.count("nonlinearity") && c.param("nonlinearity") == "relu" ? kReLU : kTanh;
}

template <class Opts>
Opts layer_options(const FixtureCase& c) {
  Opts o(num(c, "input_size", 0), num(c, "hidden_size", 0));
  o.num_layers(num(c, "num_layers", 1)).bias(flag(c, "bias", true)).batch_first(flag(c, "batch_first"));
  o.bidirectional(flag(c, "bidirectional"));
  return o;
}

Tensor get(const std::map<std::string, Tensor>& in, const std::string& k) { return in.count(k) ? in.at(k) : Tensor(); }

struct Outputs {
  Tensor out, h_n, c_n;
};

Outputs run_layer(const FixtureCase& c, nn::Module& m, const std::map<std::string, Tensor>& in) {
  const Tensor x = in.at("x"), h0 = get(in, "h0"), c0 = get(in, "c0");
  const bool packed = flag(c, "packed"), batch_first = flag(c, "batch_first");
  nn::utils::rnn::PackedSequence px;
  if (packed)
    px = nn::utils::rnn::pack_padded_sequence(x, c.tensor("in.lengths").to(kInt64), batch_first,
                                              flag(c, "enforce_sorted", true));
  auto unpack = [&](const nn::utils::rnn::PackedSequence& p) {
    return std::get<0>(nn::utils::rnn::pad_packed_sequence(p, batch_first));
  };
  if (c.kind == "lstm") {
    auto& lstm = dynamic_cast<nn::LSTMImpl&>(m);
    std::optional<std::tuple<Tensor, Tensor>> hx;
    if (h0.defined()) hx = std::make_tuple(h0, c0);
    if (packed) {
      auto [out, state] = lstm.forward_with_packed_input(px, hx);
      return {unpack(out), std::get<0>(state), std::get<1>(state)};
    }
    auto [out, state] = lstm.forward(x, hx);
    return {out, std::get<0>(state), std::get<1>(state)};
  }
  auto run = [&](auto& layer) -> Outputs {
    if (packed) {
      auto [out, hn] = layer.forward_with_packed_input(px, h0);
      return {unpack(out), hn, {}};
    }
    auto [out, hn] = layer.forward(x, h0);
    return {out, hn, {}};
  };
  if (c.kind == "gru") return run(dynamic_cast<nn::GRUImpl&>(m));
  return run(dynamic_cast<nn::RNNImpl&>(m));
}

std::shared_ptr<nn::Module> build(const FixtureCase& c) {
  const int64_t I = num(c, "input_size", 0), H = num(c, "hidden_size", 0);
  if (c.kind == "rnn") return nn::RNN(layer_options<nn::RNNOptions>(c).nonlinearity(nonlinearity(c))).ptr();
  if (c.kind == "lstm") return nn::LSTM(layer_options<nn::LSTMOptions>(c)).ptr();
  if (c.kind == "gru") return nn::GRU(layer_options<nn::GRUOptions>(c)).ptr();
  if (c.kind == "rnn_cell") return nn::RNNCell(nn::RNNCellOptions(I, H).nonlinearity(nonlinearity(c))).ptr();
  if (c.kind == "lstm_cell") return nn::LSTMCell(I, H).ptr();
  if (c.kind == "gru_cell") return nn::GRUCell(I, H).ptr();
  throw std::runtime_error("unknown kind " + c.kind);
}

Outputs run_cell(const FixtureCase& c, nn::Module& m, const std::map<std::string, Tensor>& in) {
  const Tensor x = in.at("x"), h0 = get(in, "h0"), c0 = get(in, "c0");
  if (c.kind == "lstm_cell") {
    std::optional<std::tuple<Tensor, Tensor>> hx;
    if (h0.defined()) hx = std::make_tuple(h0, c0);
    auto [h, cc] = dynamic_cast<nn::LSTMCellImpl&>(m).forward(x, hx);
    return {h, {}, cc};
  }
  if (c.kind == "gru_cell") return {dynamic_cast<nn::GRUCellImpl&>(m).forward(x, h0), {}, {}};
  return {dynamic_cast<nn::RNNCellImpl&>(m).forward(x, h0), {}, {}};
}

void run_case(const FixtureCase& c) {
  std::shared_ptr<nn::Module> m = build(c);
  m->to(kFloat64);
  copy_parameters(*m, c);
  std::map<std::string, Tensor> in;
  for (const char* k : {"x", "h0", "c0"})
    if (c.has(std::string("in.") + k)) in[k] = c.tensor(std::string("in.") + k).clone().requires_grad_();
  const bool cell = c.kind.find("_cell") != std::string::npos;
  const Outputs o = cell ? run_cell(c, *m, in) : run_layer(c, *m, in);
  constexpr double tol = 1e-10;
  EXPECT_TRUE(all_close(o.out, c.tensor("out"), tol, tol)) << "out";
  Tensor loss = (o.out * c.tensor("grad_output")).sum();
  if (c.has("out.h_n")) {
    EXPECT_TRUE(all_close(o.h_n, c.tensor("out.h_n"), tol, tol)) << "h_n";
    loss = loss + (o.h_n * c.tensor("grad_h_n")).sum();
  }
  if (c.has("out.c_n")) {
    EXPECT_TRUE(all_close(o.c_n, c.tensor("out.c_n"), tol, tol)) << "c_n";
    loss = loss + (o.c_n * c.tensor("grad_c_n")).sum();
  }
  loss.backward();
  for (const auto& [k, t] : in) EXPECT_TRUE(all_close(t.grad(), c.tensor("grad.in." + k), tol, tol)) << "grad of " << k;
  expect_parameter_grads(*m, c, tol);
}

// The models of gen_rnn_fixtures.py's trajectories, with PyTorch's parameter names.
struct TinyLSTMImpl : nn::Module {
  TinyLSTMImpl() {
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(3, 4).num_layers(2)));
    head = register_module("head", nn::Linear(4, 2));
  }
  Tensor forward(const Tensor& x) { return head->forward(std::get<0>(lstm->forward(x))); }
  nn::LSTM lstm = nullptr;
  nn::Linear head = nullptr;
};
struct TinyTransformerImpl : nn::Module {
  TinyTransformerImpl() {
    layer = register_module(
        "layer", nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(8).dropout(0.0)));
    head = register_module("head", nn::Linear(4, 2));
  }
  Tensor forward(const Tensor& x) {
    return head->forward(
        layer->forward(x, nn::TransformerImpl::generate_square_subsequent_mask(x.size(0)).to(kFloat64)));
  }
  nn::TransformerEncoderLayer layer = nullptr;
  nn::Linear head = nullptr;
};

template <class M>
void run_trajectory(const FixtureCase& c) {
  auto model = std::make_shared<M>();
  model->to(kFloat64);
  copy_parameters(*model, c);
  optim::Adam opt(model->parameters(), optim::AdamOptions(0.01));
  const Tensor x = c.tensor("in.x"), y = c.tensor("in.y");
  std::vector<double> losses;
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    Tensor loss = (model->forward(x) - y).pow(2).mean();
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  EXPECT_TRUE(all_close(make(losses, {20}), c.tensor("loss"), 0, 1e-8)) << "losses";
  for (const auto& item : model->named_parameters())
    EXPECT_TRUE(all_close(item.value(), c.tensor("final." + item.key()), 1e-12, 1e-8)) << "final " << item.key();
}

TEST(RNNFixtures, LayersCellsAndPackedSequencesMatchPyTorch) {
  const auto cases = load_fixture_cases("rnn_fixtures.txt");
  ASSERT_EQ(cases.size(), 15u);
  for (RNNBackend backend : {RNNBackend::kFused, RNNBackend::kComposite}) {
    RNNBackendGuard guard(backend);
    for (const auto& c : cases) {
      if (c.kind.rfind("adam_", 0) == 0) continue;
      SCOPED_TRACE(c.name + (backend == RNNBackend::kFused ? " (fused)" : " (composite)"));
      run_case(c);
    }
  }
}

TEST(RNNFixtures, AdamTrajectoriesOfATinyLSTMAndATinyTransformerMatchPyTorch) {
  for (const auto& c : load_fixture_cases("rnn_fixtures.txt")) {
    SCOPED_TRACE(c.name);
    if (c.kind == "adam_lstm") run_trajectory<TinyLSTMImpl>(c);
    if (c.kind == "adam_transformer") run_trajectory<TinyTransformerImpl>(c);
  }
}

}  // namespace
}  // namespace graft::test
