// Joining and indexing: cat, stack, index_select, index_add, gather, scatter_add, embedding and
// one_hot. Kernels are plain loops over contiguous copies (src/kernels/indexing.h); every backward is
// written with graft ops (cat <-> narrow, index_select <-> index_add, gather <-> scatter_add), so
// double backward works.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "../kernels/indexing.h"
#include "graft/core/memory.h"
#include "graft/autograd/node.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"
#include "ops_common.h"

namespace graft {

using autograd::make_node;
using autograd::Node;
using autograd::set_history;

namespace {

// x as a contiguous tensor of dtype `dt`, without recording.
Tensor plain(const Tensor& x, DType dt) {
  NoGradGuard ng;
  Tensor d = x.detach();
  if (d.dtype() != dt) d = d.to(dt);
  return d.contiguous();
}

int64_t prod(IntArrayRef s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

std::string idx_str(int64_t v) { return std::to_string(v); }

// Checks that `index` is an int64 tensor, or int32 where PyTorch takes one too (index_select,
// index_add, embedding), of the ranks given by the caller, and returns its values in row-major
// order, each checked to lie in [0, bound).
std::vector<int64_t> checked_indices(const Tensor& index, int64_t bound, int64_t dim, const char* op) {
  const bool int32_ok = std::string_view(op) != "gather" && std::string_view(op) != "scatter_add";
  GRAFT_CHECK(index.defined() && (index.dtype() == kInt64 || (int32_ok && index.dtype() == kInt32)), op,
              int32_ok ? "an int64 or int32 index tensor" : "an int64 index tensor",
              index.defined() ? std::string("a ") + dtype_name(index.dtype()) + " index" : "an undefined index",
              "convert the index with .to(graft::kInt64)");
  // Note [Meta device]: a meta index has no values to check (nor to use: the kernels do not run).
  if (index.is_meta()) return {};
  std::vector<int64_t> out = kernels::indexing::read_indices(plain(index, kInt64));
  for (int64_t v : out) {
    GRAFT_CHECK(v >= 0 && v < bound, op,
                "indices in [0, " + idx_str(bound) + ") for dim " + idx_str(dim) + " of size " + idx_str(bound),
                "index " + idx_str(v) + " which is out of range for dim " + idx_str(dim) + " of size " + idx_str(bound),
                "index out of range");
  }
  return out;
}

// out (a fresh contiguous tensor of `out_shape`, whose row-major layout is x's shape with dim d
// replaced by idx.size()) = x's slices idx[j] along d, in order.
Tensor select_kernel(const Tensor& x, int64_t d, const std::vector<int64_t>& idx, IntArrayRef out_shape) {
  const int64_t n = x.size(d);
  const int64_t outer = prod(x.sizes(), 0, static_cast<size_t>(d));
  const int64_t inner = prod(x.sizes(), static_cast<size_t>(d) + 1, static_cast<size_t>(x.dim()));
  const Tensor cx = plain(x, x.dtype());
  Tensor y = make_empty(out_shape, x.dtype(), x.device());
  if (y.is_meta()) return y;  // Note [Meta device]: no kernel on meta
  kernels::indexing::index_select(cx, idx, {outer, n, inner}, y);
  return y;
}

}  // namespace

// ---- cat ----
Tensor cat(const TensorList& tensors, int64_t dim) {
  GRAFT_CHECK(!tensors.empty(), "cat", "a non-empty list of tensors", "an empty list", "pass at least one tensor");
  // PyTorch's legacy rule: 1-D tensors of shape [0] are skipped (they may have any other rank).
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; };
  DType dt = DType::Bool;
  Device device(DeviceType::CPU);
  bool first_dtype = true;
  int64_t ref = -1;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    GRAFT_CHECK(t.defined(), "cat", "defined tensors", "an undefined tensor at position " + idx_str(static_cast<int64_t>(i)),
                "pass only defined tensors");
    GRAFT_CHECK(t.dim() > 0, "cat", "tensors with at least one dimension",
                "a zero-dimensional tensor at position " + idx_str(static_cast<int64_t>(i)),
                "zero-dimensional tensors cannot be concatenated; use graft::stack or .unsqueeze(0)");
    dt = first_dtype ? t.dtype() : promote_types(dt, t.dtype());
    // Note [Meta device]: all meta or all CPU, the result on that device.
    device = detail::op_device("cat", {&tensors[0], &t});
    first_dtype = false;
    if (ref < 0 && !skipped(t)) ref = static_cast<int64_t>(i);
  }
  if (ref < 0) {  // every input is an empty 1-D tensor
    (void)wrap_dim(dim, 1, "cat");
    return make_empty({0}, dt, device);
  }
  const Tensor& r = tensors[static_cast<size_t>(ref)];
  const int64_t d = wrap_dim(dim, r.dim(), "cat");
  Shape out_shape(r.sizes());
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped(t)) continue;
    GRAFT_CHECK(t.dim() == r.dim(), "cat", "tensors with the same number of dimensions",
                "tensor " + idx_str(static_cast<int64_t>(i)) + " of shape " + shape_str(t.sizes()) + " (" +
                    idx_str(t.dim()) + " dims) and tensor " + idx_str(ref) + " of shape " + shape_str(r.sizes()) +
                    " (" + idx_str(r.dim()) + " dims)",
                "unsqueeze or reshape the tensors to the same rank first");
    for (int64_t k = 0; k < r.dim(); ++k) {
      GRAFT_CHECK(k == d || t.size(k) == r.size(k), "cat",
                  "sizes that match except in dimension " + idx_str(d),
                  "tensor " + idx_str(static_cast<int64_t>(i)) + " of shape " + shape_str(t.sizes()) + " and tensor " +
                      idx_str(ref) + " of shape " + shape_str(r.sizes()) + " (they differ in dimension " + idx_str(k) + ")",
                  "only the dimension being concatenated may differ; check the dim argument");
    }
    total += t.size(d);
  }
  out_shape[static_cast<size_t>(d)] = total;
  Tensor y = make_empty(out_shape, dt, device);
  std::vector<int64_t> lengths;  // size along d of each input; -1 for a skipped one
  {
    NoGradGuard ng;
    int64_t start = 0;
    for (const Tensor& t : tensors) {
      if (skipped(t)) {
        lengths.push_back(-1);
        continue;
      }
      const int64_t len = t.size(d);
      lengths.push_back(len);
      if (len == 0) continue;
      Tensor region = y.slice(d, start, start + len);
      detail::copy_into(region, t.detach());
      start += len;
    }
  }
  if (auto node = make_node("CatBackward0", OpId::cat, tensors, [d, lengths](Node& n, const Tensor& g) -> TensorList {
        // d cat = the gradient split back along d
        TensorList out;
        int64_t start = 0;
        for (size_t i = 0; i < lengths.size(); ++i) {
          if (lengths[i] < 0) {
            out.push_back(Tensor());
            continue;
          }
          if (n.needs_input_grad(i)) out.push_back(g.narrow(d, start, lengths[i]));
          else out.push_back(Tensor());
          start += lengths[i];
        }
        return out;
      }))
    set_history(y, node);
  return y;
}

