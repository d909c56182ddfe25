// GRAFT_BLAS_CORETYPE (Note [OpenBLAS core type] in graft/runtime/parallel.h) and the split it
// leads to (Note [Splitting a matrix product] in src/runtime/blas.cpp):
//  - a family OpenBLAS does not know, or an AVX-512 family on a processor without AVX-512, is a
//    graft::Error naming the variable, not a silent fallback or an illegal instruction. OpenBLAS's
//    set-up runs once per process, so these run as ctest entries of their own
//    (graft_blas_family_unknown; graft_blas_family_avx512_without_avx512, under QEMU's AVX2-only
//    Haswell) with GRAFT_EXPECT_BLAS_ERROR naming what the message must say; elsewhere they skip.
//  - the split decided for the family in use: what the table of measured families says.
#include <gtest/gtest.h>

#include <strings.h>

#include <cstdlib>
#include <string>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

TEST(BlasFamily, RefusesAFamilyItCannotRun) {
  const char* expect = std::getenv("GRAFT_EXPECT_BLAS_ERROR");
  if (!expect) GTEST_SKIP() << "runs under ctest's graft_blas_family_* entries";
  const char* family = std::getenv("GRAFT_BLAS_CORETYPE");
  ASSERT_NE(family, nullptr);
  EXPECT_TRUE(throws_error([] { (void)blas_core_name(); }, {"GRAFT_BLAS_CORETYPE", family, expect}));
  // A product asks again (the set-up did not complete), and refuses again.
  EXPECT_TRUE(throws_error([] { (void)mm(ones({64, 64}), ones({64, 64})); }, {"GRAFT_BLAS_CORETYPE", expect}));
}

TEST(BlasFamily, SplitFollowsTheMeasuredTable) {
  if (std::getenv("GRAFT_EXPECT_BLAS_ERROR")) GTEST_SKIP() << "this run checks the refusal";
  BlasSplit s = blas_split();
  EXPECT_EQ(s.core, blas_core_name());
  // OpenBLAS built for one target names it in capitals ("HASWELL"); Debian's names it "Haswell".
  for (const char* name : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", "Sandybridge", "Nehalem"})
    if (strcasecmp(s.core.c_str(), name) == 0) s.core = name;
  // Note [Splitting a matrix product]: AVX2's Haswell and Zen kernels keep the bits of row blocks
  // only; the AVX-512 families and the SSE ones keep both; an unknown family is never cut.
  if (s.core == "Haswell" || s.core == "Zen") {
    EXPECT_TRUE(s.rows);
    EXPECT_FALSE(s.cols);
  } else if (s.core == "SkylakeX" || s.core == "Cooperlake" || s.core == "SapphireRapids" || s.core == "Sandybridge" ||
             s.core == "Nehalem") {
    EXPECT_TRUE(s.rows);
    EXPECT_TRUE(s.cols);
  } else {
    EXPECT_FALSE(s.rows || s.cols) << s.core;
  }
  EXPECT_FALSE(s.probe_refused) << "OpenBLAS's " << s.core << " kernels no longer keep the bits the table says";
  // Row blocks on multiples of 12 on Haswell and Zen, 16 elsewhere; column blocks on 16.
  if (s.rows) {
    EXPECT_EQ(s.row_multiple, s.core == "Haswell" || s.core == "Zen" ? 12 : 16);
  }
  if (s.cols) {
    EXPECT_EQ(s.col_multiple, 16);
  }
  // Blocks of 4 Mi multiply-adds on Haswell and Zen (no size-dependent paths), 8 Mi elsewhere
  // (above SkylakeX's "direct" sgemm).
  if (s.rows || s.cols) {
    EXPECT_EQ(s.min_block, (s.core == "Haswell" || s.core == "Zen" ? 4 : 8) << 20);
  }
}

}  // namespace
}  // namespace graft::test
