// scaled_dot_product_attention: the checks and shape rule, the choice of backend
// (graft/ops/attention.h), the plain formula as graft ops, and the memory-efficient kernel's node
// (the kernel itself: src/kernels/attention.cpp, Note [Memory-efficient attention]).
//
// Shapes: query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev); the kernel sees
// the leading dims flattened into B = prod(...).
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "../autograd/composite_backward.h"
#include "../kernels/attention.h"
#include "autocast_internal.h"
#include "graft/core/generator.h"
#include "graft/core/memory.h"
#include "graft/ops/attention.h"
#include "graft/ops/autocast.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

namespace attn = kernels::attention;
using autograd::Node;
using autograd::set_history;

namespace {

constexpr const char* kAttentionOp = "scaled_dot_product_attention";

struct BackendState {
  SDPBackend backend = SDPBackend::kDefault;
  int64_t q_tile = 0, kv_tile = 0;
};
thread_local BackendState t_backend;

std::string str(const char* s) { return s; }

// The call, checked and normalised; shared by the forward and the node's backward. Its kernel
// options (attn::Options): mask, the additive mask (0 / -inf for a bool mask) in the scores' dtype,
// or undefined; batch, the leading dims; causal, scale, dropout_p, seed and the tile sizes.
struct Call : attn::Options {
  int64_t B = 1, L = 0, S = 0, E = 0, Ev = 0;
};

void check_inputs(const Tensor& q, const Tensor& k, const Tensor& v) {
  for (const auto& [t, name] : {std::pair{&q, "query"}, {&k, "key"}, {&v, "value"}}) {
    GRAFT_CHECK(t->defined(), kAttentionOp, str("a defined ") + name, "an undefined tensor", "");
    GRAFT_CHECK(t->dim() >= 2, kAttentionOp, str(name) + " of at least 2 dims (..., length, features)",
                str(name) + " of shape " + shape_str(t->sizes()), "unsqueeze(0) a single vector");
    GRAFT_CHECK(t->is_floating_point(), kAttentionOp, str("a floating-point ") + name,
                str("a ") + dtype_name(t->dtype()) + " " + name, "convert it: .to(graft::kFloat32)");
  }
  GRAFT_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), kAttentionOp, "query, key and value of one dtype",
              str(dtype_name(q.dtype())) + ", " + dtype_name(k.dtype()) + " and " + dtype_name(v.dtype()),
              "convert them to one dtype with .to(...)");
  GRAFT_CHECK(q.dim() == k.dim() && q.dim() == v.dim(), kAttentionOp, "query, key and value of the same rank",
              shape_str(q.sizes()) + ", " + shape_str(k.sizes()) + " and " + shape_str(v.sizes()),
              "give all three the same leading (batch, head) dims");
  const int64_t n = q.dim();
  bool same_batch = true;
  for (int64_t d = 0; d < n - 2; ++d) same_batch = same_batch && q.size(d) == k.size(d) && q.size(d) == v.size(d);
  GRAFT_CHECK(same_batch, kAttentionOp, "query, key and value with equal leading dims (..., L or S, features)",
              shape_str(q.sizes()) + ", " + shape_str(k.sizes()) + " and " + shape_str(v.sizes()),
              "expand() the smaller ones (heads are a leading dim, not broadcast)");
  GRAFT_CHECK(k.size(-1) == q.size(-1), kAttentionOp, "key's last dim equal to query's (E = " + std::to_string(q.size(-1)) + ")",
              "key of shape " + shape_str(k.sizes()), "query and key must share the feature size E");
  GRAFT_CHECK(k.size(-2) == v.size(-2), kAttentionOp, "key and value of one length S",
              "key of shape " + shape_str(k.sizes()) + " and value of shape " + shape_str(v.sizes()),
              "key and value come in pairs: dim -2 is the source length");
}

// The attention mask as additive scores broadcastable to (..., L, S).
Tensor additive_mask(const Tensor& m, const Tensor& q, const Shape& scores) {
  GRAFT_CHECK(m.dtype() == kBool || m.dtype() == q.dtype(), kAttentionOp, "attn_mask of dtype bool or the query's (" +
              str(dtype_name(q.dtype())) + ")", str("attn_mask of dtype ") + dtype_name(m.dtype()),
              "a bool mask marks the keys that take part (true); a float mask is added to the scores");
  bool broadcasts = m.dim() <= static_cast<int64_t>(scores.size());
  for (int64_t i = 1; broadcasts && i <= m.dim(); ++i)
    broadcasts = m.size(-i) == 1 || m.size(-i) == scores[scores.size() - static_cast<size_t>(i)];
  GRAFT_CHECK(broadcasts, kAttentionOp, "attn_mask broadcastable to the scores' shape " + shape_str(scores),
              "attn_mask of shape " + shape_str(m.sizes()),
              "the scores are (..., L, S); a key-padding mask of shape (N, S) needs .view({N, 1, 1, S})");
  return m.dtype() == kBool ? detail::attention_additive_mask(m, q.dtype()) : m;
}

