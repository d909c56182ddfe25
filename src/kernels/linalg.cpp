// The matrix product kernel: src/kernels/linalg.h. float32 and float64 go through cblas_sgemm /
// cblas_dgemm (runtime::gemm); int64 uses a plain loop.
//
// Note [BLAS operands without copies]
// gemm reads a matrix through a leading dimension, either row by row (NoTrans) or column by column
// (Trans). A 2-D operand whose rows are contiguous (stride 1 along columns) is passed as NoTrans with
// ld = row stride; one whose columns are contiguous (a transposed contiguous matrix such as w.t()) as
// Trans with ld = column stride. Anything else (slices with a step, expanded matrices) is copied with
// contiguous() first. Batched operands (bmm) use the same rule on their last two dims; the batch dim
// may have any stride (0 for an expanded batch).
#include "linalg.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

#include "graft/core/error.h"
#include "../runtime/blas.h"

namespace graft::kernels::linalg {

namespace {

// A matrix (or a batch of matrices) as gemm reads it; `t` keeps the memory alive.
struct Operand {
  Tensor t;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 1;
  int64_t batch_stride = 0;  // in elements; 0 for a single matrix or an expanded batch
};

// How gemm can read a (rows, cols) matrix with strides (rs, cs), or false when it cannot.
bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, CBLAS_TRANSPOSE& trans, int64_t& ld) {
  if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= std::max<int64_t>(1, cols))) {
    trans = CblasNoTrans;
    ld = rows <= 1 ? std::max<int64_t>(1, cols) : rs;
    return true;
  }
  if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= std::max<int64_t>(1, rows))) {
    trans = CblasTrans;
    ld = cols <= 1 ? std::max<int64_t>(1, rows) : cs;
    return true;
  }
  return false;
}

// x: 2-D (rows, cols) or 3-D (batch, rows, cols), already detached.
Operand blas_operand(const Tensor& x) {
  const int64_t d = x.dim();
  const int64_t rows = x.size(d - 2), cols = x.size(d - 1);
  Operand op;
  op.t = x;
  if (!blas_layout(rows, cols, x.stride(d - 2), x.stride(d - 1), op.trans, op.ld)) {
    op.t = x.contiguous();
    op.trans = CblasNoTrans;
    op.ld = std::max<int64_t>(1, cols);
  }
  op.batch_stride = d == 3 && x.size(0) > 1 ? op.t.stride(0) : 0;
  return op;
}

void check_blas_size(int64_t v, const char* op) {
  GRAFT_CHECK(v <= INT_MAX, op, "matrix sizes and strides that fit in a 32-bit BLAS integer",
              std::to_string(v), "split the product into smaller pieces");
}

}  // namespace

template <class T>
void gemm_into(int64_t batch, int64_t n, int64_t m, int64_t k, T alpha, const Tensor& a, const Tensor& bm, T beta,
               Tensor& out, const char* opname) {
  T* c = out.data_ptr<T>();
  if (n == 0 || m == 0 || batch == 0) return;
  if (k == 0) {  // an empty sum: c = beta * c
    for (int64_t i = 0; i < batch * n * m; ++i) c[i] = beta == T(0) ? T(0) : static_cast<T>(beta * c[i]);
    return;
  }
  if constexpr (std::is_same_v<T, int64_t>) {
    const Tensor ac = a.contiguous(), bc = bm.contiguous();
    const int64_t* pa = ac.data_ptr<int64_t>();
    const int64_t* pb = bc.data_ptr<int64_t>();
    const int64_t sa = a.dim() == 3 && a.size(0) > 1 ? n * k : 0, sb = bm.dim() == 3 && bm.size(0) > 1 ? k * m : 0;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t* A = pa + b * sa;
      const int64_t* B = pb + b * sb;
      T* C = c + b * n * m;
      for (int64_t i = 0; i < n; ++i) {
        T* row = C + i * m;
        for (int64_t j = 0; j < m; ++j) row[j] = beta == 0 ? 0 : beta * row[j];
        for (int64_t p = 0; p < k; ++p) {
          const int64_t av = alpha * A[i * k + p];
          const int64_t* brow = B + p * m;
          for (int64_t j = 0; j < m; ++j) row[j] += av * brow[j];
        }
      }
    }
  } else {
    runtime::ensure_blas_ready();
    const Operand oa = blas_operand(a), ob = blas_operand(bm);
    for (int64_t v : {n, m, k, oa.ld, ob.ld}) check_blas_size(v, opname);
    const T* pa = static_cast<const T*>(oa.t.data_ptr());
    const T* pb = static_cast<const T*>(ob.t.data_ptr());
    // runtime::gemm splits a large product over graft's threads (Note [Splitting a matrix product]).
    for (int64_t b = 0; b < batch; ++b)
      runtime::gemm<T>(opname, oa.trans == CblasTrans, ob.trans == CblasTrans, n, m, k, alpha, pa + b * oa.batch_stride,
                       oa.ld, pb + b * ob.batch_stride, ob.ld, beta, c + b * n * m, m);
  }
}

template void gemm_into<float>(int64_t, int64_t, int64_t, int64_t, float, const Tensor&, const Tensor&, float, Tensor&,
                               const char*);
template void gemm_into<double>(int64_t, int64_t, int64_t, int64_t, double, const Tensor&, const Tensor&, double,
                                Tensor&, const char*);
template void gemm_into<int64_t>(int64_t, int64_t, int64_t, int64_t, int64_t, const Tensor&, const Tensor&, int64_t,
                                 Tensor&, const char*);

}  // namespace graft::kernels::linalg
