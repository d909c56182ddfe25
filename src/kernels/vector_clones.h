// GRAFT_VEC_CLONES: compile a function three times (SSE2 baseline, AVX2, AVX-512) and pick the
// widest variant the processor has when the program loads (GCC target_clones; other compilers get
// the baseline). optimize("fp-contract=off") repeats graft's global -ffp-contract=off inside the
// clones: a*b+c stays two roundings in AVX2/AVX-512, as at SSE2 (which has no FMA), so the result
// does not depend on the processor. GRAFT_VEC_NO_CONTRACT does the same for clang inside a body.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GRAFT_VEC_CLONES __attribute__((target_clones("default", "avx2", "avx512f"), optimize("fp-contract=off")))
#else
#define GRAFT_VEC_CLONES
#endif

#if defined(__clang__)
#define GRAFT_VEC_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define GRAFT_VEC_NO_CONTRACT
#endif
