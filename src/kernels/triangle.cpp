// The triangle kernels of triu / tril (triangle.h).
#include "triangle.h"

#include <cstring>
#include <vector>

namespace graft::kernels::triangle {

namespace {

bool in_triangle(bool upper, int64_t i, int64_t j, int64_t diagonal) {
  // i, j < 2^62 (sizes), so j - i cannot overflow; diagonal may be any int64.
  return upper ? j - i >= diagonal : j - i <= diagonal;
}

// f(offset) for each matrix of x's leading dims, offset being the element offset of its (0, 0)
// from x's first element (x's strides, so any layout).
template <class F>
void for_each_matrix(const Tensor& x, F&& f) {
  const int64_t lead = x.dim() - 2;
  int64_t count = 1;
  for (int64_t d = 0; d < lead; ++d) count *= x.size(d);
  std::vector<int64_t> idx(static_cast<size_t>(lead), 0);
  int64_t off = 0;
  for (int64_t m = 0; m < count; ++m) {
    f(off);
    for (int64_t d = lead - 1; d >= 0; --d) {
      const size_t k = static_cast<size_t>(d);
      ++idx[k];
      off += x.stride(d);
      if (idx[k] < x.size(d)) break;
      off -= x.stride(d) * x.size(d);
      idx[k] = 0;
    }
  }
}

}  // namespace

void copy(const Tensor& x, Tensor& y, int64_t diagonal, bool upper) {
  const int64_t rows = x.size(-2), cols = x.size(-1);
  const int64_t rs = x.stride(-2), cs = x.stride(-1);
  const auto es = static_cast<int64_t>(x.element_size());
  const char* src = static_cast<const char*>(x.data_ptr());
  char* dst = static_cast<char*>(y.data_ptr());
  for_each_matrix(x, [&](int64_t off) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j, dst += es) {
        if (in_triangle(upper, i, j, diagonal)) std::memcpy(dst, src + (off + i * rs + j * cs) * es, static_cast<size_t>(es));
        else std::memset(dst, 0, static_cast<size_t>(es));
      }
  });
}

void zero_outside(Tensor& self, int64_t diagonal, bool upper) {
  const int64_t rows = self.size(-2), cols = self.size(-1);
  const int64_t rs = self.stride(-2), cs = self.stride(-1);
  const auto es = static_cast<int64_t>(self.element_size());
  char* base = static_cast<char*>(self.data_ptr());
  for_each_matrix(self, [&](int64_t off) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        if (!in_triangle(upper, i, j, diagonal)) std::memset(base + (off + i * rs + j * cs) * es, 0, static_cast<size_t>(es));
  });
}

}  // namespace graft::kernels::triangle
