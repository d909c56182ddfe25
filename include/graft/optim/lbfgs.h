// L-BFGS, exactly PyTorch 1.13's torch.optim.LBFGS (and LibTorch's torch::optim::LBFGS):
//
//   graft::optim::LBFGS opt(params, graft::optim::LBFGSOptions(1).history_size(10).line_search_fn("strong_wolfe"));
//   opt.step([&] { opt.zero_grad(); auto loss = f(params); loss.backward(); return loss; });
//
// step(closure) needs the closure: it evaluates the loss up to max_eval times while it runs up to
// max_iter iterations, and returns the first loss (the loss before the step). Each iteration:
//   direction d: -g at the very first iteration; afterwards the two-loop recursion over the last
//     history_size pairs (y = g - g_prev, s = t * d_prev), kept only when y.s > 1e-10, with the
//     initial inverse Hessian H_diag = y.s / y.y of the newest pair
//   step length t: min(1, 1 / |g|_1) * lr at the very first iteration, lr afterwards; with
//     line_search_fn "strong_wolfe", the strong Wolfe line search (c1 = 1e-4, c2 = 0.9, at most 25
//     evaluations, cubic interpolation) from that t; without it, a fixed step (the loss and
//     gradient are evaluated again for the next iteration, except after the last one)
// and it stops early when max |g| <= tolerance_grad, g.d > -tolerance_change, max |t d| <=
// tolerance_change, |loss - prev_loss| < tolerance_change, or max_eval evaluations are spent.
//
// The parameters are handled as one flat vector (their gradients concatenated, a missing gradient
// as zeros), so all must share one dtype. One param group only, as in PyTorch. The state is global
// but lives, as in PyTorch, in the first parameter's LBFGSParamState; in the state dict
// (Note [Optimizer state dict]) it is
//   state.0.func_evals, state.0.n_iter   counts
//   state.0.t, state.0.prev_loss          0-dim float64 (after the first iteration)
//   state.0.d, state.0.prev_flat_grad     [numel of all parameters]
//   state.0.H_diag                        0-dim
//   state.0.old_dirs, state.0.old_stps    [k, numel]: the k history pairs, oldest first (when k > 0)
//   state.0.ro                            [k]: 1 / y.s of each pair
//   state.0.al                            [history_size]: the two-loop scratch (never-set entries 0)
// and the group's options max_iter, max_eval and history_size as float64 numbers, line_search_fn
// as a bool (true: "strong_wolfe"). These state tensors keep their own shape when loaded; step()
// checks them against the parameters.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "graft/optim/optimizer.h"

namespace graft::optim {

class LBFGSOptions : public OptimizerCloneableOptions<LBFGSOptions> {
 public:
  LBFGSOptions(double lr = 1) : OptimizerCloneableOptions(lr) {}
  GRAFT_OPTIM_ARG(int64_t, max_iter) = 20;
  // Unset: max_iter * 5 / 4 (integer division), filled in when the optimiser is constructed.
  GRAFT_OPTIM_ARG(std::optional<int64_t>, max_eval) = std::nullopt;
  GRAFT_OPTIM_ARG(double, tolerance_grad) = 1e-7;
  GRAFT_OPTIM_ARG(double, tolerance_change) = 1e-9;
  GRAFT_OPTIM_ARG(int64_t, history_size) = 100;
  // Unset (no line search) or "strong_wolfe".
  GRAFT_OPTIM_ARG(std::optional<std::string>, line_search_fn) = std::nullopt;

 public:
  void visit(OptionsVisitor& v) override;
  void validate() const override;
  const char* optimizer_name() const override { return "LBFGS"; }
};

// LibTorch's LBFGSParamState: the optimiser's global state (see above for how it is saved).
class LBFGSParamState : public OptimizerParamState {
  GRAFT_OPTIM_ARG(int64_t, func_evals) = 0;
  GRAFT_OPTIM_ARG(int64_t, n_iter) = 0;
  GRAFT_OPTIM_ARG(double, t) = 0;
  GRAFT_OPTIM_ARG(double, prev_loss) = 0;
  GRAFT_OPTIM_ARG(Tensor, d);
  GRAFT_OPTIM_ARG(Tensor, H_diag);
  GRAFT_OPTIM_ARG(Tensor, prev_flat_grad);
  GRAFT_OPTIM_ARG(std::deque<Tensor>, old_dirs);
  GRAFT_OPTIM_ARG(std::deque<Tensor>, old_stps);
  GRAFT_OPTIM_ARG(std::deque<Tensor>, ro);
  GRAFT_OPTIM_ARG(std::optional<std::vector<Tensor>>, al) = std::nullopt;

 public:
  void visit(ParamStateVisitor& v) override;
};

class LBFGS : public Optimizer {
 public:
  LBFGS(std::vector<OptimizerParamGroup> param_groups, const LBFGSOptions& defaults = LBFGSOptions());
  explicit LBFGS(const std::vector<Tensor>& params, const LBFGSOptions& defaults = LBFGSOptions())
      : LBFGS(std::vector<OptimizerParamGroup>{OptimizerParamGroup(params)}, defaults) {}

  // The closure is required: an error without one.
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  // An error: L-BFGS updates all parameters together, from a closure (no step_parameter, no
  // StepInBackward).
  void step_group(OptimizerParamGroup& group) override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override { return std::make_unique<LBFGSParamState>(); }
};

}  // namespace graft::optim
