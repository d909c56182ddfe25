// Shape helpers: numel, contiguous strides, dim wrapping, broadcasting.
#include "graft/core/shape.h"

#include <ostream>

namespace graft {

std::string shape_str(IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::ostream& operator<<(std::ostream& os, IntArrayRef shape) { return os << shape_str(shape); }

IntArrayRef IntArrayRef::slice(size_t n, size_t m) const {
  GRAFT_CHECK(n + m <= size_, "IntArrayRef::slice", "n + m <= " + std::to_string(size_) + " (the list's length)",
              "n = " + std::to_string(n) + ", m = " + std::to_string(m), "slice(n, m) takes m elements from the n-th");
  return IntArrayRef(data_ + n, m);
}
IntArrayRef IntArrayRef::slice(size_t n) const {
  GRAFT_CHECK(n <= size_, "IntArrayRef::slice", "n <= " + std::to_string(size_) + " (the list's length)",
              "n = " + std::to_string(n), "slice(n) drops the first n elements");
  return IntArrayRef(data_ + n, size_ - n);
}

// Element counts are multiplied with overflow checks (issue 14, item 10): a shape such as
// {2^31, 2^31, 2^31} would otherwise wrap to a small or negative count, and a tensor of that
// shape would read far outside its buffer. Every TensorImpl (factories, views, expand, reshape)
// computes its numel here, so the check covers them all.
int64_t numel_of(IntArrayRef sizes) {
  for (int64_t s : sizes) {
    if (s == 0) return 0;  // an empty tensor, whatever the other sizes
  }
  int64_t n = 1;
  for (int64_t s : sizes) {
    GRAFT_CHECK(!__builtin_mul_overflow(n, s, &n), "numel", "a shape with at most 2^63 - 1 elements",
                "shape " + shape_str(sizes), "no tensor can hold that many elements; check the sizes passed to "
                "the factory, view, reshape or expand");
  }
  return n;
}

Shape contiguous_strides(IntArrayRef sizes) {
  Shape st;
  st.resize(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = acc;
    // Sizes of 0 count as 1, so an empty tensor's strides can exceed its numel: checked too.
    GRAFT_CHECK(!__builtin_mul_overflow(acc, std::max<int64_t>(sizes[i], 1), &acc), "contiguous_strides",
                "a shape whose strides fit in int64", "shape " + shape_str(sizes),
                "the product of the non-zero sizes must stay below 2^63");
  }
  return st;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = std::max<int64_t>(ndim, 1);  // a 0-dim tensor accepts dim 0 and -1
  GRAFT_CHECK(dim >= -n && dim < n, op,
              "dim in the range [" + std::to_string(-n) + ", " + std::to_string(n - 1) + "]",
              "dim " + std::to_string(dim) + " for a tensor with " + std::to_string(ndim) + " dimensions",
              "dims count from 0; negative dims count from the end");
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out;
  out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    GRAFT_CHECK(da == db || da == 1 || db == 1, op, "shapes that broadcast together",
                shape_str(a) + " and " + shape_str(b) + " (size " + std::to_string(da) + " vs " +
                    std::to_string(db) + " at dim " + std::to_string(i) + ")",
                "sizes must match or be 1 in every trailing dimension");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace graft
