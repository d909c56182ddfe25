// The fused recurrent layer's kernels (src/kernels/rnn.h) called directly, float32 and float64,
// against a plain loop written here in double: the forward through time of an LSTM and a GRU (the
// post-nonlinearity gates, the states, the LSTM's cell states, the GRU's W_hn h + b_hn) and the
// steps of the backward through time (the gate gradients dG_x and dG_h, dh0, dc0), derived here by
// the chain rule from the cell formulas. Cases: forward and reverse, variable lengths (a length 0
// and a full one among them: inactive steps copy the state and pass the gradient through), the GRU
// with and without its recurrent bias, and an empty sequence (T = 0: h0's and c0's gradients are
// gY's h_n and c_n rows). length_mask against its definition.
//
// Tolerances: float64 agrees to rounding (1e-12); float32 (the vectorised sigmoid and tanh, sums in
// float) to 2e-5 relative, the values being of order 1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../src/kernels/rnn.h"
#include "../support/test_util.h"

namespace graft::test {

// File-local helpers (a named namespace: Note [Unity test builds] in tests/CMakeLists.txt).
namespace rnn_kernels_ref {

namespace rk = kernels::rnn;
using Vec = std::vector<double>;

Vec random_values(int64_t n, uint64_t seed, double spread) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-spread, spread);
  Vec v(static_cast<size_t>(n));
  for (double& x : v) x = u(rng);
  return v;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct Case {
  rk::Cell cell;
  int64_t T, N, H;
  std::vector<int64_t> lengths;  // empty: every step active
  bool reverse;
  bool gru_bias;
};

// The inputs, in double (rounded to float first when the kernel runs in float32, so that both sides
// see the same values).
struct Inputs {
  Vec gx, h0, c0, w_hh, b_hh, gY;  // (T, N, G H), (N, H), (N, H), (G H, H), (G H) or empty, (T + 2, N, H)
};

struct RefForward {
  Vec gates, hs, cs, ghn;  // (T, N, G H), (T, N, H) x 3
};

struct RefBackward {
  Vec dgx, dgh, dh0, dc0;  // (T N, G H) x 2, (N, H) x 2
};

int64_t gates_of(rk::Cell c) { return c == rk::Cell::kLSTM ? 4 : c == rk::Cell::kGRU ? 3 : 1; }

bool active(const Case& c, int64_t t, int64_t b) {
  return c.lengths.empty() || t < c.lengths[static_cast<size_t>(b)];
}

// The step taken s-th (s = 0 first): t, and the step whose state it reads (-1: h0, c0).
int64_t step_of(const Case& c, int64_t s) { return c.reverse ? c.T - 1 - s : s; }
int64_t prev_of(const Case& c, int64_t s) {
  if (s == 0) return -1;
  return c.reverse ? step_of(c, s) + 1 : step_of(c, s) - 1;
}

RefForward ref_forward(const Case& c, const Inputs& in) {
  const int64_t T = c.T, N = c.N, H = c.H, GH = gates_of(c.cell) * H;
  const bool lstm = c.cell == rk::Cell::kLSTM;
  RefForward r{Vec(static_cast<size_t>(T * N * GH)), Vec(static_cast<size_t>(T * N * H)),
               Vec(static_cast<size_t>(T * N * H)), Vec(static_cast<size_t>(T * N * H))};
  auto at = [](const Vec& v, int64_t i) { return v[static_cast<size_t>(i)]; };
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = step_of(c, s), tp = prev_of(c, s);
    for (int64_t b = 0; b < N; ++b) {
      // h_prev, c_prev of this sequence
      Vec hp(static_cast<size_t>(H)), cp(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        hp[static_cast<size_t>(j)] = tp < 0 ? at(in.h0, b * H + j) : at(r.hs, (tp * N + b) * H + j);
        if (lstm) cp[static_cast<size_t>(j)] = tp < 0 ? at(in.c0, b * H + j) : at(r.cs, (tp * N + b) * H + j);
      }
      const int64_t row = (t * N + b) * H;
      if (!active(c, t, b)) {
        for (int64_t j = 0; j < H; ++j) {
          r.hs[static_cast<size_t>(row + j)] = hp[static_cast<size_t>(j)];
          if (lstm) r.cs[static_cast<size_t>(row + j)] = cp[static_cast<size_t>(j)];
        }
        continue;  // gates and ghn stay 0
      }
      // gh[k] = sum_j h_prev[j] W_hh[k, j]
      Vec gh(static_cast<size_t>(GH), 0.0);
      for (int64_t k = 0; k < GH; ++k)
        for (int64_t j = 0; j < H; ++j)
          gh[static_cast<size_t>(k)] += hp[static_cast<size_t>(j)] * at(in.w_hh, k * H + j);
      auto pre = [&](int64_t k) { return at(in.gx, (t * N + b) * GH + k) + gh[static_cast<size_t>(k)]; };
      double* gt = r.gates.data() + (t * N + b) * GH;
      for (int64_t j = 0; j < H; ++j) {
        const auto J = static_cast<size_t>(j);
        if (lstm) {
          const double i = sigmoid(pre(j)), f = sigmoid(pre(H + j)), g = std::tanh(pre(2 * H + j)),
                       o = sigmoid(pre(3 * H + j));
          gt[j] = i, gt[H + j] = f, gt[2 * H + j] = g, gt[3 * H + j] = o;
          const double cn = f * cp[J] + i * g;
          r.cs[static_cast<size_t>(row + j)] = cn;
          r.hs[static_cast<size_t>(row + j)] = o * std::tanh(cn);
        } else {  // GRU: r, z, n; the recurrent bias inside r (W_hn h + b_hn)
          auto bias = [&](int64_t k) { return in.b_hh.empty() ? 0.0 : at(in.b_hh, k); };
          const double rr = sigmoid(pre(j) + bias(j)), z = sigmoid(pre(H + j) + bias(H + j));
          const double ghn = gh[static_cast<size_t>(2 * H + j)] + bias(2 * H + j);
          const double n = std::tanh(at(in.gx, (t * N + b) * GH + 2 * H + j) + rr * ghn);
          gt[j] = rr, gt[H + j] = z, gt[2 * H + j] = n;
          r.ghn[static_cast<size_t>(row + j)] = ghn;
          r.hs[static_cast<size_t>(row + j)] = (1 - z) * n + z * hp[J];
        }
      }
    }
  }
  return r;
}

