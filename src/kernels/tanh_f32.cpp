// The array form of the float32 tanh (Note [Fast float32 tanh] in tanh_f32.h), one clone per
// vector width.
#include "tanh_f32.h"

namespace graft::kernels {

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
// optimize("fp-contract=off"): a*b+c stays two roundings in the AVX2/AVX-512 clones, as at SSE2
// (which has no FMA), so the result does not depend on the processor.
__attribute__((target_clones("default", "avx2", "avx512f"), optimize("fp-contract=off")))
#endif
void tanh_f32(const float* __restrict in, float* __restrict out, int64_t n) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = tanh_f32(in[i]);
}

}  // namespace graft::kernels
