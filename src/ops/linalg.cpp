// Linear algebra: mm, bmm, addmm (OpenBLAS gemm), and matmul / linear / fused_linear composed of
// them. The product itself is kernels::linalg::gemm_into (src/kernels/linalg.h): float32 and float64
// through cblas_sgemm / cblas_dgemm, int64 by a plain loop.
#include <algorithm>

#include "../autograd/composite_backward.h"
#include "../core/dispatch.h"
#include "../kernels/linalg.h"
#include "../kernels/linear_epilogue.h"
#include "ops/autocast_internal.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;
using kernels::linalg::gemm_into;

namespace {
const char* kKeptHint =
    "a checkpoint that keeps its linears' outputs (CheckpointPolicy::kSaveMatmuls) must run the same linears, "
    "in the same order and on the same shapes, when it is recomputed in backward";

// d mat2 of mat1 @ mat2 for the incoming gradient g: mat1^T @ g, laid out like mat2. When mat2 is
// the transpose of a contiguous matrix (linear's weight.t()), it is computed as (g^T @ mat1)^T, so
// the gradient that reaches the weight through TBackward is contiguous and becomes .grad without a
// copy (Note [Gradient stealing]); PyTorch picks the layout the same way.
Tensor mat2_grad(const Tensor& mat1, const Tensor& g, const Tensor& mat2) {
  if (mat2.dim() == 2 && mat2.size(0) > 1 && mat2.size(1) > 1 && mat2.stride(0) == 1 && mat2.stride(1) == mat2.size(0))
    return mm(g.t(), mat1).t();
  return mm(mat1.t(), g);
}

std::string dtype_pair(const Tensor& a, const Tensor& b) {
  return std::string(dtype_name(a.dtype())) + " and " + dtype_name(b.dtype());
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  GRAFT_CHECK(a.dtype() == b.dtype(), op, "m1 and m2 to have the same dtype", dtype_pair(a, b),
              "convert one operand, e.g. b.to(a.dtype())");
}

void check_matrix(const Tensor& t, int64_t rank, const char* op, const char* what) {
  GRAFT_CHECK(t.dim() == rank, op, std::string(what) + " to be a " + std::to_string(rank) + "-D tensor",
              "a " + std::to_string(t.dim()) + "-D tensor of shape " + shape_str(t.sizes()),
              rank == 2 ? "use graft::bmm for batches of matrices or graft::matmul for any rank"
                        : "use graft::mm for 2-D matrices or graft::matmul for any rank");
}

void check_multipliable(const Tensor& a, const Tensor& b, const char* op) {
  GRAFT_CHECK(a.size(-1) == b.size(-2), op,
              "mat1 and mat2 shapes that can be multiplied (mat1's last dim == mat2's second-to-last dim)",
              shape_str(a.sizes()) + " and " + shape_str(b.sizes()),
              "transpose one operand (.t()) or check which dims hold the features");
}

// y = a @ b for 2-D a, b (no autograd), or, with `init`, y = beta * init + alpha * a @ b.
Tensor mm_kernel(const Tensor& a, const Tensor& b, const char* op, const Tensor& init = {}, const Scalar& beta = 0,
                 const Scalar& alpha = 1) {
  NoGradGuard ng;
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  Tensor out = make_empty({n, m}, a.dtype(), detail::op_device(op, {&a, &b, &init}));
  if (out.is_meta()) return out;  // Note [Meta device]: no kernel
  const bool use_init = init.defined() && beta.to_double() != 0.0;
  if (use_init) {
    detail::copy_into(out, init.detach());
  }
  kernels::dispatch_numeric(a.dtype(), op, [&]<class T>() {
    gemm_into<T>(1, n, m, k, alpha.to<T>(), a.detach(), b.detach(), use_init ? beta.to<T>() : T(0), out, op);
  });
  return out;
}

// ---- lower precision products (Note [Autocast] in graft/ops/autocast.h) ----
//
// Note [Lower precision gemm in panels]
// OpenBLAS has no bfloat16 gemm here, so the operands are rounded to h and widened to float32 for
// sgemm (a product of two bfloat16 or float16 values is exact in float32: float32 accumulation).
// Widening whole operands would put a float32 copy of every weight in memory during each product
// (1.5 MiB for a 512 x 784 layer, more than the activations autocast saves), so lowp_gemm widens
// one panel of at most kPanelFloats / (n + m) columns of A and rows of B at a time and accumulates
// the panels' products into C with beta = 1.

// x (rows, cols) rounded to h as a float32 tensor gemm can read; a transposed x is packed through
// its transpose so that the reads are contiguous.
Tensor pack(const Tensor& x, DType h) {
  if (x.size(0) > 1 && x.size(1) > 1 && x.stride(0) == 1 && x.stride(1) != 1)
    return detail::rounded_float32(x.t(), h).t();
  return detail::rounded_float32(x, h);
}

// C (n, m) = beta * rnd(init) + alpha * rnd(a) @ rnd(b) in float32, rnd = rounding to h; a (n, k)
// and b (k, m) float32 or half with any strides; init broadcasts to (n, m) or is undefined. Not
// recorded.
Tensor lowp_gemm(const Tensor& a_, const Tensor& b_, DType h, const Tensor& init, const Scalar& beta,
                 const Scalar& alpha, const char* op) {
  NoGradGuard ng;
  const Tensor a = a_.detach(), b = b_.detach();
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  Tensor c = make_empty({n, m}, kFloat32, detail::op_device(op, {&a, &b, &init}));
  if (c.is_meta()) return c;  // Note [Meta device]: no kernel
  const bool use_init = init.defined() && beta.to_double() != 0.0;
  if (use_init) detail::copy_into(c, detail::rounded_float32(init.detach(), h));
  constexpr int64_t kPanelFloats = int64_t{1} << 16;  // 256 KiB of float32 panels at most
  const int64_t panel = std::max<int64_t>(64, kPanelFloats / std::max<int64_t>(1, n + m)) / 16 * 16;
  int64_t k0 = 0;
  do {  // at least once: k == 0 scales C by beta
    const int64_t kb = std::min(panel, k - k0);
    const Tensor ap = pack(a.narrow(1, k0, kb), h), bp = pack(b.narrow(0, k0, kb), h);
    const float panel_beta = k0 > 0 ? 1.0f : (use_init ? beta.to<float>() : 0.0f);
    gemm_into<float>(1, n, m, kb, alpha.to<float>(), ap, bp, panel_beta, c, op);
    k0 += kb;
  } while (k0 < k);
  return c;
}

// y = beta * bias + alpha * (a @ op(b)) in dtype h, where op(b) = b^T when trans_b (linear passes
// its weight as it is, so that the weight itself is what gets saved), every operand rounded to h
// and multiplied with float32 accumulation. a (n, k); b (k, m), or (m, k) when trans_b; bias
// broadcasts to (n, m) or is undefined.
Tensor lowp_addmm(const Tensor& bias, const Tensor& a, const Tensor& b, bool trans_b, DType h, const Scalar& beta,
                  const Scalar& alpha, const char* node_name, OpId id) {
  const char* op = ops::op_name(id);
  Tensor y;
  {
    NoGradGuard ng;
    y = lowp_gemm(a, trans_b ? b.t() : b, h, bias, bias.defined() ? beta : Scalar(0), alpha, op).to(h);
  }
  if (auto node = make_node(node_name, id, {&bias, &a, &b}, [h, trans_b, beta, alpha](Node& n, const Tensor& g) -> TensorList {
        // In float32 on the rounded operands ar, br (op(br) = br^T when trans_b):
        //   d bias = beta * g,  d a = alpha * g @ op(br)^T,  d b = alpha * ar^T @ g (or its transpose)
        const bool need_in = n.needs_input_grad(0), need_a = n.needs_input_grad(1),
                   need_b = n.needs_input_grad(2);
        Tensor gi, ga, gb;
        if (need_in) {
          const Tensor g32 = g.to(kFloat32);
          gi = beta.to_double() == 1.0 ? g32 : g32 * beta;  // the engine sums it to bias's shape
        }
        if (!GradMode::is_enabled()) {  // plain backward: panels, no float32 copy of the operands
          if (need_a) {
            const Tensor sb = n.saved(1);
            ga = lowp_gemm(g, trans_b ? sb : sb.t(), h, Tensor(), 0, alpha, "mm");
          }
          if (need_b) {
            const Tensor sa = n.saved(0);
            // (m, k) = g^T @ ar when trans_b: laid out like the weight, so it is stolen into .grad
            gb = trans_b ? lowp_gemm(g.t(), sa, h, Tensor(), 0, alpha, "mm") : lowp_gemm(sa.t(), g, h, Tensor(), 0, alpha, "mm");
          }
          return {gi, ga, gb};
        }
        // create_graph: the same formulas with recorded float32 ops, differentiable again
        const bool unit_alpha = alpha.to_double() == 1.0;
        const Tensor g32 = g.to(kFloat32);
        if (need_a) {
          const Tensor br = detail::rounded_float32(n.saved(1), h);
          ga = mm(g32, trans_b ? br : br.t());
          if (!unit_alpha) ga = ga * alpha;
        }
        if (need_b) {
          const Tensor ar = detail::rounded_float32(n.saved(0), h);
          gb = trans_b ? mm(g32.t(), ar) : mm(ar.t(), g32);
          if (!unit_alpha) gb = gb * alpha;
        }
        return {gi, ga, gb};
      })) {
    node->save(detail::lowp_saved(a, h));
    node->save(detail::lowp_saved(b, h));
    set_history(y, node);
  }
  return y;
}

// y[i] = a[i] @ b[i] in dtype h for (B, n, k) a and (B, k, m) b, as lowp_addmm.
Tensor lowp_bmm(const Tensor& a, const Tensor& b, DType h) {
  Tensor y;
  {
    NoGradGuard ng;
    const Tensor ar = detail::rounded_float32(a, h), br = detail::rounded_float32(b, h);
    const int64_t batch = a.size(0), n = a.size(1), k = a.size(2), m = b.size(2);
    Tensor y32 = make_empty({batch, n, m}, kFloat32, detail::op_device("bmm", {&a, &b}));
    if (!y32.is_meta()) gemm_into<float>(batch, n, m, k, 1.0f, ar, br, 0.0f, y32, "bmm");
    y = y32.to(h);
  }
  if (auto node = make_node("BmmBackward0", OpId::bmm, {&a, &b}, [h](Node& n, const Tensor& g) -> TensorList {
        // d a = g @ br^T, d b = ar^T @ g per batch, in float32 on the rounded operands
        const bool need_a = n.needs_input_grad(0), need_b = n.needs_input_grad(1);
        const Tensor g32 = g.to(kFloat32);
        return {need_a ? bmm(g32, detail::rounded_float32(n.saved(1), h).transpose(1, 2)) : Tensor(),
                need_b ? bmm(detail::rounded_float32(n.saved(0), h).transpose(1, 2), g32) : Tensor()};
      })) {
    node->save(detail::lowp_saved(a, h));
    node->save(detail::lowp_saved(b, h));
    set_history(y, node);
  }
  return y;
}

}  // namespace

