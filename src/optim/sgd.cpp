// SGD: see include/graft/optim/sgd.h and Note [Optimizer update loops].
#include "graft/optim/sgd.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "graft/runtime/parallel.h"
#include "../core/dispatch.h"
#include "../core/format.h"
#include "../kernels/vector_clones.h"
#include "update.h"

namespace graft::optim {

using graft::detail::shortest;

void SGDOptions::visit(OptionsVisitor& v) {
  v("lr", lr_);
  v("momentum", momentum_);
  v("dampening", dampening_);
  v("weight_decay", weight_decay_);
  v("nesterov", nesterov_);
  v("maximize", maximize_);
}

void SGDOptions::validate() const {
  GRAFT_CHECK(lr_ >= 0, "SGD", "a learning rate >= 0", "lr = " + shortest(lr_), "pass lr >= 0 in SGDOptions, e.g. 0.1");
  GRAFT_CHECK(momentum_ >= 0, "SGD", "momentum >= 0", "momentum = " + shortest(momentum_),
              "pass momentum >= 0 in SGDOptions, e.g. 0.9 (0 disables it)");
  GRAFT_CHECK(weight_decay_ >= 0, "SGD", "weight_decay >= 0", "weight_decay = " + shortest(weight_decay_),
              "pass weight_decay >= 0 in SGDOptions (0 disables it)");
  GRAFT_CHECK(!nesterov_ || (momentum_ > 0 && dampening_ == 0), "SGD",
              "momentum > 0 and dampening = 0 for Nesterov momentum",
              "momentum = " + shortest(momentum_) + ", dampening = " + shortest(dampening_),
              "Nesterov momentum requires a momentum and zero dampening");
}

SGD::SGD(std::vector<OptimizerParamGroup> param_groups, const SGDOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

namespace {

// One SGD update over n contiguous elements (Note [Optimizer update loops] for the rounding).
template <class T>
struct SgdUpdate {
  T* p;
  const T* g;
  T* buf;  // momentum buffer, or null
  int64_t n;
  bool maximize, nesterov, decay, first;
  T wd, mom, one_minus_damp, neg_lr;
  std::pair<double, double>* stats = nullptr;  // (||w_before||^2, ||update||^2), when recording
};

constexpr int64_t kStatsBlock = 512;

// One loop for every variant (Note [Optimizer update loops] for the rounding). Plain: the common
// case (momentum after the first step; no decay, Nesterov or maximize), written without the
// per-element flag tests so that it vectorises; it performs the operations of the general body in
// the same order, so the same bits. Stats: also adds ||w_before||^2 and ||w_after - w_before||^2
// (the difference rounded in T) into wsq and usq; `omp simd reduction` (compiled with
// -fopenmp-simd: no OpenMP runtime) lets the compiler vectorise the sums by reassociating them, the
// lanes summing in T over one block of kStatsBlock elements at most, then into double.
template <class T, bool Plain, bool Stats>
[[gnu::always_inline]] inline void sgd_loop(const SgdUpdate<T>& u, int64_t begin, int64_t end, double& wsq,
                                            double& usq) {
  T* __restrict p = u.p;
  T* __restrict buf = u.buf;
  const T* __restrict g = u.g;
  // (flags and scalars in locals: the stores through p and buf could otherwise alias them)
  const bool maximize = u.maximize, decay = u.decay, first = u.first, nesterov = u.nesterov;
  const T wd = u.wd, mom = u.mom, one_minus_damp = u.one_minus_damp, neg_lr = u.neg_lr;
  [[maybe_unused]] T w2 = 0, u2 = 0;
#pragma omp simd reduction(+ : w2, u2)
  for (int64_t i = begin; i < end; ++i) {
    const T before = p[i];
    T d;
    if constexpr (Plain) {
      d = std::fma(one_minus_damp, g[i], buf[i] * mom);
      buf[i] = d;
    } else {
      d = maximize ? -g[i] : g[i];
      if (decay) d = std::fma(wd, before, d);
      if (buf) {
        buf[i] = first ? d : std::fma(one_minus_damp, d, buf[i] * mom);
        d = nesterov ? std::fma(mom, buf[i], d) : buf[i];
      }
    }
    const T after = std::fma(neg_lr, d, before);
    p[i] = after;
    if constexpr (Stats) {
      const T step = after - before;
      w2 += before * before;
      u2 += step * step;
    }
  }
  if constexpr (Stats) {
    wsq += static_cast<double>(w2);
    usq += static_cast<double>(u2);
  }
}

template <class T, bool Stats>
[[gnu::always_inline]] inline void sgd_range(const SgdUpdate<T>& u, int64_t begin, int64_t end, double& wsq,
                                             double& usq) {
  const bool plain = u.buf && !u.first && !u.maximize && !u.decay && !u.nesterov;
  if (plain) sgd_loop<T, true, Stats>(u, begin, end, wsq, usq);
  else sgd_loop<T, false, Stats>(u, begin, end, wsq, usq);
}

// The whole update; with stats, block by block: the block's sums are taken from cache right after
// the block is updated.
template <class T>
[[gnu::always_inline]] inline void sgd_update_body(const SgdUpdate<T>& u) {
  double wsq = 0, usq = 0;
  if (!u.stats) return sgd_range<T, false>(u, 0, u.n, wsq, usq);
  for (int64_t b = 0; b < u.n; b += kStatsBlock) sgd_range<T, true>(u, b, std::min(u.n, b + kStatsBlock), wsq, usq);
  u.stats->first = wsq;
  u.stats->second = usq;
}

// The body compiled per processor (vector_clones.h): std::fma is one instruction from x86-64-v3
// on instead of a libm call per element; fma rounds once either way and nothing else is
// contracted, so every variant gives the same bits.
GRAFT_VEC_CLONES void sgd_update_serial(const SgdUpdate<float>& u) { sgd_update_body(u); }
GRAFT_VEC_CLONES void sgd_update_serial(const SgdUpdate<double>& u) { sgd_update_body(u); }

// Split over graft's threads by index (an element-wise update: the same bits at any thread
// count); with statistics, one thread, so that the sums keep their order.
template <class T>
void sgd_update(const SgdUpdate<T>& u) {
  if (u.stats) return sgd_update_serial(u);
  parallel_for(0, u.n, int64_t{1} << 16, [&](int64_t b, int64_t e) {
    SgdUpdate<T> part = u;
    part.p += b;
    part.g += b;
    if (part.buf) part.buf += b;
    part.n = e - b;
    sgd_update_serial(part);
  });
}

// The update with a compact momentum buffer (Note [Compact optimizer state]): block by block, the
// buffer is read into float32, updated with the parameter by the full-precision loop and written
// back compactly. Blocks are independent (the same bits at any thread count); with statistics, one
// thread, each block's sums added in order.
void sgd_update_compact(const SgdUpdate<float>& u, const detail::CompactState& buf) {
  constexpr int64_t kBlock = kernels::kQuantBlock;
  const int64_t blocks = (u.n + kBlock - 1) / kBlock;
  auto run = [&](int64_t b, int64_t e, std::pair<double, double>* sums) {
    float tb[kBlock];
    for (int64_t k = b; k < e; ++k) {
      const int64_t s = k * kBlock, len = std::min(kBlock, u.n - s);
      buf.load(k, s, len, tb);
      SgdUpdate<float> part = u;
      part.p += s;
      part.g += s;
      part.buf = tb;
      part.n = len;
      std::pair<double, double> block_sums{0.0, 0.0};
      part.stats = sums ? &block_sums : nullptr;
      sgd_update_serial(part);
      buf.store(k, s, len, tb);
      if (sums) sums->first += block_sums.first, sums->second += block_sums.second;
    }
  };
  if (u.stats) return run(0, blocks, u.stats);
  parallel_for(0, blocks, 32, [&](int64_t b, int64_t e) { run(b, e, nullptr); });
}

}  // namespace

void SGD::step_group(OptimizerParamGroup& group) {
  const auto& o = static_cast<const SGDOptions&>(group.options());
  detail::for_each_param_with_grad(group, "SGD.step", [&](const Tensor& param, Tensor& p, const Tensor& g) {
    auto& st = param_state<SGDParamState>(param);
    const bool use_momentum = o.momentum() != 0;
    const bool first = !st.momentum_buffer().defined();
    // The buffer in the group's precision (made on the first step, converted when it changed).
    const StatePrecision form = detail::effective_precision(o.state_precision(), p);
    if (use_momentum)
      detail::prepare_state(st.momentum_buffer(), st.momentum_buffer_absmax(), p, form, /*is_signed=*/true, "SGD.step");
    const bool compact = use_momentum && form != StatePrecision::Full;  // float32 parameters only
    if (!p.is_meta()) kernels::dispatch_floating(p.dtype(), "SGD.step", [&]<class T>() {
      SgdUpdate<T> u;
      u.p = p.data_ptr<T>();
      u.g = g.data_ptr<T>();
      u.buf = use_momentum && !compact ? st.momentum_buffer().template data_ptr<T>() : nullptr;
      u.n = p.numel();
      u.maximize = o.maximize();
      u.nesterov = o.nesterov();
      u.decay = o.weight_decay() != 0;
      u.first = first;
      u.wd = static_cast<T>(o.weight_decay());
      u.mom = static_cast<T>(o.momentum());
      u.one_minus_damp = static_cast<T>(1 - o.dampening());
      u.neg_lr = static_cast<T>(-o.lr());
      std::pair<double, double> sums{0.0, 0.0};
      if (record_update_stats_) u.stats = &sums;
      bool done = false;
      if constexpr (std::is_same_v<T, float>) {
        if (compact) {
          sgd_update_compact(u, detail::CompactState(st.momentum_buffer(), st.momentum_buffer_absmax(), true));
          done = true;
        }
      }
      if (!done) sgd_update(u);
      if (record_update_stats_) set_update_stats(param, sums.first, sums.second);
    });
  });
}

}  // namespace graft::optim
