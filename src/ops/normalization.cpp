// Normalisation: batch_norm (input (N, C, *)), layer_norm (over the trailing normalized_shape dims)
// and group_norm (over groups of channels), float32 / float64, with fused forward and backward
// kernels; instance_norm is batch_norm over the input viewed as (1, N C, *), as in ATen.
//
// Note [Normalisation kernels]
// Forward: one pass per channel (batch_norm) or row (layer_norm) accumulates, in double, the sums
// of d = x - K and d^2 for a shift K = the first element (the shifted-data algorithm: exact for any
// K, and free of the cancellation of sum(x^2) - sum(x)^2 / n when the values sit far from 0). Then
// mean = K + sum(d) / n, var = (sum(d^2) - sum(d)^2 / n) / n (biased) and y = (x - mean) * invstd *
// weight + bias. Backward, with xhat = (x - mean) * invstd and dxhat = dy * weight, over the n
// values normalised together (a channel, or a row):
//   dx      = invstd / n * (n * dxhat - sum(dxhat) - xhat * sum(dxhat * xhat))   (batch statistics)
//   dx      = dxhat * invstd                                                    (running statistics)
//   dweight = sum(dy * xhat),  dbias = sum(dy)          (over everything but the weight's dims)
// The batch-statistics dx is d/dx of y through mean and var: d mean / dx = 1/n and d var / dx =
// 2 (x - mean) / n, so dxhat's projection on 1 and on xhat is removed.
// The fused kernel runs when backward does not record (create_graph=false). Under create_graph the
// same formulas are composed of graft ops, recomputing mean and invstd from x, so double backward
// differentiates them.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../core/dispatch.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace {

std::string str(const char* s) { return s; }

void check_param(const Tensor& p, const Tensor& x, IntArrayRef shape, const char* op, const char* what) {
  if (!p.defined()) return;
  GRAFT_CHECK(p.sizes().equals(shape), op, str(what) + " of shape " + shape_str(shape),
              str(what) + " of shape " + shape_str(p.sizes()) + " for input of shape " + shape_str(x.sizes()), "");
  GRAFT_CHECK(p.dtype() == x.dtype(), op, str(what) + " of the input's dtype",
              str(what) + " of dtype " + dtype_name(p.dtype()) + " and a " + dtype_name(x.dtype()) + " input",
              str("convert it: ") + what + ".to(input.dtype())");
}

void check_input(const Tensor& x, const char* op) {
  GRAFT_CHECK(x.defined(), op, "a defined input", "an undefined tensor", "");
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
}

// Per-group statistics of `groups` groups of n values each, the values of group g being
// x[(o * groups + g) * inner + i] for o < outer, i < inner (n = outer * inner).
template <class T>
void group_stats(const T* x, int64_t outer, int64_t groups, int64_t inner, double eps, double* mean, double* var,
                 double* invstd) {
  const double n = static_cast<double>(outer * inner);
  for (int64_t g = 0; g < groups; ++g) {
    const double K = static_cast<double>(x[g * inner]);
    double s = 0, sq = 0;
    for (int64_t o = 0; o < outer; ++o) {
      const T* row = x + (o * groups + g) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const double d = static_cast<double>(row[i]) - K;
        s += d;
        sq += d * d;
      }
    }
    mean[g] = K + s / n;
    var[g] = std::max(0.0, (sq - s * s / n) / n);
    invstd[g] = 1.0 / std::sqrt(var[g] + eps);
  }
}

std::vector<double> to_doubles(const Tensor& t) {
  NoGradGuard ng;
  const Tensor d = t.detach().to(kFloat64).contiguous();
  const double* p = d.data_ptr<double>();
  return {p, p + d.numel()};
}

// The saved statistics of a normalisation of `like`: the values, or a meta tensor of their count on
// meta inputs (Note [Meta device]: nothing was computed).
Tensor vec_tensor(const std::vector<double>& v);
Tensor stats_tensor(const std::vector<double>& v, const Tensor& like) {
  return like.is_meta() ? make_empty({static_cast<int64_t>(v.size())}, kFloat64, like.device()) : vec_tensor(v);
}

