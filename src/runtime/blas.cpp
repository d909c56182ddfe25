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
//  - Which products split: m * n * k >= 2 * min_block multiply-adds, into at most get_num_threads()
//    near-equal blocks of at least min_block each: kMinBlockWork = 8 Mi (about 0.1 ms on one core)
//    on the families with size-dependent paths (below), kSmallBlockWork = 4 Mi on Haswell and Zen,
//    which have none (row cuts of blocks down to 256 Ki kept every bit there): the MLP's
//    (128, 512) @ (512, 256) then splits on them too. Smaller products stay one call (waking a
//    worker would cost more than it saves).
//  - The promise: the same bits at every thread count, on every kernel family. A block must compute
//    each of its elements exactly as the whole call would, and whether it does depends on the
//    kernel family OpenBLAS runs, not on graft. Row-major C (m, n) is OpenBLAS's column-major
//    C^T: graft's rows are OpenBLAS's N dimension, its columns OpenBLAS's M. Measured with Debian's
//    OpenBLAS 0.3.21 on an AMD EPYC with AVX-512 (every family below runs there; 100-300 random
//    shapes 64..1464 x 64..1464 x 16..1216 per family and cut, every transpose, beta 0 and 0.5,
//    blocks of >= kMinBlockWork, 2 and 3 blocks; m up to 40000, across GEMM_R; float32):
//      core family                                   rows of C cut on    columns of C cut on
//      Haswell, Zen (AVX2)                           multiples of 12     never the same bits
//      SkylakeX, Cooperlake (AVX-512)                multiples of 16     multiples of 16
//      Sandybridge, Nehalem (SSE)                    multiples of 16     multiples of 16
//    Haswell/Zen's sgemm behaves as if it cut N into panels of 12 from each call's first column:
//    rows cut on 12, 24 or 48 kept every bit, on 4, 6, 8, 16 or 32 they changed 50-70% of the
//    trials. Its columns depend on where the driver's M-chunks begin (every 320 columns, the last
//    two halved, so the chunks of a block are not those of the whole): in a 256 x 1024 x 512
//    product cut in two halves, the elements that changed lay within 16 columns of a chunk edge of
//    either call, and cuts on multiples of 16, 24 or 48 changed 97-102 of 107 trials. So kSplitTable
//    gives each family the multiple its rows are cut on and the one its columns are cut on (0:
//    never); the larger of m and n is cut where both may be, else the one that may. The finest
//    multiple that holds keeps the blocks even: the MLP's (128, 784) @ (784, 512) at 2 threads is
//    60 + 68 rows on Haswell, where a common multiple of 48 would give 48 + 80. A family not in the
//    table (another OpenBLAS build, another processor) is never split: one call per product.
//  - The table is checked, not trusted: the first product runs a probe (probe_split) that cuts a
//    ragged product with every transpose by rows and, where allowed, by columns, and compares the
//    bits with the whole call; a dimension whose probe differs is not cut (blas_split() says what
//    was decided). The probe costs 5-12 ms once per process (2.7e8 multiply-adds at most).
//  - Below kMinBlockWork OpenBLAS 0.3.21 switches to other kernels for small products (SkylakeX's
//    sgemm "direct" for row-major NoTrans/NoTrans float with m * n * k < 28 * 512 * 512; small-matrix
//    kernels of some builds below that), so on the AVX-512 and SSE families a block has
//    kMinBlockWork = 8 Mi multiply-adds at least, above those sizes, and the probe's blocks too.
//    tests/runtime/test_parallel_kernels.cpp checks the bits at 1, 2 and 3 threads, and ctest runs
//    it again under every kernel family this processor can run (GRAFT_BLAS_CORETYPE=Haswell, Zen,
//    SkylakeX), so a machine of either kind checks both kinds' kernels.
//  - float32 only. OpenBLAS 0.3.21's SkylakeX dgemm does not keep the promise: cutting a float64
//    product by rows or columns (on multiples of 16) changed the last bit of 0.1-2% of the elements
//    in a 257 x 263 x 259 product. So a float64 product stays one single-threaded call, the same
//    bits at every thread count (graft trains in float32; float64 is for checks, where the bits
//    matter more than speed).
//  - What is not promised: the same bits on two kernel families. Haswell's and SkylakeX's sgemm
//    sum in other orders, so a product on an AVX2 machine and one on an AVX-512 machine differ in
//    the last bits (Note [OpenBLAS core type] in graft/runtime/parallel.h; GRAFT_BLAS_CORETYPE pins
//    one family where the processor runs it).
#include "runtime/blas.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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
  // OpenBLAS loads a forced family without asking the processor: AVX-512 kernels on a processor
  // without it would stop the program at the first product (SIGILL).
  GRAFT_CHECK(!core_uses_avx512(target) || cpu_has_avx512(), "GRAFT_BLAS_CORETYPE",
              "a kernel family this processor can run", target + " (AVX-512; this processor has no AVX-512)",
              "use Haswell or Zen (AVX2), or unset GRAFT_BLAS_CORETYPE");
  // OpenBLAS reads OPENBLAS_CORETYPE in gotoblas_dynamic_init, and quit only forgets the chosen
  // kernel table; the variable is put back as it was afterwards.
  const char* old = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = old ? old : "";
  setenv("OPENBLAS_CORETYPE", target.c_str(), 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  if (old) setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  else unsetenv("OPENBLAS_CORETYPE");
  // OpenBLAS falls back to its own choice for a name it does not know (printing "Core not found").
  if (graft_choice && *graft_choice)
    GRAFT_CHECK(strcasecmp(target.c_str(), openblas_get_corename()) == 0, "GRAFT_BLAS_CORETYPE",
                "the name of a kernel family in this OpenBLAS (Haswell, Zen, SkylakeX, Sandybridge, ...) or keep",
                target + " (OpenBLAS runs " + openblas_get_corename() + " instead)", "check the spelling");
}

