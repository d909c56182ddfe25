// View ops: results share storage (and the version counter) with their input. Each op's shape rule,
// forward and backward sit together. Backward of a view maps the gradient back to the input's shape.
#include <numeric>

#include "graft/core/small_object_pool.h"
#include "graft/autograd/node.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

Tensor make_view(const Tensor& x, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  auto& i = x.impl();
  auto impl = std::allocate_shared<TensorImpl>(graft::detail::PoolAllocator<TensorImpl>(), i.storage, offset, sizes, strides, i.dtype);
  impl->is_view = true;
  impl->is_inference = i.is_inference;  // a view is an inference tensor when its base is
  return Tensor(std::move(impl));
}

namespace {
// Strides for viewing `x` as `shape` without a copy, or nullopt when impossible (PyTorch's
// computeStride: each run of input dims that is contiguous in memory can be re-split freely).
std::optional<Shape> view_strides(const Tensor& x, IntArrayRef shape) {
  Shape out;
  out.resize(shape.size());
  if (x.numel() == 0 || x.dim() == 0) return contiguous_strides(shape);  // a 0-dim tensor views as any all-1 shape
  IntArrayRef old_sizes = x.sizes(), old_strides = x.strides();
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.size() ? old_strides.back() : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[static_cast<size_t>(tensor_d)];
    if (tensor_d == 0 || (old_sizes[static_cast<size_t>(tensor_d - 1)] != 1 &&
                          old_strides[static_cast<size_t>(tensor_d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[static_cast<size_t>(view_d)] == 1)) {
        out[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= shape[static_cast<size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[static_cast<size_t>(tensor_d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// Resolves one -1 and checks the element count.
Shape infer_shape(IntArrayRef shape, int64_t numel, const char* op, IntArrayRef from) {
  Shape out(shape);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      GRAFT_CHECK(infer < 0, op, "at most one -1 in the shape", shape_str(shape), "only one size can be inferred");
      infer = static_cast<int64_t>(i);
    } else {
      GRAFT_CHECK(out[i] >= 0, op, "sizes >= 0 (or one -1)", shape_str(shape),
                  "use -1 for at most one size to infer it");
      known *= out[i];
    }
  }
  if (infer >= 0) {
    GRAFT_CHECK(known != 0 && numel % known == 0, op, "a shape compatible with " + std::to_string(numel) + " elements",
                shape_str(shape) + " for input of shape " + shape_str(from),
                "the sizes other than -1 must divide the element count");
    out[static_cast<size_t>(infer)] = numel / known;
  } else {
    GRAFT_CHECK(known == numel, op, "a shape with " + std::to_string(numel) + " elements (input " + shape_str(from) + ")",
                shape_str(shape) + " with " + std::to_string(known) + " elements",
                "the number of elements must stay the same; use -1 to infer one size");
  }
  return out;
}
}  // namespace

// ---- view / reshape ----
Tensor Tensor::view(IntArrayRef shape) const {
  Shape s = infer_shape(shape, numel(), "view", sizes());
  auto st = view_strides(*this, s);
  GRAFT_CHECK(st.has_value(), "view", "a tensor whose memory layout allows the new shape",
              "a non-contiguous tensor of shape " + shape_str(sizes()) + " and strides " + shape_str(strides()) +
                  " to view as " + shape_str(s),
              "use .reshape(), which copies when needed, or call .contiguous() first");
  Tensor y = make_view(*this, s, *st, storage_offset());
  if (auto node = make_node("ViewBackward0", OpId::view, {this}, [in = Shape(sizes())](Node&, const Tensor& g) -> TensorList {
        return {g.reshape(in)};  // d view = reshape back
      }))
    set_history(y, node);
  return y;
}

Tensor Tensor::reshape(IntArrayRef shape) const {
  Shape s = infer_shape(shape, numel(), "reshape", sizes());
  if (view_strides(*this, s)) return view(s);
  return contiguous().view(s);
}
Tensor reshape(const Tensor& x, IntArrayRef shape) { return x.reshape(shape); }

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const int64_t s = wrap_dim(start_dim, dim(), "flatten"), e = wrap_dim(end_dim, dim(), "flatten");
  GRAFT_CHECK(s <= e, "flatten", "start_dim <= end_dim", std::to_string(s) + " > " + std::to_string(e),
              "swap start_dim and end_dim");
  Shape out;
  for (int64_t d = 0; d < s; ++d) out.push_back(size(d));
  int64_t m = 1;
  for (int64_t d = s; d <= e; ++d) m *= size(d);
  out.push_back(m);
  for (int64_t d = e + 1; d < dim(); ++d) out.push_back(size(d));
  return reshape(out);
}
Tensor flatten(const Tensor& x, int64_t s, int64_t e) { return x.flatten(s, e); }

// ---- transpose / permute ----
Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  const int64_t a = wrap_dim(d0, dim(), "transpose"), b = wrap_dim(d1, dim(), "transpose");
  Shape sz(sizes()), st(strides());
  if (dim() > 0) {
    std::swap(sz[static_cast<size_t>(a)], sz[static_cast<size_t>(b)]);
    std::swap(st[static_cast<size_t>(a)], st[static_cast<size_t>(b)]);
  }
  Tensor y = make_view(*this, sz, st, storage_offset());
  if (auto node = make_node("TransposeBackward0", OpId::transpose, {this}, [a, b](Node&, const Tensor& g) -> TensorList {
        return {g.transpose(a, b)};
      }))
    set_history(y, node);
  return y;
}
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) { return x.transpose(d0, d1); }

Tensor Tensor::t() const {
  GRAFT_CHECK(dim() <= 2, "t", "a tensor with at most 2 dimensions", shape_str(sizes()),
              "use .transpose(dim0, dim1) or .permute() for higher ranks");
  return dim() < 2 ? view(sizes()) : transpose(0, 1);
}

Tensor Tensor::permute(IntArrayRef dims) const {
  GRAFT_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute",
              "one entry per dimension (" + std::to_string(dim()) + ")", shape_str(dims),
              "pass a permutation of all dims, e.g. {0, 2, 1} for a 3-D tensor");
  Shape sz, st, inverse;
  inverse.resize(dims.size(), -1);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "permute");
    GRAFT_CHECK(inverse[static_cast<size_t>(d)] == -1, "permute", "each dim exactly once", shape_str(dims),
                "pass a permutation of all dims, each dim once");
    inverse[static_cast<size_t>(d)] = static_cast<int64_t>(i);
    sz.push_back(size(d));
    st.push_back(stride(d));
  }
  Tensor y = make_view(*this, sz, st, storage_offset());
  if (auto node = make_node("PermuteBackward0", OpId::permute, {this}, [inverse](Node&, const Tensor& g) -> TensorList {
        return {g.permute(inverse)};
      }))
    set_history(y, node);
  return y;
}
Tensor permute(const Tensor& x, IntArrayRef dims) { return x.permute(dims); }