// Backpropagation through the reference forward: dh, dc start at gY's h_n, c_n rows; step t adds its
// output's gradient gY[t] to dh when active.
RefBackward ref_backward(const Case& c, const Inputs& in, const RefForward& f) {
  const int64_t T = c.T, N = c.N, H = c.H, GH = gates_of(c.cell) * H;
  const bool lstm = c.cell == rk::Cell::kLSTM;
  RefBackward r{Vec(static_cast<size_t>(T * N * GH), 0.0), Vec(static_cast<size_t>(T * N * GH), 0.0), {}, {}};
  auto at = [](const Vec& v, int64_t i) { return v[static_cast<size_t>(i)]; };
  Vec dh(in.gY.begin() + T * N * H, in.gY.begin() + (T + 1) * N * H);
  Vec dc(in.gY.begin() + (T + 1) * N * H, in.gY.begin() + (T + 2) * N * H);
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = step_of(c, s), tp = prev_of(c, s);
    Vec dh_prev = dh;  // inactive rows: the gradient passes through
    for (int64_t b = 0; b < N; ++b) {
      if (!active(c, t, b)) continue;  // dG 0, dc unchanged
      const double* gt = f.gates.data() + (t * N + b) * GH;
      double* dgx = r.dgx.data() + (t * N + b) * GH;
      double* dgh = r.dgh.data() + (t * N + b) * GH;
      for (int64_t j = 0; j < H; ++j) {
        const double dht = at(dh, b * H + j) + at(in.gY, (t * N + b) * H + j);
        const double hp = tp < 0 ? at(in.h0, b * H + j) : at(f.hs, (tp * N + b) * H + j);
        if (lstm) {
          const double i = gt[j], ff = gt[H + j], g = gt[2 * H + j], o = gt[3 * H + j];
          const double cp = tp < 0 ? at(in.c0, b * H + j) : at(f.cs, (tp * N + b) * H + j);
          const double tc = std::tanh(at(f.cs, (t * N + b) * H + j));
          const double dct = at(dc, b * H + j) + dht * o * (1 - tc * tc);  // h = o tanh(c)
          dgx[j] = dct * g * i * (1 - i);              // c = f c_prev + i g
          dgx[H + j] = dct * cp * ff * (1 - ff);
          dgx[2 * H + j] = dct * i * (1 - g * g);
          dgx[3 * H + j] = dht * tc * o * (1 - o);
          for (int64_t k = 0; k < 4; ++k) dgh[k * H + j] = dgx[k * H + j];  // pre = gx + gh
          dc[static_cast<size_t>(b * H + j)] = dct * ff;
          dh_prev[static_cast<size_t>(b * H + j)] = 0;
        } else {
          const double rr = gt[j], z = gt[H + j], n = gt[2 * H + j];
          const double ghn = at(f.ghn, (t * N + b) * H + j);
          const double dn_pre = dht * (1 - z) * (1 - n * n);    // h = (1 - z) n + z h_prev
          const double dz_pre = dht * (hp - n) * z * (1 - z);
          const double dr_pre = dn_pre * ghn * rr * (1 - rr);   // n = tanh(gx_n + r ghn)
          dgx[j] = dr_pre, dgx[H + j] = dz_pre, dgx[2 * H + j] = dn_pre;
          dgh[j] = dr_pre, dgh[H + j] = dz_pre, dgh[2 * H + j] = dn_pre * rr;
          dh_prev[static_cast<size_t>(b * H + j)] = dht * z;
        }
      }
      // dh_prev[j] += sum_k dG_h[k] W_hh[k, j]
      for (int64_t j = 0; j < H; ++j)
        for (int64_t k = 0; k < GH; ++k) dh_prev[static_cast<size_t>(b * H + j)] += dgh[k] * at(in.w_hh, k * H + j);
    }
    dh = dh_prev;
  }
  r.dh0 = dh;
  r.dc0 = dc;
  return r;
}

