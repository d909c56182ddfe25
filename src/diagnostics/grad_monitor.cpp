// Gradient-health monitor: see include/graft/diagnostics/grad_monitor.h and Note [Gradient monitor].
#include "graft/diagnostics/grad_monitor.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/shape.h"

namespace graft::diagnostics {

namespace {

constexpr const char* kOp = "GradMonitor";
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kDeadMinNumel = 64;
constexpr double kRatioEps = 1e-12;

// ---- the per-parameter passes (Note [Gradient monitor]) ----
//
// Every reduction runs in kLanes independent lanes, combined at the end: a plain loop over a
// block of kLanes elements that the compiler turns into vector instructions (a single
// accumulator would be a serial chain: floating-point addition may not be reordered).
// max |g| and the zero / nan / inf counts work on the bits: with the sign bit cleared, the bit
// patterns of non-nan values order as the values do, +inf is the exponent mask, and anything
// above it is a nan. Integer max and compares vectorise without any floating-point caveat.
constexpr int64_t kLanes = 8;

template <class T> struct FloatBits;
template <> struct FloatBits<float> {
  using I = int32_t;
  static constexpr I kAbsMask = 0x7fffffff;
  static constexpr I kInf = 0x7f800000;
};
template <> struct FloatBits<double> {
  using I = int64_t;
  static constexpr I kAbsMask = 0x7fffffffffffffffLL;
  static constexpr I kInf = 0x7ff0000000000000LL;
};

struct GradPass {
  double grad_sq = 0, weight_sq = 0, grad_max = 0;
  int64_t zeros = 0, nans = 0, infs = 0;
};

template <class T>
struct GradPassArgs {
  const T* g;
  const T* w;
  T* snap;
  int64_t n;
};

// One read of g and w: sums of squares, max |g|, counts, and w copied into snap.
template <class T>
[[gnu::always_inline]] inline GradPass grad_pass_body(const GradPassArgs<T>& a) {
  using B = FloatBits<T>;
  using I = typename B::I;
  const T* __restrict g = a.g;
  const T* __restrict w = a.w;
  T* __restrict snap = a.snap;
  double gs[kLanes] = {}, ws[kLanes] = {};
  I amax[kLanes] = {}, zeros[kLanes] = {}, nans[kLanes] = {}, infs[kLanes] = {};
  const int64_t blocks = a.n / kLanes * kLanes;
  for (int64_t i = 0; i < blocks; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) {
      const T gv = g[i + j], wv = w[i + j];
      snap[i + j] = wv;
      const double gd = gv, wd = wv;
      gs[j] += gd * gd;
      ws[j] += wd * wd;
      const I bits = std::bit_cast<I>(gv) & B::kAbsMask;
      amax[j] = bits > amax[j] ? bits : amax[j];
      zeros[j] += bits == 0;
      nans[j] += bits > B::kInf;
      infs[j] += bits == B::kInf;
    }
  }
  GradPass r;
  I m = 0;
  for (int64_t j = 0; j < kLanes; ++j) {
    r.grad_sq += gs[j];
    r.weight_sq += ws[j];
    m = amax[j] > m ? amax[j] : m;
    r.zeros += zeros[j];
    r.nans += nans[j];
    r.infs += infs[j];
  }
  for (int64_t i = blocks; i < a.n; ++i) {
    const T gv = g[i], wv = w[i];
    snap[i] = wv;
    r.grad_sq += static_cast<double>(gv) * static_cast<double>(gv);
    r.weight_sq += static_cast<double>(wv) * static_cast<double>(wv);
    const I bits = std::bit_cast<I>(gv) & B::kAbsMask;
    m = bits > m ? bits : m;
    r.zeros += bits == 0;
    r.nans += bits > B::kInf;
    r.infs += bits == B::kInf;
  }
  r.grad_max = m > B::kInf ? kNaN : static_cast<double>(std::bit_cast<T>(m));
  return r;
}

// sum (w - snap)^2, in double.
template <class T>
struct UpdateArgs {
  const T* w;
  const T* snap;
  int64_t n;
};

template <class T>
[[gnu::always_inline]] inline double update_pass_body(const UpdateArgs<T>& a) {
  const T* __restrict w = a.w;
  const T* __restrict snap = a.snap;
  double acc[kLanes] = {};
  const int64_t blocks = a.n / kLanes * kLanes;
  for (int64_t i = 0; i < blocks; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) {
      const double d = static_cast<double>(w[i + j]) - static_cast<double>(snap[i + j]);
      acc[j] += d * d;
    }
  }
  double r = 0;
  for (int64_t j = 0; j < kLanes; ++j) r += acc[j];
  for (int64_t i = blocks; i < a.n; ++i) {
    const double d = static_cast<double>(w[i]) - static_cast<double>(snap[i]);
    r += d * d;
  }
  return r;
}