// ---- mm: (n, k) @ (k, m) ----
Tensor mm(const Tensor& a, const Tensor& b) {
  memory::OpScope op_scope("mm");  // names its allocations in the memory report
  check_matrix(a, 2, "mm", "mat1");
  check_matrix(b, 2, "mm", "mat2");
  if (const auto h = detail::lowp_dtype({&a, &b})) {
    check_multipliable(a, b, "mm");
    return lowp_addmm(Tensor(), a, b, false, *h, 0, 1, "MmBackward0", OpId::mm);
  }
  check_same_dtype(a, b, "mm");
  check_multipliable(a, b, "mm");
  Tensor y = mm_kernel(a, b, "mm");
  if (auto node = make_node("MmBackward0", OpId::mm, {&a, &b}, [](Node& n, const Tensor& g) -> TensorList {
        // d a = g @ b^T, d b = a^T @ g
        const bool need_a = n.needs_input_grad(0), need_b = n.needs_input_grad(1);
        return {need_a ? mm(g, n.saved(1).t()) : Tensor(), need_b ? mat2_grad(n.saved(0), g, n.saved(1)) : Tensor()};
      })) {
    node->save(a);
    node->save(b);
    set_history(y, node);
  }
  return y;
}

// ---- bmm: (B, n, k) @ (B, k, m) ----
Tensor bmm(const Tensor& a, const Tensor& b) {
  memory::OpScope op_scope("bmm");  // names its allocations in the memory report
  check_matrix(a, 3, "bmm", "batch1");
  check_matrix(b, 3, "bmm", "batch2");
  const auto h = detail::lowp_dtype({&a, &b});
  if (!h) check_same_dtype(a, b, "bmm");
  GRAFT_CHECK(a.size(0) == b.size(0), "bmm", "batch1 and batch2 with the same batch size",
              shape_str(a.sizes()) + " and " + shape_str(b.sizes()),
              "use graft::matmul to broadcast batch dimensions");
  check_multipliable(a, b, "bmm");
  if (h) return lowp_bmm(a, b, *h);
  const int64_t batch = a.size(0), n = a.size(1), k = a.size(2), m = b.size(2);
  Tensor y = make_empty({batch, n, m}, a.dtype(), detail::op_device("bmm", {&a, &b}));
  if (!y.is_meta()) {
    NoGradGuard ng;
    kernels::dispatch_numeric(a.dtype(), "bmm", [&]<class T>() {
      gemm_into<T>(batch, n, m, k, T(1), a.detach(), b.detach(), T(0), y, "bmm");
    });
  }
  if (auto node = make_node("BmmBackward0", OpId::bmm, {&a, &b}, [](Node& n, const Tensor& g) -> TensorList {
        // d a = g @ b^T, d b = a^T @ g (per batch)
        const bool need_a = n.needs_input_grad(0), need_b = n.needs_input_grad(1);
        return {need_a ? bmm(g, n.saved(1).transpose(1, 2)) : Tensor(),
                need_b ? bmm(n.saved(0).transpose(1, 2), g) : Tensor()};
      })) {
    node->save(a);
    node->save(b);
    set_history(y, node);
  }
  return y;
}