// ---- stack ----
Tensor stack(const TensorList& tensors, int64_t dim) {
  GRAFT_CHECK(!tensors.empty(), "stack", "a non-empty list of tensors", "an empty list", "pass at least one tensor");
  const Tensor& r = tensors[0];
  GRAFT_CHECK(r.defined(), "stack", "defined tensors", "an undefined tensor at position 0",
              "pass only defined tensors");
  for (size_t i = 1; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    GRAFT_CHECK(t.defined(), "stack", "defined tensors", "an undefined tensor at position " + idx_str(static_cast<int64_t>(i)),
                "pass only defined tensors");
    GRAFT_CHECK(t.sizes().equals(r.sizes()), "stack", "tensors of equal shape",
                "tensor " + idx_str(static_cast<int64_t>(i)) + " of shape " + shape_str(t.sizes()) +
                    " and tensor 0 of shape " + shape_str(r.sizes()),
                "stack expects each tensor to be equal size");
  }
  const int64_t d = wrap_dim(dim, r.dim() + 1, "stack");
  TensorList parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
  return cat(parts, d);
}

// ---- index_select ----
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  detail::MetaOpScope meta_scope("index_select", {&x, &index});  // Note [Meta device]
  GRAFT_CHECK(index.defined() && index.dim() <= 1, "index_select", "a 1-D or 0-dim index",
              index.defined() ? "an index of shape " + shape_str(index.sizes()) : "an undefined index",
              "flatten the index with .reshape({-1}) or pass a 1-D int64 tensor");
  if (x.dim() == 0) {
    (void)wrap_dim(dim, 1, "index_select");
    checked_indices(index, 1, 0, "index_select");
    Tensor y = x.reshape({1}).index_select(0, index.reshape({-1}));
    return index.dim() == 0 ? y.reshape({}) : y;
  }
  const int64_t d = wrap_dim(dim, x.dim(), "index_select");
  const int64_t n = x.size(d);
  const std::vector<int64_t> idx = checked_indices(index, n, d, "index_select");
  Shape out_shape(x.sizes());
  out_shape[static_cast<size_t>(d)] = index.numel();
  Tensor y = select_kernel(x, d, idx, out_shape);
  if (auto node = make_node("IndexSelectBackward0", OpId::index_select, {&x}, [in = Shape(x.sizes()), d](Node& n_, const Tensor& g) -> TensorList {
        // d index_select = the gradient added back at the selected positions
        return {zeros(in, g.dtype()).index_add(d, n_.saved(0), g)};
      })) {
    node->save(index);
    set_history(y, node);
  }
  return y;
}

