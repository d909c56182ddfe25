// L-BFGS: see include/graft/optim/lbfgs.h. The algorithm follows PyTorch 1.13's torch/optim/lbfgs.py
// step by step (the same branches, in the same order, on the same values), so that float64 runs
// match PyTorch's to rounding. Vectors are the parameters flattened into one (cat of views);
// scalars (dot products, step lengths, losses) are read out as doubles.
#include "graft/optim/lbfgs.h"

#include <cmath>
#include <utility>

#include "../core/format.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/memory.h"
#include "graft/ops/ops.h"

namespace graft::optim {

using graft::detail::shortest;

namespace {

constexpr const char* kStep = "LBFGS.step";
constexpr const char* kLoad = "LBFGS.load_state_dict";

// A count option read back as a double (state dicts hold numbers as float64).
int64_t count_of(double v, const char* name) {
  GRAFT_CHECK(v >= 0 && v == std::floor(v) && v < 9.0e15, kLoad, std::string(name) + " to be an integer >= 0",
              shortest(v), "load a state dict saved by LBFGS");
  return static_cast<int64_t>(v);
}

// Python's max(a, b) and min(a, b): the first argument unless the second is strictly larger
// (smaller), which is what PyTorch's line search computes, NaN included.
double py_max(double a, double b) { return b > a ? b : a; }
double py_min(double a, double b) { return b < a ? b : a; }

double to_double(const Tensor& t) { return t.detach().to(kFloat64).item<double>(); }
double dot(const Tensor& a, const Tensor& b) { return to_double(matmul(a, b)); }
double abs_max(const Tensor& t) { return to_double(t.abs().max()); }

// The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to the
// bounds (by default [min(x1, x2), max(x1, x2)]); the middle of the bounds when the cubic has no
// minimum.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  double xmin_bound = 0, xmax_bound = 0;
  if (bounds) std::tie(xmin_bound, xmax_bound) = *bounds;
  else if (x1 <= x2) xmin_bound = x1, xmax_bound = x2;
  else xmin_bound = x2, xmax_bound = x1;
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                    : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return py_min(py_max(min_pos, xmin_bound), xmax_bound);
  }
  return (xmin_bound + xmax_bound) / 2.;
}

struct Evaluation {
  double loss;
  Tensor flat_grad;
};

struct LineSearchResult {
  double loss;
  Tensor flat_grad;
  double t;
  int64_t func_evals;
};

