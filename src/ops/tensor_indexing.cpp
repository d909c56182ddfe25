// Tensor::index and Tensor::index_put_ (Note [Tensor indexing] in graft/core/tensor_indexing.h):
// composites of select, slice, unsqueeze, narrow, permute, reshape and index_select, so autograd
// records them as it records those ops.
#include "graft/core/tensor_indexing.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "../kernels/indexing.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"

namespace graft {

namespace indexing {
TensorIndex::TensorIndex(const char* s) : kind_(Kind::Ellipsis) {
  GRAFT_CHECK(s != nullptr && std::string(s) == "...", "TensorIndex", "\"...\" (Ellipsis) as a string index",
              s ? "\"" + std::string(s) + "\"" : std::string("a null string"), "use graft::indexing::Ellipsis");
}
}  // namespace indexing

namespace {

using indexing::TensorIndex;

// Note [Several advanced indices]
// As PyTorch's x[...]: every tensor index is an advanced index on the dim it stands at, a k-D bool
// mask on the k dims it covers (its true coordinates, k int64 tensors, as nonzero() gives them),
// and true/false (or a 0-dim bool tensor) on the size-1 dim it inserts (positions [0] or none).
// The advanced indices' positions broadcast together to one shape B. When their dims are adjacent
// in the view the basic indices leave, B takes their place in the result; when a slice, None or an
// Ellipsis of at least one dim separates them, B goes first. The gather composes differentiable ops,
// so autograd records it: permute the advanced dims to the front, reshape them into one dim, and
// index_select it with the combined row-major linear index (checked and wrapped per dim first),
// then reshape to B and permute B into place. One advanced index alone (no other tensor index, no
// bool beside it) keeps the single-index path, and true/false alone stay views (unsqueeze, narrow).

// One advanced index: the view's dim it applies to and its int64 positions (any shape).
struct Advanced {
  int64_t dim;
  Tensor positions;
};

// The result of the basic indices, and the advanced indices (ascending dims).
struct Indexed {
  Tensor view;                // x after every basic index
  std::vector<Advanced> adv;  // empty: none
};

// A bool tensor of k >= 1 dims on the view's dims [d, d + k): its true coordinates, one int64
// tensor per dim (nonzero()'s columns).
std::vector<Tensor> mask_coordinates(const Tensor& mask, const Tensor& view, int64_t d, const char* op) {
  const int64_t k = mask.dim();
  const bool fits = d + k <= view.dim() &&
                    std::equal(mask.sizes().begin(), mask.sizes().end(), view.sizes().begin() + d);
  GRAFT_CHECK(fits, op, "a bool mask whose shape matches the indexed dims", "a mask of shape " + shape_str(mask.sizes()) +
              " on dims " + std::to_string(d) + ".. of a view of shape " + shape_str(view.sizes()),
              "a k-D mask covers the k dims it stands at; give it their sizes");
  // Note [Meta device]: the result's size is the mask's count of trues, a value meta tensors lack.
  GRAFT_CHECK(!mask.is_meta(), op, "a bool mask with values", "a meta bool mask of shape " + shape_str(mask.sizes()),
              "a mask's result size depends on its values, which meta tensors do not have; index with int64 "
              "positions, or use masked_fill / where");
  const std::vector<int64_t> flat = kernels::indexing::true_positions(mask.contiguous());
  const auto n = static_cast<int64_t>(flat.size());
  std::vector<Tensor> out;
  int64_t inner = mask.numel();
  for (int64_t j = 0; j < k; ++j) {
    const int64_t size = mask.size(j);
    inner = size == 0 ? 0 : inner / size;
    std::vector<int64_t> c(flat.size());
    for (size_t i = 0; i < flat.size(); ++i) c[i] = inner == 0 ? 0 : flat[i] / inner % size;
    Tensor t = make_empty({n}, kInt64);
    kernels::indexing::write_indices(c, t);
    out.push_back(t);
  }
  return out;
}

Indexed apply_indices(const Tensor& x, const std::vector<TensorIndex>& indices, const char* op) {
  GRAFT_CHECK(x.defined(), op, "a defined tensor", "an undefined tensor", "");
  // Indices that consume dims of x: integers, slices and tensors (a k-D bool mask takes k dims, a
  // 0-dim bool tensor none: it inserts one, as true and false do).
  int64_t consuming = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    if (i.is_integer() || i.is_slice()) ++consuming;
    if (i.is_tensor()) consuming += i.tensor().defined() && i.tensor().dtype() == kBool ? i.tensor().dim() : 1;
    if (i.is_ellipsis()) ++ellipses;
  }
  GRAFT_CHECK(ellipses <= 1, op, "at most one Ellipsis", std::to_string(ellipses) + " Ellipses", "");
  GRAFT_CHECK(consuming <= x.dim(), op, "at most " + std::to_string(x.dim()) + " indices for a tensor of shape " +
              shape_str(x.sizes()), std::to_string(consuming) + " indices that each take a dim",
              "index fewer dims (None and Ellipsis take none)");
  Indexed r{x, {}};
  std::vector<std::pair<int64_t, bool>> bools;  // (dim, value) of true/false: advanced only beside a tensor index
  int64_t d = 0;  // the view's dim the next index applies to
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case TensorIndex::Kind::None:
        r.view = r.view.unsqueeze(d++);
        break;
      case TensorIndex::Kind::Boolean:
        r.view = r.view.unsqueeze(d);
        bools.emplace_back(d++, i.boolean());
        break;
      case TensorIndex::Kind::Ellipsis:
        d += x.dim() - consuming;
        break;
      case TensorIndex::Kind::Integer:
        r.view = r.view.select(d, i.integer());
        break;
      case TensorIndex::Kind::Slice: {
        const indexing::Slice& s = i.slice();
        r.view = r.view.slice(d++, s.start(), s.stop(), s.step());
        break;
      }
      case TensorIndex::Kind::Tensor: {
        const Tensor& t = i.tensor();
        GRAFT_CHECK(t.defined(), op, "a defined index tensor", "an undefined tensor", "");
        if (t.dtype() == kBool) {
          if (t.dim() == 0) {  // x[tensor(true)] is x[true]
            GRAFT_CHECK(!t.is_meta(), op, "a bool index with a value", "a meta 0-dim bool tensor",
                        "index with true or false");
            r.view = r.view.unsqueeze(d);
            bools.emplace_back(d++, t.item<bool>());
            break;
          }
          for (Tensor& c : mask_coordinates(t, r.view, d, op)) r.adv.push_back({d++, std::move(c)});
          break;
        }
        if (t.dim() == 0) {  // x[tensor(2)] is x[2]
          GRAFT_CHECK(t.dtype() == kInt64, op, "an int64 index", std::string("a ") + dtype_name(t.dtype()) + " tensor",
                      "convert it with .to(graft::kInt64)");
          r.view = r.view.select(d, t.item<int64_t>());
          break;
        }
        GRAFT_CHECK(t.dtype() == kInt64, op, "an int64 or bool index tensor", std::string("a ") + dtype_name(t.dtype()) +
                    " tensor", "convert it with .to(graft::kInt64)");
        r.adv.push_back({d++, t});
        break;
      }
    }
  }
  if (r.adv.empty()) {  // true/false alone: a view (a dim of size 1, or 0 for false)
    for (const auto& [dim, value] : bools)
      if (!value) r.view = r.view.narrow(dim, 0, 0);
    return r;
  }
  for (const auto& [dim, value] : bools)
    r.adv.push_back({dim, value ? zeros({1}, kInt64) : empty({0}, kInt64)});
  std::sort(r.adv.begin(), r.adv.end(), [](const Advanced& a, const Advanced& b) { return a.dim < b.dim; });
  return r;
}