Tensor vec_tensor(const std::vector<double>& v) {
  Tensor t = make_empty({static_cast<int64_t>(v.size())}, kFloat64);
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t;
}

// ---- batch_norm ----

// Which dims batch_norm reduces (all but 1), and the (1, C, 1, ...) shape a channel vector broadcasts as.
std::vector<int64_t> bn_dims(int64_t rank) {
  std::vector<int64_t> d{0};
  for (int64_t i = 2; i < rank; ++i) d.push_back(i);
  return d;
}
Shape bn_channel_shape(int64_t rank, int64_t C) {
  Shape s;
  for (int64_t i = 0; i < rank; ++i) s.push_back(i == 1 ? C : 1);
  return s;
}

// Backward of batch_norm composed of graft ops (for create_graph; Note [Normalisation kernels]).
TensorList bn_backward_composite(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean_,
                                 const Tensor& invstd_, bool training, double eps, bool need_x, bool need_w,
                                 bool need_b) {
  const auto dims = bn_dims(x.dim());
  const Shape cs = bn_channel_shape(x.dim(), x.size(1));
  Tensor inv, xhat;
  if (training) {
    const Tensor xc = x - x.mean(dims, true);
    inv = rsqrt((xc * xc).mean(dims, true) + eps);
    xhat = xc * inv;
  } else {
    inv = invstd_.to(x.dtype()).reshape(cs);
    xhat = (x - mean_.to(x.dtype()).reshape(cs)) * inv;
  }
  Tensor dx, dw, db;
  if (need_x) {
    const Tensor dxhat = w.defined() ? g * w.reshape(cs) : g;
    dx = training ? inv * (dxhat - dxhat.mean(dims, true) - xhat * (dxhat * xhat).mean(dims, true)) : dxhat * inv;
  }
  if (need_w) dw = (g * xhat).sum(dims);
  if (need_b) db = g.sum(dims);
  return {dx, dw, db};
}

// The fused backward kernel.
TensorList bn_backward_fused(const Tensor& g_, const Tensor& x_, const Tensor& w_, const Tensor& mean_,
                             const Tensor& invstd_, bool training, bool need_x, bool need_w, bool need_b) {
  NoGradGuard ng;
  const Tensor g = g_.detach().contiguous(), x = x_.detach().contiguous();
  const Tensor w = w_.defined() ? w_.detach().contiguous() : Tensor();
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(1, N * C);
  const double n = static_cast<double>(N * S);
  const double* mean = mean_.data_ptr<double>();
  const double* invstd = invstd_.data_ptr<double>();
  Tensor dx = need_x ? make_empty(x.sizes(), x.dtype()) : Tensor();
  std::vector<double> dw(static_cast<size_t>(C)), db(static_cast<size_t>(C));
  kernels::dispatch_floating(x.dtype(), "batch_norm", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* pw = w.defined() ? static_cast<const T*>(w.data_ptr()) : nullptr;
    for (int64_t c = 0; c < C; ++c) {
      const double m = mean[c], inv = invstd[c];
      double sum_dy = 0, sum_dy_xhat = 0;
      for (int64_t b = 0; b < N; ++b) {
        const int64_t off = (b * C + c) * S;
        for (int64_t s = 0; s < S; ++s) {
          const double dy = static_cast<double>(pg[off + s]);
          sum_dy += dy;
          sum_dy_xhat += dy * (static_cast<double>(px[off + s]) - m);
        }
      }
      sum_dy_xhat *= inv;
      dw[static_cast<size_t>(c)] = sum_dy_xhat;
      db[static_cast<size_t>(c)] = sum_dy;
      if (!need_x) continue;
      T* pdx = dx.data_ptr<T>();
      const double scale = (pw ? static_cast<double>(pw[c]) : 1.0) * inv;
      // training: dx = scale * (dy - sum_dy / n - xhat * sum_dy_xhat / n)
      const double a = training ? sum_dy / n : 0.0, k = training ? sum_dy_xhat / n * inv : 0.0;
      for (int64_t b = 0; b < N; ++b) {
        const int64_t off = (b * C + c) * S;
        for (int64_t s = 0; s < S; ++s)
          pdx[off + s] = static_cast<T>(
              scale * (static_cast<double>(pg[off + s]) - a - (static_cast<double>(px[off + s]) - m) * k));
      }
    }
  });
  return {dx, need_w ? vec_tensor(dw).to(x.dtype()) : Tensor(), need_b ? vec_tensor(db).to(x.dtype()) : Tensor()};
}

