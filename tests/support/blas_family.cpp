// Note [Tests under each kernel family] (tests/CMakeLists.txt): ctest runs the tests that compare
// bits across thread counts again under each OpenBLAS kernel family, named by GRAFT_BLAS_CORETYPE.
// Where the processor cannot run the family asked (AVX-512 kernels on an AVX2-only processor),
// graft refuses it with a graft::Error at its first matrix product; then the run's tests are
// skipped (GoogleTest runs none of them) and the output says why, which ctest reports as skipped
// (SKIP_REGULAR_EXPRESSION), instead of failing on the machine rather than on the code. Any other error
// (a misspelt family) still fails. Compiled into every test executable (graft_test_exe).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "graft/graft.h"

namespace graft::test {
namespace {

class BlasFamilyEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* family = std::getenv("GRAFT_BLAS_CORETYPE");
    if (!family || !*family) return;
    // tests/runtime/test_blas_family.cpp checks the refusal itself.
    if (std::getenv("GRAFT_EXPECT_BLAS_ERROR")) return;
    try {
      const std::string core = blas_core_name();
      std::cout << "OpenBLAS kernel family: " << core << " (GRAFT_BLAS_CORETYPE=" << family << ")\n";
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find("no AVX-512") == std::string::npos) throw;
      std::cout << "kernel family unavailable here: " << what << "\n";
      GTEST_SKIP() << "kernel family unavailable here";
    }
  }
};

[[maybe_unused]] ::testing::Environment* const kBlasFamilyEnvironment =
    ::testing::AddGlobalTestEnvironment(new BlasFamilyEnvironment);

}  // namespace
}  // namespace graft::test
