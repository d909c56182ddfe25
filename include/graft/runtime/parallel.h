// Threads used by graft's compute kernels.
//
// graft never runs two thread pools that spin against each other. Its kernels split large loops
// with parallel_for (below) over graft's own pool, sized by set_num_threads; whose workers sleep on
// a condition variable when idle (no spinning); small loops (under two grains) run on the calling
// thread and never touch the pool. DataLoader workers are separate and mostly sleep on their queues.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace graft {

// Like torch::set_num_threads: the number of threads graft's kernels (matrix products included)
// may use (>= 1): the calling thread plus n - 1 pool workers. The default is OpenBLAS's start-up
// count (OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS, else the cores); OpenBLAS itself then runs
// single-threaded and graft splits large matrix products over its own pool. If other code in the
// process (LibTorch, say) has raised OpenBLAS's thread count, set_num_threads lowers it back to one.
void set_num_threads(int n);
int get_num_threads();

// The name of the BLAS kernel family in use, e.g. "SkylakeX" (OpenBLAS's openblas_get_corename()).
//
// Note [OpenBLAS core type]
// Debian's OpenBLAS 0.3.21 does not recognise every recent processor, and environments often pin
// OPENBLAS_CORETYPE to an older family (SSE3 "Prescott", AVX2 "Haswell"): on a machine with AVX-512
// that makes matrix products 2-7x slower. Before its first matrix product graft checks the
// processor itself; when it has AVX-512 (F, DQ, BW, VL) but OpenBLAS runs kernels without it,
// graft re-runs OpenBLAS's dynamic-architecture start-up with the "SkylakeX" kernels (and puts
// OPENBLAS_CORETYPE back as it was). GRAFT_BLAS_CORETYPE=keep leaves OpenBLAS's choice alone;
// GRAFT_BLAS_CORETYPE=<name> picks a family by OpenBLAS's name (Haswell, Zen, SkylakeX,
// Sandybridge, ...): a name OpenBLAS does not know, or an AVX-512 family on a processor without
// AVX-512 (OpenBLAS would load it and stop at the first product on an illegal instruction), is a
// graft::Error at the first product. The family decides the last bits of every product: the AVX2
// and AVX-512 families sum in other orders (Note [Splitting a matrix product] in
// src/runtime/blas.cpp).
std::string blas_core_name();

// How graft cuts a float32 matrix product over its threads, decided once for the kernel family in
// use (Note [Splitting a matrix product] in src/runtime/blas.cpp): by rows of C on multiples of
// row_multiple, by columns on multiples of col_multiple, or not at all; every cut it makes gives
// the same bits as one call. probe_refused: the family is one graft measured as safe, but the
// start-up probe found a cut that changed bits here, so that cut is off.
struct BlasSplit {
  std::string core;
  bool rows = false, cols = false;
  int64_t row_multiple = 0, col_multiple = 0;
  int64_t min_block = 0;  // multiply-adds per block at least
  bool probe_refused = false;
};
BlasSplit blas_split();

namespace detail {
// A non-owning reference to a callable void(int64_t begin, int64_t end): parallel_for's type-erased
// body, without std::function's allocation.
class RangeFn {
 public:
  // (Constrained: without it this template, not the copy constructor, would take a non-const
  // RangeFn lvalue and wrap a pointer to it.)
  template <class F>
    requires(!std::is_same_v<std::remove_cv_t<F>, RangeFn>)
  RangeFn(F& f) : obj_(static_cast<void*>(&f)), call_([](void* o, int64_t b, int64_t e) { (*static_cast<F*>(o))(b, e); }) {}
  void operator()(int64_t b, int64_t e) const { call_(obj_, b, e); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};
void parallel_for_impl(int64_t begin, int64_t end, int64_t grain, RangeFn f);
}  // namespace detail

// Calls f(b, e) on disjoint chunks [b, e) that cover [begin, end), each at least `grain` long
// (except possibly the last), from up to get_num_threads() threads, the caller included; returns
// when all are done. A range shorter than 2 * grain, a call from inside another parallel_for, or a
// pool of one thread runs f(begin, end) on the calling thread; so does a call made while another
// user thread's parallel_for holds the pool (it does not wait for it). Chunks are near-equal and
// depend only on (begin, end, grain, get_num_threads()). The first exception a chunk throws is
// rethrown on the calling thread after every chunk has finished (the others still run).
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& f) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  if (end - begin < 2 * grain) {
    f(begin, end);
    return;
  }
  std::remove_reference_t<F>& body = f;
  detail::parallel_for_impl(begin, end, grain, detail::RangeFn(body));
}

// Elements per chunk for cheap element-wise kernels (a few cycles per element): below 2 * this,
// a loop runs on the calling thread. Waking a sleeping worker costs 10 to 20 us on the 2-core VM of
// BENCHMARKS.md: with LibTorch's grain (32768), a 64K-element add took 15 us at 2 threads against
// 6 us at 1, exp 39 against 22 us, and the MLP step (activations of 64K elements) was no faster at
// 2 threads than at 1. At 2^18 a split happens only where each half is worth tens of microseconds.
inline constexpr int64_t kElementwiseGrain = int64_t{1} << 18;

}  // namespace graft