// ---- layer_norm ----

TensorList ln_backward_composite(const Tensor& g, const Tensor& x, const Tensor& w, IntArrayRef ns, double eps,
                                 bool need_x, bool need_w, bool need_b) {
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - static_cast<int64_t>(ns.size()); d < x.dim(); ++d) dims.push_back(d);
  const Tensor xc = x - x.mean(dims, true);
  const Tensor inv = rsqrt((xc * xc).mean(dims, true) + eps);
  const Tensor xhat = xc * inv;
  Tensor dx, dw, db;
  if (need_x) {
    const Tensor dxhat = w.defined() ? g * w : g;
    dx = inv * (dxhat - dxhat.mean(dims, true) - xhat * (dxhat * xhat).mean(dims, true));
  }
  if (need_w) dw = sum_to(g * xhat, ns);
  if (need_b) db = sum_to(g, ns);
  return {dx, dw, db};
}

TensorList ln_backward_fused(const Tensor& g_, const Tensor& x_, const Tensor& w_, const Tensor& mean_,
                             const Tensor& invstd_, IntArrayRef ns, bool need_x, bool need_w, bool need_b) {
  NoGradGuard ng;
  const Tensor g = g_.detach().contiguous(), x = x_.detach().contiguous();
  const Tensor w = w_.defined() ? w_.detach().contiguous() : Tensor();
  const int64_t M = numel_of(ns), R = M == 0 ? 0 : x.numel() / M;
  const double* mean = mean_.data_ptr<double>();
  const double* invstd = invstd_.data_ptr<double>();
  Tensor dx = need_x ? make_empty(x.sizes(), x.dtype()) : Tensor();
  std::vector<double> dw(static_cast<size_t>(M)), db(static_cast<size_t>(M)), dxhat(static_cast<size_t>(M));
  kernels::dispatch_floating(x.dtype(), "layer_norm", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* pw = w.defined() ? static_cast<const T*>(w.data_ptr()) : nullptr;
    for (int64_t r = 0; r < R; ++r) {
      const T* xr = px + r * M;
      const T* gr = pg + r * M;
      const double m = mean[r], inv = invstd[r];
      double sum_dxhat = 0, sum_dxhat_xhat = 0;
      for (int64_t i = 0; i < M; ++i) {
        const double dy = static_cast<double>(gr[i]), xhat = (static_cast<double>(xr[i]) - m) * inv;
        const double d = pw ? dy * static_cast<double>(pw[i]) : dy;
        dxhat[static_cast<size_t>(i)] = d;
        sum_dxhat += d;
        sum_dxhat_xhat += d * xhat;
        dw[static_cast<size_t>(i)] += dy * xhat;
        db[static_cast<size_t>(i)] += dy;
      }
      if (!need_x) continue;
      T* dr = dx.data_ptr<T>() + r * M;
      const double nn = static_cast<double>(M);
      for (int64_t i = 0; i < M; ++i) {
        const double xhat = (static_cast<double>(xr[i]) - m) * inv;
        dr[i] = static_cast<T>(inv / nn * (nn * dxhat[static_cast<size_t>(i)] - sum_dxhat - xhat * sum_dxhat_xhat));
      }
    }
  });
  Tensor tw, tb;
  if (need_w) tw = vec_tensor(dw).to(x.dtype()).reshape(ns);
  if (need_b) tb = vec_tensor(db).to(x.dtype()).reshape(ns);
  return {dx, tw, tb};
}

