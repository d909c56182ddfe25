// Tensor factories.
#include "graft/core/factory.h"

#include "graft/core/small_object_pool.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>

#include "dispatch.h"
#include "random_fill.h"
#include "graft/core/memory.h"

namespace graft {

namespace {
void check_sizes(IntArrayRef size, const char* op) {
  for (int64_t s : size)
    GRAFT_CHECK(s >= 0, op, "non-negative sizes", shape_str(size), "every size must be >= 0");
}

void check_device(const TensorOptions& o, const char* op) {
  GRAFT_CHECK(o.device().is_cpu() || o.device().is_meta(), op, "a CPU device or the meta device", o.device().str(),
              "graft runs on the CPU (and on meta tensors, which have no data) so far; the CUDA device is planned");
  GRAFT_CHECK(o.layout() == kStrided, op, "the strided layout (kStrided)", "kSparse",
              "graft's tensors are dense; build a dense tensor (leave the layout out)");
}

Tensor finish(Tensor t, const TensorOptions& o) {
  if (o.requires_grad()) t.set_requires_grad(true);
  return t;
}

template <class F>
void fill_with(Tensor& t, F&& value_at) {
  if (t.is_meta()) return;  // no data to fill (Note [Meta device])
  kernels::dispatch_all_and_half(t.dtype(), "fill", [&]<class T>() {
    T* p = t.data_ptr<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = kernels::convert<T>(value_at(i));
  });
}
}  // namespace

// An op's output: on the CPU, or on meta inside a MetaOpScope on meta inputs (never the user's
// DefaultDeviceGuard, which only factories that name no device follow).
Tensor make_empty(IntArrayRef sizes, DType dtype) {
  return make_empty(sizes, dtype, detail::in_meta_op() ? Device(DeviceType::Meta) : Device(DeviceType::CPU));
}

Tensor make_empty(IntArrayRef sizes, DType dtype, Device device) {
  const int64_t n = numel_of(sizes);
  // The byte size is checked too: 2^62 float32 elements are 2^64 bytes, which wraps to 0 in a
  // size_t and would make a tensor without memory (issue 14, item 10).
  int64_t nbytes = 0;
  GRAFT_CHECK(!__builtin_mul_overflow(n, static_cast<int64_t>(element_size(dtype)), &nbytes), "empty",
              "a tensor of at most 2^63 - 1 bytes",
              shape_str(sizes) + " elements of " + std::to_string(element_size(dtype)) + " bytes",
              "no machine has that much memory; check the sizes");
  // Note [Small-object pool]: both bookkeeping blocks come from the per-thread cache.
  auto storage = std::allocate_shared<Storage>(graft::detail::PoolAllocator<Storage>(),
                                               static_cast<size_t>(nbytes), device);
  return Tensor(std::allocate_shared<TensorImpl>(graft::detail::PoolAllocator<TensorImpl>(), std::move(storage), 0, sizes,
                                                 contiguous_strides(sizes), dtype));
}

namespace detail {
namespace {
// Sizes as LibTorch's errors write a std::vector: "1 3".
std::string sizes_words(const std::vector<int64_t>& sizes) {
  std::string s;
  for (int64_t v : sizes) s += (s.empty() ? "" : " ") + std::to_string(v);
  return s;
}
}  // namespace

TensorDataContainer::TensorDataContainer(std::initializer_list<TensorDataContainer> elements)
    : TensorDataContainer(list(elements.begin(), elements.end())) {}

TensorDataContainer TensorDataContainer::list(const TensorDataContainer* begin, const TensorDataContainer* end) {
  TensorDataContainer out;
  out.sizes_ = {static_cast<int64_t>(end - begin)};
  if (begin == end) return out;  // tensor({}): float, sizes {0}, as LibTorch
  const TensorDataContainer& first = *begin;
  out.scalar_type_ = first.scalar_type_;
  out.sizes_.insert(out.sizes_.end(), first.sizes_.begin(), first.sizes_.end());
  for (const TensorDataContainer* it = begin; it != end; ++it) {
    const TensorDataContainer& e = *it;
    GRAFT_CHECK(e.scalar_type_ == out.scalar_type_, "tensor",
                std::string("elements of one scalar type, ") + kDTypeTable[static_cast<size_t>(out.scalar_type_)].scalar_type_name,
                std::string("an element of scalar type ") + kDTypeTable[static_cast<size_t>(e.scalar_type_)].scalar_type_name,
                std::string("Expected all elements of the tensor to have the same scalar type: ") +
                    kDTypeTable[static_cast<size_t>(out.scalar_type_)].scalar_type_name + ", but got element of scalar type: " +
                    kDTypeTable[static_cast<size_t>(e.scalar_type_)].scalar_type_name +
                    " (LibTorch's words); write every element with one type, 1.0 and 2.5 rather than 1 and 2.5");
    GRAFT_CHECK(e.sizes_ == first.sizes_, "tensor", "sub-lists of one shape " + shape_str(first.sizes_),
                "the sub-list " + e.str() + " of shape " + shape_str(e.sizes_),
                "Expected all sub-lists to have sizes: " + sizes_words(first.sizes_) + " (e.g. " + first.str() +
                    "), but got sub-list " + e.str() + " with sizes: " + sizes_words(e.sizes_) +
                    " (LibTorch's words); nested lists must be rectangular");
    out.ints_.insert(out.ints_.end(), e.ints_.begin(), e.ints_.end());
    out.floats_.insert(out.floats_.end(), e.floats_.begin(), e.floats_.end());
  }
  return out;
}

TensorDataContainer::TensorDataContainer(IntArrayRef values) : scalar_type_(DType::Int64) {
  sizes_.push_back(static_cast<int64_t>(values.size()));
  ints_.assign(values.begin(), values.end());
}

double TensorDataContainer::element_as_double(int64_t i) const {
  const auto k = static_cast<size_t>(i);
  return is_integral() ? static_cast<double>(ints_[k]) : floats_[k];
}

int64_t TensorDataContainer::element_as_int64(int64_t i) const {
  const auto k = static_cast<size_t>(i);
  return is_integral() ? ints_[k] : static_cast<int64_t>(floats_[k]);
}

std::string TensorDataContainer::str() const {
  // Row-major elements back into braces: {{1, 2}, {3, 4}}.
  std::ostringstream os;
  int64_t next = 0;
  auto write = [&](auto&& self, size_t dim) -> void {
    if (dim == sizes_.size()) {
      if (is_integral()) os << ints_[static_cast<size_t>(next)];
      else os << floats_[static_cast<size_t>(next)];
      ++next;
      return;
    }
    os << '{';
    for (int64_t i = 0; i < sizes_[dim]; ++i) {
      if (i) os << ", ";
      self(self, dim + 1);
    }
    os << '}';
  };
  write(write, 0);
  return os.str();
}

}  // namespace detail

Tensor tensor(detail::TensorDataContainer data, const TensorOptions& o) {
  check_device(o, "tensor");
  // LibTorch's dtype rule (torch::tensor): int and int64 give int64, float and double the default
  // dtype, the other types their own.
  const DType given = data.scalar_type();
  const DType natural = given == DType::Int32 ? DType::Int64
                        : given == DType::Float32 || given == DType::Float64 ? get_default_dtype()
                                                                             : given;
  Tensor t = make_empty(data.sizes(), o.has_dtype() ? o.dtype() : natural, o.device());
  if (!t.is_meta()) {
    kernels::dispatch_all_and_half(t.dtype(), "tensor", [&]<class T>() {
      T* p = t.data_ptr<T>();
      for (int64_t i = 0, n = t.numel(); i < n; ++i) {
        // Integers go through int64 so that values past 2^53 stay exact in int64 tensors.
        if constexpr (std::is_integral_v<T>) {
          p[i] = data.is_integral() ? static_cast<T>(data.element_as_int64(i)) : kernels::convert<T>(data.element_as_double(i));
        } else {
          p[i] = kernels::convert<T>(data.element_as_double(i));
        }
      }
    });
  }
  return finish(t, o);
}


Tensor empty(IntArrayRef size, const TensorOptions& o) {
  check_sizes(size, "empty");
  memory::OpScope op_scope("empty");  // names the allocation in the memory report
  check_device(o, "empty");
  return finish(make_empty(size, o.dtype(), o.device()), o);
}

Tensor full(IntArrayRef size, const Scalar& value, const TensorOptions& o) {
  check_sizes(size, "full");
  memory::OpScope op_scope("full");  // names the allocation in the memory report
  check_device(o, "full");
  Tensor t = make_empty(size, o.dtype(), o.device());
  if (!t.is_meta()) kernels::dispatch_all_and_half(t.dtype(), "full", [&]<class T>() {
    T v;
    if constexpr (kernels::is_half_v<T>) v = T(value.to<double>());
    else v = value.to<T>();
    std::fill_n(t.data_ptr<T>(), t.numel(), v);
  });
  return finish(t, o);
}

Tensor zeros(IntArrayRef size, const TensorOptions& o) {
  check_sizes(size, "zeros");
  memory::OpScope op_scope("zeros");  // names the allocation in the memory report
  check_device(o, "zeros");
  Tensor t = make_empty(size, o.dtype(), o.device());
  if (t.numel() && !t.is_meta()) std::memset(t.data_ptr(), 0, t.nbytes());
  return finish(t, o);
}

Tensor ones(IntArrayRef size, const TensorOptions& o) {
  check_sizes(size, "ones");
  memory::OpScope op_scope("ones");  // names the allocation in the memory report
  return full(size, 1, o);
}

Tensor arange(const Scalar& end, const TensorOptions& o) { return arange(0, end, 1, o); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  check_device(o, "arange");
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  GRAFT_CHECK(std::isfinite(s) && std::isfinite(e) && std::isfinite(st), "arange", "finite start, end and step",
              "start " + std::to_string(s) + ", end " + std::to_string(e) + ", step " + std::to_string(st),
              "an infinite or NaN bound gives no finite range");
  GRAFT_CHECK(st != 0, "arange", "a non-zero step", "step 0", "pass a non-zero step, e.g. 1");
  GRAFT_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "arange", "a step that moves from start towards end",
              "start " + std::to_string(s) + ", end " + std::to_string(e) + ", step " + std::to_string(st),
              "use a negative step to count down, or swap start and end");
  const bool all_int = start.is_integral() && end.is_integral() && step.is_integral();
  const DType dt = o.has_dtype() ? o.dtype() : (all_int ? kInt64 : get_default_dtype());
  const int64_t n = static_cast<int64_t>(std::ceil((e - s) / st));
  Tensor t = make_empty({n}, dt, o.device());
  fill_with(t, [&](int64_t i) { return s + st * static_cast<double>(i); });
  return finish(t, o);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o) {
  GRAFT_CHECK(steps >= 0, "linspace", "steps >= 0", std::to_string(steps), "pass steps >= 0");
  check_device(o, "linspace");
  const double s = start.to_double(), e = end.to_double();
  Tensor t = make_empty({steps}, o.dtype(), o.device());
  const double step = steps > 1 ? (e - s) / static_cast<double>(steps - 1) : 0.0;
  // Like PyTorch, the second half counts back from `end` so both ends are exact.
  const int64_t half = steps / 2;
  fill_with(t, [&](int64_t i) {
    if (steps == 1) return s;  // PyTorch: a single step is `start`
    return i < half ? s + step * static_cast<double>(i) : e - step * static_cast<double>(steps - 1 - i);
  });
  return finish(t, o);
}