Call make_call(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& attn_mask,
               double dropout_p, bool is_causal, std::optional<double> scale) {
  check_inputs(q, k, v);
  Call c;
  const int64_t n = q.dim();
  c.batch.assign(IntArrayRef(q.sizes().data(), static_cast<size_t>(n - 2)));
  c.B = numel_of(c.batch);
  c.L = q.size(-2), c.S = k.size(-2), c.E = q.size(-1), c.Ev = v.size(-1);
  GRAFT_CHECK(dropout_p >= 0 && dropout_p <= 1, kAttentionOp, "dropout_p in [0, 1]", "dropout_p = " + std::to_string(dropout_p),
              "dropout_p is the probability of dropping an attention weight; pass 0 in evaluation");
  const bool has_mask = attn_mask && attn_mask->defined();
  GRAFT_CHECK(!(has_mask && is_causal), kAttentionOp, "either attn_mask or is_causal", "both",
              "fold the causal mask into attn_mask, or drop attn_mask");
  if (has_mask) {
    Shape scores = c.batch;
    scores.push_back(c.L);
    scores.push_back(c.S);
    c.mask = additive_mask(*attn_mask, q, scores);
  }
  c.causal = is_causal;
  c.scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(c.E));
  c.dropout_p = dropout_p;
  if (dropout_p > 0) {
    Generator& g = default_generator();
    std::lock_guard<std::mutex> lock(g.mutex());
    c.seed = g.random64();
  }
  c.q_tile = t_backend.q_tile;
  c.kv_tile = t_backend.kv_tile;
  return c;
}

// The dropout multiplier keep / (1 - p) of every (b, i, j), as the kernel draws it, shaped like
// the scores; undefined without dropout.
Tensor dropout_scale(const Call& c, DType dtype) {
  if (c.dropout_p == 0) return {};
  Shape shape = c.batch;
  shape.push_back(c.L);
  shape.push_back(c.S);
  Tensor keep = make_empty(shape, kBool);  // meta inside the op's MetaOpScope: no draw
  if (!keep.is_meta()) attn::keep_mask(c.seed, c.dropout_p, keep);
  const double kept = c.dropout_p < 1 ? 1.0 / (1.0 - c.dropout_p) : 0.0;
  return keep.to(dtype) * kept;
}

// ---- the plain path: the formula as recorded graft ops ----

// p = softmax(q k^T scale + mask) with fully masked rows 0, shape (..., L, S).
Tensor math_probs(const Call& c, const Tensor& q, const Tensor& k) {
  return detail::attention_probs(q, k, c.mask, c.causal, c.scale);
}

Tensor math_forward(const Call& c, const Tensor& q, const Tensor& k, const Tensor& v) {
  Tensor p = math_probs(c, q, k);
  if (c.dropout_p > 0) p = p * dropout_scale(c, p.dtype());
  return matmul(p, v);
}

// ---- the memory-efficient kernel ----

// The kernel's view of a tensor: contiguous, leading dims flattened.
Tensor flat(const Tensor& t, const Call& c) { return t.detach().contiguous().reshape({c.B, t.size(-2), t.size(-1)}); }

Tensor efficient_forward(const Call& c, const Tensor& q, const Tensor& k, const Tensor& v) {
  memory::OpScope op_scope(kAttentionOp);
  Tensor out, lse;
  {
    NoGradGuard ng;
    const Tensor qf = flat(q, c), kf = flat(k, c), vf = flat(v, c);
    out = make_empty({c.B, c.L, c.Ev}, q.dtype(), q.device());
    lse = make_empty({c.B, c.L}, q.dtype(), q.device());
    if (!q.is_meta()) attn::forward(qf, kf, vf, c, out, lse);  // Note [Meta device]: no kernel on meta
    Shape shape = c.batch;
    shape.push_back(c.L);
    shape.push_back(c.Ev);
    out = out.reshape(shape);
  }
  if (auto node = make_node("ScaledDotProductEfficientAttentionBackward0", OpId::scaled_dot_product_attention,
                            {&q, &k, &v}, [c](Node& n, const Tensor& g) -> TensorList {
        const Tensor q = n.saved(0), k = n.saved(1), v = n.saved(2);
        if (GradMode::is_enabled())  // Note [The create_graph policy]: the math path, differentiated
          return autograd::differentiate_composite(
              n, {q, k, v}, [&](const TensorList& in) { return math_forward(c, in[0], in[1], in[2]); }, g);
        memory::OpScope op_scope(kAttentionOp);
        NoGradGuard ng;
        const Tensor out = n.saved(3), lse = n.saved(4);
        const Tensor qf = flat(q, c), kf = flat(k, c), vf = flat(v, c), of = flat(out, c), gf = flat(g, c);
        Tensor gq = make_empty(qf.sizes(), q.dtype(), q.device()), gk = make_empty(kf.sizes(), k.dtype(), k.device()),
               gv = make_empty(vf.sizes(), v.dtype(), v.device());
        if (!q.is_meta()) attn::backward(qf, kf, vf, c, of, lse, gf, gq, gk, gv);  // Note [Meta device]
        return {gq.reshape(q.sizes()), gk.reshape(k.sizes()), gv.reshape(v.sizes())};
      })) {
    node->save(q);
    node->save(k);
    node->save(v);
    set_history(out, node);
    node->save(out, /*is_output=*/true);
    node->save(lse);
  }
  return out;
}

