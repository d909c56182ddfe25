// OpenBLAS set-up and the gemm wrapper (see src/runtime/blas.h).
//
// Note [Splitting a matrix product]
// OpenBLAS runs single-threaded (set once, in setup_blas); graft splits a large product itself into
// blocks of rows (or of columns) of C, one single-threaded cblas call per block, over graft's pool
// (Note [graft's thread pool] in src/runtime/parallel.cpp). Why not OpenBLAS's own threads: they
// are a second pool, which spins for a while after each call; with graft's pool running the
// element-wise kernels and the convolution next to it, the two fought over the cores (the MLP step
// at 2 threads was only 1.14x faster than at 1, and the CNN step was slower at 2 than at 1).
// With one pool only, at most get_num_threads() threads compute at any time. OpenBLAS's pthreads
// build may be called from several threads at once (each call takes its own buffer).
//  - Which products split: m * n * k >= 2 * kMinBlockWork multiply-adds (16 Mi: about 0.2 ms on one
//    core), into at most get_num_threads() blocks of at least kMinBlockWork each, on multiples of
//    kBlockAlign rows/columns; the larger of m and n is cut. Smaller products stay one call (the
//    few microseconds of waking a worker would cost more than they save).
//  - Same bits at every thread count. A block computes each of its elements exactly as the whole
//    call would: OpenBLAS's blocked driver cuts k into panels that depend on k only, and its
//    kernels sum each element's panel in k order whatever the element's position. That holds only
//    while every block takes the same path as the whole product; OpenBLAS 0.3.21 switches to other
//    kernels for small products (sgemm "direct" for row-major NoTrans/NoTrans float with
//    m * n * k < 28 * 512 * 512 when single-threaded; the small-matrix kernels of some builds below
//    that),
//    which is why a block has kMinBlockWork = 8 Mi multiply-adds at least, above those sizes.
//    tests/runtime/test_parallel_kernels.cpp checks the bits at 1, 2 and 3 threads.
//  - float32 only. OpenBLAS 0.3.21's SkylakeX dgemm does not keep that promise: cutting a float64
//    product by rows or columns (on multiples of 16) changed the last bit of 0.1-2% of the elements
//    in a 257 x 263 x 259 product, while sgemm gave the same bits for every shape and transpose
//    tried. So a float64 product stays one single-threaded call, the same bits at every thread
//    count (graft trains in float32; float64 is for checks, where the bits matter more than speed).
#include "runtime/blas.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>

#include "graft/core/error.h"
#include "graft/runtime/parallel.h"

// OpenBLAS's dynamic-architecture entry points (exported by Debian's DYNAMIC_ARCH builds). Weak, so
// an OpenBLAS without them links too; then graft keeps whatever core OpenBLAS chose.
extern "C" {
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
// Stops OpenBLAS's own worker threads (OpenBLAS calls it before fork); a later multi-threaded call
// would start them again.
int blas_thread_shutdown_(void) __attribute__((weak));
}

namespace graft {
namespace {

bool cpu_has_avx512() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

// Kernel families of OpenBLAS 0.3.21 that use AVX-512.
bool core_uses_avx512(const std::string& name) {
  for (const char* n : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (name == n) return true;
  return false;
}

void configure_openblas() {
  if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit) return;
  const char* graft_choice = std::getenv("GRAFT_BLAS_CORETYPE");
  std::string target;
  if (graft_choice && *graft_choice) {
    if (std::strcmp(graft_choice, "keep") == 0) return;
    target = graft_choice;
  } else if (cpu_has_avx512() && !core_uses_avx512(openblas_get_corename())) {
    target = "SkylakeX";
  } else {
    return;
  }
  if (target == openblas_get_corename()) return;
  // OpenBLAS reads OPENBLAS_CORETYPE in gotoblas_dynamic_init, and quit only forgets the chosen
  // kernel table; the variable is put back as it was afterwards.
  const char* old = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = old ? old : "";
  setenv("OPENBLAS_CORETYPE", target.c_str(), 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  if (old) setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  else unsetenv("OPENBLAS_CORETYPE");
}

std::once_flag blas_once;
int g_startup_threads = 1;

// Once: the core type, then OpenBLAS down to one thread (Note [Splitting a matrix product]).
void setup_blas() {
  configure_openblas();
  g_startup_threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  // OpenBLAS starts its threads when the library loads, and an idle one spins for a while
  // (OPENBLAS_THREAD_TIMEOUT, about 0.1 s) before it sleeps: on two cores that took one core from
  // graft's pool for the first ~50 MLP steps (a 512^3 product: no speed-up at 2 threads until it
  // was stopped, 1.87x after). graft never asks OpenBLAS for more than one thread, so they stop here.
  if (blas_thread_shutdown_) blas_thread_shutdown_();
}

// One cblas call, no checks.
template <class T>
void gemm_call(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const auto ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  const auto M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
  const auto LDA = static_cast<blasint>(lda), LDB = static_cast<blasint>(ldb), LDC = static_cast<blasint>(ldc);
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, LDA, b, LDB, beta, c, LDC);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, LDA, b, LDB, beta, c, LDC);
}

}  // namespace

namespace runtime {
namespace {
constexpr int64_t kMinBlockWork = int64_t{8} << 20;
constexpr int64_t kBlockAlign = 16;
}  // namespace

void ensure_blas_ready() { std::call_once(blas_once, setup_blas); }

void keep_blas_single_threaded() {
  ensure_blas_ready();
  if (openblas_get_num_threads() == 1) return;
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_) blas_thread_shutdown_();  // its idle threads would spin for ~0.1 s
}

int blas_startup_threads() {
  ensure_blas_ready();
  return g_startup_threads;
}

template <class T>
void gemm(std::string_view op, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  for (int64_t v : {m, n, k, lda, ldb, ldc})
    GRAFT_CHECK(v <= INT_MAX, std::string(op), "matrix sizes that fit in a 32-bit BLAS integer", std::to_string(v),
                "split the batch into smaller pieces");
  ensure_blas_ready();
  const int64_t work = m * n * k;
  if (!std::is_same_v<T, float> || work < 2 * kMinBlockWork || get_num_threads() == 1) {
    gemm_call(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Blocks of kBlockAlign rows (or columns) of C, each at least kMinBlockWork multiply-adds.
  const bool by_rows = m > n;
  const int64_t dim = by_rows ? m : n, other = by_rows ? n : m;
  const int64_t units = (dim + kBlockAlign - 1) / kBlockAlign;
  const int64_t unit_work = kBlockAlign * other * k;
  const int64_t grain = (kMinBlockWork + unit_work - 1) / unit_work;
  parallel_for(0, units, grain, [&](int64_t u0, int64_t u1) {
    const int64_t lo = u0 * kBlockAlign, hi = std::min(dim, u1 * kBlockAlign);
    if (by_rows)
      gemm_call(trans_a, trans_b, hi - lo, n, k, alpha, trans_a ? a + lo : a + lo * lda, lda, b, ldb, beta,
                c + lo * ldc, ldc);
    else
      gemm_call(trans_a, trans_b, m, hi - lo, k, alpha, a, lda, trans_b ? b + lo * ldb : b + lo, ldb, beta, c + lo,
                ldc);
  });
}

template void gemm<float>(std::string_view, bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void gemm<double>(std::string_view, bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);

}  // namespace runtime

std::string blas_core_name() {
  runtime::ensure_blas_ready();
  return openblas_get_corename();
}

}  // namespace graft