// ---- index_add: out = x, then out[..., index[j], ...] += alpha * source[..., j, ...] ----
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  detail::MetaOpScope meta_scope("index_add", {&x, &index, &source});  // Note [Meta device]
  GRAFT_CHECK(index.defined() && index.dim() <= 1, "index_add", "a 1-D or 0-dim index",
              index.defined() ? "an index of shape " + shape_str(index.sizes()) : "an undefined index",
              "flatten the index with .reshape({-1}) or pass a 1-D int64 tensor");
  GRAFT_CHECK(source.dim() == x.dim(), "index_add", "a source with as many dims as the tensor (" + idx_str(x.dim()) + ")",
              "source of shape " + shape_str(source.sizes()) + " for a tensor of shape " + shape_str(x.sizes()),
              "unsqueeze or reshape the source to the tensor's rank");
  const DType dt = promote_types(x.dtype(), source.dtype());
  Tensor y;
  if (x.dim() == 0) {
    (void)wrap_dim(dim, 1, "index_add");
    GRAFT_CHECK(index.numel() == 1, "index_add", "one index for a 0-dim tensor",
                "an index of shape " + shape_str(index.sizes()),
                "a 0-dim tensor has one position; pass a single index");
    checked_indices(index, 1, 0, "index_add");
    y = plain(x, dt).clone();
    // One slice of one element: y += alpha * source (the kernel returns on meta).
    kernels::indexing::index_add(y, plain(source, dt), {0}, {1, 1, 1}, alpha);
  } else {
    const int64_t d = wrap_dim(dim, x.dim(), "index_add");
    const int64_t n = x.size(d);
    GRAFT_CHECK(source.size(d) == index.numel(), "index_add",
                "a source whose dim " + idx_str(d) + " has one entry per index (" + idx_str(index.numel()) + ")",
                "source of shape " + shape_str(source.sizes()) + " with an index of " + idx_str(index.numel()) + " elements",
                "give the source one slice along dim per index entry");
    for (int64_t k = 0; k < x.dim(); ++k)
      GRAFT_CHECK(k == d || source.size(k) == x.size(k), "index_add",
                  "a source matching the tensor's shape " + shape_str(x.sizes()) + " except in dim " + idx_str(d),
                  "source of shape " + shape_str(source.sizes()),
                  "the source may differ from the tensor only in the indexed dim");
    const std::vector<int64_t> idx = checked_indices(index, n, d, "index_add");
    const int64_t outer = prod(x.sizes(), 0, static_cast<size_t>(d));
    const int64_t inner = prod(x.sizes(), static_cast<size_t>(d) + 1, static_cast<size_t>(x.dim()));
    y = plain(x, dt).clone();
    const Tensor cs = plain(source, dt);
    kernels::indexing::index_add(y, cs, idx, {outer, n, inner}, alpha);  // returns on meta
  }
  if (auto node = make_node("IndexAddBackward0", OpId::index_add, {&x, &source}, [dim, alpha](Node& n_, const Tensor& g) -> TensorList {
        // d x = g; d source = alpha * g.index_select(dim, index)
        Tensor gs;
        if (n_.needs_input_grad(1)) {
          gs = g.index_select(dim, n_.saved(0));
          if (alpha.to_double() != 1.0) gs = gs * alpha;
        }
        return {n_.needs_input_grad(0) ? g : Tensor(), gs};
      })) {
    node->save(index);
    set_history(y, node);
  }
  return y;
}