Tensor attention_float(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& attn_mask,
                       double dropout_p, bool is_causal, std::optional<double> scale) {
  const Call c = make_call(q, k, v, attn_mask, dropout_p, is_causal, scale);
  const bool mask_grad = c.mask.defined() && c.mask.requires_grad() && GradMode::is_enabled();
  const SDPBackend backend = t_backend.backend;
  if (backend == SDPBackend::kEfficientAttention)
    GRAFT_CHECK(!mask_grad, kAttentionOp, "no attn_mask that requires grad with the memory-efficient backend",
                "a float attn_mask that requires grad", "use SDPBackend::kMath (or kDefault) to differentiate the mask");
  const bool efficient = backend == SDPBackend::kEfficientAttention || (backend == SDPBackend::kDefault && !mask_grad);
  if (!efficient) {
    memory::OpScope op_scope(kAttentionOp);
    return math_forward(c, q, k, v);
  }
  return efficient_forward(c, q, k, v);
}

}  // namespace

Tensor detail::attention_additive_mask(const Tensor& keep, DType dtype) {
  NoGradGuard ng;
  return where(keep, zeros({}, dtype), full({}, -std::numeric_limits<double>::infinity(), dtype));
}

Tensor detail::attention_probs(const Tensor& q, const Tensor& k, const Tensor& mask, bool is_causal, double scale) {
  Tensor s = matmul(q, k.transpose(-2, -1)) * scale;
  if (mask.defined()) s = s + (mask.dtype() == kBool ? attention_additive_mask(mask, s.dtype()) : mask);
  if (is_causal) {
    Tensor above;  // key j > query i
    {
      NoGradGuard ng;
      above = arange(s.size(-1), kInt64).unsqueeze(0).gt(arange(s.size(-2), kInt64).unsqueeze(1));
    }
    s = s.masked_fill(above, -std::numeric_limits<double>::infinity());
  }
  if (s.size(-1) == 0) return s;
  // "safe softmax": a row with every score -inf gets 0 instead of 0 / 0 (masked_fill first, so
  // the softmax itself never sees such a row and backward stays finite).
  Tensor empty_row;
  {
    NoGradGuard ng;
    empty_row = s.detach().amax({-1}, /*keepdim=*/true).eq(-std::numeric_limits<double>::infinity());
  }
  return softmax(s.masked_fill(empty_row, 0.0), -1).masked_fill(empty_row, 0.0);
}

SDPBackendGuard::SDPBackendGuard(SDPBackend backend, int64_t q_tile, int64_t kv_tile)
    : previous_(t_backend.backend), previous_q_tile_(t_backend.q_tile), previous_kv_tile_(t_backend.kv_tile) {
  GRAFT_CHECK(q_tile >= 0 && kv_tile >= 0, "SDPBackendGuard", "tile sizes >= 0 (0: the default)",
              std::to_string(q_tile) + " and " + std::to_string(kv_tile), "");
  t_backend = {backend, q_tile, kv_tile};
}

SDPBackendGuard::~SDPBackendGuard() { t_backend = {previous_, previous_q_tile_, previous_kv_tile_}; }

SDPBackend current_sdp_backend() { return t_backend.backend; }

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  const detail::MetaOpScope meta_scope(kAttentionOp, {&query, &key, &value, attn_mask ? &*attn_mask : nullptr});
  check_inputs(query, key, value);
  // bfloat16 / float16 (and float32 under autocast): rounded to the half dtype, computed in float32,
  // rounded back, as the other lower precision ops (Note [Autocast]).
  if (auto h = detail::lowp_dtype({&query, &key, &value})) {
    std::optional<Tensor> mask = attn_mask;
    if (mask && mask->defined() && mask->is_floating_point()) mask = detail::cast(*mask, kFloat32);
    const Tensor out = attention_float(detail::rounded_float32(query, *h), detail::rounded_float32(key, *h),
                                       detail::rounded_float32(value, *h), mask, dropout_p, is_causal, scale);
    return out.to(*h);
  }
  return attention_float(query, key, value, attn_mask, dropout_p, is_causal, scale);
}

}  // namespace graft