// ---- addmm: beta * input + alpha * (mat1 @ mat2) ----
Tensor addmm(const Tensor& input, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  memory::OpScope op_scope("addmm");  // names its allocations in the memory report
  check_matrix(mat1, 2, "addmm", "mat1");
  check_matrix(mat2, 2, "addmm", "mat2");
  const auto h = detail::lowp_dtype({&input, &mat1, &mat2});
  if (!h) {
    check_same_dtype(mat1, mat2, "addmm");
    GRAFT_CHECK(input.dtype() == mat1.dtype(), "addmm", "input to have the same dtype as mat1 and mat2",
                std::string(dtype_name(input.dtype())) + " input and " + dtype_name(mat1.dtype()) + " matrices",
                "convert the input, e.g. input.to(mat1.dtype())");
  }
  check_multipliable(mat1, mat2, "addmm");
  const Shape out_shape{mat1.size(0), mat2.size(1)};
  bool broadcasts = input.dim() <= 2;
  for (int64_t i = 1; broadcasts && i <= input.dim(); ++i)
    broadcasts = input.size(-i) == 1 || input.size(-i) == out_shape[static_cast<size_t>(2 - i)];
  GRAFT_CHECK(broadcasts, "addmm",
              "an input that broadcasts to the product's shape " + shape_str(out_shape),
              "an input of shape " + shape_str(input.sizes()) + " for mat1 " + shape_str(mat1.sizes()) + " and mat2 " +
                  shape_str(mat2.sizes()),
              "pass an input of shape (n, p), (p), (1) or a scalar for mat1 (n, m) and mat2 (m, p)");
  if (h) return lowp_addmm(input, mat1, mat2, false, *h, beta, alpha, "AddmmBackward0", OpId::addmm);
  Tensor y = mm_kernel(mat1, mat2, "addmm", input, beta, alpha);
  if (auto node = make_node("AddmmBackward0", OpId::addmm, {&input, &mat1, &mat2}, [beta, alpha](Node& n, const Tensor& g) -> TensorList {
        // d input = beta * g (summed to input's shape by the engine), d mat1 = alpha * g @ mat2^T,
        // d mat2 = alpha * mat1^T @ g
        const bool need_in = n.needs_input_grad(0), need_1 = n.needs_input_grad(1),
                   need_2 = n.needs_input_grad(2);
        const bool unit_alpha = alpha.to_double() == 1.0;
        Tensor gi, g1, g2;
        if (need_in) gi = beta.to_double() == 1.0 ? g : g * beta;
        if (need_1) {
          g1 = mm(g, n.saved(1).t());
          if (!unit_alpha) g1 = g1 * alpha;
        }
        if (need_2) {
          g2 = mat2_grad(n.saved(0), g, n.saved(1));
          if (!unit_alpha) g2 = g2 * alpha;
        }
        return {gi, g1, g2};
      })) {
    node->save(mat1);
    node->save(mat2);
    set_history(y, node);
  }
  return y;
}

