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
// op's composite (bn_composite, ln_composite, gn_composite: the forward in graft ops, recomputing
// mean and invstd from x) is differentiated instead (Note [The create_graph policy] in
// src/autograd/composite_backward.h), so double backward differentiates the statistics too.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../autograd/composite_backward.h"
#include "../kernels/normalization.h"
#include "../kernels/values.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace nk = kernels::normalization;

namespace {


void check_param(const Tensor& p, const Tensor& x, IntArrayRef shape, const char* op, const char* what) {
  if (!p.defined()) return;
  GRAFT_CHECK(p.sizes().equals(shape), op, std::string(what) + " of shape " + shape_str(shape),
              std::string(what) + " of shape " + shape_str(p.sizes()) + " for input of shape " + shape_str(x.sizes()), "");
  GRAFT_CHECK(p.dtype() == x.dtype(), op, std::string(what) + " of the input's dtype",
              std::string(what) + " of dtype " + dtype_name(p.dtype()) + " and a " + dtype_name(x.dtype()) + " input",
              std::string("convert it: ") + what + ".to(input.dtype())");
}

void check_input(const Tensor& x, const char* op) {
  GRAFT_CHECK(x.defined(), op, "a defined input", "an undefined tensor", "");
  GRAFT_CHECK(x.is_floating_point(), op, "a floating-point input (float32 or float64)",
              std::string("a ") + dtype_name(x.dtype()) + " input", "convert it: input.to(graft::kFloat32)");
}

// The saved statistics of a normalisation of `like`: the values, or a meta tensor of their count on
// meta inputs (Note [Meta device]: nothing was computed).
Tensor stats_tensor(const std::vector<double>& v, const Tensor& like) {
  return like.is_meta() ? make_empty({static_cast<int64_t>(v.size())}, kFloat64, like.device())
                        : kernels::from_doubles(v);
}

// A kernel's float64 parameter gradient as a tensor of the given dtype and shape, or undefined.
Tensor param_grad(bool need, const std::vector<double>& v, DType dtype, IntArrayRef shape) {
  return need ? kernels::from_doubles(v).to(dtype).reshape(shape) : Tensor();
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

// batch_norm as graft ops: the specification of the kernels, differentiated under create_graph
// (Note [The create_graph policy] in src/autograd/composite_backward.h). Training normalises with
// the batch statistics (biased variance); evaluation with the saved running mean and invstd.
Tensor bn_composite(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& mean_, const Tensor& invstd_,
                    bool training, double eps) {
  const auto dims = bn_dims(x.dim());
  const Shape cs = bn_channel_shape(x.dim(), x.size(1));
  Tensor y;
  if (training) {
    const Tensor xc = x - x.mean(dims, true);
    y = xc * rsqrt((xc * xc).mean(dims, true) + eps);
  } else {
    y = (x - mean_.to(x.dtype()).reshape(cs)) * invstd_.to(x.dtype()).reshape(cs);
  }
  if (w.defined()) y = y * w.reshape(cs);
  if (b.defined()) y = y + b.reshape(cs);
  return y;
}


// ---- layer_norm ----

// layer_norm as graft ops (Note [The create_graph policy]): over the trailing ns dims.
Tensor ln_composite(const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef ns, double eps) {
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - static_cast<int64_t>(ns.size()); d < x.dim(); ++d) dims.push_back(d);
  const Tensor xc = x - x.mean(dims, true);
  Tensor y = xc * rsqrt((xc * xc).mean(dims, true) + eps);
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y;
}


// ---- group_norm ----
// Viewed as (N, G, M) with M = C / G * S values per group; weight and bias are per channel.

// group_norm as graft ops (Note [The create_graph policy]): each group of (N, G, M) normalised.
Tensor gn_composite(const Tensor& x, const Tensor& w, const Tensor& b, int64_t G, double eps) {
  const int64_t N = x.size(0), C = x.size(1), M = x.numel() / std::max<int64_t>(1, N * G);
  const Tensor xs = x.reshape({N, G, M});
  const Tensor xc = xs - xs.mean({2}, true);
  Tensor y = (xc * rsqrt((xc * xc).mean({2}, true) + eps)).reshape(x.sizes());
  const Shape cs = bn_channel_shape(x.dim(), C);
  if (w.defined()) y = y * w.reshape(cs);
  if (b.defined()) y = y + b.reshape(cs);
  return y;
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
    GRAFT_CHECK(rs->sizes().equals(cshape), op, std::string(what) + " of shape " + shape_str(cshape) + " (one per channel)",
                std::string(what) + " of shape " + shape_str(rs->sizes()) + " for input of shape " + shape_str(input.sizes()),
                "pass one value per channel, i.e. input.size(1) values");
    GRAFT_CHECK(rs->is_floating_point(), op, std::string("a floating-point ") + what, std::string("a ") + dtype_name(rs->dtype()) + " " + what,
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
                std::string(running_mean.defined() ? "" : "an undefined running_mean ") +
                    (running_var.defined() ? "" : "an undefined running_var"),
                "pass running statistics, or training=true to normalise with the batch statistics");
  }

