// Shape helpers: numel, contiguous strides, dim wrapping, broadcasting.
#include "graft/core/shape.h"

namespace graft {

std::string shape_str(IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

Shape contiguous_strides(IntArrayRef sizes) {
  Shape st;
  st.resize(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<int64_t>(sizes[i], 1);
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
