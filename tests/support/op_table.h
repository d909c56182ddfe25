// The op test table (PyTorch's OpInfo, in small): one record per op name of GRAFT_FORALL_OPS.
// tests/ops/test_op_table.cpp runs every record through:
//   1. forward against `reference` (an independent plain loop in double) in float64, and in
//      float32 when `float32` is set (inputs converted, looser tolerance);
//   2. non-contiguous inputs give the same result;
//   3. gradcheck (float64 central differences) when `gradcheck`;
//   4. gradgradcheck when `gradgradcheck`;
//   5. an input used twice: gradcheck with every same-shaped float input replaced by input 0
//      (or, for single-input ops, of f(x) * f(x)), when `gradcheck`;
//   6. every error case throws a graft::Error whose message contains the listed pieces.
// Broadcasting is covered by samples whose inputs have different shapes.
// Records live next to the family they test (tests/ops/records_<family>.cpp) and register
// themselves with GRAFT_OP_RECORDS.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace graft::test {

struct ErrorCase {
  std::function<void()> call;
  std::vector<std::string> message_contains;  // e.g. {"matmul", "[2, 3]"}
};

struct OpRecord {
  std::string name;                                    // as in GRAFT_FORALL_OPS
  std::string variant;                                 // free text to tell records of one op apart
  std::function<Tensor(const TensorList&)> fn;         // the graft call under test
  std::function<Tensor(const TensorList&)> reference;  // independent reference, float64 result
  std::function<std::vector<TensorList>()> samples;    // float64 (or int64/bool) sample inputs
  std::vector<bool> differentiable;  // which inputs get requires_grad; empty = every float input
  bool gradcheck = true;
  bool gradgradcheck = true;
  bool float32 = true;          // also run forward in float32
  bool non_contiguous = true;   // run the non-contiguous check
  double atol = 1e-10, rtol = 1e-10;            // float64 forward tolerance
  double atol32 = 1e-5, rtol32 = 1e-4;          // float32 forward tolerance
  std::vector<ErrorCase> errors;
};

std::vector<OpRecord>& op_table();

struct OpRecordRegistrar {
  explicit OpRecordRegistrar(std::vector<OpRecord> records);
};

}  // namespace graft::test

#define GRAFT_CONCAT_(a, b) a##b
#define GRAFT_CONCAT(a, b) GRAFT_CONCAT_(a, b)
// GRAFT_OP_RECORDS(family) { return { OpRecord{...}, ... }; }
#define GRAFT_OP_RECORDS(family)                                                              \
  static std::vector<::graft::test::OpRecord> GRAFT_CONCAT(graft_records_, family)();          \
  static ::graft::test::OpRecordRegistrar GRAFT_CONCAT(graft_registrar_, family)(              \
      GRAFT_CONCAT(graft_records_, family)());                                                 \
  static std::vector<::graft::test::OpRecord> GRAFT_CONCAT(graft_records_, family)()