  // Statistics (float64, one per channel) and the normalised output.
  const std::vector<double> zeros_c(static_cast<size_t>(C));
  nk::Stats st = training ? nk::group_stats(op, input, N, C, S, eps) : nk::Stats{zeros_c, zeros_c, zeros_c};
  if (!training && !input.is_meta()) {  // Note [Meta device]
    const std::vector<double> rm = kernels::to_doubles(running_mean), rv = kernels::to_doubles(running_var);
    for (size_t c = 0; c < st.mean.size(); ++c) {
      st.mean[c] = rm[c];
      st.invstd[c] = 1.0 / std::sqrt(rv[c] + eps);
    }
  }
  const std::vector<double>&mean = st.mean, &var = st.var, &invstd = st.invstd;
  Tensor y = make_empty(input.sizes(), input.dtype(), input.device());
  nk::batch_norm_forward(input, w, b, st, y);

  // Running statistics: running = (1 - momentum) * running + momentum * batch statistic (unbiased var).
  if (training && (running_mean.defined() || running_var.defined()) && !input.is_meta()) {
    NoGradGuard ng;
    const double mom = momentum.value_or(0.0);
    const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
    std::vector<double> uvar(var);
    for (double& v : uvar) v *= unbias;
    if (running_mean.defined()) {
      Tensor rm = running_mean;
      rm.mul_(1.0 - mom).add_(kernels::from_doubles(mean).to(rm.dtype()), mom);
    }
    if (running_var.defined()) {
      Tensor rv = running_var;
      rv.mul_(1.0 - mom).add_(kernels::from_doubles(uvar).to(rv.dtype()), mom);
    }
  }

