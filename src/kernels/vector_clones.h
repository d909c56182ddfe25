// GRAFT_VEC_CLONES: compile a function three times (the x86-64 baseline with SSE2, x86-64-v3 with
// AVX2 + FMA, x86-64-v4 with AVX-512) and pick the widest variant the processor has when the
// program loads (GCC target_clones; other compilers get the baseline). The one way graft chooses
// code per processor: the float32 kernels (vec_f32, linear_epilogue) and the optimisers' update
// loops use it. x86-64-v3 rather than "avx2", which has no FMA: the optimisers' std::fma is then
// one instruction, not a libm call. optimize("fp-contract=off") repeats graft's global
// -ffp-contract=off inside the clones: a*b+c stays two roundings in the v3/v4 clones, as at SSE2
// (which has no FMA), so the result does not depend on the processor (std::fma rounds once
// everywhere). GRAFT_VEC_NO_CONTRACT does the same for clang inside a body.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GRAFT_VEC_CLONES \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4"), optimize("fp-contract=off")))
#else
#define GRAFT_VEC_CLONES
#endif

#if defined(__clang__)
#define GRAFT_VEC_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define GRAFT_VEC_NO_CONTRACT
#endif
