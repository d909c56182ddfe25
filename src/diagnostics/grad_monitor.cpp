// Gradient-health monitor: see include/graft/diagnostics/grad_monitor.h and Note [Gradient monitor].
#include "graft/diagnostics/grad_monitor.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/shape.h"
#include "../core/format.h"
#include "../kernels/vector_clones.h"

namespace graft::diagnostics {

namespace {

constexpr const char* kGradMonitorOp = "GradMonitor";
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kDeadMinNumel = 64;
constexpr double kRatioEps = 1e-12;

// ---- the per-parameter passes ----
//
// Note [Gradient monitor passes]
// The passes are memory-bound only if their arithmetic is vectorised, and neither g++ nor clang
// vectorises a floating-point sum without permission to reorder it: the lane-array spelling
// (one scalar accumulator per lane) came out as scalar code with g++ 12, 480 us for a 512 x 784
// float32 gradient. So the loops are written with GCC/clang vector types (vector_size(32): 8
// floats or 4 doubles), which compile for any target (two 16-byte halves on the x86-64
// baseline), and the variant for the processor is chosen when the program loads
// (GRAFT_VEC_CLONES, src/kernels/vector_clones.h), as for the optimisers' update loops.
// - Sums of squares: two vector accumulators per tensor, in the parameter's dtype, over blocks of
//   kBlock elements, added into double at the end of each block. For float32 each lane adds at
//   most kBlock / 16 = 32 squares in float: a relative error of ~1e-7 typically, ~2e-6 at worst
//   (float32 entries beyond ~1e19 overflow the square, and the norm reads inf).
// - max |g| and the zero count work on the bits: with the sign bit cleared, the bit patterns of
//   non-nan values order as the values do (an integer max), +inf is the exponent mask and
//   anything above it is a nan. A vector compare yields -1 where it holds: the count subtracts
//   it. Only when the max reaches +inf does a second, scalar pass count the nans and infs.
// - Rolling snapshot. The update norm needs the weights from before the optimiser step. The
//   first sampled step copies them in after_backward (grad_pass<WithWeight = true>: g and w read,
//   the snapshot written). When the next step is sampled too, after_step (which reads w and the
//   snapshot for the update norm anyway) writes the new weights into the snapshot and keeps
//   their norm, so the next after_backward reads the gradient alone. It trusts the snapshot only
//   while the parameter's version counter (bumped by every optimiser step and in-place write),
//   storage and size are those it recorded; otherwise it copies again. Per step at every = 1:
//   gradient read once, weight read once, snapshot read and written once.
constexpr int64_t kBlock = 512;

template <class T> struct Vec;
template <> struct Vec<float> {
  typedef float V __attribute__((vector_size(32)));
  typedef int32_t I __attribute__((vector_size(32)));
  using Int = int32_t;
  static constexpr int64_t kWidth = 8;
  static constexpr Int kAbsMask = 0x7fffffff;
  static constexpr Int kInf = 0x7f800000;
};
template <> struct Vec<double> {
  typedef double V __attribute__((vector_size(32)));
  typedef int64_t I __attribute__((vector_size(32)));
  using Int = int64_t;
  static constexpr int64_t kWidth = 4;
  static constexpr Int kAbsMask = 0x7fffffffffffffffLL;
  static constexpr Int kInf = 0x7ff0000000000000LL;
};

struct GradPass {
  double grad_sq = 0, weight_sq = 0, grad_max = 0;
  int64_t zeros = 0, nans = 0, infs = 0;
};

template <class T>
struct GradPassArgs {
  const T* g;
  const T* w;  // WithWeight only
  T* snap;     // WithWeight only
  int64_t n;
};

// One read of g (and of w, copied into snap, when WithWeight): sums of squares, max |g| and the
// zero count; the nan/inf counts in a second pass when max |g| is not finite.
template <bool WithWeight, class T>
[[gnu::always_inline]] inline GradPass grad_pass_body(const GradPassArgs<T>& a) {
  using V = typename Vec<T>::V;
  using I = typename Vec<T>::I;
  using Int = typename Vec<T>::Int;
  constexpr int64_t W = Vec<T>::kWidth;
  constexpr Int kMask = Vec<T>::kAbsMask, kInfBits = Vec<T>::kInf;
  const T* __restrict g = a.g;
  const T* __restrict w = a.w;
  T* __restrict snap = a.snap;
  const int64_t n = a.n;
  const int64_t nvec = n / (2 * W) * (2 * W);

  GradPass r;
  I max0 = {}, max1 = {}, zeros = {};
  int64_t i = 0;
  while (i < nvec) {
    const int64_t end = nvec - i < kBlock ? nvec : i + kBlock;
    V ga = {}, gb = {}, wa = {}, wb = {};
    for (; i < end; i += 2 * W) {
      V g0, g1;
      std::memcpy(&g0, g + i, sizeof(V));
      std::memcpy(&g1, g + i + W, sizeof(V));
      ga += g0 * g0;
      gb += g1 * g1;
      const I b0 = (I)g0 & kMask, b1 = (I)g1 & kMask;
      max0 = b0 > max0 ? b0 : max0;
      max1 = b1 > max1 ? b1 : max1;
      zeros -= (b0 == 0) + (b1 == 0);
      if constexpr (WithWeight) {
        V w0, w1;
        std::memcpy(&w0, w + i, sizeof(V));
        std::memcpy(&w1, w + i + W, sizeof(V));
        std::memcpy(snap + i, &w0, sizeof(V));
        std::memcpy(snap + i + W, &w1, sizeof(V));
        wa += w0 * w0;
        wb += w1 * w1;
      }
    }
    for (int64_t j = 0; j < W; ++j) {
      r.grad_sq += static_cast<double>(ga[j]) + static_cast<double>(gb[j]);
      if constexpr (WithWeight) r.weight_sq += static_cast<double>(wa[j]) + static_cast<double>(wb[j]);
    }
  }
  Int m = 0;
  for (int64_t j = 0; j < W; ++j) {
    m = max0[j] > m ? max0[j] : m;
    m = max1[j] > m ? max1[j] : m;
    r.zeros += zeros[j];
  }
  for (; i < n; ++i) {
    const T gv = g[i];
    r.grad_sq += static_cast<double>(gv) * static_cast<double>(gv);
    const Int bits = std::bit_cast<Int>(gv) & kMask;
    m = bits > m ? bits : m;
    r.zeros += bits == 0;
    if constexpr (WithWeight) {
      const T wv = w[i];
      snap[i] = wv;
      r.weight_sq += static_cast<double>(wv) * static_cast<double>(wv);
    }
  }
  if (m >= kInfBits) {  // rare: count the nans and infs
    for (int64_t k = 0; k < n; ++k) {
      const Int bits = std::bit_cast<Int>(g[k]) & kMask;
      r.nans += bits > kInfBits;
      r.infs += bits == kInfBits;
    }
  }
  r.grad_max = m > kInfBits ? kNaN : static_cast<double>(std::bit_cast<T>(m));
  return r;
}

// After the step: sum (w - snap)^2 and sum w^2; with Write, snap = w (the next step's snapshot).
struct UpdatePass {
  double update_sq = 0, weight_sq = 0;
};

template <class T>
struct UpdateArgs {
  const T* w;
  T* snap;
  int64_t n;
};

template <bool Write, class T>
[[gnu::always_inline]] inline UpdatePass update_pass_body(const UpdateArgs<T>& a) {
  using V = typename Vec<T>::V;
  constexpr int64_t W = Vec<T>::kWidth;
  const T* __restrict w = a.w;
  T* __restrict snap = a.snap;
  const int64_t n = a.n;
  const int64_t nvec = n / (2 * W) * (2 * W);
  UpdatePass r;
  int64_t i = 0;
  while (i < nvec) {
    const int64_t end = nvec - i < kBlock ? nvec : i + kBlock;
    V ua = {}, ub = {}, wa = {}, wb = {};
    for (; i < end; i += 2 * W) {
      V w0, w1, s0, s1;
      std::memcpy(&w0, w + i, sizeof(V));
      std::memcpy(&w1, w + i + W, sizeof(V));
      std::memcpy(&s0, snap + i, sizeof(V));
      std::memcpy(&s1, snap + i + W, sizeof(V));
      if constexpr (Write) {
        std::memcpy(snap + i, &w0, sizeof(V));
        std::memcpy(snap + i + W, &w1, sizeof(V));
      }
      // An optimiser step moves a weight by far less than its size: w - s is exact then.
      const V d0 = w0 - s0, d1 = w1 - s1;
      ua += d0 * d0;
      ub += d1 * d1;
      wa += w0 * w0;
      wb += w1 * w1;
    }
    for (int64_t j = 0; j < W; ++j) {
      r.update_sq += static_cast<double>(ua[j]) + static_cast<double>(ub[j]);
      r.weight_sq += static_cast<double>(wa[j]) + static_cast<double>(wb[j]);
    }
  }
  for (; i < n; ++i) {
    const double wv = static_cast<double>(w[i]), d = wv - static_cast<double>(snap[i]);
    if constexpr (Write) snap[i] = w[i];
    r.update_sq += d * d;
    r.weight_sq += wv * wv;
  }
  return r;
}

// The passes compiled per processor (vector_clones.h). target_clones takes no templates: one
// overload per dtype, the flag choosing between the two always-inlined bodies inside each clone.
// The vectors are 32 bytes in every clone and nothing is contracted or reordered, so the
// baseline, AVX2 and AVX-512 variants give the same bits.
GRAFT_VEC_CLONES GradPass grad_pass_clone(const GradPassArgs<float>& a, bool with_weight) {
  return with_weight ? grad_pass_body<true>(a) : grad_pass_body<false>(a);
}
GRAFT_VEC_CLONES GradPass grad_pass_clone(const GradPassArgs<double>& a, bool with_weight) {
  return with_weight ? grad_pass_body<true>(a) : grad_pass_body<false>(a);
}
GRAFT_VEC_CLONES UpdatePass update_pass_clone(const UpdateArgs<float>& a, bool write) {
  return write ? update_pass_body<true>(a) : update_pass_body<false>(a);
}
GRAFT_VEC_CLONES UpdatePass update_pass_clone(const UpdateArgs<double>& a, bool write) {
  return write ? update_pass_body<true>(a) : update_pass_body<false>(a);
}

template <bool WithWeight, class T>
GradPass grad_pass(const GradPassArgs<T>& a) {
  return grad_pass_clone(a, WithWeight);
}

template <class T>
UpdatePass update_pass(const UpdateArgs<T>& a, bool write) {
  return update_pass_clone(a, write);
}

// A parameter without a gradient: the weight's sum of squares and its snapshot.
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
std::string fmt(double v) { return graft::detail::significant(v, 3); }

using Json = nlohmann::ordered_json;

Json num(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// The per-step lines are formatted by hand into a reused string: building them as nlohmann
// values cost ~40 us a step for the six parameters of the benchmark's MLP (a sixth of the
// monitor's budget there); this costs a few. The numbers are the shortest decimals that read
// back as the same double; non-finite ones are null.
void json_number(std::string& o, double v) {
  if (!std::isfinite(v)) {
    o += "null";
    return;
  }
  graft::detail::append_shortest(o, v);
}

void json_int(std::string& o, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  o.append(buf, r.ptr);
}

void json_string(std::string& o, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  o += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (u < 0x20) {
      o += "\\u00";
      o += kHex[u >> 4];
      o += kHex[u & 15];
    } else {
      o += c;
    }
  }
  o += '"';
}

}  // namespace

void append_grad_record(std::string& line, const StepRecord& rec) {
  line += R"({"type":"grad","step":)";
  json_int(line, rec.step);
  line += R"(,"params":{)";
  for (size_t i = 0; i < rec.params.size(); ++i) {
    const ParamStats& s = rec.params[i];
    if (i > 0) line += ',';
    json_string(line, s.name);
    line += R"(:{"grad_norm":)";
    json_number(line, s.grad_norm);
    line += R"(,"grad_max":)";
    json_number(line, s.grad_max);
    line += R"(,"weight_norm":)";
    json_number(line, s.weight_norm);
    line += R"(,"update_ratio":)";
    json_number(line, s.update_ratio);
    line += R"(,"zero_fraction":)";
    json_number(line, s.zero_fraction);
    line += R"(,"nan":)";
    json_int(line, s.nan_count);
    line += R"(,"inf":)";
    json_int(line, s.inf_count);
    line += '}';
  }
  line += "}}";
}

void append_flag_record(std::string& line, const Flag& f) {
  line += R"({"type":"flag","step":)";
  json_int(line, f.step);
  line += R"(,"kind":)";
  json_string(line, f.kind);
  line += R"(,"param":)";
  json_string(line, f.param);
  line += R"(,"value":)";
  json_number(line, f.value);
  line += R"(,"message":)";
  json_string(line, f.message);
  line += '}';
}

struct GradMonitor::State {
  struct Watched {
    std::string name;
    Tensor param;
    std::vector<int64_t> shape;
    std::vector<float> snap_f;   // the weight before the step (float32 parameters)
    std::vector<double> snap_d;  // (float64 parameters)
    DType snap_dtype = kFloat32;
    double prev_norm = kNaN;     // grad norm at the previous sampled step
    // A snapshot written by after_step for step rolled_step (Note [Gradient monitor passes]):
    // valid while the parameter still has this version, storage and size.
    int64_t rolled_step = -1;
    uint32_t rolled_version = 0;
    const void* rolled_data = nullptr;
    double rolled_weight_sq = 0;