// ---- matmul: PyTorch's rules, composed of mm / bmm and views ----
Tensor matmul(const Tensor& a, const Tensor& b) {
  memory::OpScope op_scope("matmul");  // names its allocations in the memory report
  const int64_t da = a.dim(), db = b.dim();
  GRAFT_CHECK(da >= 1 && db >= 1, "matmul", "both arguments to be at least 1-D",
              shape_str(a.sizes()) + " (" + std::to_string(da) + "-D) and " + shape_str(b.sizes()) + " (" +
                  std::to_string(db) + "-D)",
              "use graft::mul (or *) to multiply by a 0-dim tensor");
  GRAFT_CHECK(a.dtype() == b.dtype() || detail::lowp_dtype({&a, &b}), "matmul", "m1 and m2 to have the same dtype",
              dtype_pair(a, b), "convert one operand, e.g. b.to(a.dtype())");
  // The contracted dim: a's last, b's second-to-last (its only one when 1-D).
  const int64_t ka = a.size(-1), kb = db == 1 ? b.size(0) : b.size(-2);
  GRAFT_CHECK(ka == kb, "matmul",
              "shapes that can be multiplied (the last dim of the first argument == the " +
                  std::string(db == 1 ? "only" : "second-to-last") + " dim of the second)",
              shape_str(a.sizes()) + " and " + shape_str(b.sizes()) + " (" + std::to_string(ka) + " vs " +
                  std::to_string(kb) + ")",
              "transpose one operand (.transpose(-2, -1)) or check which dims hold the features");
  if (da == 1 && db == 1) return mm(a.unsqueeze(0), b.unsqueeze(1)).squeeze(1).squeeze(0);  // dot product
  if (da == 2 && db == 2) return mm(a, b);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 1) return mm(a, b.unsqueeze(1)).squeeze(1);  // mv
  if (da >= 3 && db <= 2) {
    // Fold a's batch dims into its rows: one mm.
    Shape out(a.sizes());
    out.resize(static_cast<size_t>(da - 1));
    const int64_t rows = numel_of(out);
    Tensor y = mm(a.reshape({rows, ka}), db == 1 ? b.unsqueeze(1) : b);
    if (db == 2) out.push_back(b.size(1));
    return y.reshape(out);
  }
  // Batched: broadcast the batch dims, fold them into one, bmm, unfold.
  const Tensor a3 = da == 1 ? a.unsqueeze(0) : a;   // (k) -> (1, k), row dim removed at the end
  const Tensor b3 = db == 1 ? b.unsqueeze(1) : b;   // (k) -> (k, 1), col dim removed at the end
  const int64_t n = a3.size(-2), m = b3.size(-1);
  const IntArrayRef ba(a3.sizes().data(), static_cast<size_t>(a3.dim() - 2));
  const IntArrayRef bb(b3.sizes().data(), static_cast<size_t>(b3.dim() - 2));
  const size_t nb = std::max(ba.size(), bb.size());
  Shape batch;
  batch.resize(nb);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t x = i < nb - ba.size() ? 1 : ba[i - (nb - ba.size())];
    const int64_t z = i < nb - bb.size() ? 1 : bb[i - (nb - bb.size())];
    GRAFT_CHECK(x == z || x == 1 || z == 1, "matmul", "batch dims that broadcast together",
                shape_str(a.sizes()) + " and " + shape_str(b.sizes()) + " (batch dims " + shape_str(ba) + " and " +
                    shape_str(bb) + ")",
                "batch sizes must match or be 1 in every dimension before the last two");
    batch[i] = x == 1 ? z : x;
  }
  const int64_t B = numel_of(batch);
  Shape ea(batch), eb(batch);
  ea.push_back(n);
  ea.push_back(ka);
  eb.push_back(ka);
  eb.push_back(m);
  Tensor y = bmm(a3.expand(ea).reshape({B, n, ka}), b3.expand(eb).reshape({B, ka, m}));
  Shape out(batch);
  if (da > 1) out.push_back(n);
  if (db > 1) out.push_back(m);
  return y.reshape(out);
}