Vec rounded_to(const Vec& v, DType dt) {
  if (dt == kFloat64) return v;
  Vec r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = static_cast<double>(static_cast<float>(v[i]));
  return r;
}

void run_case(const Case& c, DType dt) {
  const int64_t T = c.T, N = c.N, H = c.H, G = gates_of(c.cell), GH = G * H;
  const bool lstm = c.cell == rk::Cell::kLSTM, gru = c.cell == rk::Cell::kGRU;
  Inputs in;
  in.gx = rounded_to(random_values(T * N * GH, 1, 1.5), dt);
  in.h0 = rounded_to(random_values(N * H, 2, 0.8), dt);
  if (lstm) in.c0 = rounded_to(random_values(N * H, 3, 0.8), dt);
  in.w_hh = rounded_to(random_values(GH * H, 4, 0.5), dt);
  if (gru && c.gru_bias) in.b_hh = rounded_to(random_values(GH, 5, 0.5), dt);
  in.gY = rounded_to(random_values((T + 2) * N * H, 6, 1.0), dt);
  const RefForward rf = ref_forward(c, in);
  const RefBackward rb = ref_backward(c, in, rf);

  const double tol = dt == kFloat64 ? 1e-12 : 2e-5;
  rk::Dims d;
  d.T = T, d.N = N, d.I = 0, d.H = H, d.G = G;
  rk::Buffers bf;
  bf.h0 = make(in.h0, {N, H}, dt);
  if (lstm) bf.c0 = make(in.c0, {N, H}, dt);
  bf.w_hh = make(in.w_hh, {GH, H}, dt);
  bf.gates = make_empty({T, N, GH}, dt);
  bf.hs = make_empty({T, N, H}, dt);
  if (lstm) bf.cs = make_empty({T, N, H}, dt);
  if (gru) bf.ghn = make_empty({T, N, H}, dt);
  const Tensor gx = make(in.gx, {T, N, GH}, dt);
  const Tensor b_hh = in.b_hh.empty() ? Tensor() : make(in.b_hh, {GH}, dt);
  rk::forward(c.cell, d, bf, gx, b_hh, c.lengths, c.reverse);
  EXPECT_TRUE(all_close(bf.gates, rf.gates, {T, N, GH}, tol, tol)) << "gates";
  EXPECT_TRUE(all_close(bf.hs, rf.hs, {T, N, H}, tol, tol)) << "hs";
  if (lstm) {
    EXPECT_TRUE(all_close(bf.cs, rf.cs, {T, N, H}, tol, tol)) << "cs";
  }
  if (gru) {
    EXPECT_TRUE(all_close(bf.ghn, rf.ghn, {T, N, H}, tol, tol)) << "ghn";
  }

  // The backward reads the kernel's own forward buffers, as the op's node does.
  const Tensor gY = make(in.gY, {T + 2, N, H}, dt);
  Tensor dgx = make_empty({T * N, GH}, dt), dgh = gru ? make_empty({T * N, GH}, dt) : dgx;
  Tensor dh0 = make_empty({N, H}, dt), dc0 = lstm ? make_empty({N, H}, dt) : Tensor();
  rk::backward(c.cell, d, bf, gY, c.lengths, c.reverse, dgx, dgh, dh0, dc0);
  EXPECT_TRUE(all_close(dgx, rb.dgx, {T * N, GH}, tol, tol)) << "dgx";
  if (gru) {
    EXPECT_TRUE(all_close(dgh, rb.dgh, {T * N, GH}, tol, tol)) << "dgh";
  }
  EXPECT_TRUE(all_close(dh0, rb.dh0, {N, H}, tol, tol)) << "dh0";
  if (lstm) {
    EXPECT_TRUE(all_close(dc0, rb.dc0, {N, H}, tol, tol)) << "dc0";
  }
}