Tensor eye(int64_t n, const TensorOptions& o) { return eye(n, n, o); }

Tensor eye(int64_t n, int64_t m, const TensorOptions& o) {
  GRAFT_CHECK(n >= 0 && m >= 0, "eye", "non-negative sizes", shape_str({n, m}), "pass n, m >= 0");
  check_device(o, "eye");
  Tensor t = zeros({n, m}, TensorOptions(o.dtype()).device(o.device()));
  if (!t.is_meta()) kernels::dispatch_all(t.dtype(), "eye", [&]<class T>() {
    T* p = t.data_ptr<T>();
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = T(1);
  });
  return finish(t, o);
}

namespace {
// rand, randn, randint and randperm: an empty tensor filled by PyTorch's distribution (Note
// [PyTorch's random streams] in random_fill.h). A meta tensor gets no values, and the generator
// does not advance.
template <class Fill>
Tensor random_factory(IntArrayRef size, DType dtype, const TensorOptions& o, const char* op, Fill&& fill) {
  check_sizes(size, op);
  memory::OpScope op_scope(op);  // names the allocation in the memory report
  check_device(o, op);
  Tensor t = make_empty(size, dtype, o.device());
  if (!t.is_meta()) fill(t);
  return finish(t, o);
}
void check_floating_dtype(DType dt, const char* op) {
  GRAFT_CHECK(is_floating_point(dt), op, "a floating-point dtype", std::string(dtype_name(dt)),
              "draw integers with randint, or convert: graft::rand(size).to(dtype)");
}
}  // namespace