// ---- group_norm ----
// Viewed as (N, G, M) with M = C / G * S values per group; weight and bias are per channel.

TensorList gn_backward_composite(const Tensor& g, const Tensor& x, const Tensor& w, int64_t G, double eps,
                                 bool need_x, bool need_w, bool need_b) {
  const int64_t N = x.size(0), C = x.size(1), M = x.numel() / std::max<int64_t>(1, N * G);
  const Tensor xs = x.reshape({N, G, M});
  const Tensor xc = xs - xs.mean({2}, true);
  const Tensor inv = rsqrt((xc * xc).mean({2}, true) + eps);
  const Tensor xhat = xc * inv;  // (N, G, M)
  const Shape cs = bn_channel_shape(x.dim(), C);
  Tensor dx, dw, db;
  if (need_x) {
    const Tensor dxhat = (w.defined() ? g * w.reshape(cs) : g).reshape({N, G, M});
    dx = (inv * (dxhat - dxhat.mean({2}, true) - xhat * (dxhat * xhat).mean({2}, true))).reshape(x.sizes());
  }
  if (need_w) dw = (g * xhat.reshape(x.sizes())).sum(bn_dims(x.dim()));
  if (need_b) db = g.sum(bn_dims(x.dim()));
  return {dx, dw, db};
}