std::vector<Case> cases(rk::Cell cell) {
  // H 19: the float32 cells' vector loops and their tails.
  return {{cell, 5, 3, 19, {}, false, true},
          {cell, 5, 3, 19, {}, true, true},
          {cell, 6, 4, 19, {6, 2, 0, 4}, false, true},
          {cell, 6, 4, 19, {6, 2, 0, 4}, true, false},
          {cell, 0, 2, 5, {}, false, true}};
}

}  // namespace rnn_kernels_ref

TEST(RnnKernels, LstmForwardAndBackwardThroughTime) {
  using namespace rnn_kernels_ref;
  for (DType dt : {kFloat64, kFloat32})
    for (const Case& c : cases(rk::Cell::kLSTM)) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " T " + std::to_string(c.T) + (c.reverse ? " reverse" : "") +
                   (c.lengths.empty() ? "" : " lengths"));
      run_case(c, dt);
    }
}

TEST(RnnKernels, GruForwardAndBackwardThroughTime) {
  using namespace rnn_kernels_ref;
  for (DType dt : {kFloat64, kFloat32})
    for (const Case& c : cases(rk::Cell::kGRU)) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " T " + std::to_string(c.T) + (c.reverse ? " reverse" : "") +
                   (c.lengths.empty() ? "" : " lengths") + (c.gru_bias ? "" : " no bias"));
      run_case(c, dt);
    }
}

TEST(RnnKernels, LengthMask) {
  using namespace rnn_kernels_ref;
  const std::vector<int64_t> lengths = {3, 0, 1, 5};
  Tensor mask = make_empty({4, 4, 1}, kBool);
  rk::length_mask(mask, 1, 4, lengths);  // steps 1 .. 4
  const Vec got = values(mask);
  for (int64_t s = 0; s < 4; ++s)
    for (int64_t b = 0; b < 4; ++b)
      EXPECT_EQ(got[static_cast<size_t>(s * 4 + b)], 1 + s < lengths[static_cast<size_t>(b)] ? 1.0 : 0.0)
          << "step " << 1 + s << ", sequence " << b;
  Tensor none = make_empty({0, 4, 1}, kBool);
  rk::length_mask(none, 0, 0, lengths);  // no steps: writes nothing
  EXPECT_EQ(none.numel(), 0);
}

}  // namespace graft::test