// ---- linear: input @ weight^T + bias ----
namespace {
void check_linear_args(const Tensor& input, const Tensor& weight, const Tensor& bias, const char* op) {
  GRAFT_CHECK(weight.dim() == 2, op, "weight to be a 2-D tensor (out_features, in_features)",
              "weight of shape " + shape_str(weight.sizes()),
              "nn::Linear's weight is (out_features, in_features); reshape a 1-D weight with .unsqueeze(0)");
  GRAFT_CHECK(input.dim() >= 1, op, "input of shape (*, in_features) with at least 1 dim", "a 0-dim input",
              "unsqueeze a 0-dim input to shape [1] or [1, in_features]");
  GRAFT_CHECK(input.size(-1) == weight.size(1), op,
              "input's last dim to equal weight's in_features (weight is (out_features, in_features))",
              "input " + shape_str(input.sizes()) + " and weight " + shape_str(weight.sizes()),
              "reshape the input so its last dim holds the features, or check in_features");
  if (bias.defined()) {
    GRAFT_CHECK(bias.dim() <= 1 && (bias.dim() == 0 || bias.size(0) == weight.size(0) || bias.size(0) == 1), op,
                "bias of shape [" + std::to_string(weight.size(0)) + "] (out_features)",
                "bias " + shape_str(bias.sizes()) + " with weight " + shape_str(weight.sizes()),
                "pass one bias value per output feature, or leave bias undefined");
  }
}
}  // namespace

