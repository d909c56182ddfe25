// The one place graft calls BLAS: configures OpenBLAS once (Note [OpenBLAS core type] in
// graft/runtime/parallel.h) and wraps cblas_?gemm with graft's checks.
#pragma once

#include <cstdint>
#include <string_view>

namespace graft::runtime {

// Runs the one-time OpenBLAS set-up; cheap after the first call.
void ensure_blas_ready();

// OpenBLAS's thread count at start-up (it honours OPENBLAS_NUM_THREADS, then OMP_NUM_THREADS, then
// the core count): graft's default get_num_threads(). After the set-up OpenBLAS itself runs
// single-threaded (Note [Splitting a matrix product] in blas.cpp).
int blas_startup_threads();

// Puts OpenBLAS back at one thread, and stops its threads, if other code in the process (LibTorch,
// a direct openblas_set_num_threads) raised its count since: graft's products run on graft's pool,
// and each of its threads calling a multi-threaded OpenBLAS would put OpenBLAS's spinning threads
// on the same cores (2 x 2 threads on 2 cores ran a conv2d at half speed). Called by
// set_num_threads; cheap when nothing changed.
void keep_blas_single_threaded();

// C (m, n) = alpha * op(A) @ op(B) + beta * C, row-major; op(A) is (m, k), op(B) is (k, n).
// Sizes must fit a 32-bit BLAS integer (checked, naming `op`). k == 0 scales C by beta.
template <class T>
void gemm(std::string_view op, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

}  // namespace graft::runtime