// ---- gather: out[p] = x[p with dim replaced by index[p]] ----
namespace {
// Shared checks of gather / scatter_add: index int64 with x's rank; index.size(k) <= x.size(k) for
// k != dim (and <= src.size(k) for every k when src is given). Returns the wrapped dim.
int64_t check_gather_like(const Tensor& x, int64_t dim, const Tensor& index, const Tensor* src, const char* op) {
  GRAFT_CHECK(index.defined() && index.dtype() == kInt64, op, "an int64 index tensor",
              index.defined() ? std::string("a ") + dtype_name(index.dtype()) + " index" : "an undefined index",
              "convert the index with .to(graft::kInt64)");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
  GRAFT_CHECK(index.dim() == x.dim() || (x.dim() == 0 && index.dim() <= 1), op,
              "an index with as many dims as the tensor (" + idx_str(x.dim()) + ")",
              "an index of shape " + shape_str(index.sizes()) + " for a tensor of shape " + shape_str(x.sizes()),
              "unsqueeze the index to the tensor's rank, e.g. index.unsqueeze(dim)");
  for (int64_t k = 0; k < x.dim(); ++k)
    GRAFT_CHECK(k == d || index.size(k) <= x.size(k), op,
                "index.size(" + idx_str(k) + ") <= " + idx_str(x.size(k)) + " (the tensor's size there)",
                "an index of shape " + shape_str(index.sizes()) + " for a tensor of shape " + shape_str(x.sizes()),
                "the index may not be larger than the tensor outside dim");
  if (src) {
    GRAFT_CHECK(src->dim() == index.dim(), op, "a src with as many dims as the index (" + idx_str(index.dim()) + ")",
                "src of shape " + shape_str(src->sizes()) + " and index of shape " + shape_str(index.sizes()),
                "unsqueeze or reshape src to the index's rank");
    for (int64_t k = 0; k < index.dim(); ++k)
      GRAFT_CHECK(index.size(k) <= src->size(k), op, "index.size(" + idx_str(k) + ") <= src.size(" + idx_str(k) + ")",
                  "src of shape " + shape_str(src->sizes()) + " and index of shape " + shape_str(index.sizes()),
                  "src must be at least as large as the index in every dim");
  }
  return d;
}

// A 0-dim tensor seen as 1-D, for the gather-like kernels.
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

// g (of index's shape) padded with zeros at the end of each dim up to `shape`. Differentiable.
Tensor pad_to(Tensor g, IntArrayRef shape) {
  for (int64_t k = 0; k < g.dim(); ++k) {
    const int64_t extra = shape[static_cast<size_t>(k)] - g.size(k);
    if (extra <= 0) continue;
    Shape zs(g.sizes());
    zs[static_cast<size_t>(k)] = extra;
    g = cat({g, zeros(zs, g.dtype())}, k);
  }
  return g;
}
}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  memory::OpScope op_scope("gather");
  detail::MetaOpScope meta_scope("gather", {&x, &index});  // Note [Meta device]
  const int64_t d = check_gather_like(x, dim, index, nullptr, "gather");
  const Tensor cx = as_1d(plain(x, x.dtype()));
  const int64_t n = cx.size(d);
  const Tensor ci = as_1d(plain(index, kInt64));
  const std::vector<int64_t> idx = checked_indices(ci, n, d, "gather");
  Tensor y = make_empty(index.sizes(), x.dtype());
  kernels::indexing::gather(cx, d, ci, idx, y);  // returns on meta
  if (auto node = make_node("GatherBackward0", OpId::gather, {&x}, [in = Shape(x.sizes()), d](Node& n_, const Tensor& g) -> TensorList {
        // d gather = the gradient scattered back (and added) at the gathered positions
        return {zeros(in, g.dtype()).scatter_add(d, n_.saved(0), g)};
      })) {
    node->save(index);
    set_history(y, node);
  }
  return y;
}

