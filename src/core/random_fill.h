// The random fills behind rand, randn, randint, randperm, the tensor's uniform_, normal_, random_
// and bernoulli_, and rrelu's noise: PyTorch's CPU distributions, transform for transform.
//
// Note [PyTorch's random streams]
// After the same manual_seed, graft draws the numbers PyTorch 1.13 draws on the CPU, so a
// LibTorch program prints the same after the rename (tests/core/test_random_streams.cpp checks
// each fill against tensors PyTorch wrote). The engine is Generator (mt19937); on top of it:
// - uniform [from, to): w = the dtype's mantissa digits (float 24, double 53, half 11, bfloat16 8);
//   x = (bits & (2^w - 1)) / 2^w in float (double for double), from random() (random64() for
//   double); the value is x * (to - from) + from with from and to in the dtype, one rounding each.
// - normal, 16 values or more in a contiguous tensor: the tensor is filled with uniforms first, then
//   each block of 16 becomes 8 Box-Muller pairs in the dtype's own arithmetic, u1 = 1 - x[j],
//   u2 = x[j + 8]: x[j] = sqrt(-2 log u1) cos(2 pi u2) * std + mean, x[j + 8] the same with sin. A
//   size not a multiple of 16 draws 16 fresh uniforms for the last 16 values and transforms those
//   (they overwrite the tail). Trap: PyTorch's AVX2 kernel (picked on processors without AVX-512)
//   computes float tensors with avx_mathfun's polynomials, which differ from libm's logf, cosf and
//   sinf in the last bit; graft computes every processor's values as PyTorch's scalar kernel does
//   (what PyTorch computes with ATEN_CPU_CAPABILITY=default or on AVX-512 processors).
// - normal, fewer than 16 values or a strided tensor: each value is Generator::next_normal() (double
//   Box-Muller with the pair's second value cached in the generator, across calls) * std + mean,
//   rounded once to the dtype.
// - integers in [base, base + range): bits % range + base, the bits from random64() when range >=
//   2^32 (and the dtype is int64, double, float or bfloat16), else from random(). The modulo is
//   PyTorch's: the bias it leaves is below range / 2^32.
// - bernoulli(p): next_double() < p (53 bits), whatever the dtype.
// - randperm(n): 0..n-1, then for i < n - 1 swap element i with element i + random() % (n - i).
// - rrelu's noise in training: for each element x <= 0 in order, a uniform double in [lower, upper)
//   (bounds rounded to the dtype first), rounded to the dtype; 1 for x > 0, with no draw.
#pragma once

#include <cstdint>

#include "graft/core/generator.h"
#include "graft/core/tensor.h"

namespace graft::detail {

// Each fills a contiguous CPU tensor `t` in place, in element order, and takes the generator's lock.
void uniform_fill(const Tensor& t, double from, double to, Generator& g);       // floating dtypes
void normal_fill(const Tensor& t, double mean, double std, bool contiguous, Generator& g);  // floating
void random_from_to_fill(const Tensor& t, uint64_t range, int64_t base, Generator& g);  // any dtype but bool
void bernoulli_fill(const Tensor& t, double p, Generator& g);                    // any dtype
void randperm_fill(const Tensor& t, Generator& g);                               // 1-dim, any dtype but bool
void rrelu_noise_fill(const Tensor& noise, const Tensor& x, double lower, double upper, Generator& g);  // float, double

}  // namespace graft::detail