    bool rolled_for(int64_t step, const Tensor& w) const {
      return rolled_step == step && w.data_ptr() == rolled_data && param._version() == rolled_version &&
             w.dtype() == snap_dtype &&
             static_cast<size_t>(w.numel()) == (snap_dtype == kFloat32 ? snap_f.size() : snap_d.size());
    }
  };

  GradMonitorOptions opt;
  std::vector<Watched> params;
  int64_t last_layer = -1;  // index into params, or -1
  std::vector<StepRecord> records;
  std::vector<Flag> flags;
  std::ofstream out;
  bool pending = false;  // records.back() waits for after_step
  // Note [Update statistics]: with an optimiser that records them, the ratios come from its loop.
  bool fused = false;
  int64_t fused_steps = 0;  // the optimiser's steps_taken() at the sampled step's after_backward

  std::string line;  // the step's JSON lines, reused

  void add_flag(int64_t step, const char* kind, const std::string& param, double value, const std::string& what) {
    flags.push_back(Flag{step, kind, param, value, "step " + std::to_string(step) + ", " + param + ": " + what});
    if (!out.is_open()) return;
    append_flag_record(line, flags.back());
    line += '\n';
  }

  // Flags and JSON lines for records.back() (Note [Gradient monitor]); one write per step.
  void finish_step() {
    pending = false;
    const StepRecord& rec = records.back();
    line.clear();
    if (out.is_open()) {
      append_grad_record(line, rec);
      line += '\n';
    }
    evaluate_flags(rec);
    if (out.is_open()) {
      out.write(line.data(), static_cast<std::streamsize>(line.size()));
      out.flush();
    }
  }