namespace {
// A linear inside a checkpoint that keeps its products' outputs (Note [Selective recomputation] in
// graft/autograd/grad_mode.h): the forward computes and keeps y, the recompute takes it back; both
// record LinearBackward0, which saves x and W.
Tensor kept_linear(const Tensor& input, const Tensor& weight, const Tensor& bias, autograd::detail::KeptOutputs& kept) {
  const int64_t in = weight.size(1), out = weight.size(0);
  Tensor y;
  if (!kept.replay) {
    const autograd::detail::KeptOutputsScope plain(nullptr);
    const NoGradGuard no_grad;
    y = linear(input, weight, bias);
    kept.outputs.push_back(y);
  } else {
    GRAFT_CHECK(kept.next < kept.outputs.size(), "checkpoint",
                "the recompute to run the " + std::to_string(kept.outputs.size()) + " linears the forward ran",
                "linear number " + std::to_string(kept.next + 1), kKeptHint);
    y = kept.outputs[kept.next++];
    Shape expected(input.sizes());
    expected[expected.size() - 1] = out;
    GRAFT_CHECK(y.sizes().equals(expected) && y.dtype() == input.dtype(), "checkpoint",
                "linear number " + std::to_string(kept.next) + " of the recompute to give the forward's " +
                    shape_str(y.sizes()) + " " + dtype_name(y.dtype()),
                shape_str(expected) + " " + dtype_name(input.dtype()), kKeptHint);
  }
  y = y.detach();  // a handle of its own: the kept one stays without history
  const Shape bias_shape = bias.defined() ? Shape(bias.sizes()) : Shape();
  const bool per_feature = bias.defined() && bias.numel() == out;
  if (auto node = make_node("LinearBackward0", forward_op(OpId::linear), {&input, &weight, &bias},
                            [in, out, bias_shape, per_feature](Node& n, const Tensor& g) -> TensorList {
                              const Tensor x = n.saved(0), w = n.saved(1);
                              const Tensor g2 = g.reshape({-1, out});
                              return {n.needs_input_grad(0) ? g.matmul(w) : Tensor(),
                                      n.needs_input_grad(1) ? g2.t().mm(x.reshape({-1, in})) : Tensor(),
                                      n.needs_input_grad(2) ? (per_feature ? g2.sum(0) : g2.sum()).reshape(bias_shape)
                                                            : Tensor()};
                            })) {
    node->save(input);
    node->save(weight);
    set_history(y, node);
  }
  return y;
}
}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  memory::OpScope op_scope("linear");  // names its allocations in the memory report
  check_linear_args(input, weight, bias, "linear");
  if (auto* kept = autograd::detail::kept_outputs(); kept && !detail::lowp_dtype({&input, &weight, &bias}))
    return kept_linear(input, weight, bias, *kept);
  if (const auto h = detail::lowp_dtype({&input, &weight, &bias})) {
    // One lower precision product with the weight as it is (saved without a copy, Note [Autocast]);
    // any leading dims fold into the rows.
    const int64_t in = weight.size(1), out = weight.size(0);
    const Tensor x2 = input.dim() == 2 ? input : input.reshape({-1, in});
    Tensor y = bias.defined() ? lowp_addmm(bias, x2, weight, true, *h, 1, 1, "AddmmBackward0", OpId::linear)
                              : lowp_addmm(Tensor(), x2, weight, true, *h, 0, 1, "MmBackward0", OpId::linear);
    if (input.dim() == 2) return y;
    Shape shape(input.sizes());
    shape[shape.size() - 1] = out;
    return y.reshape(shape);
  }
  if (bias.defined()) {
    if (input.dim() == 2) return addmm(bias, input, weight.t());
    return matmul(input, weight.t()) + bias;
  }
  return matmul(input, weight.t());
}