// ---- slicing ----
// The gradient of a slice: zeros of the input's shape with `g` written into the slice. Recorded as
// its own op so that double backward works (its backward is the slice again).
Tensor slice_backward(const Tensor& g, IntArrayRef input_sizes, int64_t dim, int64_t start, int64_t end,
                      int64_t step) {
  Tensor out = zeros(input_sizes, TensorOptions(g.dtype()).device(g.device()));
  {
    NoGradGuard ng;
    Tensor region = out.slice(dim, start, end, step);
    detail::copy_into(region, g);
  }
  if (auto node = autograd::make_node("SliceBackwardBackward0", autograd::ForwardOp::unlisted("slice_backward"), {&g}, [dim, start, end, step](Node&, const Tensor& gg) -> TensorList {
        return {gg.slice(dim, start, end, step)};
      }))
    set_history(out, node);
  return out;
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start_opt, std::optional<int64_t> end_opt, int64_t step) const {
  const int64_t dd = wrap_dim(d, dim(), "slice");
  GRAFT_CHECK(dim() > 0, "slice", "a tensor with at least one dimension", "a 0-dim tensor",
              "unsqueeze the 0-dim tensor first, or use .item()");
  GRAFT_CHECK(step > 0, "slice", "a positive step", "step " + std::to_string(step), "negative steps are not supported");
  const int64_t n = size(dd);
  auto clampi = [n](int64_t v) {
    if (v < 0) v += n;
    return std::clamp<int64_t>(v, 0, n);
  };
  const int64_t start = clampi(start_opt.value_or(0));
  const int64_t end = std::max(start, end_opt ? clampi(*end_opt) : n);
  const int64_t len = (end - start + step - 1) / step;
  Shape sz(sizes()), st(strides());
  sz[static_cast<size_t>(dd)] = len;
  st[static_cast<size_t>(dd)] *= step;
  Tensor y = make_view(*this, sz, st, storage_offset() + start * stride(dd));
  if (auto node = make_node("SliceBackward0", OpId::slice, {this}, [in = Shape(sizes()), dd, start, end, step](Node&, const Tensor& g) -> TensorList {
        return {slice_backward(g, in, dd, start, end, step)};
      }))
    set_history(y, node);
  return y;
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  const int64_t dd = wrap_dim(d, dim(), "narrow");
  const int64_t n = size(dd);
  if (start < 0) start += n;
  GRAFT_CHECK(start >= 0 && length >= 0 && start + length <= n, "narrow",
              "0 <= start and start + length <= " + std::to_string(n) + " (size of dim " + std::to_string(dd) + ")",
              "start " + std::to_string(start) + ", length " + std::to_string(length),
              "lower start or length so the range fits in the dim");
  return slice(dd, start, start + length, 1);
}
Tensor narrow(const Tensor& x, int64_t d, int64_t s, int64_t l) { return x.narrow(d, s, l); }