// The strong Wolfe line search along d from f (gradient g, directional derivative gtd), starting at
// step t: a bracketing phase that grows t by cubic extrapolation until an interval holds a point
// satisfying the conditions, then a zoom phase that shrinks it by cubic interpolation. obj(t)
// evaluates the loss and flat gradient at x + t d. PyTorch calls it with its default
// tolerance_change 1e-9, not the group's.
template <class Obj>
LineSearchResult strong_wolfe(Obj&& obj, double t, const Tensor& d, double f, const Tensor& g, double gtd) {
  constexpr double c1 = 1e-4, c2 = 0.9, tolerance_change = 1e-9;
  constexpr int64_t max_ls = 25;
  const double d_norm = abs_max(d);
  double f_new = 0, gtd_new = 0;
  Tensor g_new;
  int64_t ls_func_evals = 0;
  // The objective and its directional derivative at step t (one closure call).
  auto evaluate_at = [&](double step) {
    const Evaluation e = obj(step);
    f_new = e.loss;
    g_new = e.flat_grad;
    ++ls_func_evals;
    gtd_new = dot(g_new, d);
  };
  evaluate_at(t);

  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g;
  bool done = false;
  int64_t ls_iter = 0;
  // The bracket [0] and [1]; a single point (done) is stored twice.
  double bracket[2] = {0, 0}, bracket_f[2] = {0, 0}, bracket_gtd[2] = {0, 0};
  Tensor bracket_g[2];
  auto set_bracket = [&](double t0, double f0, const Tensor& g0, double gtd0, double t1, double f1, const Tensor& g1,
                         double gtd1) {
    bracket[0] = t0, bracket[1] = t1;
    bracket_f[0] = f0, bracket_f[1] = f1;
    bracket_g[0] = g0, bracket_g[1] = g1;
    bracket_gtd[0] = gtd0, bracket_gtd[1] = gtd1;
  };
  while (ls_iter < max_ls) {
    if (f_new > (f + c1 * t * gtd) || (ls_iter > 1 && f_new >= f_prev)) {
      set_bracket(t_prev, f_prev, g_prev, gtd_prev, t, f_new, g_new, gtd_new);
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      set_bracket(t, f_new, g_new, gtd_new, t, f_new, g_new, gtd_new);
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      set_bracket(t_prev, f_prev, g_prev, gtd_prev, t, f_new, g_new, gtd_new);
      break;
    }
    // Extrapolate, at least 1% of the last step further and at most 10 times as far.
    const double min_step = t + 0.01 * (t - t_prev);
    const double max_step = t * 10;
    const double tmp = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, std::make_pair(min_step, max_step));
    t_prev = tmp;
    f_prev = f_new;
    g_prev = g_new;
    gtd_prev = gtd_new;
    evaluate_at(t);
    ++ls_iter;
  }
  if (ls_iter == max_ls) set_bracket(0, f, g, gtd, t, f_new, g_new, gtd_new);

  // Zoom: shrink the bracket until a point satisfies the conditions.
  bool insuf_progress = false;
  int low_pos = bracket_f[0] <= bracket_f[1] ? 0 : 1;
  int high_pos = 1 - low_pos;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]);
    // A trial point within 10% of the bracket's length from an end makes insufficient progress;
    // after two in a row (or one at or beyond an end) it is moved to 10% from that end.
    const double hi = py_max(bracket[0], bracket[1]), lo = py_min(bracket[0], bracket[1]);
    const double eps = 0.1 * (hi - lo);
    if (py_min(hi - t, t - lo) < eps) {
      if (insuf_progress || t >= hi || t <= lo) {
        t = std::abs(t - hi) < std::abs(t - lo) ? hi - eps : lo + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    evaluate_at(t);
    ++ls_iter;
    if (f_new > (f + c1 * t * gtd) || f_new >= bracket_f[low_pos]) {
      // Not a sufficient decrease, or not below the low end: the new high end.
      bracket[high_pos] = t, bracket_f[high_pos] = f_new, bracket_g[high_pos] = g_new;
      bracket_gtd[high_pos] = gtd_new;
      low_pos = bracket_f[0] <= bracket_f[1] ? 0 : 1;
      high_pos = 1 - low_pos;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0) {
        // The old low end becomes the high end.
        bracket[high_pos] = bracket[low_pos], bracket_f[high_pos] = bracket_f[low_pos];
        bracket_g[high_pos] = bracket_g[low_pos], bracket_gtd[high_pos] = bracket_gtd[low_pos];
      }
      bracket[low_pos] = t, bracket_f[low_pos] = f_new, bracket_g[low_pos] = g_new;
      bracket_gtd[low_pos] = gtd_new;
    }
  }
  return {bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals};
}

// [k, n] from k tensors of shape [n] (or [k] from k 0-dim ones); undefined when k is 0.
Tensor stack_or_undefined(const std::deque<Tensor>& parts) {
  if (parts.empty()) return Tensor();
  return stack(TensorList(parts.begin(), parts.end()), 0);
}

// The rows of a loaded [k, ...] tensor.
std::deque<Tensor> rows_of(const Tensor& t, int64_t dim, const char* name) {
  GRAFT_CHECK(t.dim() == dim, kLoad, std::string("state ") + name + " with " + std::to_string(dim) + " dimension(s)",
              "shape " + shape_str(t.sizes()), "load a state dict saved by LBFGS");
  TensorList rows = t.unbind(0);
  return std::deque<Tensor>(rows.begin(), rows.end());
}