// ---- fused_linear: activation(input @ weight^T + bias) ----
//
// Note [Fused linear + activation]
// Eager act(linear(x)) passes over its (rows, out) output four times besides the product: addmm
// copies the bias into it, the product accumulates onto it (beta = 1), the activation reads it and
// writes a second tensor; and in the backward the activation's gradient is written, then read again
// by the engine to sum the bias gradient over the rows. Fused:
//   forward   y = x W^T by gemm (beta = 0); then one pass, row by row while the row is in cache:
//             z = y + b, y = act(z) in place (gelu also keeps z, which its derivative needs);
//   backward  one pass: gz = g * act'(s) and gb[c] = sum_r gz[r, c] (in double); then
//             gx = gz W and gW = gz^T x, contiguous (out, in) like the weight.
// One node, FusedLinear<Act>Backward0, saves x, W and s: y for relu / sigmoid / tanh (their
// derivatives are functions of the output, as those ops save it) and z for gelu; the unfused pair
// saves the same bytes (addmm: x and W; the activation: y, or its input z for gelu).
// Values: the epilogue uses the activation ops' own formulas (kernels/linear_epilogue.cpp), and the
// product plus the bias rounds once either way, so y has the unfused pair's bits; gb differs from
// sum(0) by summation order only. Under create_graph the backward differentiates the unfused pair
// act(linear(x, W, b)) recomputed from the saved x, W and b (Note [The create_graph policy]).
// Everything that is not float32 or float64 with a bias of shape (out) (autocast's lower precision
// products, integer tensors, a broadcast bias) takes the two ops instead.
namespace {
struct FusedKind {
  kernels::EpilogueActivation kernel;
  const char* node;
  const char* op;  // the forward op's name with its activation (Note [Forward op of a node])
};

FusedKind fused_kind(FusedActivation a) {
  using A = FusedActivation;
  using K = kernels::EpilogueActivation;
  switch (a) {
    case A::ReLU: return {K::ReLU, "FusedLinearReluBackward0", "fused_linear_relu"};
    case A::GELU: return {K::Gelu, "FusedLinearGeluBackward0", "fused_linear_gelu"};
    case A::GELUTanh: return {K::GeluTanh, "FusedLinearGeluBackward0", "fused_linear_gelu"};
    case A::Sigmoid: return {K::Sigmoid, "FusedLinearSigmoidBackward0", "fused_linear_sigmoid"};
    case A::Tanh: return {K::Tanh, "FusedLinearTanhBackward0", "fused_linear_tanh"};
  }
  GRAFT_CHECK(false, "fused_linear", "a FusedActivation (ReLU, GELU, GELUTanh, Sigmoid or Tanh)",
              "the value " + std::to_string(static_cast<int>(a)), "");
  return {K::ReLU, "", ""};
}

Tensor unfused_activation(const Tensor& y, FusedActivation a) {
  using A = FusedActivation;
  switch (a) {
    case A::ReLU: return relu(y);
    case A::GELU: return gelu(y);
    case A::GELUTanh: return gelu(y, "tanh");
    case A::Sigmoid: return sigmoid(y);
    case A::Tanh: return graft::tanh(y);
  }
  return y;
}

}  // namespace

