// PyTorch's CPU distributions over graft's Generator: Note [PyTorch's random streams] in random_fill.h.
#include "random_fill.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <numbers>
#include <type_traits>
#include <utility>
#include <vector>

#include "dispatch.h"
#include "graft/core/half.h"

namespace graft::detail {

namespace {

template <class T> constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The dtype's mantissa digits (std::numeric_limits<T>::digits in PyTorch).
template <class T>
constexpr int digits() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  else if constexpr (std::is_same_v<T, BFloat16>) return 8;
  else return std::numeric_limits<T>::digits;
}

// The compute type of a draw: double for double, float otherwise (dist_acctype).
template <class T> using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
T from_acc(acc_t<T> v) {
  if constexpr (is_half_v<T>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}
template <class T>
acc_t<T> to_acc(T v) {
  if constexpr (is_half_v<T>) return v.to_float();
  else return static_cast<acc_t<T>>(v);
}

// A double (or integer) value as a T element: halves through float, as ATen's static_cast<T> does.
template <class T, class V>
T to_dtype(V v) {
  if constexpr (is_half_v<T>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

// uniform_real_distribution<T>(from, to) for one draw; from and to are already in T.
template <class T>
acc_t<T> uniform_draw(Generator& g, T from, T to) {
  using A = acc_t<T>;
  constexpr uint64_t mask = (uint64_t{1} << digits<T>()) - 1;
  constexpr A divisor = A(1) / static_cast<A>(uint64_t{1} << digits<T>());
  const uint64_t bits = std::is_same_v<T, double> ? g.random64() : g.random();
  const A x = static_cast<A>(bits & mask) * divisor;
  // (to - from) is rounded to T first, as c10::Half's and BFloat16's operators return their type.
  const A span = to_acc(from_acc<T>(to_acc(to) - to_acc(from)));
  return x * span + to_acc(from);
}

// 8 Box-Muller pairs over 16 uniforms, in T's own arithmetic (PyTorch's normal_fill_16).
template <class T>
void box_muller_16(T* d, T mean, T std) {
  for (int j = 0; j < 8; ++j) {
    const T u1 = 1 - d[j];  // [0, 1) -> (0, 1] for the log
    const T u2 = d[j + 8];
    const T radius = std::sqrt(-2 * std::log(u1));
    const T theta = static_cast<T>(2.0f * std::numbers::pi * u2);
    d[j] = radius * std::cos(theta) * std + mean;
    d[j + 8] = radius * std::sin(theta) * std + mean;
  }
}

// normal_fill's blocks over n values: uniforms drawn with T's digits (and rounded to T), transformed
// in C's arithmetic. C is T for float and double; for half dtypes it is float, so a half block
// rounds once where PyTorch's rounds every intermediate (the same uniforms, values within an ulp).
template <class T, class C>
void normal_fill_blocks(C* d, int64_t n, double mean, double std, Generator& g) {
  auto uniform = [&] { return static_cast<C>(to_acc(from_acc<T>(uniform_draw<T>(g, from_acc<T>(0), from_acc<T>(1))))); };
  const C m = static_cast<C>(mean), s = static_cast<C>(std);
  for (int64_t i = 0; i < n; ++i) d[i] = uniform();
  for (int64_t i = 0; i + 16 <= n; i += 16) box_muller_16(d + i, m, s);
  if (n % 16 != 0) {
    C* tail = d + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = uniform();
    box_muller_16(tail, m, s);
  }
}

}  // namespace

void uniform_fill(const Tensor& t, double from, double to, Generator& g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  kernels::dispatch_all_and_half(t.dtype(), "uniform_", [&]<class T>() {
    if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
      T* p = t.data_ptr<T>();
      const T lo = is_half_v<T> ? T(static_cast<float>(from)) : static_cast<T>(from);
      const T hi = is_half_v<T> ? T(static_cast<float>(to)) : static_cast<T>(to);
      for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = from_acc<T>(uniform_draw<T>(g, lo, hi));
    } else {
      GRAFT_ASSERT(false, "uniform_fill: a floating tensor");
    }
  });
}

void normal_fill(const Tensor& t, double mean, double std, bool contiguous, Generator& g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  const int64_t n = t.numel();
  kernels::dispatch_all_and_half(t.dtype(), "normal_", [&]<class T>() {
    if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
      T* p = t.data_ptr<T>();
      if (n >= 16 && contiguous) {
        if constexpr (std::is_floating_point_v<T>) {
          normal_fill_blocks<T, T>(p, n, mean, std, g);
        } else {
          std::vector<float> f(static_cast<size_t>(n));
          normal_fill_blocks<T, float>(f.data(), n, mean, std, g);
          for (int64_t i = 0; i < n; ++i) p[i] = T(f[static_cast<size_t>(i)]);
        }
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        p[i] = to_dtype<T>(g.next_normal() * std + mean);
      }
    } else {
      GRAFT_ASSERT(false, "normal_fill: a floating tensor");
    }
  });
}

void random_from_to_fill(const Tensor& t, uint64_t range, int64_t base, Generator& g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  kernels::dispatch_all_and_half(t.dtype(), "random_", [&]<class T>() {
    constexpr bool wide = std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, float> ||
                          std::is_same_v<T, BFloat16>;
    T* p = t.data_ptr<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) {
      const uint64_t bits = wide && range >= (uint64_t{1} << 32) ? g.random64() : g.random();
      p[i] = to_dtype<T>(static_cast<int64_t>(bits % range + static_cast<uint64_t>(base)));
    }
  });
}

void bernoulli_fill(const Tensor& t, double p, Generator& g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  kernels::dispatch_all_and_half(t.dtype(), "bernoulli_", [&]<class T>() {
    T* d = t.data_ptr<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) {
      d[i] = to_dtype<T>(g.next_double() < p);
    }
  });
}

void randperm_fill(const Tensor& t, Generator& g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  kernels::dispatch_all_and_half(t.dtype(), "randperm", [&]<class T>() {
    T* d = t.data_ptr<T>();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) d[i] = to_dtype<T>(i);
    for (int64_t i = 0; i + 1 < n; ++i) {
      const int64_t z = static_cast<int64_t>(g.random() % static_cast<uint64_t>(n - i));
      std::swap(d[i], d[z + i]);
    }
  });
}

void rrelu_noise_fill(const Tensor& noise, const Tensor& x, double lower, double upper, Generator& g) {
  std::lock_guard<std::mutex> lock(g.mutex());
  kernels::dispatch_floating(x.dtype(), "rrelu", [&]<class T>() {
    const double lo = static_cast<T>(lower), hi = static_cast<T>(upper);
    const T* xp = x.data_ptr<T>();
    T* np = noise.data_ptr<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      np[i] = xp[i] <= T(0) ? static_cast<T>(g.next_double() * (hi - lo) + lo) : T(1);
  });
}

}  // namespace graft::detail