// Reads a loaded 0-dim number into `out` (a no-op when the saver left the value as it was).
void scalar_from(const Tensor& t, double& out, const char* name) {
  if (!t.defined()) return;
  GRAFT_CHECK(t.numel() == 1 && t.dim() <= 1, kLoad, std::string("state ") + name + " to be a single number",
              "shape " + shape_str(t.sizes()), "load a state dict saved by LBFGS");
  out = to_double(t);
}

}  // namespace

// ---- options and state ----

void LBFGSOptions::visit(OptionsVisitor& v) {
  // The counts and line_search_fn travel as numbers (a state dict holds tensors); each is written
  // back only when a loader changed it, so saving and comparing leave the options as they are.
  auto count = [&](const char* name, int64_t current, auto&& set) {
    double d = static_cast<double>(current);
    v(name, d);
    if (d != static_cast<double>(current)) set(count_of(d, name));
  };
  v("lr", lr_);
  count("max_iter", max_iter_, [&](int64_t n) { max_iter_ = n; });
  const int64_t eval = max_eval_.value_or(max_iter_ * 5 / 4);
  count("max_eval", eval, [&](int64_t n) { max_eval_ = n; });
  v("tolerance_grad", tolerance_grad_);
  v("tolerance_change", tolerance_change_);
  count("history_size", history_size_, [&](int64_t n) { history_size_ = n; });
  bool strong_wolfe = line_search_fn_.has_value();
  v("line_search_fn", strong_wolfe);
  if (strong_wolfe != line_search_fn_.has_value())
    line_search_fn_ = strong_wolfe ? std::optional<std::string>("strong_wolfe") : std::nullopt;
}

void LBFGSOptions::validate() const {
  GRAFT_CHECK(lr_ >= 0, "LBFGS", "a learning rate >= 0", "lr = " + shortest(lr_),
              "pass lr >= 0 in LBFGSOptions (PyTorch's default is 1)");
  GRAFT_CHECK(max_iter_ >= 1, "LBFGS", "max_iter >= 1", "max_iter = " + std::to_string(max_iter_),
              "pass the number of iterations per step() (PyTorch's default is 20)");
  GRAFT_CHECK(!max_eval_ || *max_eval_ >= 1, "LBFGS", "max_eval >= 1 (or unset)",
              "max_eval = " + std::to_string(max_eval_.value_or(0)),
              "leave max_eval unset for max_iter * 5 / 4 evaluations per step()");
  GRAFT_CHECK(tolerance_grad_ >= 0, "LBFGS", "tolerance_grad >= 0", "tolerance_grad = " + shortest(tolerance_grad_),
              "pass a small tolerance on max |gradient|, e.g. 1e-7");
  GRAFT_CHECK(tolerance_change_ >= 0, "LBFGS", "tolerance_change >= 0",
              "tolerance_change = " + shortest(tolerance_change_),
              "pass a small tolerance on the change of loss and parameters, e.g. 1e-9");
  GRAFT_CHECK(history_size_ >= 1, "LBFGS", "history_size >= 1", "history_size = " + std::to_string(history_size_),
              "pass the number of correction pairs to keep (PyTorch's default is 100)");
  GRAFT_CHECK(!line_search_fn_ || *line_search_fn_ == "strong_wolfe", "LBFGS",
              "line_search_fn \"strong_wolfe\" or unset", "line_search_fn = \"" + line_search_fn_.value_or("") + "\"",
              "only 'strong_wolfe' is supported; leave it unset for fixed steps of lr");
}