  if (auto node = make_node("NativeBatchNormBackward0", OpId::batch_norm, {&input, &w, &b},
                            [training, eps](Node& n, const Tensor& g) -> TensorList {
                              const bool nx = n.needs_input_grad(0), nw = n.needs_input_grad(1),
                                         nb = n.needs_input_grad(2);
                              if (g.is_meta()) return detail::meta_input_grads(n, {n.saved(0), n.saved(1), n.saved(4)});
                              if (GradMode::is_enabled())  // Note [The create_graph policy]
                                return autograd::differentiate_composite(
                                    n, {n.saved(0), n.saved(1), n.saved(4)},
                                    [&](const TensorList& in) {
                                      return bn_composite(in[0], in[1], in[2], n.saved(2), n.saved(3), training, eps);
                                    },
                                    g);
                              const nk::Grads r = nk::batch_norm_backward(g, n.saved(0), n.saved(1), n.saved(2),
                                                                          n.saved(3), training, nx);
                              const Shape cs{n.saved(0).size(1)};
                              return {r.dx, param_grad(nw, r.dweight, g.dtype(), cs),
                                      param_grad(nb, r.dbias, g.dtype(), cs)};
                            })) {
    node->save(input);
    node->save(w);
    node->save(stats_tensor(mean, input));
    node->save(stats_tensor(invstd, input));
    node->save(b);  // for the composite (Note [The create_graph policy])
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

  const nk::Stats st = nk::group_stats(op, input, 1, R, M, eps);
  const std::vector<double>&mean = st.mean, &invstd = st.invstd;
  Tensor y = make_empty(input.sizes(), input.dtype(), input.device());
  nk::layer_norm_forward(input, w, b, st, M, y);

  if (auto node = make_node("NativeLayerNormBackward0", OpId::layer_norm, {&input, &w, &b},
                            [ns, eps](Node& n, const Tensor& g) -> TensorList {
                              const bool nx = n.needs_input_grad(0), nw = n.needs_input_grad(1),
                                         nb = n.needs_input_grad(2);
                              if (g.is_meta()) return detail::meta_input_grads(n, {n.saved(0), n.saved(1), n.saved(4)});
                              if (GradMode::is_enabled())  // Note [The create_graph policy]
                                return autograd::differentiate_composite(
                                    n, {n.saved(0), n.saved(1), n.saved(4)},
                                    [&](const TensorList& in) { return ln_composite(in[0], in[1], in[2], ns, eps); },
                                    g);
                              const nk::Grads r = nk::layer_norm_backward(g, n.saved(0), n.saved(1), n.saved(2),
                                                                          n.saved(3), numel_of(ns), nx);
                              return {r.dx, param_grad(nw, r.dweight, g.dtype(), ns),
                                      param_grad(nb, r.dbias, g.dtype(), ns)};
                            })) {
    node->save(input);
    node->save(w);
    node->save(stats_tensor(mean, input));
    node->save(stats_tensor(invstd, input));
    node->save(b);  // for the composite (Note [The create_graph policy])
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

  const nk::Stats st = nk::group_stats(op, input, 1, N * G, M, eps);
  const std::vector<double>&mean = st.mean, &invstd = st.invstd;
  Tensor y = make_empty(input.sizes(), input.dtype(), input.device());
  nk::group_norm_forward(input, w, b, st, G, y);

  if (auto node = make_node("NativeGroupNormBackward0", OpId::group_norm, {&input, &w, &b},
                            [G, eps](Node& n, const Tensor& g) -> TensorList {
                              const bool nx = n.needs_input_grad(0), nw = n.needs_input_grad(1),
                                         nb = n.needs_input_grad(2);
                              if (g.is_meta()) return detail::meta_input_grads(n, {n.saved(0), n.saved(1), n.saved(4)});
                              if (GradMode::is_enabled())  // Note [The create_graph policy]
                                return autograd::differentiate_composite(
                                    n, {n.saved(0), n.saved(1), n.saved(4)},
                                    [&](const TensorList& in) { return gn_composite(in[0], in[1], in[2], G, eps); }, g);
                              const nk::Grads r =
                                  nk::group_norm_backward(g, n.saved(0), n.saved(1), n.saved(2), n.saved(3), G, nx);
                              const Shape cs{n.saved(0).size(1)};
                              return {r.dx, param_grad(nw, r.dweight, g.dtype(), cs),
                                      param_grad(nb, r.dbias, g.dtype(), cs)};
                            })) {
    node->save(input);
    node->save(w);
    node->save(stats_tensor(mean, input));
    node->save(stats_tensor(invstd, input));
    node->save(b);  // for the composite (Note [The create_graph policy])
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
    GRAFT_CHECK(rs->sizes().equals(Shape{C}), op, std::string(what) + " of shape [" + std::to_string(C) + "] (one per channel)",
                std::string(what) + " of shape " + shape_str(rs->sizes()) + " for input of shape " + shape_str(input.sizes()), "");
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
