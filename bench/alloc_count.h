// Heap-allocation counting for bench/overhead.cpp's *_overhead_allocs builds (library-neutral).
// alloc_count.cpp replaces malloc and friends with thin counting wrappers over glibc's __libc_*
// entry points (symbol interposition: the executable's definitions win over libc's for every shared
// library too, so LibTorch's allocations and operator new are counted as well). Only the *_allocs
// executables link it: the timing builds run on the untouched allocator.
#pragma once

namespace bench {

void alloc_counting(bool on);  // start (resetting the counts) or stop counting
long alloc_count();            // malloc, calloc, realloc and the aligned allocators while counting
long free_count();

}  // namespace bench