void LBFGSParamState::visit(ParamStateVisitor& v) {
  // The compact visit with param_shaped = false: these tensors are not shaped like the first
  // parameter, and keep their own shape and dtype when loaded (step() checks and casts them).
  v("func_evals", func_evals_, true);
  v("n_iter", n_iter_, true);
  v.compact("d", d_, false, false);
  Tensor t, prev_loss;  // saved once an iteration has run (d is set then)
  if (d_.defined()) t = tensor(t_, kFloat64), prev_loss = tensor(prev_loss_, kFloat64);
  v.compact("t", t, false, false);
  scalar_from(t, t_, "t");
  // The history lists as stacked copies: a loader replaces the tensor, a saver leaves it.
  auto list = [&](const char* name, std::deque<Tensor>& parts, int64_t dim) {
    Tensor stacked = stack_or_undefined(parts);
    const TensorImpl* before = stacked.unsafe_impl();
    v.compact(name, stacked, false, false);
    if (stacked.unsafe_impl() == before) return false;
    parts = rows_of(stacked, dim, name);
    return true;
  };
  list("old_dirs", old_dirs_, 2);
  list("old_stps", old_stps_, 2);
  list("ro", ro_, 1);
  std::deque<Tensor> al;
  if (al_) {
    // The two-loop scratch: entries never set are saved as 0.
    DType dtype = kFloat64;
    for (const Tensor& a : *al_)
      if (a.defined()) dtype = a.dtype();
    for (const Tensor& a : *al_) al.push_back(a.defined() ? a : tensor(0.0, dtype));
  }
  if (list("al", al, 1)) al_ = std::vector<Tensor>(al.begin(), al.end());
  v.compact("H_diag", H_diag_, false, false);
  v.compact("prev_flat_grad", prev_flat_grad_, false, false);
  v.compact("prev_loss", prev_loss, false, false);
  scalar_from(prev_loss, prev_loss_, "prev_loss");
}

// ---- LBFGS ----

LBFGS::LBFGS(std::vector<OptimizerParamGroup> param_groups, const LBFGSOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone(), AllowEmptyParameterList{}) {
  // As LibTorch's: LBFGS(std::vector<Tensor>{}, options) is one empty group that add_parameters or
  // add_param_group fill (step() needs a parameter by then).
  GRAFT_CHECK(param_groups_.size() == 1, "LBFGS", "one parameter group",
              std::to_string(param_groups_.size()) + " groups",
              "LBFGS doesn't support per-parameter options (parameter groups): pass one list of parameters");
  for (OptimizerOptions* o : {defaults_.get(), &param_groups_[0].options()}) {
    auto& lo = static_cast<LBFGSOptions&>(*o);
    if (!lo.max_eval()) lo.max_eval(lo.max_iter() * 5 / 4);
  }
}

void LBFGS::step_group(OptimizerParamGroup&) {
  GRAFT_CHECK(false, "LBFGS.step_parameter", "an optimiser that can update one parameter at a time",
              "LBFGS, which updates all parameters together from a closure",
              "call opt.step(closure) with a closure that re-evaluates the loss (no step_parameter or StepInBackward)");
}

