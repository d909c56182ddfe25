// Copies and conversions (clone, to, contiguous, copy_, fill_, zero_) and the machinery shared by
// every in-place op.
//
// Note [In-place ops]
// Without autograd recording, an in-place op runs its kernel straight into the tensor's memory and
// bumps the version counter. With recording, the op runs out of place on a clone of the old value
// (so whatever the backward saves is never overwritten), the result is copied into the tensor, and
// the tensor's grad_fn becomes the op's node, as in PyTorch (x.mul_(2).grad_fn is MulBackward0).
// Two cases PyTorch supports are rejected with a clear error instead: an in-place op on a leaf that
// requires grad (PyTorch rejects it too), and a recorded in-place op on a view (PyTorch rewrites the
// base's history; graft asks for the out-of-place form).

#include "../core/dispatch.h"
#include "../kernels/loops.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace detail {

void copy_into(Tensor& dst, const Tensor& src) {
  broadcast_shapes(dst.sizes(), src.sizes(), "copy_");
  GRAFT_CHECK(src.dim() <= dst.dim(), "copy_", "a source that broadcasts to " + shape_str(dst.sizes()),
              shape_str(src.sizes()), "the source may not have more dims than the destination; reshape or squeeze it");
  for (int64_t i = 0; i < src.dim(); ++i) {
    const int64_t s = src.size(i), d = dst.size(i + dst.dim() - src.dim());
    GRAFT_CHECK(s == d || s == 1, "copy_", "a source that broadcasts to " + shape_str(dst.sizes()),
                shape_str(src.sizes()),
                "each dim of the source must equal the destination's or be 1; reshape or expand the source");
  }
  // Note [Meta device]: nothing to write into a meta tensor; a meta source has nothing to read.
  if (dst.is_meta()) return;
  GRAFT_CHECK(!src.is_meta(), "copy_", "a source with data", "a meta tensor of shape " + shape_str(src.sizes()),
              "meta tensors have no values to copy out; build the tensor or the model on the CPU");
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() && dst.numel() == src.numel()) {
    kernels::copy_bytes(dst, src);
    return;
  }
  kernels::dispatch_all_and_half(dst.dtype(), "copy_", [&]<class D>() {
    kernels::dispatch_all_and_half(src.dtype(), "copy_", [&]<class S>() {
      kernels::assign<D, S>(dst, [](S v) { return kernels::convert<D>(v); }, src);
    });
  });
}

Tensor scalar_to_tensor(const Scalar& s, DType dtype) { return full({}, s, dtype); }

void check_inplace(const Tensor& self, const char* op, bool records_grad) {
  GRAFT_CHECK(!self.is_inference() || InferenceMode::is_enabled(), op, "a normal tensor (made outside InferenceMode)",
              "an inference tensor of shape " + shape_str(self.sizes()) +
                  ". Inplace update to inference tensor outside InferenceMode is not allowed",
              "make a normal tensor with .clone() first (Note [Inference tensors])");
  if (GradMode::is_enabled()) {
    GRAFT_CHECK(!(self.is_leaf() && self.requires_grad()), op, "a tensor that is not a leaf requiring grad",
                "a leaf tensor of shape " + shape_str(self.sizes()) + " that requires grad",
                "a leaf Variable that requires grad is being used in an in-place operation; wrap the update in "
                "graft::NoGradGuard (as optimisers do), or work on a .clone()");
  }
  GRAFT_CHECK(!(records_grad && self.impl().is_view), op, "an in-place op recorded by autograd on a tensor that "
              "is not a view", "a view of shape " + shape_str(self.sizes()),
              "in-place ops on views are not recorded by graft's autograd; use the out-of-place op, or write "
              "the result back with graft::cat / index ops");
  for (int64_t d = 0; d < self.dim(); ++d) {
    GRAFT_CHECK(!(self.stride(d) == 0 && self.size(d) > 1), op,
                "a tensor whose elements have distinct memory locations",
                "an expanded tensor of shape " + shape_str(self.sizes()) + " with stride 0 in dim " + std::to_string(d),
                "more than one element of the written-to tensor refers to a single memory location; call "
                ".clone() before the in-place op");
  }
}

}  // namespace detail

// ---- clone / to / contiguous ----
Tensor Tensor::clone() const {
  Tensor y = make_empty(sizes(), dtype(), device());
  detail::copy_into(y, *this);
  if (auto node = make_node("CloneBackward0", OpId::clone, {this}, [](Node&, const Tensor& g) -> TensorList { return {g}; }))
    set_history(y, node);
  return y;
}
Tensor clone(const Tensor& x) { return x.clone(); }

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::to(DType dt, bool /*non_blocking*/, bool copy) const {
  if (dt == dtype() && !copy) return *this;
  // Any pair of dtypes converts; float16/bfloat16 round to nearest even (Note [Half-precision
  // conversions] in graft/core/half.h). Between floating dtypes the gradient is cast back.
  Tensor y = make_empty(sizes(), dt, device());
  detail::copy_into(y, *this);
  if (graft::is_floating_point(dt)) {
    if (auto node = make_node("ToCopyBackward0", OpId::to, {this}, [from = dtype()](Node&, const Tensor& g) -> TensorList {
          return {g.to(from)};
        }))
      set_history(y, node);
  }
  return y;
}

