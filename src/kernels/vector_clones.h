// GRAFT_VEC_CLONES: compile a function three times (the x86-64 baseline with SSE2, x86-64-v3 with
// AVX2 + FMA, x86-64-v4 with AVX-512) and pick the widest variant the processor has when the
// program loads (GCC target_clones; other compilers get the baseline). The one way graft chooses
// code per processor: the float32 kernels (vec_f32, linear_epilogue) and the optimisers' update
// loops use it. x86-64-v3 rather than "avx2", which has no FMA: the optimisers' std::fma is then
// one instruction, not a libm call. optimize("fp-contract=off") repeats graft's global
// -ffp-contract=off inside the clones: a*b+c stays two roundings in the v3/v4 clones, as at SSE2
// (which has no FMA), so the result does not depend on the processor (std::fma rounds once
// everywhere). GRAFT_VEC_NO_CONTRACT does the same for clang inside a body.
//
// Note [Clones give the same bits]
// The promise: a float32 kernel compiled with GRAFT_VEC_CLONES returns the same bits whichever
// variant the processor picks (baseline, x86-64-v3, x86-64-v4), so a run on an AVX2 machine and
// one on an AVX-512 machine agree where no matrix product is involved. It rests on three rules the
// kernels keep: no contraction into FMA (above); no sum whose order depends on the vector width
// (reductions add fixed blocks in fixed lanes, Note [Fast float32 sum] in vec_f32.h); no
// approximate instructions (rcp, rsqrt) that differ between SSE and AVX-512. What it does not
// cover: matrix products, whose bits depend on OpenBLAS's kernel family (Haswell/Zen on AVX2,
// SkylakeX/Cooperlake on AVX-512; Note [Splitting a matrix product] in src/runtime/blas.cpp), and
// so everything built on them (linear layers, attention, convolution through im2col, RNNs): a
// model's training is the same bits on two machines only where both run the same OpenBLAS family
// (GRAFT_BLAS_CORETYPE=Haswell, for instance, on both). oneDNN's convolutions pick their own
// kernels per processor too.
// Checked by tests/kernels/clone_bits/: the kernels of vec_f32, linear_epilogue, attention, the
// RNN cells, normalisation, cross-entropy, pooling, the optimisers' update loops and gradient
// clipping run on this processor and under QEMU's emulation of an AVX2-only processor (Haswell)
// and of one without AVX (Nehalem), with one OpenBLAS family pinned for all three, and every result
// must be the same bits. On an AVX2-only machine the x86-64-v4 clones are not covered (the test says
// so); on an AVX-512 machine all three are.
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