TensorList gn_backward_fused(const Tensor& g_, const Tensor& x_, const Tensor& w_, const Tensor& mean_,
                             const Tensor& invstd_, int64_t G, bool need_x, bool need_w, bool need_b) {
  NoGradGuard ng;
  const Tensor g = g_.detach().contiguous(), x = x_.detach().contiguous();
  const Tensor w = w_.defined() ? w_.detach().contiguous() : Tensor();
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(1, N * C), Cg = C / G;
  const double M = static_cast<double>(Cg * S);
  const double* mean = mean_.data_ptr<double>();
  const double* invstd = invstd_.data_ptr<double>();
  Tensor dx = need_x ? make_empty(x.sizes(), x.dtype()) : Tensor();
  std::vector<double> dw(static_cast<size_t>(C)), db(static_cast<size_t>(C));
  kernels::dispatch_floating(x.dtype(), "group_norm", [&]<class T>() {
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* pg = static_cast<const T*>(g.data_ptr());
    const T* pw = w.defined() ? static_cast<const T*>(w.data_ptr()) : nullptr;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t gr = 0; gr < G; ++gr) {
        const double m = mean[n * G + gr], inv = invstd[n * G + gr];
        const int64_t base = (n * C + gr * Cg) * S;
        double sum_dxhat = 0, sum_dxhat_xhat = 0;
        for (int64_t c = gr * Cg; c < (gr + 1) * Cg; ++c) {
          const double wc = pw ? static_cast<double>(pw[c]) : 1.0;
          const int64_t off = (n * C + c) * S;
          for (int64_t s = 0; s < S; ++s) {
            const double dy = static_cast<double>(pg[off + s]), xhat = (static_cast<double>(px[off + s]) - m) * inv;
            sum_dxhat += dy * wc;
            sum_dxhat_xhat += dy * wc * xhat;
            dw[static_cast<size_t>(c)] += dy * xhat;
            db[static_cast<size_t>(c)] += dy;
          }
        }
        if (!need_x) continue;
        T* pdx = dx.data_ptr<T>() + base;
        for (int64_t j = 0; j < Cg * S; ++j) {
          const double wc = pw ? static_cast<double>(pw[gr * Cg + j / S]) : 1.0;
          const double xhat = (static_cast<double>(px[base + j]) - m) * inv;
          pdx[j] = static_cast<T>(inv / M * (M * static_cast<double>(pg[base + j]) * wc - sum_dxhat - xhat * sum_dxhat_xhat));
        }
      }
    }
  });
  return {dx, need_w ? vec_tensor(dw).to(x.dtype()) : Tensor(), need_b ? vec_tensor(db).to(x.dtype()) : Tensor()};
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, std::optional<double> momentum, double eps) {
  const char* op = "batch_norm";
  const detail::MetaOpScope meta_scope(op, {&input, &weight, &bias, &running_mean, &running_var});  // Note [Meta device]
  check_input(input, op);
  GRAFT_CHECK(input.dim() >= 2, op, "an input of shape (N, C) or (N, C, *) with at least 2 dims",
              "input of shape " + shape_str(input.sizes()), "add a batch dim with input.unsqueeze(0)");
  const int64_t N = input.size(0), C = input.size(1);
  const Shape cshape{C};
  const Tensor& w = weight;
  const Tensor& b = bias;
  check_param(w, input, cshape, op, "weight");
  check_param(b, input, cshape, op, "bias");
  for (const Tensor* rs : {&running_mean, &running_var}) {
    const char* what = rs == &running_mean ? "running_mean" : "running_var";
    if (!rs->defined()) continue;
    GRAFT_CHECK(rs->sizes().equals(cshape), op, str(what) + " of shape " + shape_str(cshape) + " (one per channel)",
                str(what) + " of shape " + shape_str(rs->sizes()) + " for input of shape " + shape_str(input.sizes()),
                "pass one value per channel, i.e. input.size(1) values");
    GRAFT_CHECK(rs->is_floating_point(), op, str("a floating-point ") + what, str("a ") + dtype_name(rs->dtype()) + " " + what,
                "convert it to the input's dtype, e.g. .to(graft::kFloat32)");
  }
  const int64_t S = C == 0 || N == 0 ? 0 : input.numel() / (N * C);
  const int64_t count = N * S;
  if (training) {
    GRAFT_CHECK(count > 1, op, "more than 1 value per channel when training",
                "input of shape " + shape_str(input.sizes()) + " (" + std::to_string(count) + " value per channel)",
                "use a larger batch, or evaluation mode (training=false)");
    GRAFT_CHECK(!running_mean.defined() || !running_var.defined() || momentum.has_value(), op,
                "a momentum to update the running statistics with", "momentum = nullopt",
                "pass a momentum (the BatchNorm modules turn nullopt into a cumulative average)");
  } else {
    GRAFT_CHECK(running_mean.defined() && running_var.defined(), op,
                "running_mean and running_var in evaluation mode (training=false)",
                str(running_mean.defined() ? "" : "an undefined running_mean ") +
                    (running_var.defined() ? "" : "an undefined running_var"),
                "pass running statistics, or training=true to normalise with the batch statistics");
  }

  // Statistics (float64, one per channel) and the normalised output.
  std::vector<double> mean(static_cast<size_t>(C)), var(static_cast<size_t>(C)), invstd(static_cast<size_t>(C));
  const Tensor x = input.detach().contiguous();
  Tensor y = make_empty(input.sizes(), input.dtype(), input.device());
  if (!input.is_meta()) kernels::dispatch_floating(input.dtype(), op, [&]<class T>() {  // Note [Meta device]
    const T* px = static_cast<const T*>(x.data_ptr());
    if (training) {
      if (count > 0) group_stats<T>(px, N, C, S, eps, mean.data(), var.data(), invstd.data());
    } else {
      const std::vector<double> rm = to_doubles(running_mean), rv = to_doubles(running_var);
      for (size_t c = 0; c < mean.size(); ++c) {
        mean[c] = rm[c];
        invstd[c] = 1.0 / std::sqrt(rv[c] + eps);
      }
    }
    T* py = y.data_ptr<T>();
    const Tensor wc = w.defined() ? w.detach().contiguous() : Tensor(), bc = b.defined() ? b.detach().contiguous() : Tensor();
    const T* pw = wc.defined() ? static_cast<const T*>(wc.data_ptr()) : nullptr;
    const T* pb = bc.defined() ? static_cast<const T*>(bc.data_ptr()) : nullptr;
    for (int64_t c = 0; c < C; ++c) {
      const double m = mean[static_cast<size_t>(c)];
      const double scale = invstd[static_cast<size_t>(c)] * (pw ? static_cast<double>(pw[c]) : 1.0);
      const double shift = pb ? static_cast<double>(pb[c]) : 0.0;
      for (int64_t n = 0; n < N; ++n) {
        const int64_t off = (n * C + c) * S;
        for (int64_t s = 0; s < S; ++s)
          py[off + s] = static_cast<T>((static_cast<double>(px[off + s]) - m) * scale + shift);
      }
    }
  });

  // Running statistics: running = (1 - momentum) * running + momentum * batch statistic (unbiased var).
  if (training && (running_mean.defined() || running_var.defined()) && !input.is_meta()) {
    NoGradGuard ng;
    const double mom = momentum.value_or(0.0);
    const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
    std::vector<double> uvar(var);
    for (double& v : uvar) v *= unbias;
    if (running_mean.defined()) {
      Tensor rm = running_mean;
      rm.mul_(1.0 - mom).add_(vec_tensor(mean).to(rm.dtype()), mom);
    }
    if (running_var.defined()) {
      Tensor rv = running_var;
      rv.mul_(1.0 - mom).add_(vec_tensor(uvar).to(rv.dtype()), mom);
    }
  }

  if (auto node = make_node("NativeBatchNormBackward0", OpId::batch_norm, {&input, &w, &b},
                            [training, eps](Node& n, const Tensor& g) -> TensorList {
                              const bool nx = n.needs_input_grad(0), nw = n.needs_input_grad(1),
                                         nb = n.needs_input_grad(2);
                              if (GradMode::is_enabled() || g.is_meta())  // meta: shapes through graft ops
                                return bn_backward_composite(g, n.saved(0), n.saved(1), n.saved(2), n.saved(3),
                                                             training, eps, nx, nw, nb);
                              return bn_backward_fused(g, n.saved(0), n.saved(1), n.saved(2), n.saved(3), training,
                                                       nx, nw, nb);
                            })) {
    node->save(input);
    node->save(w);
    node->save(stats_tensor(mean, input));
    node->save(stats_tensor(invstd, input));
    set_history(y, node);
  }
  return y;
}

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  const char* op = "layer_norm";
  const detail::MetaOpScope meta_scope(op, {&input, &weight, &bias});  // Note [Meta device]
  check_input(input, op);
  const std::vector<int64_t> ns = normalized_shape.vec();  // owned: the backward captures it
  const int64_t D = static_cast<int64_t>(ns.size());
  GRAFT_CHECK(D >= 1, op, "a non-empty normalized_shape", "normalized_shape []",
              "pass the trailing dims to normalise, e.g. {input.size(-1)}");
  bool match = input.dim() >= D;
  for (int64_t i = 0; match && i < D; ++i) match = input.size(input.dim() - D + i) == ns[static_cast<size_t>(i)];
  GRAFT_CHECK(match, op, "an input of shape [*, " + shape_str(ns).substr(1) + " (normalized_shape " + shape_str(ns) + ")",
              "input of shape " + shape_str(input.sizes()), "normalized_shape names the input's trailing dims");
  const Tensor& w = weight;
  const Tensor& b = bias;
  check_param(w, input, ns, op, "weight");
  check_param(b, input, ns, op, "bias");
  const int64_t M = numel_of(ns), R = M == 0 ? 0 : input.numel() / M;

  std::vector<double> mean(static_cast<size_t>(R)), var(static_cast<size_t>(R)), invstd(static_cast<size_t>(R));
  const Tensor x = input.detach().contiguous();
  Tensor y = make_empty(input.sizes(), input.dtype(), input.device());
  if (!input.is_meta()) kernels::dispatch_floating(input.dtype(), op, [&]<class T>() {  // Note [Meta device]
    const T* px = static_cast<const T*>(x.data_ptr());
    T* py = y.data_ptr<T>();
    if (M > 0) group_stats<T>(px, 1, R, M, eps, mean.data(), var.data(), invstd.data());
    const Tensor wc = w.defined() ? w.detach().contiguous() : Tensor(), bc = b.defined() ? b.detach().contiguous() : Tensor();
    const T* pw = wc.defined() ? static_cast<const T*>(wc.data_ptr()) : nullptr;
    const T* pb = bc.defined() ? static_cast<const T*>(bc.data_ptr()) : nullptr;
    for (int64_t r = 0; r < R; ++r) {
      const double m = mean[static_cast<size_t>(r)], inv = invstd[static_cast<size_t>(r)];
      for (int64_t i = 0; i < M; ++i) {
        double v = (static_cast<double>(px[r * M + i]) - m) * inv;
        if (pw) v *= static_cast<double>(pw[i]);
        if (pb) v += static_cast<double>(pb[i]);
        py[r * M + i] = static_cast<T>(v);
      }
    }
  });

  if (auto node = make_node("NativeLayerNormBackward0", OpId::layer_norm, {&input, &w, &b},
                            [ns, eps](Node& n, const Tensor& g) -> TensorList {
                              const bool nx = n.needs_input_grad(0), nw = n.needs_input_grad(1),
                                         nb = n.needs_input_grad(2);
                              if (GradMode::is_enabled() || g.is_meta())  // meta: shapes through graft ops
                                return ln_backward_composite(g, n.saved(0), n.saved(1), ns, eps, nx, nw, nb);
                              return ln_backward_fused(g, n.saved(0), n.saved(1), n.saved(2), n.saved(3), ns, nx, nw,
                                                       nb);
                            })) {
    node->save(input);
    node->save(w);
    node->save(stats_tensor(mean, input));
    node->save(stats_tensor(invstd, input));
    set_history(y, node);
  }
  return y;
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps,
                  bool /*cudnn_enabled*/) {
  const char* op = "group_norm";
  const detail::MetaOpScope meta_scope(op, {&input, &weight, &bias});  // Note [Meta device]
  check_input(input, op);
  GRAFT_CHECK(input.dim() >= 2, op, "an input of shape (N, C, *) with at least 2 dims",
              "input of shape " + shape_str(input.sizes()), "add a batch dim with input.unsqueeze(0)");
  const int64_t N = input.size(0), C = input.size(1), G = num_groups;
  GRAFT_CHECK(G > 0, op, "a positive num_groups", "num_groups " + std::to_string(G), "");
  GRAFT_CHECK(C % G == 0, op, "a channel count divisible by num_groups",
              std::to_string(C) + " channels (input of shape " + shape_str(input.sizes()) + ") in " + std::to_string(G) +
                  " groups",
              "pick num_groups dividing input.size(1)");
  const Tensor& w = weight;
  const Tensor& b = bias;
  check_param(w, input, Shape{C}, op, "weight");
  check_param(b, input, Shape{C}, op, "bias");
  const int64_t S = N * C == 0 ? 0 : input.numel() / (N * C), Cg = C / G, M = Cg * S;

  std::vector<double> mean(static_cast<size_t>(N * G)), var(static_cast<size_t>(N * G)),
      invstd(static_cast<size_t>(N * G));
  const Tensor x = input.detach().contiguous();
  Tensor y = make_empty(input.sizes(), input.dtype(), input.device());
  if (!input.is_meta()) kernels::dispatch_floating(input.dtype(), op, [&]<class T>() {  // Note [Meta device]
    const T* px = static_cast<const T*>(x.data_ptr());
    T* py = y.data_ptr<T>();
    if (M > 0) group_stats<T>(px, 1, N * G, M, eps, mean.data(), var.data(), invstd.data());
    const Tensor wc = w.defined() ? w.detach().contiguous() : Tensor(), bc = b.defined() ? b.detach().contiguous() : Tensor();
    const T* pw = wc.defined() ? static_cast<const T*>(wc.data_ptr()) : nullptr;
    const T* pb = bc.defined() ? static_cast<const T*>(bc.data_ptr()) : nullptr;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const auto k = static_cast<size_t>(n * G + c / Cg);
        const double scale = invstd[k] * (pw ? static_cast<double>(pw[c]) : 1.0), shift = pb ? static_cast<double>(pb[c]) : 0.0;
        const int64_t off = (n * C + c) * S;
        for (int64_t s = 0; s < S; ++s)
          py[off + s] = static_cast<T>((static_cast<double>(px[off + s]) - mean[k]) * scale + shift);
      }
  });

  if (auto node = make_node("NativeGroupNormBackward0", OpId::group_norm, {&input, &w, &b},
                            [G, eps](Node& n, const Tensor& g) -> TensorList {
                              const bool nx = n.needs_input_grad(0), nw = n.needs_input_grad(1),
                                         nb = n.needs_input_grad(2);
                              if (GradMode::is_enabled() || g.is_meta())  // meta: shapes through graft ops
                                return gn_backward_composite(g, n.saved(0), n.saved(1), G, eps, nx, nw, nb);
                              return gn_backward_fused(g, n.saved(0), n.saved(1), n.saved(2), n.saved(3), G, nx, nw,
                                                       nb);
                            })) {
    node->save(input);
    node->save(w);
    node->save(stats_tensor(mean, input));
    node->save(stats_tensor(invstd, input));
    set_history(y, node);
  }
  return y;
}

