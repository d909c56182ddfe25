// See alloc_count.h.
#include "alloc_count.h"

#include <atomic>
#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {
std::atomic<bool> counting{false};
std::atomic<long> n_allocs{0}, n_frees{0};
inline void count_alloc() {
  if (counting.load(std::memory_order_relaxed)) n_allocs.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

namespace bench {
void alloc_counting(bool on) {
  if (on) {
    n_allocs = 0;
    n_frees = 0;
  }
  counting = on;
}
long alloc_count() { return n_allocs.load(); }
long free_count() { return n_frees.load(); }
}  // namespace bench

extern "C" {
void* malloc(size_t n) {
  count_alloc();
  return __libc_malloc(n);
}
void free(void* p) {
  if (p && counting.load(std::memory_order_relaxed)) n_frees.fetch_add(1, std::memory_order_relaxed);
  __libc_free(p);
}
void* calloc(size_t a, size_t b) {
  count_alloc();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  count_alloc();
  return __libc_realloc(p, n);
}
void* memalign(size_t al, size_t n) {
  count_alloc();
  return __libc_memalign(al, n);
}
void* aligned_alloc(size_t al, size_t n) {
  count_alloc();
  return __libc_memalign(al, n);
}
int posix_memalign(void** out, size_t al, size_t n) {
  count_alloc();
  void* p = __libc_memalign(al, n);
  if (!p && n) return ENOMEM;
  *out = p;
  return 0;
}
void* valloc(size_t n) {
  count_alloc();
  return __libc_memalign(4096, n);
}
void* pvalloc(size_t n) {
  count_alloc();
  return __libc_memalign(4096, (n + 4095) / 4096 * 4096);
}
}
