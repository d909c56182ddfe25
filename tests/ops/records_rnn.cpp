// Op records: rnn_layer (RNN tanh / relu, LSTM, GRU; forward and reverse; with and without
// lengths) against plain loops in double, with gradcheck of the fused backward through time; and
// plain tests: the fused path against the composite formula in float32, create_graph (the fused
// node differentiates the composite: second derivatives as the composite backend's), and the bytes
// each path saves.
#include <cmath>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

int64_t gates(RNNCellType c) { return c == RNNCellType::kLSTM ? 4 : c == RNNCellType::kGRU ? 3 : 1; }
double sig(double v) { return 1 / (1 + std::exp(-v)); }

// [outputs; h_n; c_n] of one layer by loops: a[0] x (T, N, I), a[1] h0, then (LSTM) c0, then w_ih,
// w_hh, b_ih, b_hh.
Tensor ref_layer(RNNCellType cell, const TensorList& a, const std::vector<int64_t>& lengths, bool reverse) {
  const bool lstm = cell == RNNCellType::kLSTM;
  const size_t o = lstm ? 1 : 0;
  const Tensor &x = a[0], &h0 = a[1], &w_ih = a[2 + o], &w_hh = a[3 + o], &b_ih = a[4 + o], &b_hh = a[5 + o];
  const int64_t T = x.size(0), N = x.size(1), I = x.size(2), H = w_hh.size(1), G = gates(cell);
  const std::vector<double> xv = values(x), wi = values(w_ih), wh = values(w_hh), bi = values(b_ih), bh = values(b_hh);
  std::vector<double> h = values(h0), c = lstm ? values(a[2]) : std::vector<double>(static_cast<size_t>(N * H));
  std::vector<double> out(static_cast<size_t>((T + 2) * N * H), 0.0);
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    std::vector<double> hn = h, cn = c;
    for (int64_t b = 0; b < N; ++b) {
      if (!lengths.empty() && t >= lengths[static_cast<size_t>(b)]) continue;
      std::vector<double> gi(static_cast<size_t>(G * H)), gh(static_cast<size_t>(G * H));
      for (int64_t k = 0; k < G * H; ++k) {
        double si = bi[static_cast<size_t>(k)], sh = bh[static_cast<size_t>(k)];
        for (int64_t j = 0; j < I; ++j) si += wi[static_cast<size_t>(k * I + j)] * xv[static_cast<size_t>((t * N + b) * I + j)];
        for (int64_t j = 0; j < H; ++j) sh += wh[static_cast<size_t>(k * H + j)] * h[static_cast<size_t>(b * H + j)];
        gi[static_cast<size_t>(k)] = si, gh[static_cast<size_t>(k)] = sh;
      }
      for (int64_t j = 0; j < H; ++j) {
        const size_t u = static_cast<size_t>(j), bj = static_cast<size_t>(b * H + j), Hs = static_cast<size_t>(H);
        double v = 0;
        switch (cell) {
          case RNNCellType::kRNNTanh: v = std::tanh(gi[u] + gh[u]); break;
          case RNNCellType::kRNNReLU: v = std::max(0.0, gi[u] + gh[u]); break;
          case RNNCellType::kLSTM: {
            const double i = sig(gi[u] + gh[u]), f = sig(gi[Hs + u] + gh[Hs + u]);
            const double g = std::tanh(gi[2 * Hs + u] + gh[2 * Hs + u]), og = sig(gi[3 * Hs + u] + gh[3 * Hs + u]);
            cn[bj] = f * c[bj] + i * g;
            v = og * std::tanh(cn[bj]);
            break;
          }
          case RNNCellType::kGRU: {
            const double r = sig(gi[u] + gh[u]), z = sig(gi[Hs + u] + gh[Hs + u]);
            const double n = std::tanh(gi[2 * Hs + u] + r * gh[2 * Hs + u]);
            v = (1 - z) * n + z * h[bj];
            break;
          }
        }
        hn[bj] = v;
        out[static_cast<size_t>(t * N * H) + bj] = v;
      }
    }
    h = hn, c = cn;
  }
  std::copy(h.begin(), h.end(), out.begin() + T * N * H);
  if (lstm) std::copy(c.begin(), c.end(), out.begin() + (T + 1) * N * H);
  return make(out, {T + 2, N, H});
}

