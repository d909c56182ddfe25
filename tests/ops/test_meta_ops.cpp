// Every op of the op list on the meta device (Note [Meta device] in graft/core/dtype.h): each record
// of the op table runs once on CPU tensors and once on meta copies of the same inputs. The meta
// run must give a meta result of the CPU result's sizes and dtype, gradients of the CPU gradients'
// sizes on meta, and allocate no CPU memory at all (the peak of the CPU counters does not move).
// The CPU run is the independent reference: its shapes come from the kernels that computed values.
// The meta run is under a DefaultDeviceGuard(kMeta), so that what a record's fn builds with the
// factories is meta as well; what the ops build themselves must follow their inputs.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

// The ops whose result depends on the input's values, which meta tensors do not have: they must
// refuse meta inputs with a graft::Error (PyTorch's meta tensors refuse them as well).
const std::set<std::string> kValueDependentOps = {"allclose", "equal"};
// Records (op, variant) whose meta run must throw a graft::Error mentioning meta: one_hot infers
// num_classes from the largest index when given -1.
const std::set<std::pair<std::string, std::string>> kValueDependentRecords = {{"one_hot", "inferred_classes"}};

// Float64 leaves as the op table's ForwardMatchesReference prepares them, on `device`.
TensorList meta_walk_inputs(const OpRecord& r, const TensorList& sample, Device device) {
  return record_inputs(r, sample, kFloat64, device);
}

// The gradients of sum(y * 1) with respect to the inputs that require grad (undefined where unused).
TensorList meta_walk_grads(const Tensor& y, const TensorList& in) {
  TensorList wrt;
  for (const Tensor& t : in)
    if (t.defined() && t.requires_grad()) wrt.push_back(t);
  if (wrt.empty() || !y.requires_grad()) return {};
  return autograd::grad({y}, wrt, {ones_like(y)}, /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
}

// "" when the record's first sample runs on meta as on the CPU, else what differs.
std::string meta_walk_one(const OpRecord& r) {
  const auto samples = r.samples();
  if (samples.empty()) return "no sample";
  std::ostringstream why;
  for (size_t k = 0; k < samples.size(); ++k) {
    const TensorList cpu_in = meta_walk_inputs(r, samples[k], kCPU);
    const Tensor y = r.fn(cpu_in);
    const TensorList cpu_grads = meta_walk_grads(y, cpu_in);

    const TensorList meta_in = meta_walk_inputs(r, samples[k], kMeta);
    memory::reset_peak_stats();
    const int64_t cpu_before = memory::stats().allocated_bytes;
    Tensor ym;
    TensorList meta_grads;
    try {
      // Tensors a record's fn makes itself (masks, weights, running statistics) are meta too, as
      // a user's code runs under the guard when it plans on meta.
      DefaultDeviceGuard on_meta(kMeta);
      ym = r.fn(meta_in);
      meta_grads = meta_walk_grads(ym, meta_in);
    } catch (const std::exception& e) {
      why << "sample " << k << " threw: " << e.what();
      return why.str();
    }
    const int64_t cpu_peak = memory::stats().peak_allocated_bytes;
    if (cpu_peak != cpu_before) why << "sample " << k << " allocated " << (cpu_peak - cpu_before) << " CPU bytes; ";
    if (!ym.is_meta()) why << "sample " << k << " result on " << ym.device().str() << "; ";
    if (ym.sizes() != y.sizes()) why << "sample " << k << " sizes " << shape_str(ym.sizes()) << " vs CPU " << shape_str(y.sizes()) << "; ";
    if (ym.dtype() != y.dtype()) why << "sample " << k << " dtype " << dtype_name(ym.dtype()) << " vs CPU " << dtype_name(y.dtype()) << "; ";
    if (ym.requires_grad() != y.requires_grad()) why << "sample " << k << " requires_grad differs; ";
    if (meta_grads.size() != cpu_grads.size()) {
      why << "sample " << k << " " << meta_grads.size() << " gradients vs CPU " << cpu_grads.size() << "; ";
    } else {
      for (size_t i = 0; i < cpu_grads.size(); ++i) {
        if (cpu_grads[i].defined() != meta_grads[i].defined()) {
          why << "sample " << k << " gradient " << i << " defined on one device only; ";
        } else if (cpu_grads[i].defined()) {
          if (!meta_grads[i].is_meta()) why << "sample " << k << " gradient " << i << " not meta; ";
          if (meta_grads[i].sizes() != cpu_grads[i].sizes())
            why << "sample " << k << " gradient " << i << " sizes " << shape_str(meta_grads[i].sizes()) << " vs CPU "
                << shape_str(cpu_grads[i].sizes()) << "; ";
        }
      }
    }
    if (!why.str().empty()) return why.str();
  }
  return "";
}

TEST(MetaDevice, EveryOpOfTheListRunsOnMeta) {
  std::set<std::string> covered;
  std::ostringstream failures;
  int failed = 0;
  for (const OpRecord& r : op_table()) {
    if (kValueDependentOps.count(r.name)) continue;
    covered.insert(r.name);
    if (kValueDependentRecords.count({r.name, r.variant})) {
      const TensorList meta_in = meta_walk_inputs(r, r.samples().at(0), kMeta);
      EXPECT_TRUE(throws_error([&] { (void)r.fn(meta_in); }, {r.name, "meta"})) << r.name << " (" << r.variant << ")";
      continue;
    }
    const std::string why = meta_walk_one(r);
    if (!why.empty()) {
      ++failed;
      failures << "\n  " << r.name << (r.variant.empty() ? "" : " (" + r.variant + ")") << ": " << why;
    }
  }
  EXPECT_EQ(failed, 0) << failed << " records do not run on meta as on the CPU:" << failures.str();
  // The walk reached every op of the list (the op table has a record for each: OpCoverage).
  for (const char* name : ops::kOpNames) {
    if (!kValueDependentOps.count(name)) {
      EXPECT_TRUE(covered.count(name)) << name << " has no record to walk";
    }
  }
}

TEST(MetaDevice, ValueDependentOpsRefuseMetaWithAClearError) {
  const Tensor a = zeros({2, 3}, kMeta), b = zeros({2, 3}, kMeta);
  EXPECT_TRUE(throws_error([&] { (void)allclose(a, b); }, {"meta"}));
  EXPECT_TRUE(throws_error([&] { (void)equal(a, b); }, {"meta"}));
  EXPECT_TRUE(throws_error([&] { (void)a.sum().item<double>(); }, {"meta"}));
}

TEST(MetaDevice, MixingMetaAndCpuTensorsIsAnError) {
  const Tensor m = zeros({2, 3}, kMeta), c = zeros({2, 3});
  EXPECT_TRUE(throws_error([&] { (void)(m + c); }, {"meta", "CPU", "[2, 3]", "to(graft::kMeta)"}));
  EXPECT_TRUE(throws_error([&] { (void)matmul(m, c.t()); }, {"meta", "CPU"}));
  // A 0-dim CPU tensor is a wrapped number, as in PyTorch.
  const Tensor s = m * tensor(2.0);
  EXPECT_TRUE(s.is_meta());
  EXPECT_EQ(s.sizes(), m.sizes());
}

}  // namespace
}  // namespace graft::test