// Between the CPU and meta (Note [Meta device]): to(kMeta) keeps sizes and dtype and drops the values
// (a new tensor without history: autograd does not cross devices here, so make it a leaf again with
// requires_grad_() when you need one); a meta tensor has no values to bring to the CPU.
static Tensor to_device(const Tensor& x, Device device, bool copy) {
  GRAFT_CHECK(device.is_cpu() || device.is_meta(), "Tensor::to", "a CPU device or the meta device", device.str(),
              "graft runs on the CPU and on meta tensors so far; the CUDA device is planned");
  if (device.type() == x.device().type()) return copy ? x.clone() : x;
  GRAFT_CHECK(device.is_meta(), "Tensor::to", "a tensor with data to copy to the CPU",
              "a meta tensor of shape " + shape_str(x.sizes()),
              "meta tensors have sizes but no values; build the tensor (or the model) on the CPU instead");
  return make_empty(x.sizes(), x.dtype(), device);
}

Tensor Tensor::to(Device device, DType dt, bool non_blocking, bool copy) const {
  return to_device(*this, device, false).to(dt, non_blocking, copy);
}

// to(options) converts dtype and device; it does not change requires_grad (the result follows
// autograd as to(dtype) does), so options asking for requires_grad = true are refused, as LibTorch
// refuses them. requires_grad(false) is the default and passes.
Tensor Tensor::to(const TensorOptions& options, bool non_blocking, bool copy) const {
  GRAFT_CHECK(!options.requires_grad(), "Tensor::to", "options without requires_grad set",
              "options with requires_grad = true (to(options) expects unset requires_grad flag, but got "
              "options.requires_grad set as true)",
              "convert first, then call requires_grad_(true) on the result (a leaf), or keep the history of a "
              "tensor that requires grad: to(dtype) keeps it");
  const Tensor on_device = options.has_device() ? to_device(*this, options.device(), false) : *this;
  if (options.has_dtype()) return on_device.to(options.dtype(), non_blocking, copy && on_device.is_same(*this));
  return copy && on_device.is_same(*this) ? clone() : on_device;
}

Tensor Tensor::to(const Tensor& other, bool non_blocking, bool copy) const {
  return to(other.device(), other.dtype(), non_blocking, copy);
}

// ---- in-place copies and fills ----
Tensor& Tensor::copy_(const Tensor& src) const {
  const bool record = autograd::should_record({this, &src});
  detail::check_inplace(mut(), "copy_", record);
  GRAFT_CHECK(!(is_alias_of(src) && !is_same(src) && record), "copy_", "a source that does not alias the destination",
              "an overlapping view", "copy from a .clone() of the source");
  Tensor source = src;
  if (is_alias_of(src) && !is_same(src)) source = src.detach().clone();  // overlapping memory
  detail::copy_into(mut(), source.detach());
  impl().storage->bump_version("copy_");
  if (record) {
    // d copy_(self, src)/d src = g summed to src's shape; the old value of self gets nothing. Self is
    // an input too, so that a constant source still replaces self's history (as in PyTorch).
    auto node = make_node("CopyBackwards", OpId::copy_, {this, &src}, [sd = src.dtype()](Node& n, const Tensor& g) -> TensorList {
      return {Tensor(), n.needs_input_grad(1) ? g.to(sd) : Tensor()};
    });
    set_history(mut(), node);
  } else if (GradMode::is_enabled() && requires_grad() && !src.requires_grad()) {
    impl().autograd->grad_fn.reset();  // overwritten by a constant: no history left
  }
  return mut();
}

namespace {
// fill_ and zero_ (named as called, for error messages and grad_fn).
Tensor& fill_impl(Tensor& self, const Scalar& value, OpId id, const char* node_name) {
  const char* op = ops::op_name(id);
  const bool record = autograd::should_record({&self});
  detail::check_inplace(self, op, record);
  kernels::dispatch_all_and_half(self.dtype(), op, [&]<class T>() {
    T v;
    if constexpr (kernels::is_half_v<T>) v = T(value.to<double>());
    else v = value.to<T>();
    kernels::assign<T>(self, [v] { return v; });
  });
  self.impl().storage->bump_version(op);
  if (record) {
    auto node = make_node(node_name, id, {&self}, [](Node&, const Tensor& g) -> TensorList { return {zeros_like(g)}; });
    set_history(self, node);
  }
  return self;
}
}  // namespace

Tensor& Tensor::fill_(const Scalar& value) const { return fill_impl(mut(), value, OpId::fill_, "FillBackward0"); }
Tensor& Tensor::zero_() const { return fill_impl(mut(), 0, OpId::zero_, "ZeroBackward0"); }

}  // namespace graft