// The shape every advanced index's positions broadcast to (B in Note [Several advanced indices]).
Shape broadcast_positions(const Indexed& r, const char* op) {
  Shape b = r.adv[0].positions.sizes();
  for (size_t j = 1; j < r.adv.size(); ++j) b = broadcast_shapes(b, r.adv[j].positions.sizes(), op);
  return b;
}

bool adjacent(const Indexed& r) {
  for (size_t j = 1; j < r.adv.size(); ++j)
    if (r.adv[j].dim != r.adv[j - 1].dim + 1) return false;
  return true;
}

// The view's dims without an advanced index, in order.
std::vector<int64_t> other_dims(const Indexed& r) {
  std::vector<int64_t> out;
  size_t j = 0;
  for (int64_t d = 0; d < r.view.dim(); ++d) {
    if (j < r.adv.size() && r.adv[j].dim == d) ++j;
    else out.push_back(d);
  }
  return out;
}

// Each advanced index's positions broadcast to `b`, read, checked against its dim's size and
// wrapped to [0, size): one vector per advanced index, numel(b) long.
std::vector<std::vector<int64_t>> coordinates(const Indexed& r, IntArrayRef b, const char* op) {
  std::vector<std::vector<int64_t>> out;
  for (const Advanced& a : r.adv) {
    const int64_t size = r.view.size(a.dim);
    std::vector<int64_t> v = kernels::indexing::read_indices(a.positions.expand(b).contiguous());
    for (int64_t& p : v) {
      GRAFT_CHECK(p >= -size && p < size, op, "positions in [" + std::to_string(-size) + ", " + std::to_string(size) +
                  ") for dim " + std::to_string(a.dim) + " of size " + std::to_string(size), "position " + std::to_string(p),
                  "index " + std::to_string(p) + " is out of bounds for dimension " + std::to_string(a.dim) +
                  " with size " + std::to_string(size));
      if (p < 0) p += size;
    }
    out.push_back(std::move(v));
  }
  return out;
}