namespace graft::test {
namespace {

// Note [oneDNN's buffers on meta]: a float32 2-D convolution that oneDNN serves takes buffers from
// graft's allocator while it runs (reordered operands, scratchpad); on meta the op takes the same
// bytes for the same moment, so the peak of forward and backward on meta is the CPU's. The CPU run,
// whose kernels allocate the buffers, is the reference; one thread, so that one piece runs at a time.
TEST(MetaDevice, ConvolutionPeaksAsOnTheCpuWithItsBackendBuffers) {
  const int threads = get_num_threads();
  set_num_threads(1);
  auto peak_of = [](Device device) {
    const TensorOptions on = TensorOptions().device(device);
    Tensor x = randn({8, 32, 12, 12}, on).requires_grad_();  // 32 channels in and out: oneDNN's shapes
    Tensor w = randn({64, 32, 3, 3}, on).requires_grad_();
    Tensor b = randn({64}, on).requires_grad_();
    memory::reset_peak_stats();
    const int64_t before = memory::stats(device).allocated_bytes;
    Tensor y = conv2d(x, w, b, 1, 1);
    y.backward(ones_like(y));
    return memory::stats(device).peak_allocated_bytes - before;
  };
  const int64_t cpu = peak_of(kCPU), meta = peak_of(kMeta);
  set_num_threads(threads);
  EXPECT_EQ(meta, cpu);  // before the buffers were planned, meta's was the lower
}

}  // namespace
}  // namespace graft::test