Tensor LBFGS::step(LossClosure closure) {
  GRAFT_CHECK(!steps_in_backward(), kStep, "no StepInBackward attached", "one attached",
              "LBFGS needs step(closure); destroy the StepInBackward");
  GRAFT_CHECK(closure != nullptr, kStep, "a closure that re-evaluates the model and returns the loss",
              "step() without a closure",
              "L-BFGS evaluates the loss several times per step: opt.step([&] { opt.zero_grad(); auto loss = "
              "f(); loss.backward(); return loss; })");
  GRAFT_CHECK(param_groups_.size() == 1, kStep, "one parameter group", std::to_string(param_groups_.size()) + " groups",
              "LBFGS doesn't support per-parameter options (parameter groups): add no groups to it");
  OptimizerParamGroup& group = param_groups_[0];
  group.options().validate();
  // A copy: the closure may change the live options (PyTorch reads them once, too).
  const LBFGSOptions o = static_cast<const LBFGSOptions&>(group.options());
  const double lr = o.lr();
  const int64_t max_iter = o.max_iter();
  const int64_t max_eval = o.max_eval().value_or(max_iter * 5 / 4);
  const double tolerance_grad = o.tolerance_grad(), tolerance_change = o.tolerance_change();
  const auto history_size = static_cast<size_t>(o.history_size());
  const bool line_search = o.line_search_fn().has_value();

  const std::vector<Tensor> params = group.params();
  GRAFT_CHECK(!params.empty(), kStep, "at least one parameter to optimise", "an empty parameter list",
              "add the parameters with add_parameters() or pass them when constructing LBFGS");
  const DType dtype = params[0].dtype();
  int64_t numel = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    GRAFT_CHECK(params[i].dtype() == dtype, kStep, std::string("parameters of one dtype (") + dtype_name(dtype) + ")",
                std::string("a ") + dtype_name(params[i].dtype()) + " parameter at position " + std::to_string(i),
                "L-BFGS works on all parameters as one vector; convert them to one dtype");
    numel += params[i].numel();
  }

  NoGradGuard no_grad;
  ++steps_taken_;
  auto evaluate = [&]() {
    EnableGradGuard enable;
    Tensor loss = closure();
    GRAFT_CHECK(loss.defined() && loss.numel() == 1, kStep, "a closure that returns the loss (one number)",
                loss.defined() ? "a tensor of shape " + shape_str(loss.sizes()) : std::string("an undefined tensor"),
                "return the scalar loss from the closure, after loss.backward()");
    return loss;
  };
  // The gradients as one vector; a parameter without one counts as zeros.
  auto gather_flat_grad = [&]() {
    TensorList views;
    for (const Tensor& p : params)
      views.push_back(p.grad().defined() ? p.grad().reshape({-1}) : zeros({p.numel()}, p.options()));
    return cat(views, 0);
  };
  auto add_grad = [&](double step_size, const Tensor& update) {
    int64_t offset = 0;
    for (const Tensor& p : params) {
      p.add_(update.narrow(0, offset, p.numel()).view(p.sizes()), step_size);
      offset += p.numel();
    }
  };

  auto& state = param_state<LBFGSParamState>(params[0]);
  // State loaded from a state dict: check it against the parameters, and cast it to their dtype.
  if (state.n_iter() > 0) {
    auto check = [&](Tensor& t, const char* name, std::vector<int64_t> shape) {
      GRAFT_CHECK(t.defined() && t.sizes() == IntArrayRef(shape), kStep,
                  std::string("state ") + name + " of shape " + shape_str(shape) + " (the parameters hold " +
                      std::to_string(numel) + " numbers)",
                  t.defined() ? "shape " + shape_str(t.sizes()) : std::string("none"),
                  "the state dict belongs to other parameters, or is incomplete");
      if (t.dtype() != dtype) t = t.to(dtype);
    };
    check(state.d(), "d", {numel});
    check(state.prev_flat_grad(), "prev_flat_grad", {numel});
    check(state.H_diag(), "H_diag", {});
    GRAFT_CHECK(state.old_stps().size() == state.old_dirs().size() && state.ro().size() == state.old_dirs().size(),
                kStep, "as many old_stps and ro as old_dirs",
                std::to_string(state.old_dirs().size()) + ", " + std::to_string(state.old_stps().size()) + " and " +
                    std::to_string(state.ro().size()),
                "the state dict is corrupt; save it again with optimizer.state_dict()");
    for (Tensor& t : state.old_dirs()) check(t, "old_dirs", {numel});
    for (Tensor& t : state.old_stps()) check(t, "old_stps", {numel});
    for (Tensor& t : state.ro()) check(t, "ro", {});
  }

  // The loss and gradient at the start.
  Tensor orig_loss = evaluate();
  double loss = to_double(orig_loss);
  int64_t current_evals = 1;
  state.func_evals(state.func_evals() + 1);
  Tensor flat_grad = gather_flat_grad();
  if (abs_max(flat_grad) <= tolerance_grad) return orig_loss;
  bool opt_cond = false;

  Tensor d = state.d();
  double t = state.t();
  std::deque<Tensor>& old_dirs = state.old_dirs();
  std::deque<Tensor>& old_stps = state.old_stps();
  std::deque<Tensor>& ro = state.ro();
  Tensor H_diag = state.H_diag();
  Tensor prev_flat_grad = state.prev_flat_grad();
  double prev_loss = state.prev_loss();

  int64_t n_iter = 0;
  while (n_iter < max_iter) {
    ++n_iter;
    state.n_iter(state.n_iter() + 1);

    // The descent direction.
    if (state.n_iter() == 1) {
      d = flat_grad.neg();
      old_dirs.clear(), old_stps.clear(), ro.clear();
      H_diag = tensor(1.0, dtype);
    } else {
      // Update the history with the last step s and the change of gradient y it caused.
      Tensor y = flat_grad.sub(prev_flat_grad);
      Tensor s = d.mul(t);
      const double ys = dot(y, s);
      if (ys > 1e-10) {
        // Oldest out when full (a loop: history_size may have been lowered since).
        while (old_dirs.size() >= history_size) old_dirs.pop_front(), old_stps.pop_front(), ro.pop_front();
        old_dirs.push_back(y);
        old_stps.push_back(s);
        ro.push_back(tensor(1. / ys, dtype));
        H_diag = tensor(ys, dtype).div(tensor(dot(y, y), dtype));  // the scale of the initial inverse Hessian
      }
      // The two-loop recursion: d = -H g, with H the L-BFGS inverse Hessian approximation.
      const size_t num_old = old_dirs.size();
      if (!state.al()) state.al(std::vector<Tensor>(history_size));
      std::vector<Tensor>& al = *state.al();
      if (al.size() < num_old) al.resize(num_old);
      Tensor q = flat_grad.neg();
      for (size_t i = num_old; i-- > 0;) {
        al[i] = tensor(dot(old_stps[i], q) * to_double(ro[i]), dtype);
        q.add_(old_dirs[i], -to_double(al[i]));
      }
      Tensor r = q.mul(H_diag);
      for (size_t i = 0; i < num_old; ++i) {
        const double be_i = dot(old_dirs[i], r) * to_double(ro[i]);
        r.add_(old_stps[i], to_double(al[i]) - be_i);
      }
      d = r;
    }
    if (!prev_flat_grad.defined()) prev_flat_grad = flat_grad.clone();
    else prev_flat_grad.copy_(flat_grad);
    prev_loss = loss;

    // The step length: scaled by the gradient's size at the very first iteration.
    if (state.n_iter() == 1) {
      const double inv = 1. / to_double(flat_grad.abs().sum());
      t = (inv < 1. ? inv : 1.) * lr;
    } else {
      t = lr;
    }
    const double gtd = dot(flat_grad, d);  // the directional derivative
    if (gtd > -tolerance_change) break;

    int64_t ls_func_evals = 0;
    if (line_search) {
      std::vector<Tensor> x_init;
      for (const Tensor& p : params) x_init.push_back(p.clone());
      // The loss and gradient at x_init + t d, the parameters restored afterwards.
      auto obj = [&](double step) {
        add_grad(step, d);
        Evaluation e{to_double(evaluate()), gather_flat_grad()};
        for (size_t i = 0; i < params.size(); ++i) params[i].copy_(x_init[i]);
        return e;
      };
      LineSearchResult ls = strong_wolfe(obj, t, d, loss, flat_grad, gtd);
      loss = ls.loss;
      flat_grad = ls.flat_grad;
      t = ls.t;
      ls_func_evals = ls.func_evals;
      add_grad(t, d);
      opt_cond = abs_max(flat_grad) <= tolerance_grad;
    } else {
      add_grad(t, d);
      if (n_iter != max_iter) {
        // Re-evaluated for the next iteration only (after the last one it would be wasted).
        loss = to_double(evaluate());
        flat_grad = gather_flat_grad();
        opt_cond = abs_max(flat_grad) <= tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    state.func_evals(state.func_evals() + ls_func_evals);

    if (n_iter == max_iter) break;
    if (current_evals >= max_eval) break;
    if (opt_cond) break;
    if (abs_max(d.mul(t)) <= tolerance_change) break;  // lack of progress
    if (std::abs(loss - prev_loss) < tolerance_change) break;
  }

  state.d(d);
  state.t(t);
  state.H_diag(H_diag);
  state.prev_flat_grad(prev_flat_grad);
  state.prev_loss(prev_loss);
  for (const Tensor* buf : {&d, &prev_flat_grad})  // Note [Memory categories]
    if (buf->defined()) memory::set_category(*buf->impl().storage, memory::Category::OptimizerState);
  return orig_loss;
}

}  // namespace graft::optim