Tensor call_rnn_layer(RNNCellType cell, const TensorList& a, const std::vector<int64_t>& lengths, bool reverse) {
  const bool lstm = cell == RNNCellType::kLSTM;
  const size_t o = lstm ? 1 : 0;
  const RNNLayerResult r = rnn_layer(cell, a[0], a[1], lstm ? a[2] : Tensor(), a[2 + o], a[3 + o], a[4 + o], a[5 + o], lengths, reverse);
  const Tensor c = lstm ? r.c_n : zeros_like(r.h_n);
  return cat({r.output, r.h_n.unsqueeze(0), c.unsqueeze(0)}, 0);
}

std::vector<ErrorCase> rnn_errors() {
  auto lstm = [](std::vector<int64_t> x, std::vector<int64_t> h0, std::vector<int64_t> wih, std::vector<int64_t> lengths = {}) {
    return [=] {
      rnn_layer(RNNCellType::kLSTM, zeros(x), zeros(h0), zeros({2, 3}), zeros(wih), zeros({12, 3}), zeros({12}), zeros({12}), lengths);
    };
  };
  return {
      {lstm({4, 2, 5}, {2, 3}, {12, 4}), {"rnn_layer", "weight_ih of shape [12, 5]", "[12, 4]", "4 H for the LSTM"}},
      {lstm({4, 2, 5}, {3, 3}, {12, 5}), {"rnn_layer", "h0 of shape [2, 3]", "[3, 3]"}},
      {lstm({4, 5}, {2, 3}, {12, 5}), {"rnn_layer", "(T, N, I)", "[4, 5]"}},
      {lstm({4, 2, 5}, {2, 3}, {12, 5}, {1, 5}), {"rnn_layer", "lengths in [0, 4]", "length 5"}},
      {[] { rnn_layer(RNNCellType::kGRU, zeros({4, 2, 5}, kInt64), zeros({2, 3}), {}, zeros({9, 5}), zeros({9, 3}), {}, {}); },
       {"rnn_layer", "floating-point", "int64"}},
      {[] { rnn_layer(RNNCellType::kGRU, zeros({4, 2, 5}), zeros({2, 3}, kFloat64), {}, zeros({9, 5}), zeros({9, 3}), {}, {}); },
       {"rnn_layer", "input's dtype (float32)", "float64"}},
  };
}

OpRecord rnn_record(RNNCellType cell, std::string variant, std::vector<int64_t> lengths, bool reverse, uint64_t seed) {
  const int64_t T = 4, N = 3, I = 2, H = 3, G = gates(cell);
  SampleSpecs specs{{{{T, N, I}, seed, -1, 1}, {{N, H}, seed + 1, -1, 1}}};
  if (cell == RNNCellType::kLSTM) specs[0].push_back({{N, H}, seed + 2, -1, 1});
  for (std::vector<int64_t> shape : {std::vector<int64_t>{G * H, I}, {G * H, H}, {G * H}, {G * H}})
    specs[0].push_back({shape, seed + 3 + specs[0].size(), -0.8, 0.8});
  return {.name = "rnn_layer",
          .variant = std::move(variant),
          .fn = [=](const TensorList& a) { return call_rnn_layer(cell, a, lengths, reverse); },
          .reference = [=](const TensorList& a) { return ref_layer(cell, a, lengths, reverse); },
          .samples = lazy_samples(specs),
          .atol32 = 1e-5,
          .rtol32 = 1e-4,
          .errors = rnn_errors()};
}

}  // namespace