Tensor rand(IntArrayRef size, const TensorOptions& o, Generator* gen) {
  check_floating_dtype(o.dtype(), "rand");
  return random_factory(size, o.dtype(), o, "rand", [&](const Tensor& t) {
    detail::uniform_fill(t, 0.0, 1.0, gen ? *gen : default_generator());
  });
}

Tensor randn(IntArrayRef size, const TensorOptions& o, Generator* gen) {
  check_floating_dtype(o.dtype(), "randn");
  return random_factory(size, o.dtype(), o, "randn", [&](const Tensor& t) {
    detail::normal_fill(t, 0.0, 1.0, /*contiguous=*/true, gen ? *gen : default_generator());
  });
}

Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& o, Generator* gen) {
  GRAFT_CHECK(high > low, "randint", "low < high", "low " + std::to_string(low) + ", high " + std::to_string(high),
              "the range is [low, high)");
  const DType dt = o.has_dtype() ? o.dtype() : kInt64;
  GRAFT_CHECK(dt != kBool, "randint", "a numeric dtype", "bool", "draw with bernoulli_ or randint(0, 2, size) > 0");
  // Unsigned arithmetic: high - low may exceed INT64_MAX; int64 values never pass through a double.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  return random_factory(size, dt, o, "randint", [&](const Tensor& t) {
    detail::random_from_to_fill(t, range, low, gen ? *gen : default_generator());
  });
}

