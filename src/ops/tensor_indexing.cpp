// Tensor::index and Tensor::index_put_ (Note [Tensor indexing] in graft/core/tensor_indexing.h):
// composites of select, slice, unsqueeze, narrow and index_select, so autograd records them as it
// records those ops.
#include "graft/core/tensor_indexing.h"

#include <string>
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

// The result of the basic indices, and the one advanced (tensor) index if there is one.
struct Indexed {
  Tensor view;           // x after every basic index
  Tensor positions;      // int64 positions of the advanced index (undefined: none)
  int64_t adv_dim = -1;  // the view's dim the advanced index applies to
};

// A 0-dim int64 tensor acts as an integer; a bool tensor becomes its true positions (1-D only).
Tensor as_positions(const Tensor& t, int64_t dim_size, const char* op) {
  if (t.dtype() == kBool) {
    GRAFT_CHECK(t.dim() == 1 && t.size(0) == dim_size, op, "a 1-D bool mask of the indexed dim's size " +
                std::to_string(dim_size), "a bool tensor of shape " + shape_str(t.sizes()),
                "graft takes 1-D masks; index with x.index({mask}) per dim, or use masked_fill / where");
    // Note [Meta device]: the result's size is the mask's count of trues, a value meta tensors lack.
    GRAFT_CHECK(!t.is_meta(), op, "a bool mask with values", "a meta bool mask of shape " + shape_str(t.sizes()),
                "a mask's result size depends on its values, which meta tensors do not have; index with int64 "
                "positions, or use masked_fill / where");
    const std::vector<int64_t> pos = kernels::indexing::true_positions(t.contiguous());
    Tensor out = make_empty({static_cast<int64_t>(pos.size())}, kInt64);
    kernels::indexing::write_indices(pos, out);
    return out;
  }
  GRAFT_CHECK(t.dtype() == kInt64, op, "an int64 or bool index tensor", std::string("a ") + dtype_name(t.dtype()) +
              " tensor", "convert it with .to(graft::kInt64)");
  return t;
}

Indexed apply_indices(const Tensor& x, const std::vector<TensorIndex>& indices, const char* op) {
  GRAFT_CHECK(x.defined(), op, "a defined tensor", "an undefined tensor", "");
  // Indices that consume a dim of x: integers, slices and tensors.
  int64_t consuming = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    if (i.is_integer() || i.is_slice() || (i.is_tensor())) ++consuming;
    if (i.is_ellipsis()) ++ellipses;
  }
  GRAFT_CHECK(ellipses <= 1, op, "at most one Ellipsis", std::to_string(ellipses) + " Ellipses", "");
  GRAFT_CHECK(consuming <= x.dim(), op, "at most " + std::to_string(x.dim()) + " indices for a tensor of shape " +
              shape_str(x.sizes()), std::to_string(consuming) + " indices that each take a dim",
              "index fewer dims (None and Ellipsis take none)");
  Indexed r{x, Tensor(), -1};
  int64_t d = 0;  // the view's dim the next index applies to
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case TensorIndex::Kind::None:
        r.view = r.view.unsqueeze(d++);
        break;
      case TensorIndex::Kind::Boolean:
        r.view = r.view.unsqueeze(d);
        if (!i.boolean()) r.view = r.view.narrow(d, 0, 0);
        ++d;
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
        if (t.dim() == 0 && t.dtype() != kBool) {  // x[tensor(2)] is x[2]
          GRAFT_CHECK(t.dtype() == kInt64, op, "an int64 index", std::string("a ") + dtype_name(t.dtype()) + " tensor",
                      "convert it with .to(graft::kInt64)");
          r.view = r.view.select(d, t.item<int64_t>());
          break;
        }
        GRAFT_CHECK(!r.positions.defined(), op, "one tensor index (graft takes one advanced index per call)",
                    "a second tensor index", "index in two calls: x.index({a}).index({Slice(), b})");
        r.positions = as_positions(t, r.view.size(d), op);
        r.adv_dim = d++;
        break;
      }
    }
  }
  return r;
}

// Applies the advanced index: index_select over the flattened positions, then the positions' shape
// in the indexed dim's place.
Tensor gather_positions(const Indexed& r) {
  if (!r.positions.defined()) return r.view;
  const Tensor picked = index_select(r.view, r.adv_dim, r.positions.reshape({-1}));
  std::vector<int64_t> shape(r.view.sizes().begin(), r.view.sizes().begin() + r.adv_dim);
  for (int64_t s : r.positions.sizes()) shape.push_back(s);
  shape.insert(shape.end(), r.view.sizes().begin() + r.adv_dim + 1, r.view.sizes().end());
  return picked.reshape(shape);
}

void check_not_recorded(const Tensor& self, const Tensor* value) {
  GRAFT_CHECK(!GradMode::is_enabled() || (!self.requires_grad() && !(value && value->requires_grad())), "index_put_",
              "tensors that do not require grad (graft does not record index_put_)",
              self.requires_grad() ? "a destination that requires grad" : "a value that requires grad",
              "wrap it in graft::NoGradGuard, or build the result out of place (graft::where, masked_fill, cat)");
}

Tensor& put(const Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& value) {
  check_not_recorded(self, &value);
  const Indexed r = apply_indices(self, indices, "index_put_");
  if (!r.positions.defined()) {
    Tensor target = r.view;
    target.copy_(value);  // broadcasts value; writes into self's memory
    return const_cast<Tensor&>(self);
  }
  // Value broadcast to the indexed shape, seen as (view dims before, one per position, after).
  const Tensor flat_pos = r.positions.reshape({-1}).contiguous();
  const int64_t n = flat_pos.numel();
  std::vector<int64_t> indexed(r.view.sizes().begin(), r.view.sizes().begin() + r.adv_dim);
  for (int64_t s : r.positions.sizes()) indexed.push_back(s);
  indexed.insert(indexed.end(), r.view.sizes().begin() + r.adv_dim + 1, r.view.sizes().end());
  std::vector<int64_t> per_position(r.view.sizes().begin(), r.view.sizes().end());
  per_position[static_cast<size_t>(r.adv_dim)] = n;
  const Tensor v = value.expand(indexed).reshape(per_position);
  // Note [Meta device]: nothing to write on meta.
  if (detail::op_device("index_put_", {&self, &flat_pos, &value}).is_meta()) return const_cast<Tensor&>(self);
  const std::vector<int64_t> p = kernels::indexing::read_indices(flat_pos);
  for (int64_t k = 0; k < n; ++k) {
    Tensor target = r.view.select(r.adv_dim, p[static_cast<size_t>(k)]);
    target.copy_(v.select(r.adv_dim, k));
  }
  return const_cast<Tensor&>(self);
}

}  // namespace

Tensor Tensor::index(std::initializer_list<indexing::TensorIndex> indices) const {
  return index(std::vector<indexing::TensorIndex>(indices));
}
Tensor Tensor::index(const std::vector<indexing::TensorIndex>& indices) const {
  return gather_positions(apply_indices(*this, indices, "index"));
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