Tensor Tensor::select(int64_t d, int64_t index) const {
  GRAFT_CHECK(dim() > 0, "select", "a tensor with at least one dimension", "a 0-dim tensor",
              "use .item() to read a 0-dim tensor");
  const int64_t dd = wrap_dim(d, dim(), "select");
  const int64_t n = size(dd);
  GRAFT_CHECK(index >= -n && index < n, "select", "an index in [" + std::to_string(-n) + ", " + std::to_string(n - 1) + "]",
              "index " + std::to_string(index) + " for dim " + std::to_string(dd) + " of size " + std::to_string(n), "");
  if (index < 0) index += n;
  Shape sz(sizes()), st(strides());
  sz.erase(static_cast<size_t>(dd));
  st.erase(static_cast<size_t>(dd));
  Tensor y = make_view(*this, sz, st, storage_offset() + index * stride(dd));
  if (auto node = make_node("SelectBackward0", OpId::select, {this}, [in = Shape(sizes()), dd, index](Node&, const Tensor& g) -> TensorList {
        return {slice_backward(g.unsqueeze(dd), in, dd, index, index + 1, 1)};
      }))
    set_history(y, node);
  return y;
}
Tensor select(const Tensor& x, int64_t d, int64_t i) { return x.select(d, i); }

// repeat(r): y[i0, i1, ...] = x[i0 % s0, i1 % s1, ...] over sizes r_k * s_k, the leading repeats
// adding dimensions. Built as a view and a copy: x reshaped to [1, s0, 1, s1, ...], expanded to
// [r0, s0, r1, s1, ...], then made contiguous as [r0 * s0, r1 * s1, ...]; autograd sums the copies
// back through expand's backward.
Tensor Tensor::repeat(IntArrayRef repeats) const {
  GRAFT_CHECK(repeats.size() >= static_cast<size_t>(dim()), "repeat",
              "at least as many repeats as dimensions (" + std::to_string(dim()) + ")", shape_str(repeats),
              "give one count per dimension; extra leading counts add dimensions");
  const size_t lead = repeats.size() - static_cast<size_t>(dim());
  Shape split, expanded, out;
  for (size_t k = 0; k < repeats.size(); ++k) {
    const int64_t r = repeats[k];
    GRAFT_CHECK(r >= 0, "repeat", "non-negative repeat counts", shape_str(repeats), "a count of 0 gives an empty tensor");
    const int64_t s = k < lead ? 1 : size(static_cast<int64_t>(k - lead));
    split.push_back(1);
    split.push_back(s);
    expanded.push_back(r);
    expanded.push_back(s);
    out.push_back(r * s);
  }
  return reshape(split).expand(expanded).contiguous().view(out);
}

// ---- expand / squeeze / unsqueeze ----
Tensor Tensor::expand(IntArrayRef target) const {
  GRAFT_CHECK(static_cast<int64_t>(target.size()) >= dim(), "expand",
              "at least as many sizes as the tensor has dims (" + std::to_string(dim()) + ")", shape_str(target),
              "pass a size for every existing dim (-1 keeps it); new dims go in front");
  Shape sz, st;
  const size_t lead = target.size() - static_cast<size_t>(dim());
  for (size_t i = 0; i < target.size(); ++i) {
    if (i < lead) {
      GRAFT_CHECK(target[i] >= 0, "expand", "non-negative new leading sizes", shape_str(target),
                  "new leading dims cannot be -1; give their sizes");
      sz.push_back(target[i]);
      st.push_back(0);
      continue;
    }
    const int64_t cur = size(static_cast<int64_t>(i - lead));
    const int64_t want = target[i] == -1 ? cur : target[i];
    GRAFT_CHECK(cur == want || cur == 1, "expand", "sizes that match the tensor's or expand a size-1 dim",
                shape_str(target) + " for a tensor of shape " + shape_str(sizes()),
                "only dimensions of size 1 can be expanded");
    sz.push_back(want);
    st.push_back(cur == want ? stride(static_cast<int64_t>(i - lead)) : 0);
  }
  Tensor y = make_view(*this, sz, st, storage_offset());
  if (auto node = make_node("ExpandBackward0", OpId::expand, {this}, [in = Shape(sizes())](Node&, const Tensor& g) -> TensorList {
        return {sum_to(g, in)};  // d expand = sum over the expanded dims
      }))
    set_history(y, node);
  return y;
}