template <class T>
GradPass grad_pass_portable(const GradPassArgs<T>& a) {
  return grad_pass_body(a);
}
template <class T>
double update_pass_portable(const UpdateArgs<T>& a) {
  return update_pass_body(a);
}

#if defined(__x86_64__)
// The same loops compiled for AVX2 (twice the vector width of the x86-64 baseline), chosen at run
// time as in src/optim/sgd.cpp.
template <class T>
[[gnu::target("avx2,fma")]] GradPass grad_pass_avx2(const GradPassArgs<T>& a) {
  return grad_pass_body(a);
}
template <class T>
[[gnu::target("avx2,fma")]] double update_pass_avx2(const UpdateArgs<T>& a) {
  return update_pass_body(a);
}

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
#endif

template <class T>
GradPass grad_pass(const GradPassArgs<T>& a) {
#if defined(__x86_64__)
  if (has_avx2()) return grad_pass_avx2(a);
#endif
  return grad_pass_portable(a);
}

template <class T>
double update_pass(const UpdateArgs<T>& a) {
#if defined(__x86_64__)
  if (has_avx2()) return update_pass_avx2(a);
#endif
  return update_pass_portable(a);
}

// A parameter without a gradient: the weight's sum of squares and its snapshot only.
template <class T>
double weight_pass(const T* w, T* snap, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    snap[i] = w[i];
    acc += static_cast<double>(w[i]) * static_cast<double>(w[i]);
  }
  return acc;
}

// Numbers in messages: 3 significant digits.
std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

using Json = nlohmann::ordered_json;

