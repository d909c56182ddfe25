// Autocast state and the helpers of the lower precision ops (Note [Autocast] in
// graft/ops/autocast.h). The ops themselves live with their families (linalg.cpp, conv.cpp).
#include "graft/ops/autocast.h"

#include "../core/dispatch.h"
#include "../kernels/loops.h"
#include "ops/autocast_internal.h"
#include "graft/autograd/grad_mode.h"
#include "graft/autograd/node.h"
#include "graft/core/error.h"

namespace graft {

namespace {
struct AutocastState {
  bool enabled = false;
  DType dtype = kBFloat16;
};
thread_local AutocastState g_state;

void check_autocast_dtype(DType dtype) {
  GRAFT_CHECK(dtype == kBFloat16 || dtype == kFloat16, "autocast", "dtype graft::kBFloat16 or graft::kHalf",
              dtype_name(dtype), "autocast lowers float32 to a 16-bit type; bfloat16 keeps float32's range");
}
}  // namespace

AutocastGuard::AutocastGuard(DType dtype, bool enabled) : prev_enabled_(g_state.enabled), prev_dtype_(g_state.dtype) {
  check_autocast_dtype(dtype);
  g_state.enabled = enabled;
  g_state.dtype = dtype;
}

AutocastGuard::~AutocastGuard() {
  g_state.enabled = prev_enabled_;
  g_state.dtype = prev_dtype_;
}

bool is_autocast_enabled() { return g_state.enabled; }
DType get_autocast_dtype() { return g_state.dtype; }
void set_autocast_enabled(bool enabled) { g_state.enabled = enabled; }
void set_autocast_dtype(DType dtype) {
  check_autocast_dtype(dtype);
  g_state.dtype = dtype;
}

namespace detail {

std::optional<DType> lowp_dtype(std::initializer_list<const Tensor*> operands) {
  if (g_state.enabled) {
    for (const Tensor* t : operands) {
      if (!t->defined()) continue;
      const DType dt = t->dtype();
      if (dt != kFloat32 && !is_half_dtype(dt)) return std::nullopt;  // float64, integers: not autocast
    }
    return g_state.dtype;
  }
  std::optional<DType> h;
  for (const Tensor* t : operands) {
    if (!t->defined()) continue;
    if (!is_half_dtype(t->dtype()) || (h && *h != t->dtype())) return std::nullopt;
    h = t->dtype();
  }
  return h;
}

Tensor rounded_float32(const Tensor& x, DType h) {
  GRAFT_ASSERT(x.dtype() == kFloat32 || is_half_dtype(x.dtype()), "lower precision operands are float32 or half");
  // One pass, no H intermediate: float32 -> H -> float32 per element, or H -> float32.
  const Tensor d = x.detach();
  Tensor y = kernels::dispatch_all_and_half(h, "autocast", [&]<class H>() -> Tensor {
    if constexpr (kernels::is_half_v<H>) {
      if (d.dtype() == kFloat32)
        return kernels::map<float, float>(kFloat32, d.sizes(), [](float v) { return H(v).to_float(); }, d);
      if (d.dtype() == h) return kernels::map<float, H>(kFloat32, d.sizes(), [](H v) { return v.to_float(); }, d);
      return d.to(h).to(kFloat32);  // the other half dtype
    } else {
      GRAFT_ASSERT(false, "rounded_float32 rounds to a half dtype");
      return Tensor();
    }
  });
  // Straight through: the gradient passes unchanged, in float32 (x.to(h).to(float32) would round it
  // to h on the way, which second derivatives need not suffer).
  if (auto node = autograd::make_node("ToCopyBackward0", autograd::ForwardOp::unlisted("to"), {&x},
                                      [](autograd::Node&, const Tensor& g) -> TensorList {
        return {g};
      }))
    autograd::set_history(y, node);
  return y;
}

Tensor lowp_saved(const Tensor& x, DType h) {
  if (!x.defined() || x.dtype() == h || x.is_leaf()) return x;
  return x.to(h);  // recorded when grad mode is on: double backward reaches x through it
}

}  // namespace detail
}  // namespace graft
