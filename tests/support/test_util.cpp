#include "test_util.h"

#include <random>

#include <sstream>

namespace graft::test {

std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  std::vector<int64_t> idx(static_cast<size_t>(t.dim()), 0);
  const char* base = static_cast<const char*>(t.data_ptr());
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[static_cast<size_t>(d)] * t.stride(d);
    switch (t.dtype()) {
      case kFloat32: out.push_back(reinterpret_cast<const float*>(base)[off]); break;
      case kFloat64: out.push_back(reinterpret_cast<const double*>(base)[off]); break;
      case kInt64: out.push_back(static_cast<double>(reinterpret_cast<const int64_t*>(base)[off])); break;
      case kBool: out.push_back(reinterpret_cast<const bool*>(base)[off] ? 1.0 : 0.0); break;
      default: ADD_FAILURE() << "values(): unsupported dtype";
    }
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < t.size(d)) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return out;
}

Tensor make(const std::vector<double>& v, IntArrayRef shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  // Under a DefaultDeviceGuard(kMeta) (the meta walk of the op table) the tensor is meta: its shape
  // and dtype, no values to write (Note [Meta device]).
  if (t.is_meta()) return t;
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype) {
      case kFloat32: t.data_ptr<float>()[i] = static_cast<float>(v[i]); break;
      case kFloat64: t.data_ptr<double>()[i] = v[i]; break;
      case kInt64: t.data_ptr<int64_t>()[i] = static_cast<int64_t>(v[i]); break;
      case kBool: t.data_ptr<bool>()[i] = v[i] != 0; break;
      default: break;
    }
  }
  return t;
}

Tensor non_contiguous(const Tensor& t) {
  std::vector<int64_t> shape = t.sizes().vec();
  shape.push_back(2);
  Tensor wide = zeros(shape, t.dtype());
  Tensor nc = wide.select(-1, 0);
  {
    NoGradGuard ng;
    nc.copy_(t.detach());
  }
  if (t.requires_grad() && t.is_leaf()) nc = nc.detach().requires_grad_();
  return nc;
}

::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected,
                                     IntArrayRef expected_shape, double atol, double rtol) {
  if (!actual.defined()) return ::testing::AssertionFailure() << "tensor is undefined";
  if (!actual.sizes().equals(expected_shape))
    return ::testing::AssertionFailure() << "shape " << shape_str(actual.sizes()) << " != expected "
                                         << shape_str(expected_shape);
  auto a = values(actual);
  if (a.size() != expected.size())
    return ::testing::AssertionFailure() << a.size() << " values, expected " << expected.size();
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = expected[i];
    if (std::isnan(y) && std::isnan(x)) continue;
    if (std::isinf(y) && x == y) continue;
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y)))
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " != expected " << y
                                           << " (atol " << atol << ", rtol " << rtol << ")";
  }
  return ::testing::AssertionSuccess();
}

std::vector<double> uniform_values(int64_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = u(rng);
  return v;
}

std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

::testing::AssertionResult same_values(const std::vector<double>& actual, const std::vector<double>& expected) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << actual.size() << " values, expected " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    const bool both_nan = std::isnan(actual[i]) && std::isnan(expected[i]);
    if (!both_nan && actual[i] != expected[i])
      return ::testing::AssertionFailure() << "element " << i << ": " << actual[i] << ", expected " << expected[i];
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  return all_close(actual, values(expected), expected.sizes(), atol, rtol);
}

::testing::AssertionResult throws_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts)
      if (msg.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message \"" << msg << "\" lacks \"" << p << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-graft exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

std::vector<int64_t> ref_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Tensor ref_map(const TensorList& inputs, const std::function<double(const std::vector<double>&)>& f, DType out_dt) {
  std::vector<int64_t> shape;
  for (const auto& t : inputs) shape = ref_broadcast(shape, t.sizes().vec());
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<std::vector<double>> vals;
  for (const auto& t : inputs) vals.push_back(values(t));
  std::vector<double> out(static_cast<size_t>(n));
  std::vector<double> args(inputs.size());
  for (int64_t flat = 0; flat < n; ++flat) {
    // unravel flat into the broadcast shape, then ravel into each input with its own shape
    for (size_t k = 0; k < inputs.size(); ++k) {
      const auto in_shape = inputs[k].sizes().vec();
      int64_t rem = flat, idx = 0, mult = 1;
      for (size_t d = shape.size(); d-- > 0;) {
        const int64_t coord = rem % shape[d];
        rem /= shape[d];
        const size_t off = shape.size() - in_shape.size();
        if (d >= off) {
          const int64_t s = in_shape[d - off];
          idx += (s == 1 ? 0 : coord) * mult;
          mult *= s;
        }
      }
      args[k] = vals[k][static_cast<size_t>(idx)];
    }
    out[static_cast<size_t>(flat)] = f(args);
  }
  return make(out, shape, out_dt);
}

Tensor uniform_sample(IntArrayRef shape, uint64_t seed, double lo, double hi) {
  Generator g(seed);
  return rand(shape, kFloat64, &g) * (hi - lo) + lo;
}

std::function<std::vector<TensorList>()> lazy_samples(SampleSpecs specs) {
  return [specs = std::move(specs)] {
    std::vector<TensorList> out;
    for (const auto& sample : specs) {
      TensorList t;
      for (const auto& sp : sample) t.push_back(uniform_sample(sp.shape, sp.seed, sp.lo, sp.hi));
      out.push_back(std::move(t));
    }
    return out;
  };
}

}  // namespace graft::test