GRAFT_OP_RECORDS(rnn) {
  std::vector<OpRecord> recs;
  recs.push_back(rnn_record(RNNCellType::kRNNTanh, "rnn_tanh", {}, false, 10));
  recs.push_back(rnn_record(RNNCellType::kRNNReLU, "rnn_relu_reverse", {}, true, 20));
  recs.push_back(rnn_record(RNNCellType::kLSTM, "lstm", {}, false, 30));
  recs.push_back(rnn_record(RNNCellType::kLSTM, "lstm_lengths_reverse", {4, 2, 0}, true, 40));
  recs.push_back(rnn_record(RNNCellType::kGRU, "gru", {}, false, 50));
  recs.push_back(rnn_record(RNNCellType::kGRU, "gru_lengths", {1, 4, 3}, false, 60));
  return recs;
}

namespace {

TensorList layer_inputs(RNNCellType cell, int64_t T, int64_t N, int64_t I, int64_t H, DType dt, uint64_t seed) {
  const int64_t G = gates(cell);
  TensorList a{uniform_sample({T, N, I}, seed, -1, 1).to(dt), uniform_sample({N, H}, seed + 1, -1, 1).to(dt)};
  if (cell == RNNCellType::kLSTM) a.push_back(uniform_sample({N, H}, seed + 2, -1, 1).to(dt));
  a.push_back(uniform_sample({G * H, I}, seed + 3, -0.3, 0.3).to(dt));
  a.push_back(uniform_sample({G * H, H}, seed + 4, -0.3, 0.3).to(dt));
  a.push_back(uniform_sample({G * H}, seed + 5, -0.3, 0.3).to(dt));
  a.push_back(uniform_sample({G * H}, seed + 6, -0.3, 0.3).to(dt));
  for (auto& t : a) t.requires_grad_();
  return a;
}

TEST(RNNLayer, FusedMatchesTheCompositeFormulaInFloat32) {
  for (RNNCellType cell : {RNNCellType::kRNNTanh, RNNCellType::kRNNReLU, RNNCellType::kLSTM, RNNCellType::kGRU})
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(cell)) + (reverse ? " reverse" : ""));
      const TensorList a = layer_inputs(cell, 9, 5, 7, 16, kFloat32, 70);
      const std::vector<int64_t> lengths{9, 3, 0, 7, 1};
      const Tensor g = uniform_sample({11, 5, 16}, 80, -1, 1).to(kFloat32);
      std::vector<Tensor> outs[2], grads[2];
      for (int k = 0; k < 2; ++k) {
        RNNBackendGuard guard(k == 0 ? RNNBackend::kFused : RNNBackend::kComposite);
        for (Tensor t : a) t.mutable_grad() = Tensor();
        Tensor y = call_rnn_layer(cell, a, lengths, reverse);
        y.backward(g);
        outs[k].push_back(y.detach());
        for (const auto& t : a) grads[k].push_back(t.grad());
      }
      EXPECT_TRUE(all_close(outs[0][0], outs[1][0], 1e-5, 1e-5));
      for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(all_close(grads[0][i], grads[1][i], 1e-5, 1e-4)) << "input " << i;
    }
}

// Without biases (the fused GRU cell then adds a zero recurrent bias, as the formula's + 0 does).
TEST(RNNLayer, FusedMatchesTheCompositeFormulaWithoutBiasesInFloat32) {
  for (RNNCellType cell : {RNNCellType::kLSTM, RNNCellType::kGRU}) {
    SCOPED_TRACE(std::to_string(static_cast<int>(cell)));
    const TensorList a = layer_inputs(cell, 6, 3, 5, 16, kFloat32, 75);
    const bool lstm = cell == RNNCellType::kLSTM;
    const size_t o = lstm ? 1 : 0;
    const Tensor g = uniform_sample({6, 3, 16}, 85, -1, 1).to(kFloat32);
    std::vector<Tensor> outs[2], grads[2];
    for (int k = 0; k < 2; ++k) {
      RNNBackendGuard guard(k == 0 ? RNNBackend::kFused : RNNBackend::kComposite);
      for (Tensor t : a) t.mutable_grad() = Tensor();
      const RNNLayerResult r =
          rnn_layer(cell, a[0], a[1], lstm ? a[2] : Tensor(), a[2 + o], a[3 + o], Tensor(), Tensor(), {}, false);
      r.output.backward(g);
      outs[k].push_back(r.output.detach());
      for (size_t i = 0; i < 4 + o; ++i) grads[k].push_back(a[i].grad());
    }
    EXPECT_TRUE(all_close(outs[0][0], outs[1][0], 1e-5, 1e-5));
    for (size_t i = 0; i < grads[0].size(); ++i) EXPECT_TRUE(all_close(grads[0][i], grads[1][i], 1e-5, 1e-4)) << "input " << i;
  }
}

