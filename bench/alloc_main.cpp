// Heap allocations per op for every case of the overhead benchmark, graft and LibTorch.
//
//   graft_overhead_allocs [--torch_threads=N] [--json=FILE]
//
// This executable replaces malloc and friends with thin counting wrappers over glibc's __libc_*
// entry points (symbol interposition: the executable's definitions win over libc's for every
// shared library too, so LibTorch's allocations and operator new are counted as well). It is a
// separate binary so that the timing benchmark runs on the untouched allocator.
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "overhead_common.h"

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

namespace {

struct Counts {
  double allocs_per_op, frees_per_op;
};

Counts measure(overhead::Runner& r) {
  constexpr int kSteps = 20;
  r.step();  // warm-up (first-use allocations, caches)
  n_allocs = 0;
  n_frees = 0;
  counting = true;
  for (int i = 0; i < kSteps; ++i) r.step();
  counting = false;
  const double ops = double(kSteps) * overhead::kChainLen;
  return {double(n_allocs.load()) / ops, double(n_frees.load()) / ops};
}

}  // namespace

int main(int argc, char** argv) {
  int torch_threads = 1;
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--torch_threads=", 16) == 0) torch_threads = std::atoi(argv[i] + 16);
    else if (std::strncmp(argv[i], "--json=", 7) == 0) json_path = argv[i] + 7;
    else {
      std::fprintf(stderr, "usage: %s [--torch_threads=N] [--json=FILE]\n", argv[0]);
      return 2;
    }
  }
#ifdef OVERHEAD_HAVE_TORCH
  if (torch_threads > 0) overhead::torch_set_num_threads(torch_threads);
#else
  (void)torch_threads;
#endif
  std::string json = "{\n  \"chain_len\": " + std::to_string(overhead::kChainLen) + ",\n  \"cases\": {";
  std::printf("%-24s %14s %14s %16s %16s\n", "case", "graft allocs", "graft frees", "libtorch allocs",
              "libtorch frees");
  bool first = true;
  for (const overhead::Case& c : overhead::all_cases()) {
    auto g = overhead::make_graft_runner(c);
    const Counts gc = measure(*g);
    char line[512];
    std::snprintf(line, sizeof line, "%s\n    \"%s\": {\"graft\": %.3f", first ? "" : ",",
                  overhead::case_name(c).c_str(), gc.allocs_per_op);
    json += line;
    first = false;
#ifdef OVERHEAD_HAVE_TORCH
    auto t = overhead::make_torch_runner(c);
    const Counts tc = measure(*t);
    std::printf("%-24s %14.2f %14.2f %16.2f %16.2f\n", overhead::case_name(c).c_str(), gc.allocs_per_op,
                gc.frees_per_op, tc.allocs_per_op, tc.frees_per_op);
    std::snprintf(line, sizeof line, ", \"libtorch\": %.3f}", tc.allocs_per_op);
    json += line;
#else
    std::printf("%-24s %14.2f %14.2f %16s %16s\n", overhead::case_name(c).c_str(), gc.allocs_per_op,
                gc.frees_per_op, "-", "-");
    json += "}";
#endif
  }
  json += "\n  }\n}\n";
  if (json_path) {
    FILE* f = std::fopen(json_path, "w");
    if (!f) {
      std::perror(json_path);
      return 1;
    }
    std::fputs(json.c_str(), f);
    std::fclose(f);
  }
  return 0;
}