std::once_flag blas_once;
int g_startup_threads = 1;
BlasSplit g_split;

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

// One call on a block of the product: rows [lo, hi) of C (by_rows) or its columns [lo, hi).
template <class T>
void gemm_block(bool by_rows, int64_t lo, int64_t hi, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (by_rows)
    gemm_call(trans_a, trans_b, hi - lo, n, k, alpha, trans_a ? a + lo : a + lo * lda, lda, b, ldb, beta,
              c + lo * ldc, ldc);
  else
    gemm_call(trans_a, trans_b, m, hi - lo, k, alpha, a, lda, trans_b ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
}

constexpr int64_t kMinBlockWork = int64_t{8} << 20;

// Note [Splitting a matrix product]: the kernel families measured to keep every element's bits when
// C is cut by rows on multiples of `rows` and by columns on multiples of `cols` (0: never), into
// blocks of at least `min_block` multiply-adds.
struct SplitEntry {
  const char* core;
  int64_t rows, cols, min_block;
};
constexpr int64_t kSmallBlockWork = int64_t{4} << 20;  // families without size-dependent paths
constexpr SplitEntry kSplitTable[] = {
    {"Haswell", 12, 0, kSmallBlockWork},  {"Zen", 12, 0, kSmallBlockWork},
    {"SkylakeX", 16, 16, kMinBlockWork},  {"Cooperlake", 16, 16, kMinBlockWork},
    {"Sandybridge", 16, 16, kMinBlockWork}, {"Nehalem", 16, 16, kMinBlockWork},
    // 0.3.21 runs SkylakeX's sgemm kernel for SapphireRapids too (not measured: no such processor
    // here; the probe checks it where it runs).
    {"SapphireRapids", 16, 16, kMinBlockWork},
};

// Cuts a ragged float32 product (every transpose, beta 0.5, blocks of at least kMinBlockWork) by
// rows (by_rows) or columns into two blocks on the alignment graft would use, and compares the
// bits with the whole call. The sizes are not multiples of anything the kernels unroll by.
bool probe_split(bool by_rows) {
  const int64_t cut = 96;                          // a multiple of every alignment in the table
  const int64_t big = 197, other = 293, k = 301;   // the block at the cut: 96 * 293 * 301 >= 8 Mi
  const int64_t m = by_rows ? big : other, n = by_rows ? other : big;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), c0(static_cast<size_t>(m * n));
  uint32_t state = 12345;
  auto next = [&state] {  // a plain LCG: values in [-1, 1) with 16 significant bits
    state = state * 1664525u + 1013904223u;
    return static_cast<float>((state >> 8) & 0xffffu) / 32768.0f - 1.0f;
  };
  for (float& v : a) v = next();
  for (float& v : b) v = next();
  for (float& v : c0) v = next();
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const int64_t lda = ta ? m : k, ldb = tb ? k : n;
    std::vector<float> whole = c0, parts = c0;
    gemm_call(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.5f, whole.data(), n);
    for (const auto& [lo, hi] : {std::pair<int64_t, int64_t>{0, cut}, {cut, big}})
      gemm_block(by_rows, lo, hi, ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.5f, parts.data(), n);
    if (std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(float)) != 0) return false;
  }
  return true;
}

// The table's word for the core OpenBLAS runs, confirmed by the probe.
BlasSplit decide_split() {
  BlasSplit split;
  split.core = openblas_get_corename();
  for (const SplitEntry& e : kSplitTable)
    if (strcasecmp(split.core.c_str(), e.core) == 0) {  // a one-target build says "HASWELL"
      split.row_multiple = e.rows;
      split.col_multiple = e.cols;
      split.min_block = e.min_block;
      split.rows = e.rows > 0 && probe_split(true);
      split.cols = e.cols > 0 && probe_split(false);
      split.probe_refused = (e.rows > 0 && !split.rows) || (e.cols > 0 && !split.cols);
    }
  return split;
}

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
  g_split = decide_split();
}

}  // namespace

namespace runtime {

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
  const int threads = get_num_threads();
  const int64_t min_block = g_split.min_block;
  if (!std::is_same_v<T, float> || threads == 1 || !(g_split.rows || g_split.cols) || work < 2 * min_block) {
    gemm_call(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Cut the larger of m and n where the kernel allows both; otherwise the one it allows.
  const bool by_rows = g_split.rows && (!g_split.cols || m >= n);
  const int64_t dim = by_rows ? m : n, other = by_rows ? n : m;
  const int64_t align = by_rows ? g_split.row_multiple : g_split.col_multiple;
  const int64_t units = (dim + align - 1) / align;
  // Near-equal blocks of whole units (the last unit may be short), each at least min_block.
  int64_t blocks = std::min({static_cast<int64_t>(threads), units, work / min_block});
  auto edge = [&](int64_t i) { return std::min(dim, (units * i / blocks) * align); };
  auto blocks_big_enough = [&] {
    for (int64_t i = 0; i < blocks; ++i)
      if ((edge(i + 1) - edge(i)) * other * k < min_block) return false;
    return true;
  };
  while (blocks >= 2 && !blocks_big_enough()) --blocks;
  if (blocks < 2) {
    gemm_call(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i)
      gemm_block(by_rows, edge(i), edge(i + 1), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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

BlasSplit blas_split() {
  runtime::ensure_blas_ready();
  return g_split;
}

}  // namespace graft