// As ATen: the input viewed as (1, N C, *) goes through batch_norm (its fused kernels, saved
// statistics and analytic backward), each (sample, channel) pair being one batch_norm channel;
// weight, bias and the running statistics are repeated per sample, and the updated running
// statistics are averaged back over the samples.
Tensor instance_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool use_input_stats, double momentum, double eps,
                     bool /*cudnn_enabled*/) {
  const char* op = "instance_norm";
  const detail::MetaOpScope meta_scope(op, {&input, &weight, &bias, &running_mean, &running_var});  // Note [Meta device]
  check_input(input, op);
  GRAFT_CHECK(input.dim() >= 2, op, "an input of shape (N, C, *) with at least 2 dims",
              "input of shape " + shape_str(input.sizes()), "add a batch dim with input.unsqueeze(0)");
  const int64_t N = input.size(0), C = input.size(1);
  check_param(weight, input, Shape{C}, op, "weight");
  check_param(bias, input, Shape{C}, op, "bias");
  for (const Tensor* rs : {&running_mean, &running_var}) {
    const char* what = rs == &running_mean ? "running_mean" : "running_var";
    if (!rs->defined()) continue;
    GRAFT_CHECK(rs->sizes().equals(Shape{C}), op, str(what) + " of shape [" + std::to_string(C) + "] (one per channel)",
                str(what) + " of shape " + shape_str(rs->sizes()) + " for input of shape " + shape_str(input.sizes()), "");
  }
  GRAFT_CHECK(use_input_stats || (running_mean.defined() && running_var.defined()), op,
              "running_mean and running_var when use_input_stats is false", "undefined running statistics",
              "pass running statistics, or use_input_stats=true");
  const int64_t S = N * C == 0 ? 0 : input.numel() / (N * C);
  if (use_input_stats)
    GRAFT_CHECK(S > 1, op, "more than 1 spatial element per channel when using the input statistics",
                "input of shape " + shape_str(input.sizes()), "");
  Shape bn_shape = input.sizes();
  bn_shape[0] = 1;
  bn_shape[1] = N * C;
  const auto per_sample = [&](const Tensor& t) {
    return t.defined() ? t.unsqueeze(0).expand({N, C}).reshape({N * C}) : Tensor();
  };
  Tensor rm, rv;
  {
    NoGradGuard ng;
    if (running_mean.defined()) rm = per_sample(running_mean).clone();
    if (running_var.defined()) rv = per_sample(running_var).clone();
  }
  const Tensor out = batch_norm(input.reshape(bn_shape), per_sample(weight), per_sample(bias), rm, rv, use_input_stats,
                                momentum, eps);
  if (use_input_stats) {
    NoGradGuard ng;
    if (running_mean.defined()) Tensor(running_mean).copy_(rm.view({N, C}).mean({0}));
    if (running_var.defined()) Tensor(running_var).copy_(rv.view({N, C}).mean({0}));
  }
  return out.reshape(input.sizes());
}

}  // namespace graft
