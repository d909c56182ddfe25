// The op test table (PyTorch's OpInfo, in small): one record per op name of GRAFT_FORALL_OPS.
// tests/ops/test_op_table.cpp runs every record through:
//   1. forward against `reference` (an independent plain loop in double) in float64, and in
//      float32 when `float32` is set (inputs converted, looser tolerance);
//   2. non-contiguous inputs give the same result;
//   3. gradcheck (float64 central differences) when `gradcheck`;
//   4. gradgradcheck when `gradgradcheck`, and the gradients of a backward with create_graph equal
//      the plain backward's (for a fused op: its differentiated composite against its kernel);
//   5. an input used twice: gradcheck with every same-shaped float input replaced by input 0
//      (or, for single-input ops, of f(x) * f(x)), when `gradcheck`;
//   6. every error case throws a graft::Error whose message contains the listed pieces.
// Broadcasting is covered by samples whose inputs have different shapes.
// Records live next to the family they test (tests/ops/records_<family>.cpp) and register
// themselves with GRAFT_OP_RECORDS.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "graft/graft.h"
#include "test_util.h"

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
  // An op no input can misuse (every dtype and shape is valid) says why here instead of listing
  // error cases (OpCoverage.EveryRecordHasErrorCasesOrIsAView).
  std::string no_misuse;
  // Also run forward on bfloat16 and float16 inputs (Note [Half-precision compute]): the result,
  // in the half dtype, is held to the reference on the rounded inputs (OpTable.HalfPrecisionForward).
  bool half = false;
};

std::vector<OpRecord>& op_table();

// The table holds the records in the order of their files' names (each file's in the order it
// registers them), whatever order the files' static initialisers run in: that is link order, which
// a unity build changes (Note [Unity test builds]), and the records' test names end in their index.
struct OpRecordRegistrar {
  OpRecordRegistrar(const char* file, std::vector<OpRecord> records);
};

// Fresh leaves of a sample as the checks use them: floating inputs in `float_dtype`, requires_grad
// set as the record says (float64 only), on `device` (the meta walk, tests/ops/test_meta_ops.cpp).
inline TensorList record_inputs(const OpRecord& r, const TensorList& sample, DType float_dtype = kFloat64,
                                Device device = Device(kCPU)) {
  TensorList out;
  for (size_t i = 0; i < sample.size(); ++i) {
    const Tensor& s = sample[i];
    if (!s.defined()) {
      out.push_back(s);
      continue;
    }
    Tensor t = s.is_floating_point() ? s.detach().to(float_dtype, false, true) : s.detach().clone();
    if (device.is_meta()) t = t.to(device);
    const bool diff = t.is_floating_point() && (r.differentiable.empty() || (i < r.differentiable.size() && r.differentiable[i]));
    if (diff && float_dtype == kFloat64) t.requires_grad_();
    out.push_back(t);
  }
  return out;
}

// ---- shorthands of the records files ----
// One copy here rather than one per records file: the test files are compiled a few to a compiler
// run, where two files' helpers of the same name collide (Note [Unity test builds]).

// A float64 sample, uniform in [lo, hi).
inline Tensor r(IntArrayRef shape, uint64_t seed, double lo = -2, double hi = 2) {
  Generator g(seed);
  return rand(shape, kFloat64, &g) * (hi - lo) + lo;
}
// The spec of such a sample, built lazily by lazy().
inline SampleSpec S(std::vector<int64_t> shape, uint64_t seed, double lo = -2, double hi = 2) {
  return {std::move(shape), seed, lo, hi};
}
using Specs = SampleSpecs;
inline std::function<std::vector<TensorList>()> lazy(Specs specs) { return lazy_samples(std::move(specs)); }

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// The reductions of a loss, and the name each has in a record's variant.
inline const Reduction kReductions[] = {kNone, kMean, kSum};
inline std::string rname(Reduction red) { return reduction_name(red); }

// Error cases: an int64 input to an op of floating-point inputs; operands that do not broadcast.
inline ErrorCase int_input(std::function<Tensor(const Tensor&)> f, const char* op) {
  return {[f] { f(tensor({1, 2})); }, {op, "int64", "floating-point"}};
}
inline ErrorCase shape_mismatch(std::function<Tensor(const Tensor&, const Tensor&)> f, const char* op) {
  return {[f] { f(zeros({2, 3}), zeros({4})); }, {op, "[2, 3]", "[4]", "broadcast"}};
}

}  // namespace graft::test

#define GRAFT_CONCAT_(a, b) a##b
#define GRAFT_CONCAT(a, b) GRAFT_CONCAT_(a, b)
// GRAFT_OP_RECORDS(family) { return { OpRecord{...}, ... }; }
#define GRAFT_OP_RECORDS(family)                                                              \
  static std::vector<::graft::test::OpRecord> GRAFT_CONCAT(graft_records_, family)();          \
  static ::graft::test::OpRecordRegistrar GRAFT_CONCAT(graft_registrar_, family)(              \
      __FILE__, GRAFT_CONCAT(graft_records_, family)());                                       \
  static std::vector<::graft::test::OpRecord> GRAFT_CONCAT(graft_records_, family)()