// ---- scatter_add: out = x, then out[p with dim replaced by index[p]] += src[p] ----
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  GRAFT_CHECK(src.defined(), "scatter_add", "a defined src", "an undefined src", "pass a defined src tensor");
  detail::MetaOpScope meta_scope("scatter_add", {&x, &index, &src});  // Note [Meta device]
  const int64_t d = check_gather_like(x, dim, index, &src, "scatter_add");
  const DType dt = promote_types(x.dtype(), src.dtype());
  Tensor y = as_1d(plain(x, dt).clone());
  const int64_t n = y.size(d);
  const Tensor ci = as_1d(plain(index, kInt64));
  const std::vector<int64_t> idx = checked_indices(ci, n, d, "scatter_add");
  const Tensor cs = as_1d(plain(src, dt));
  kernels::indexing::scatter_add(y, d, ci, idx, cs);  // returns on meta
  if (x.dim() == 0) y = y.reshape({});
  if (auto node = make_node("ScatterAddBackward0", OpId::scatter_add, {&x, &src}, [d, src_shape = Shape(src.sizes())](Node& n_, const Tensor& g) -> TensorList {
        // d x = g; d src = g.gather(dim, index) (zero where src has no index entry)
        Tensor gs;
        if (n_.needs_input_grad(1)) {
          const Tensor index = n_.saved(0);
          gs = pad_to(g.gather(d, index), src_shape);
          if (src_shape.size() == 0) gs = gs.reshape({});
        }
        return {n_.needs_input_grad(0) ? g : Tensor(), gs};
      })) {
    node->save(index);
    set_history(y, node);
  }
  return y;
}