// Applies the advanced indices (Note [Several advanced indices]).
Tensor gather_positions(const Indexed& r, const char* op) {
  if (r.adv.empty()) return r.view;
  if (r.adv.size() == 1) {  // index_select over the flattened positions, their shape in the dim's place
    const Advanced& a = r.adv[0];
    const Tensor picked = index_select(r.view, a.dim, a.positions.reshape({-1}));
    std::vector<int64_t> shape(r.view.sizes().begin(), r.view.sizes().begin() + a.dim);
    for (int64_t s : a.positions.sizes()) shape.push_back(s);
    shape.insert(shape.end(), r.view.sizes().begin() + a.dim + 1, r.view.sizes().end());
    return picked.reshape(shape);
  }
  const Shape b = broadcast_positions(r, op);
  const std::vector<int64_t> rest = other_dims(r);
  std::vector<int64_t> perm, flat_shape{1};
  for (const Advanced& a : r.adv) {
    perm.push_back(a.dim);
    flat_shape[0] *= r.view.size(a.dim);
  }
  for (int64_t d : rest) {
    perm.push_back(d);
    flat_shape.push_back(r.view.size(d));
  }
  const Tensor flat = r.view.permute(perm).reshape(flat_shape);
  // The row-major linear index over the advanced dims.
  Tensor linear;
  bool meta = r.view.is_meta();
  for (const Advanced& a : r.adv) meta = meta || a.positions.is_meta();
  if (meta) {  // Note [Meta device]: shapes only, the same sum of positions times strides unchecked
    int64_t stride = 1;
    for (size_t j = r.adv.size(); j-- > 0;) {
      const Tensor term = r.adv[j].positions * Scalar(stride);
      linear = linear.defined() ? linear + term : term;
      stride *= r.view.size(r.adv[j].dim);
    }
    linear = linear.expand(b).reshape({-1}).to(r.view.device());  // CPU positions of a meta x: meta too
  } else {
    const std::vector<std::vector<int64_t>> c = coordinates(r, b, op);
    std::vector<int64_t> lin(static_cast<size_t>(numel_of(b)), 0);
    int64_t stride = 1;
    for (size_t j = r.adv.size(); j-- > 0;) {
      for (size_t i = 0; i < lin.size(); ++i) lin[i] += c[j][i] * stride;
      stride *= r.view.size(r.adv[j].dim);
    }
    linear = make_empty({static_cast<int64_t>(lin.size())}, kInt64);
    kernels::indexing::write_indices(lin, linear);
  }
  std::vector<int64_t> shape(b.begin(), b.end());
  for (int64_t d : rest) shape.push_back(r.view.size(d));
  Tensor out = index_select(flat, 0, linear).reshape(shape);
  const int64_t first = r.adv[0].dim;  // adjacent: B goes where the first advanced dim was
  if (!adjacent(r) || first == 0) return out;
  const auto nb = static_cast<int64_t>(b.size());
  std::vector<int64_t> order;
  for (int64_t d = 0; d < first; ++d) order.push_back(nb + d);
  for (int64_t d = 0; d < nb; ++d) order.push_back(d);
  for (int64_t d = nb + first; d < out.dim(); ++d) order.push_back(d);
  return out.permute(order);
}