Tensor Tensor::squeeze() const {
  Shape sz, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (size(d) != 1) {
      sz.push_back(size(d));
      st.push_back(stride(d));
    }
  Tensor y = make_view(*this, sz, st, storage_offset());
  if (auto node = make_node("SqueezeBackward0", OpId::squeeze, {this}, [in = Shape(sizes())](Node&, const Tensor& g) -> TensorList {
        return {g.reshape(in)};
      }))
    set_history(y, node);
  return y;
}

Tensor Tensor::squeeze(int64_t d) const {
  const int64_t dd = wrap_dim(d, dim(), "squeeze");
  if (dim() == 0 || size(dd) != 1) return view(sizes());  // PyTorch: a no-op, still a view
  Shape sz(sizes()), st(strides());
  sz.erase(static_cast<size_t>(dd));
  st.erase(static_cast<size_t>(dd));
  Tensor y = make_view(*this, sz, st, storage_offset());
  if (auto node = make_node("SqueezeBackward1", OpId::squeeze, {this}, [dd](Node&, const Tensor& g) -> TensorList {
        return {g.unsqueeze(dd)};
      }))
    set_history(y, node);
  return y;
}
Tensor squeeze(const Tensor& x) { return x.squeeze(); }
Tensor squeeze(const Tensor& x, int64_t d) { return x.squeeze(d); }

Tensor Tensor::unsqueeze(int64_t d) const {
  const int64_t dd = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape sz(sizes()), st(strides());
  const int64_t new_stride = dd < dim() ? size(dd) * stride(dd) : 1;
  sz.insert(static_cast<size_t>(dd), 1);
  st.insert(static_cast<size_t>(dd), new_stride);
  Tensor y = make_view(*this, sz, st, storage_offset());
  if (auto node = make_node("UnsqueezeBackward0", OpId::unsqueeze, {this}, [dd](Node&, const Tensor& g) -> TensorList {
        return {g.squeeze(dd)};
      }))
    set_history(y, node);
  return y;
}
Tensor unsqueeze(const Tensor& x, int64_t d) { return x.unsqueeze(d); }

// ---- splitting (each piece is a narrow view with its own node; see Note [One output per node]) ----
TensorList Tensor::split_with_sizes(IntArrayRef split_sizes, int64_t d) const {
  const int64_t dd = wrap_dim(d, dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    GRAFT_CHECK(s >= 0, "split_with_sizes", "non-negative sizes", shape_str(split_sizes), "pass sizes >= 0");
    total += s;
  }
  GRAFT_CHECK(total == size(dd), "split_with_sizes",
              "sizes that add up to " + std::to_string(size(dd)) + " (the size of dim " + std::to_string(dd) + ")",
              shape_str(split_sizes) + " which adds up to " + std::to_string(total),
              "make the sizes add up to the dim's size");
  TensorList out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(narrow(dd, start, s));
    start += s;
  }
  return out;
}

TensorList Tensor::split(int64_t split_size, int64_t d) const {
  const int64_t dd = wrap_dim(d, dim(), "split");
  GRAFT_CHECK(split_size > 0 || (split_size == 0 && size(dd) == 0), "split", "a positive split_size",
              std::to_string(split_size), "pass split_size >= 1");
  std::vector<int64_t> sizes_;
  for (int64_t start = 0; start < size(dd); start += split_size) sizes_.push_back(std::min(split_size, size(dd) - start));
  if (sizes_.empty()) sizes_.push_back(0);
  return split_with_sizes(sizes_, dd);
}

TensorList Tensor::chunk(int64_t chunks, int64_t d) const {
  GRAFT_CHECK(chunks > 0, "chunk", "a positive number of chunks", std::to_string(chunks), "pass chunks >= 1");
  const int64_t dd = wrap_dim(d, dim(), "chunk");
  const int64_t each = (size(dd) + chunks - 1) / chunks;
  return split(std::max<int64_t>(each, 1), dd);
}

TensorList Tensor::unbind(int64_t d) const {
  const int64_t dd = wrap_dim(d, dim(), "unbind");
  TensorList out;
  for (int64_t i = 0; i < size(dd); ++i) out.push_back(select(dd, i));
  return out;
}

TensorList split(const Tensor& x, int64_t s, int64_t d) { return x.split(s, d); }
TensorList split_with_sizes(const Tensor& x, IntArrayRef s, int64_t d) { return x.split_with_sizes(s, d); }
TensorList chunk(const Tensor& x, int64_t c, int64_t d) { return x.chunk(c, d); }

}  // namespace graft