// ---- embedding ----
// ATen's argument order: (weight, indices).
Tensor embedding(const Tensor& weight, const Tensor& input, std::optional<int64_t> padding_idx) {
  detail::MetaOpScope meta_scope("embedding", {&weight, &input});  // Note [Meta device]
  GRAFT_CHECK(input.defined() && (input.dtype() == kInt64 || input.dtype() == kInt32), "embedding",
              "an int64 or int32 input of indices",
              input.defined() ? std::string("a ") + dtype_name(input.dtype()) + " input" : "an undefined input",
              "convert the indices with .to(graft::kInt64)");
  GRAFT_CHECK(weight.defined() && weight.dim() == 2, "embedding", "a 2-D weight (num_embeddings, embedding_dim)",
              weight.defined() ? "a weight of shape " + shape_str(weight.sizes()) : "an undefined weight",
              "pass a weight of shape (num_embeddings, embedding_dim)");
  const int64_t num = weight.size(0), dim = weight.size(1);
  std::optional<int64_t> pad = padding_idx;
  if (pad) {
    GRAFT_CHECK(*pad >= -num && *pad < num, "embedding", "padding_idx in [" + idx_str(-num) + ", " + idx_str(num) + ")",
                "padding_idx " + idx_str(*pad) + " for num_embeddings " + idx_str(num),
                "pick padding_idx among the rows of the weight, or leave it unset");
    if (*pad < 0) *pad += num;
  }
  const Tensor ids = plain(input, kInt64).reshape({-1});
  const std::vector<int64_t> v = checked_indices(ids, num, 0, "embedding");
  Shape out_shape(input.sizes());
  out_shape.push_back(dim);
  Tensor y = select_kernel(weight, 0, v, out_shape);
  if (auto node = make_node("EmbeddingBackward0", OpId::embedding, {&weight}, [num, dim, has_pad = pad.has_value()](Node& n_, const Tensor& g) -> TensorList {
        // d weight = the gradient rows added into the looked-up rows (none into padding_idx's row)
        Tensor gf = g.reshape({-1, dim});
        if (has_pad) gf = gf * n_.saved(1);
        return {zeros({num, dim}, g.dtype()).index_add(0, n_.saved(0), gf)};
      })) {
    node->save(ids);
    if (pad) {
      Tensor keep = make_empty({ids.numel(), 1}, weight.dtype());
      kernels::indexing::padding_keep(v, *pad, keep);  // returns on meta
      node->save(keep);
    }
    set_history(y, node);
  }
  return y;
}

// ---- one_hot ----
Tensor one_hot(const Tensor& input, int64_t num_classes) {
  GRAFT_CHECK(input.defined() && input.dtype() == kInt64, "one_hot", "an int64 input of class indices",
              input.defined() ? std::string("a ") + dtype_name(input.dtype()) + " input" : "an undefined input",
              "convert the indices with .to(graft::kInt64)");
  GRAFT_CHECK(num_classes >= -1, "one_hot", "num_classes >= 0 (or -1 to infer it)",
              "num_classes " + idx_str(num_classes), "pass the number of classes, or -1 to use max(input) + 1");
  if (input.is_meta()) {  // Note [Meta device]: no values to check, nor to infer num_classes from
    GRAFT_CHECK(num_classes != -1, "one_hot", "an explicit num_classes for a meta input",
                "num_classes -1 (inferred from the values) on a meta tensor of shape " + shape_str(input.sizes()),
                "meta tensors have no values; pass num_classes");
    Shape out_shape(input.sizes());
    out_shape.push_back(num_classes);
    return make_empty(out_shape, kInt64, input.device());
  }
  const std::vector<int64_t> p = kernels::indexing::read_indices(plain(input, kInt64));
  const int64_t n = static_cast<int64_t>(p.size());
  for (int64_t c : p)
    GRAFT_CHECK(c >= 0, "one_hot", "non-negative class values", "class value " + idx_str(c),
                "class values index the classes; remap negative labels (e.g. an ignore label) first");
  if (num_classes == -1) {
    GRAFT_CHECK(n > 0, "one_hot", "a non-empty input when num_classes is -1", "an empty input of shape " + shape_str(input.sizes()),
                "pass num_classes explicitly");
    num_classes = *std::max_element(p.begin(), p.end()) + 1;
  }
  for (int64_t c : p)
    GRAFT_CHECK(c < num_classes, "one_hot", "class values smaller than num_classes (" + idx_str(num_classes) + ")",
                "class value " + idx_str(c), "raise num_classes, or pass -1 to infer it");
  Shape out_shape(input.sizes());
  out_shape.push_back(num_classes);
  Tensor y = zeros(out_shape, kInt64);
  kernels::indexing::one_hot(p, num_classes, y);
  return y;
}

}  // namespace graft
