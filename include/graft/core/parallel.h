// Threads used by graft's compute kernels (today: the BLAS behind matmul, linear and conv2d).
//
// graft never runs two thread pools that spin against each other: its matrix products use
// OpenBLAS's pool only, sized by set_num_threads, and graft's element-wise kernels run on the
// calling thread. DataLoader workers are separate and mostly sleep on their queues.
#pragma once

#include <string>

namespace graft {

// Like torch::set_num_threads: the number of threads a matrix product may use (>= 1).
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
// GRAFT_BLAS_CORETYPE=<name> picks a family by OpenBLAS's name.
std::string blas_core_name();

}  // namespace graft