  void evaluate_flags(const StepRecord& rec) {
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
  GRAFT_CHECK(options.every >= 1, kGradMonitorOp, "every >= 1", "every = " + std::to_string(options.every),
              "every = 1 samples every step, every = 10 one step in ten");
  s_->opt = std::move(options);
  for (const auto& item : model.named_parameters()) {
    const Tensor& t = item.value();
    GRAFT_CHECK(t.dtype() == kFloat32 || t.dtype() == kFloat64, kGradMonitorOp, "float32 or float64 parameters",
                "parameter " + item.key() + " of dtype " + dtype_name(t.dtype()),
                "the monitor reads float32 and float64 tensors");
    State::Watched w;
    w.name = item.key();
    w.param = t;
    w.shape.assign(t.sizes().begin(), t.sizes().end());
    if (t.dim() >= 2) s_->last_layer = static_cast<int64_t>(s_->params.size());
    s_->params.push_back(std::move(w));
  }
  if (s_->opt.optimizer && s_->opt.optimizer->supports_update_stats()) {
    s_->opt.optimizer->record_update_stats(true);
    s_->fused = true;
  }
  if (!s_->opt.jsonl_path.empty()) {
    s_->out.open(s_->opt.jsonl_path, std::ios::out | std::ios::trunc);
    GRAFT_CHECK(s_->out.is_open(), kGradMonitorOp, "a writable jsonl_path", "cannot open '" + s_->opt.jsonl_path + "'",
                "check that the directory exists and is writable");
    Json ps = Json::array();
    for (const State::Watched& w : s_->params) ps.push_back(Json{{"name", w.name}, {"shape", w.shape}});
    const GradMonitorOptions& o = s_->opt;
    const Json head{{"type", "monitor"},
                   {"version", 1},
                   {"params", std::move(ps)},
                   {"options",
                    {{"every", o.every},
                     {"vanishing_ratio", num(o.vanishing_ratio)},
                     {"vanishing_floor", num(o.vanishing_floor)},
                     {"exploding_ceiling", num(o.exploding_ceiling)},
                     {"growth_factor", num(o.growth_factor)},
                     {"dead_fraction", num(o.dead_fraction)},
                     {"raise_on_nonfinite", o.raise_on_nonfinite}}}};
    s_->out << head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    s_->out.flush();
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
    const DType dt = p.param.dtype();
    GRAFT_CHECK(dt == kFloat32 || dt == kFloat64, kGradMonitorOp, "float32 or float64 parameters",
                "parameter " + p.name + " of dtype " + dtype_name(dt), "the monitor reads float32 and float64 tensors");
    // Fused (Note [Update statistics]): a parameter with a gradient needs no weight pass here.
    const bool fused = s.fused && p.param.grad().defined();
    const bool rolled = fused || (p.param.is_contiguous() && p.rolled_for(step, p.param));
    p.rolled_step = -1;
    const Tensor w = p.param.is_contiguous() ? p.param : p.param.contiguous();
    const int64_t n = w.numel();
    if (!rolled) {
      p.snap_dtype = dt;
      if (dt == kFloat32) p.snap_f.resize(static_cast<size_t>(n));
      else p.snap_d.resize(static_cast<size_t>(n));
    }
    Tensor g = p.param.grad();
    if (g.defined()) {
      GRAFT_CHECK(g.numel() == n, kGradMonitorOp, "a gradient of the parameter's shape",
                  "parameter " + p.name + " of shape " + shape_str(p.param.sizes()) + " with a gradient of shape " +
                      shape_str(g.sizes()),
                  "");
      if (g.dtype() != dt) g = g.to(dt);
      if (!g.is_contiguous()) g = g.contiguous();
      GradPass r;
      if (dt == kFloat32) {
        const GradPassArgs<float> args{g.data_ptr<float>(), w.data_ptr<float>(), p.snap_f.data(), n};
        r = rolled ? grad_pass<false>(args) : grad_pass<true>(args);
      } else {
        const GradPassArgs<double> args{g.data_ptr<double>(), w.data_ptr<double>(), p.snap_d.data(), n};
        r = rolled ? grad_pass<false>(args) : grad_pass<true>(args);
      }
      st.has_grad = true;
      st.grad_norm = std::sqrt(r.grad_sq);
      st.grad_max = r.grad_max;
      st.weight_norm = fused ? kNaN : std::sqrt(rolled ? p.rolled_weight_sq : r.weight_sq);  // fused: after_step
      st.zero_fraction = n > 0 ? static_cast<double>(r.zeros) / static_cast<double>(n) : 0.0;
      st.nan_count = r.nans;
      st.inf_count = r.infs;
    } else {
      double wsq = p.rolled_weight_sq;
      if (!rolled) {
        wsq = dt == kFloat32 ? weight_pass(w.data_ptr<float>(), p.snap_f.data(), n)
                             : weight_pass(w.data_ptr<double>(), p.snap_d.data(), n);
      }
      st.grad_norm = st.grad_max = st.zero_fraction = kNaN;
      st.weight_norm = std::sqrt(wsq);
    }
    st.update_ratio = kNaN;
    rec.params.push_back(std::move(st));
  }
  s.records.push_back(std::move(rec));
  s.pending = true;
  if (s.fused) s.fused_steps = s.opt.optimizer->steps_taken();

  if (!s.opt.raise_on_nonfinite) return;
  for (const ParamStats& st : s.records.back().params) {
    if (st.nan_count + st.inf_count == 0) continue;
    s.finish_step();  // record and write the step (with its flags) before raising
    throw Error(kGradMonitorOp, "finite gradients (raise_on_nonfinite)",
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
  // When the next step is sampled too, the weights read here become its snapshot.
  const int64_t next = rec.step + 1;
  const bool roll = !s.fused && next % s.opt.every == 0;
  // Last parameter first: the optimiser wrote those last, they are likelier still in cache.
  for (size_t i = s.params.size(); i-- > 0;) {
    State::Watched& p = s.params[i];
    ParamStats& st = rec.params[i];
    if (s.fused && st.has_grad) {
      // From the optimiser's update loop, when it stepped this parameter exactly once since.
      const optim::Optimizer::UpdateStats* u = s.opt.optimizer->update_stats(p.param);
      if (u && u->step == s.fused_steps + 1 && s.opt.optimizer->steps_taken() == s.fused_steps + 1) {
        st.weight_norm = std::sqrt(u->weight_sq);
        st.update_ratio = std::sqrt(u->update_sq) / (st.weight_norm + kRatioEps);
      }
      continue;
    }
    if (p.param.dtype() != p.snap_dtype) continue;  // converted between the calls: no ratio
    const bool contiguous = p.param.is_contiguous();
    const Tensor w = contiguous ? p.param : p.param.contiguous();
    const int64_t n = w.numel();
    const bool write = roll && contiguous;
    UpdatePass r;
    if (p.snap_dtype == kFloat32 && static_cast<size_t>(n) == p.snap_f.size())
      r = update_pass<float>({w.data_ptr<float>(), p.snap_f.data(), n}, write);
    else if (p.snap_dtype == kFloat64 && static_cast<size_t>(n) == p.snap_d.size())
      r = update_pass<double>({w.data_ptr<double>(), p.snap_d.data(), n}, write);
    else
      continue;
    st.update_ratio = std::sqrt(r.update_sq) / (st.weight_norm + kRatioEps);
    if (write) {
      p.rolled_step = next;
      p.rolled_version = p.param._version();
      p.rolled_data = p.param.data_ptr();
      p.rolled_weight_sq = r.weight_sq;
    }
  }
  s.finish_step();
}

const std::vector<StepRecord>& GradMonitor::records() const { return s_->records; }
const std::vector<Flag>& GradMonitor::flags() const { return s_->flags; }
const GradMonitorOptions& GradMonitor::options() const { return s_->opt; }

}  // namespace graft::diagnostics
