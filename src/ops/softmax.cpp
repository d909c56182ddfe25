// softmax and log_softmax along one dim: fused, numerically stable kernels (the row max is
// subtracted before exp). A row of all -inf gives nan, as in PyTorch. Backward formulas use the
// saved output and graft ops, so double backward works.
#include "../kernels/softmax.h"
#include "graft/core/memory.h"
#include "graft/ops/autocast.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace {

// The input in the dtype the op computes in (dtype, when given, converts first, differentiably).
Tensor softmax_input(const Tensor& x, std::optional<DType> dtype, const char* op) {
  DType dt = dtype.value_or(x.dtype());
  // Under autocast these are float32 ops (Note [Autocast]): a half input is converted first.
  if (!dtype && (dt == kFloat16 || dt == kBFloat16) && is_autocast_enabled()) dt = kFloat32;
  GRAFT_CHECK(is_floating_point(dt), op, "a floating-point input (float32 or float64) or a floating dtype",
              std::string("a ") + dtype_name(dt) + (dtype ? " dtype" : " tensor"),
              std::string("pass a dtype (graft::") + op + "(x, dim, graft::kFloat32)) or convert the input with "
                  ".to(graft::kFloat32)");
  return detail::cast(x, dt);
}

template <bool Log>
Tensor softmax_forward(const Tensor& x, int64_t d, const char* op) {
  memory::OpScope op_scope(op);  // names the allocation in the memory report
  NoGradGuard ng;
  const Tensor xc = x.detach().contiguous();
  Tensor y = make_empty(x.sizes(), x.dtype(), x.device());
  if (x.numel() == 0 || x.is_meta()) return y;  // Note [Meta device]: no kernel on meta
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= x.size(i);
  for (int64_t i = d + 1; i < x.dim(); ++i) inner *= x.size(i);
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  kernels::softmax::forward(op, xc, outer, n, inner, Log, y);  // float32 rows: Note [Fast float32 softmax]
  return y;
}

}  // namespace

// ---- softmax: y = exp(x - max) / sum(exp(x - max)) ----
Tensor softmax(const Tensor& x_, int64_t dim, std::optional<DType> dtype) {
  const Tensor x = softmax_input(x_, dtype, "softmax");
  const int64_t d = wrap_dim(dim, x.dim(), "softmax");
  Tensor y = softmax_forward<false>(x, d, "softmax");
  if (auto node = make_node("SoftmaxBackward0", OpId::softmax, {&x}, [d](Node& n, const Tensor& g) -> TensorList {
        // d x = y * (g - sum(g * y, dim))
        const Tensor yy = n.saved(0);
        return {yy * (g - (g * yy).sum(d, /*keepdim=*/true))};
      })) {
    set_history(y, node);
    node->save(y, /*is_output=*/true);  // after set_history, so double backward sees y's grad_fn
  }
  return y;
}

// ---- log_softmax: y = x - max - log(sum(exp(x - max))) ----
Tensor log_softmax(const Tensor& x_, int64_t dim, std::optional<DType> dtype) {
  const Tensor x = softmax_input(x_, dtype, "log_softmax");
  const int64_t d = wrap_dim(dim, x.dim(), "log_softmax");
  Tensor y = softmax_forward<true>(x, d, "log_softmax");
  if (auto node = make_node("LogSoftmaxBackward0", OpId::log_softmax, {&x}, [d](Node& n, const Tensor& g) -> TensorList {
        // d x = g - exp(y) * sum(g, dim)
        const Tensor yy = n.saved(0);
        return {g - exp(yy) * g.sum(d, /*keepdim=*/true)};
      })) {
    set_history(y, node);
    node->save(y, /*is_output=*/true);  // after set_history, so double backward sees y's grad_fn
  }
  return y;
}

}  // namespace graft