// Under create_graph the fused node differentiates the composite (Note [The create_graph policy]):
// its second derivatives pass gradgradcheck (finite differences of the first derivatives, in
// float64) and equal the composite backend's, with lengths and in reverse.
TEST(RNNLayer, FusedBackwardIsDifferentiableTwiceAsTheComposite) {
  for (RNNCellType cell : {RNNCellType::kLSTM, RNNCellType::kGRU, RNNCellType::kRNNTanh}) {
    const TensorList a = layer_inputs(cell, 3, 2, 2, 3, kFloat64, 90);
    auto f = [cell](const TensorList& in) { return call_rnn_layer(cell, in, {3, 2}, true); };
    EXPECT_TRUE(autograd::gradgradcheck(f, a)) << "cell " << static_cast<int>(cell);
    // d/dx of sum(d L / d w_hh . v), fused against composite.
    TensorList second;
    for (RNNBackend backend : {RNNBackend::kFused, RNNBackend::kComposite}) {
      RNNBackendGuard guard(backend);
      const Tensor y = f(a);
      const size_t w_hh = cell == RNNCellType::kLSTM ? 4 : 3;
      const Tensor gw = autograd::grad({(y * y).sum()}, {a[w_hh]}, {}, true, /*create_graph=*/true)[0];
      second.push_back(autograd::grad({(gw * gw).sum()}, {a[0]})[0]);
    }
    EXPECT_TRUE(all_close(second[0], second[1], 1e-12, 1e-10)) << "cell " << static_cast<int>(cell);
  }
}

// The fused layer saves its inputs, the gates and the states; the composite formula every
// intermediate that its ops keep (measured here: 544 KiB against the fused layer's 490 KiB).
TEST(RNNLayer, FusedSavesLessThanTheComposite) {
  auto saved = [](RNNBackend backend) {
    RNNBackendGuard guard(backend);
    const TensorList a = layer_inputs(RNNCellType::kLSTM, 32, 8, 16, 64, kFloat32, 100);
    Tensor w = ones({1}).requires_grad_();
    const Tensor x = a[0] * w;  // a non-leaf input, as inside a model
    const auto before = memory::stats()[memory::Category::SavedActivations].current_bytes;
    const RNNLayerResult r = rnn_layer(RNNCellType::kLSTM, x, a[1], a[2], a[3], a[4], a[5], a[6]);
    const auto bytes = memory::stats()[memory::Category::SavedActivations].current_bytes - before;
    r.output.sum().backward();
    return bytes;
  };
  const int64_t fused = saved(RNNBackend::kFused), composite = saved(RNNBackend::kComposite);
  const int64_t T = 32, N = 8, H = 64, I = 16;
  // Exactly x, h0, c0, the two weights, the two biases (kept for create_graph's composite: Note [The
  // create_graph policy]), the output block (T + 2 rows), the gates (4 H) and the cell states.
  EXPECT_EQ(fused, 4 * (T * N * I + 2 * N * H + 4 * H * (I + H) + 2 * 4 * H + (T + 2) * N * H + T * N * 4 * H +
                        T * N * H));
  EXPECT_GT(composite, fused);
}

}  // namespace
}  // namespace graft::test