void check_not_recorded(const Tensor& self, const Tensor* value) {
  GRAFT_CHECK(!GradMode::is_enabled() || (!self.requires_grad() && !(value && value->requires_grad())), "index_put_",
              "tensors that do not require grad (graft does not record index_put_)",
              self.requires_grad() ? "a destination that requires grad" : "a value that requires grad",
              "wrap it in graft::NoGradGuard, or build the result out of place (graft::where, masked_fill, cat)");
}

Tensor& put(const Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& value) {
  check_not_recorded(self, &value);
  GRAFT_CHECK(!indices.empty(), "index_put_", "at least one index", "an empty index list",
              "Passing an empty index list to Tensor::index_put_() is not valid syntax; write self.copy_(value) "
              "or self.fill_(value) to write every element");
  const Indexed r = apply_indices(self, indices, "index_put_");
  if (r.adv.empty()) {
    Tensor target = r.view;
    target.copy_(value);  // broadcasts value; writes into self's memory
    return const_cast<Tensor&>(self);
  }
  // The indexed shape (what index() would return), and value broadcast to it seen as (one row per
  // broadcast position, the other dims).
  const Shape b = r.adv.size() == 1 ? Shape(r.adv[0].positions.sizes()) : broadcast_positions(r, "index_put_");
  const std::vector<int64_t> rest = other_dims(r);
  const auto nb = static_cast<int64_t>(b.size());
  const bool in_place = adjacent(r);
  const int64_t first = in_place ? r.adv[0].dim : 0;  // where B's dims sit in the indexed shape
  std::vector<int64_t> indexed, rows{numel_of(b)};
  for (int64_t k = 0; k < first; ++k) indexed.push_back(r.view.size(rest[static_cast<size_t>(k)]));
  indexed.insert(indexed.end(), b.begin(), b.end());
  for (size_t k = static_cast<size_t>(first); k < rest.size(); ++k) indexed.push_back(r.view.size(rest[k]));
  std::vector<int64_t> order;
  for (int64_t d = 0; d < nb; ++d) order.push_back(first + d);
  for (int64_t d = 0; d < first; ++d) order.push_back(d);
  for (auto d = first + nb; d < static_cast<int64_t>(indexed.size()); ++d) order.push_back(d);
  for (int64_t d : rest) rows.push_back(r.view.size(d));
  const Tensor v = value.expand(indexed).permute(order).reshape(rows);
  // Note [Meta device]: nothing to write on meta.
  bool meta = detail::op_device("index_put_", {&self, &value}).is_meta();
  for (const Advanced& a : r.adv) meta = meta || a.positions.is_meta();
  if (meta) return const_cast<Tensor&>(self);
  const std::vector<std::vector<int64_t>> c = coordinates(r, b, "index_put_");
  for (int64_t k = 0; k < rows[0]; ++k) {  // in order: a repeated position keeps the last value
    Tensor target = r.view;
    for (size_t j = r.adv.size(); j-- > 0;)  // the highest dim first, so the lower ones keep their numbers
      target = target.select(r.adv[j].dim, c[j][static_cast<size_t>(k)]);
    target.copy_(v.select(0, k));
  }
  return const_cast<Tensor&>(self);
}

}  // namespace

Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return index(std::vector<indexing::TensorIndex>(indices));
}
Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
  GRAFT_CHECK(!indices.empty(), "index", "at least one index", "an empty index list",
              "Passing an empty index list to Tensor::index() is not valid syntax; the tensor itself is "
              "x.index({Ellipsis}) (or just x)");
  return gather_positions(apply_indices(*this, indices, "index"), "index");
}

Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value) const {
  return put(*this, std::vector<indexing::TensorIndex>(indices), value);
}
Tensor& Tensor::index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value) const {
  return index_put_(std::vector<indexing::TensorIndex>(indices), value);
}
Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& value) const {
  return put(*this, indices, value);
}
Tensor& Tensor::index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value) const {
  return put(*this, indices, full({}, value, TensorOptions(dtype()).device(device())));
}

}  // namespace graft