Tensor fused_linear(const Tensor& input, const Tensor& weight, const Tensor& bias, FusedActivation activation) {
  memory::OpScope op_scope("fused_linear");  // names its allocations in the memory report
  check_linear_args(input, weight, bias, "fused_linear");
  const FusedKind kind = fused_kind(activation);
  const DType dt = input.dtype();
  const bool fusable = (dt == kFloat32 || dt == kFloat64) && weight.dtype() == dt &&
                       (!bias.defined() || (bias.dtype() == dt && bias.dim() == 1 && bias.size(0) == weight.size(0))) &&
                       !detail::lowp_dtype({&input, &weight, &bias});
  if (!fusable) return unfused_activation(linear(input, weight, bias), activation);

  const int64_t in = weight.size(1), out = weight.size(0);
  const Tensor x = input.dim() == 2 ? input : input.reshape({-1, in});  // leading dims fold into rows
  const int64_t rows = x.size(0);
  const bool records = autograd::should_record({&x, &weight, &bias});
  const bool keep_z = records && kernels::epilogue_saves_preactivation(kind.kernel);
  const Device device = detail::op_device("fused_linear", {&x, &weight, &bias});
  Tensor y = make_empty({rows, out}, dt, device);
  Tensor z = keep_z ? make_empty({rows, out}, dt, device) : Tensor();
  if (!device.is_meta()) {  // Note [Meta device]: no kernel
    NoGradGuard ng;
    const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
    kernels::dispatch_floating(dt, "fused_linear", [&]<class T>() {
      gemm_into<T>(1, rows, out, in, T(1), x.detach(), weight.detach().t(), T(0), y, "fused_linear");
      kernels::bias_activation<T>(kind.kernel, y, b, z, rows, out);
    });
  }
  if (records) {
    const bool has_bias = bias.defined();
    const autograd::ForwardOp op{static_cast<int>(OpId::fused_linear), kind.op};
    auto node = autograd::make_node(kind.node, op, {&x, &weight, &bias}, [kind, has_bias, activation](Node& n, const Tensor& g) -> TensorList {
      const Tensor xs = n.saved(0), w = n.saved(1), s = n.saved(2);
      const bool need_x = n.needs_input_grad(0), need_w = n.needs_input_grad(1);
      const bool need_b = has_bias && n.needs_input_grad(2);
      if (GradMode::is_enabled())  // Note [The create_graph policy]: the two ops, differentiated
        return autograd::differentiate_composite(
            n, {xs, w, has_bias ? n.saved(3) : Tensor()},
            [&](const TensorList& in) { return unfused_activation(linear(in[0], in[1], in[2]), activation); }, g);
      const Tensor gc = g.is_contiguous() ? g : g.contiguous();
      const int64_t r = s.size(0), c = s.size(1);
      Tensor gz = make_empty({r, c}, s.dtype(), s.device()), gb;
      if (need_b) gb = make_empty({c}, s.dtype(), s.device());
      if (!s.is_meta()) kernels::dispatch_floating(s.dtype(), kind.node, [&]<class T>() {
        kernels::activation_backward<T>(kind.kernel, gc, s, gz, gb, r, c);
      });
      return {need_x ? mm(gz, w) : Tensor(), need_w ? mm(gz.t(), xs) : Tensor(), gb};  // an undefined bias has an empty edge
    });
    node->save(x);
    node->save(weight);
    set_history(y, node);  // before saving y: a saved output carries its grad_fn (Note [Saved tensors])
    if (keep_z) node->save(z);
    else node->save(y, /*is_output=*/true);
    if (has_bias) node->save(bias);  // for the composite (Note [The create_graph policy])
  }
  if (input.dim() == 2) return y;
  Shape shape(input.sizes());
  shape[shape.size() - 1] = out;
  return y.reshape(shape);
}

}  // namespace graft
