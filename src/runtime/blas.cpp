// OpenBLAS set-up and the gemm wrapper (see src/runtime/blas.h).
#include "runtime/blas.h"

#include <cblas.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>

#include "graft/core/error.h"
#include "graft/core/parallel.h"

// OpenBLAS's dynamic-architecture entry points (exported by Debian's DYNAMIC_ARCH builds). Weak, so
// an OpenBLAS without them links too; then graft keeps whatever core OpenBLAS chose.
extern "C" {
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
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

}  // namespace

namespace runtime {

void ensure_blas_ready() { std::call_once(blas_once, configure_openblas); }

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
  const auto ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  const auto M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
  const auto LDA = static_cast<blasint>(lda), LDB = static_cast<blasint>(ldb), LDC = static_cast<blasint>(ldc);
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, LDA, b, LDB, beta, c, LDC);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, LDA, b, LDB, beta, c, LDC);
}

template void gemm<float>(std::string_view, bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void gemm<double>(std::string_view, bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);

}  // namespace runtime

void set_num_threads(int n) {
  GRAFT_CHECK(n >= 1, "set_num_threads", "a thread count of at least 1", std::to_string(n),
              "pass 1 for single-threaded kernels");
  runtime::ensure_blas_ready();
  openblas_set_num_threads(n);
}

int get_num_threads() {
  runtime::ensure_blas_ready();
  return openblas_get_num_threads();
}

std::string blas_core_name() {
  runtime::ensure_blas_ready();
  return openblas_get_corename();
}

}  // namespace graft