Json num(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

std::string dump_line(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

struct GradMonitor::State {
  struct Watched {
    std::string name;
    Tensor param;
    std::vector<int64_t> shape;
    std::vector<float> snap_f;   // the weight before the step (float32 parameters)
    std::vector<double> snap_d;  // (float64 parameters)
    DType snap_dtype = kFloat32;
    double prev_norm = kNaN;     // grad norm at the previous sampled step
  };

  GradMonitorOptions opt;
  std::vector<Watched> params;
  int64_t last_layer = -1;  // index into params, or -1
  std::vector<StepRecord> records;
  std::vector<Flag> flags;
  std::ofstream out;
  bool pending = false;  // records.back() waits for after_step

  void write(const Json& j) {
    if (!out.is_open()) return;
    out << dump_line(j);
    out.flush();
  }

  void add_flag(int64_t step, const char* kind, const std::string& param, double value, const std::string& what) {
    flags.push_back(Flag{step, kind, param, value, "step " + std::to_string(step) + ", " + param + ": " + what});
    const Flag& f = flags.back();
    write(Json{{"type", "flag"}, {"step", f.step}, {"kind", f.kind}, {"param", f.param}, {"value", num(f.value)},
               {"message", f.message}});
  }

  // Flags and JSON lines for records.back() (Note [Gradient monitor]).
  void finish_step() {
    pending = false;
    const StepRecord& rec = records.back();
    Json ps = Json::object();
    for (const ParamStats& s : rec.params) {
      ps[s.name] = Json{{"grad_norm", num(s.grad_norm)},         {"grad_max", num(s.grad_max)},
                        {"weight_norm", num(s.weight_norm)},     {"update_ratio", num(s.update_ratio)},
                        {"zero_fraction", num(s.zero_fraction)}, {"nan", s.nan_count},
                        {"inf", s.inf_count}};
    }
    write(Json{{"type", "grad"}, {"step", rec.step}, {"params", std::move(ps)}});

    const ParamStats* last = nullptr;
    if (last_layer >= 0 && rec.params[static_cast<size_t>(last_layer)].has_grad)
      last = &rec.params[static_cast<size_t>(last_layer)];
    for (size_t i = 0; i < rec.params.size(); ++i) {
      const ParamStats& s = rec.params[i];
      Watched& p = params[i];
      if (!s.has_grad) continue;
      const double norm = s.grad_norm;
      if (s.nan_count + s.inf_count > 0) {
        add_flag(rec.step, "nonfinite", s.name, static_cast<double>(s.nan_count + s.inf_count),
                 "the gradient holds " + std::to_string(s.nan_count) + " nan and " + std::to_string(s.inf_count) +
                     " inf entries");
      } else {
        const bool vs_last = last != nullptr && static_cast<int64_t>(i) != last_layer && p.shape.size() >= 2 &&
                             std::isfinite(last->grad_norm) && norm < opt.vanishing_ratio * last->grad_norm;
        if (vs_last) {
          add_flag(rec.step, "vanishing", s.name, norm,
                   "gradient norm " + fmt(norm) + " is " + fmt(norm / last->grad_norm) + " times the last layer's (" +
                       last->name + ": " + fmt(last->grad_norm) + "), below vanishing_ratio " +
                       fmt(opt.vanishing_ratio));
        } else if (norm < opt.vanishing_floor) {
          add_flag(rec.step, "vanishing", s.name, norm,
                   "gradient norm " + fmt(norm) + " is below vanishing_floor " + fmt(opt.vanishing_floor));
        }
        if (norm > opt.exploding_ceiling) {
          add_flag(rec.step, "exploding", s.name, norm,
                   "gradient norm " + fmt(norm) + " is above exploding_ceiling " + fmt(opt.exploding_ceiling));
        } else if (std::isfinite(p.prev_norm) && p.prev_norm > 0 && norm > opt.growth_factor * p.prev_norm) {
          add_flag(rec.step, "exploding", s.name, norm,
                   "gradient norm grew " + fmt(norm / p.prev_norm) + " times since the previous sampled step (" +
                       fmt(p.prev_norm) + " to " + fmt(norm) + "), more than growth_factor " +
                       fmt(opt.growth_factor));
        }
      }
      int64_t numel = 1;
      for (int64_t d : p.shape) numel *= d;
      if (numel >= kDeadMinNumel && s.zero_fraction >= opt.dead_fraction) {
        add_flag(rec.step, "dead_units", s.name, s.zero_fraction,
                 fmt(100 * s.zero_fraction) + "% of the gradient entries are exactly zero (dead units), at or above "
                 "dead_fraction " + fmt(opt.dead_fraction));
      }
      p.prev_norm = norm;
    }
  }
};

GradMonitor::GradMonitor(const nn::Module& model, GradMonitorOptions options) : s_(std::make_unique<State>()) {
  GRAFT_CHECK(options.every >= 1, kOp, "every >= 1", "every = " + std::to_string(options.every),
              "every = 1 samples every step, every = 10 one step in ten");
  s_->opt = std::move(options);
  for (const auto& item : model.named_parameters()) {
    const Tensor& t = item.value();
    GRAFT_CHECK(t.dtype() == kFloat32 || t.dtype() == kFloat64, kOp, "float32 or float64 parameters",
                "parameter " + item.key() + " of dtype " + dtype_name(t.dtype()),
                "the monitor reads float32 and float64 tensors");
    State::Watched w;
    w.name = item.key();
    w.param = t;
    w.shape.assign(t.sizes().begin(), t.sizes().end());
    if (t.dim() >= 2) s_->last_layer = static_cast<int64_t>(s_->params.size());
    s_->params.push_back(std::move(w));
  }
  if (!s_->opt.jsonl_path.empty()) {
    s_->out.open(s_->opt.jsonl_path, std::ios::out | std::ios::trunc);
    GRAFT_CHECK(s_->out.is_open(), kOp, "a writable jsonl_path", "cannot open '" + s_->opt.jsonl_path + "'",
                "check that the directory exists and is writable");
    Json ps = Json::array();
    for (const State::Watched& w : s_->params) ps.push_back(Json{{"name", w.name}, {"shape", w.shape}});
    const GradMonitorOptions& o = s_->opt;
    s_->write(Json{{"type", "monitor"},
                   {"version", 1},
                   {"params", std::move(ps)},
                   {"options",
                    {{"every", o.every},
                     {"vanishing_ratio", num(o.vanishing_ratio)},
                     {"vanishing_floor", num(o.vanishing_floor)},
                     {"exploding_ceiling", num(o.exploding_ceiling)},
                     {"growth_factor", num(o.growth_factor)},
                     {"dead_fraction", num(o.dead_fraction)},
                     {"raise_on_nonfinite", o.raise_on_nonfinite}}}});
  }
}

GradMonitor::~GradMonitor() {
  if (s_ && s_->pending) {
    try {
      s_->finish_step();
    } catch (...) {  // a destructor does not throw; the record stays in memory as it was
    }
  }
}

GradMonitor::GradMonitor(GradMonitor&&) noexcept = default;
GradMonitor& GradMonitor::operator=(GradMonitor&&) noexcept = default;

void GradMonitor::after_backward(int64_t step) {
  State& s = *s_;
  if (step % s.opt.every != 0) return;
  if (s.pending) s.finish_step();  // the previous sampled step had no after_step
  NoGradGuard no_grad;
  StepRecord rec;
  rec.step = step;
  rec.params.reserve(s.params.size());
  for (State::Watched& p : s.params) {
    ParamStats st;
    st.name = p.name;
    const Tensor w = p.param.is_contiguous() ? p.param : p.param.contiguous();
    const int64_t n = w.numel();
    const DType dt = w.dtype();
    GRAFT_CHECK(dt == kFloat32 || dt == kFloat64, kOp, "float32 or float64 parameters",
                "parameter " + p.name + " of dtype " + dtype_name(dt), "the monitor reads float32 and float64 tensors");
    p.snap_dtype = dt;
    if (dt == kFloat32) p.snap_f.resize(static_cast<size_t>(n));
    else p.snap_d.resize(static_cast<size_t>(n));
    Tensor g = p.param.grad();
    if (g.defined()) {
      GRAFT_CHECK(g.numel() == n, kOp, "a gradient of the parameter's shape",
                  "parameter " + p.name + " of shape " + shape_str(p.param.sizes()) + " with a gradient of shape " +
                      shape_str(g.sizes()),
                  "");
      if (g.dtype() != dt) g = g.to(dt);
      if (!g.is_contiguous()) g = g.contiguous();
      GradPass r;
      if (dt == kFloat32) r = grad_pass<float>({g.data_ptr<float>(), w.data_ptr<float>(), p.snap_f.data(), n});
      else r = grad_pass<double>({g.data_ptr<double>(), w.data_ptr<double>(), p.snap_d.data(), n});
      st.has_grad = true;
      st.grad_norm = std::sqrt(r.grad_sq);
      st.grad_max = r.grad_max;
      st.weight_norm = std::sqrt(r.weight_sq);
      st.zero_fraction = n > 0 ? static_cast<double>(r.zeros) / static_cast<double>(n) : 0.0;
      st.nan_count = r.nans;
      st.inf_count = r.infs;
    } else {
      const double wsq = dt == kFloat32 ? weight_pass(w.data_ptr<float>(), p.snap_f.data(), n)
                                        : weight_pass(w.data_ptr<double>(), p.snap_d.data(), n);
      st.grad_norm = st.grad_max = st.zero_fraction = kNaN;
      st.weight_norm = std::sqrt(wsq);
    }
    st.update_ratio = kNaN;
    rec.params.push_back(std::move(st));
  }
  s.records.push_back(std::move(rec));
  s.pending = true;

  if (!s.opt.raise_on_nonfinite) return;
  for (const ParamStats& st : s.records.back().params) {
    if (st.nan_count + st.inf_count == 0) continue;
    s.finish_step();  // record and write the step (with its flags) before raising
    throw Error(kOp, "finite gradients (raise_on_nonfinite)",
                "step " + std::to_string(step) + ": the gradient of parameter " + st.name + " holds " +
                    std::to_string(st.nan_count) + " nan and " + std::to_string(st.inf_count) + " inf entries",
                "lower the learning rate, clip the gradients (graft::nn::utils::clip_grad_norm_), or check the loss "
                "for log(0) or a division by zero; graft::DetectAnomalyGuard finds the op that made the first nan");
  }
}

void GradMonitor::after_step() {
  State& s = *s_;
  if (!s.pending) return;
  NoGradGuard no_grad;
  StepRecord& rec = s.records.back();
  for (size_t i = 0; i < s.params.size(); ++i) {
    State::Watched& p = s.params[i];
    ParamStats& st = rec.params[i];
    const Tensor w = p.param.is_contiguous() ? p.param : p.param.contiguous();
    const int64_t n = w.numel();
    if (w.dtype() != p.snap_dtype) continue;  // converted between the calls: no ratio
    double usq = kNaN;
    if (p.snap_dtype == kFloat32 && static_cast<size_t>(n) == p.snap_f.size())
      usq = update_pass<float>({w.data_ptr<float>(), p.snap_f.data(), n});
    else if (p.snap_dtype == kFloat64 && static_cast<size_t>(n) == p.snap_d.size())
      usq = update_pass<double>({w.data_ptr<double>(), p.snap_d.data(), n});
    st.update_ratio = std::sqrt(usq) / (st.weight_norm + kRatioEps);
  }
  s.finish_step();
}

const std::vector<StepRecord>& GradMonitor::records() const { return s_->records; }
const std::vector<Flag>& GradMonitor::flags() const { return s_->flags; }
const GradMonitorOptions& GradMonitor::options() const { return s_->opt; }

}  // namespace graft::diagnostics