Tensor randperm(int64_t n, const TensorOptions& o, Generator* gen) {
  GRAFT_CHECK(n >= 0, "randperm", "n >= 0", "n " + std::to_string(n), "n is the length of the permutation");
  const DType dt = o.has_dtype() ? o.dtype() : kInt64;
  GRAFT_CHECK(dt != kBool, "randperm", "a numeric dtype", "bool", "use the default int64");
  return random_factory({n}, dt, o, "randperm", [&](const Tensor& t) {
    detail::randperm_fill(t, gen ? *gen : default_generator());
  });
}

Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& o) { return randint(0, high, size, o); }

namespace {
TensorOptions like_options(const Tensor& t, const std::optional<TensorOptions>& o) {
  // The tensor's dtype and device unless the options name their own.
  TensorOptions r = o ? *o : TensorOptions();
  if (!r.has_dtype()) r = r.dtype(t.dtype());
  if (!r.has_device()) r = r.device(t.device());
  return r;
}
}  // namespace

Tensor empty_like(const Tensor& t, std::optional<TensorOptions> o) { return empty(t.sizes(), like_options(t, o)); }
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> o) { return zeros(t.sizes(), like_options(t, o)); }
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> o) { return ones(t.sizes(), like_options(t, o)); }
Tensor full_like(const Tensor& t, const Scalar& v, std::optional<TensorOptions> o) {
  return full(t.sizes(), v, like_options(t, o));
}
Tensor rand_like(const Tensor& t, std::optional<TensorOptions> o) { return rand(t.sizes(), like_options(t, o)); }
Tensor randn_like(const Tensor& t, std::optional<TensorOptions> o) { return randn(t.sizes(), like_options(t, o)); }

Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& o) {
  return from_blob(data, sizes, contiguous_strides(sizes), o);
}

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o) {
  check_sizes(sizes, "from_blob");
  GRAFT_CHECK(sizes.size() == strides.size(), "from_blob", "as many strides as sizes",
              shape_str(sizes) + " and strides " + shape_str(strides), "pass one stride per size");
  GRAFT_CHECK(data != nullptr || numel_of(sizes) == 0, "from_blob", "a non-null data pointer", "nullptr",
              "pass a pointer to the data");
  int64_t extent = 0;
  for (size_t i = 0; i < sizes.size(); ++i) extent += (sizes[i] - 1) * strides[i];
  const size_t nbytes = static_cast<size_t>(numel_of(sizes) ? extent + 1 : 0) * element_size(o.dtype());
  auto storage = std::make_shared<Storage>(data, nbytes, nullptr, nullptr);
  return finish(Tensor(std::make_shared<TensorImpl>(std::move(storage), 0, sizes, strides, o.dtype())), o);
}

Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, const TensorOptions& o) {
  check_sizes(sizes, "from_blob");
  auto* ctx = new std::function<void(void*)>(std::move(deleter));
  auto storage = std::make_shared<Storage>(
      data, static_cast<size_t>(numel_of(sizes)) * element_size(o.dtype()),
      [](void* d, void* c) {
        auto* fn = static_cast<std::function<void(void*)>*>(c);
        (*fn)(d);
        delete fn;
      },
      ctx);
  return finish(Tensor(std::make_shared<TensorImpl>(std::move(storage), 0, sizes, contiguous_strides(sizes), o.dtype())), o);
}

}  // namespace graft
