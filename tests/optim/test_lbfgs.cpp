// LBFGS against PyTorch 1.13's torch.optim.LBFGS: the float64 trajectories of
// tests/fixtures/lbfgs_fixtures.txt (written by tests/fixtures/gen_lbfgs_fixtures.py, format in its
// docstring) must match to 1e-10; then the closure requirement, the options, the state dict and
// the single param group.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

struct LbfgsCase {
  std::string name, problem;
  std::vector<std::pair<std::string, std::string>> options;
  int64_t steps = 0;
  std::vector<double> losses, func_evals, n_iter;
  std::map<std::string, Tensor> tensors;  // "<param>@<k>"
};

struct LbfgsFixtures {
  std::map<std::string, Tensor> data;  // x, y and the initial parameters
  std::vector<LbfgsCase> cases;
};

std::vector<double> lbfgs_numbers(const std::vector<std::string>& w, size_t from) {
  std::vector<double> out;
  for (size_t i = from; i < w.size(); ++i) out.push_back(std::stod(w[i]));
  return out;
}

// "t <name> f64 <ndim> <sizes...> <values...>"
std::pair<std::string, Tensor> lbfgs_tensor(const std::vector<std::string>& w) {
  if (w.size() < 4 || w[2] != "f64") throw std::runtime_error("bad tensor line");
  const auto ndim = static_cast<size_t>(std::stoll(w[3]));
  std::vector<int64_t> sizes;
  for (size_t d = 0; d < ndim; ++d) sizes.push_back(std::stoll(w.at(4 + d)));
  return {w[1], make(lbfgs_numbers(w, 4 + ndim), sizes, kFloat64)};
}

const LbfgsFixtures& lbfgs_fixtures() {
  static const LbfgsFixtures fixtures = [] {
    const auto path = std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "lbfgs_fixtures.txt";
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path.string());
    LbfgsFixtures out;
    LbfgsCase* current = nullptr;
    std::string line;
    while (std::getline(f, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream in(line);
      std::vector<std::string> w;
      for (std::string s; in >> s;) w.push_back(s);
      if (w[0] == "case") {
        out.cases.push_back({});
        current = &out.cases.back();
        current->name = w.at(1);
        current->problem = w.at(2);
      } else if (w[0] == "end") {
        current = nullptr;
      } else if (w[0] == "t") {
        auto [name, t] = lbfgs_tensor(w);
        (current ? current->tensors : out.data)[name] = t;
      } else if (current && w[0] == "option") {
        current->options.push_back({w.at(1), w.at(2)});
      } else if (current && w[0] == "steps") {
        current->steps = std::stoll(w.at(1));
      } else if (current && w[0] == "loss") {
        current->losses = lbfgs_numbers(w, 1);
      } else if (current && w[0] == "func_evals") {
        current->func_evals = lbfgs_numbers(w, 1);
      } else if (current && w[0] == "n_iter") {
        current->n_iter = lbfgs_numbers(w, 1);
      } else {
        throw std::runtime_error("unexpected line: " + line);
      }
    }
    return out;
  }();
  return fixtures;
}

optim::LBFGSOptions lbfgs_options_of(const LbfgsCase& c) {
  optim::LBFGSOptions o;
  for (const auto& [k, v] : c.options) {
    if (k == "lr") o.lr(std::stod(v));
    else if (k == "max_iter") o.max_iter(std::stoll(v));
    else if (k == "max_eval") o.max_eval(std::stoll(v));
    else if (k == "tolerance_grad") o.tolerance_grad(std::stod(v));
    else if (k == "tolerance_change") o.tolerance_change(std::stod(v));
    else if (k == "history_size") o.history_size(std::stoll(v));
    else if (k == "line_search_fn") o.line_search_fn(v);
    else throw std::runtime_error("unknown option " + k);
  }
  return o;
}

// The problems of gen_lbfgs_fixtures.py, with the same elementwise ops.
struct LbfgsProblem {
  std::vector<std::string> names;
  std::vector<Tensor> params;
  std::function<Tensor()> loss;
};

LbfgsProblem lbfgs_problem(const std::string& problem) {
  const auto& data = lbfgs_fixtures().data;
  LbfgsProblem out;
  if (problem == "rosenbrock") {
    out.names = {"p"};
    out.params = {data.at("p").clone().requires_grad_(true)};
    Tensor p = out.params[0];
    out.loss = [p] {
      Tensor a = 1 - p[0];
      Tensor b = p[1] - p[0] * p[0];
      return a * a + 100 * b * b;
    };
  } else {
    out.names = {"w", "b"};
    out.params = {data.at("w").clone().requires_grad_(true), data.at("b").clone().requires_grad_(true)};
    Tensor w = out.params[0], b = out.params[1], x = data.at("x"), y = data.at("y");
    out.loss = [w, b, x, y] {
      Tensor r = matmul(x, w) + b - y;
      return (r * r).mean();
    };
  }
  return out;
}

optim::LossClosure lbfgs_closure(optim::Optimizer& opt, const LbfgsProblem& pr) {
  return [&opt, &pr] {
    opt.zero_grad();
    Tensor loss = pr.loss();
    loss.backward();
    return loss;
  };
}

const optim::LBFGSParamState& lbfgs_state(const optim::LBFGS& opt, const Tensor& first) {
  const auto* s = opt.state_of(first);
  if (!s) throw std::runtime_error("no LBFGS state");
  return static_cast<const optim::LBFGSParamState&>(*s);
}

TEST(LBFGS, MatchesPyTorchTrajectories) {
  ASSERT_FALSE(lbfgs_fixtures().cases.empty());
  for (const LbfgsCase& c : lbfgs_fixtures().cases) {
    SCOPED_TRACE(c.name);
    LbfgsProblem pr = lbfgs_problem(c.problem);
    optim::LBFGS opt(pr.params, lbfgs_options_of(c));
    for (int64_t k = 1; k <= c.steps; ++k) {
      SCOPED_TRACE("step " + std::to_string(k));
      const double loss = opt.step(lbfgs_closure(opt, pr)).item<double>();
      const auto i = static_cast<size_t>(k - 1);
      EXPECT_NEAR(loss, c.losses.at(i), 1e-10 * (1 + std::abs(c.losses.at(i))));
      const auto& st = lbfgs_state(opt, pr.params[0]);
      EXPECT_EQ(static_cast<double>(st.func_evals()), c.func_evals.at(i));
      EXPECT_EQ(static_cast<double>(st.n_iter()), c.n_iter.at(i));
      for (size_t p = 0; p < pr.params.size(); ++p)
        EXPECT_TRUE(all_close(pr.params[p], c.tensors.at(pr.names[p] + "@" + std::to_string(k)))) << pr.names[p];
    }
  }
}

TEST(LBFGS, StepNeedsAClosure) {
  Tensor p = make({1.0, 2.0}, {2}).requires_grad_(true);
  optim::LBFGS opt({p});
  (p * p).sum().backward();
  EXPECT_TRUE(throws_error([&] { opt.step(); }, {"LBFGS.step", "closure"}));
  EXPECT_TRUE(throws_error([&] { opt.step(nullptr); }, {"LBFGS.step", "closure"}));
  // Nothing changed, and no state was made.
  EXPECT_TRUE(all_close(p, {1.0, 2.0}, {2}));
  EXPECT_EQ(opt.state_of(p), nullptr);
  // step_parameter (and so StepInBackward) cannot update one parameter alone.
  EXPECT_TRUE(throws_error([&] { opt.step_parameter(p); }, {"LBFGS", "closure"}));
  // A closure must return the loss.
  EXPECT_TRUE(throws_error([&] { opt.step([] { return Tensor(); }); }, {"LBFGS.step", "loss"}));
}

TEST(LBFGS, Options) {
  const optim::LBFGSOptions d;
  EXPECT_EQ(d.lr(), 1.0);
  EXPECT_EQ(d.max_iter(), 20);
  EXPECT_FALSE(d.max_eval().has_value());
  EXPECT_EQ(d.tolerance_grad(), 1e-7);
  EXPECT_EQ(d.tolerance_change(), 1e-9);
  EXPECT_EQ(d.history_size(), 100);
  EXPECT_FALSE(d.line_search_fn().has_value());
  EXPECT_STREQ(d.optimizer_name(), "LBFGS");

  auto o =
      optim::LBFGSOptions(0.5).max_iter(8).tolerance_grad(1e-5).tolerance_change(1e-7).history_size(4).line_search_fn(
          "strong_wolfe");
  EXPECT_EQ(o.lr(), 0.5);
  EXPECT_EQ(o.get_lr(), 0.5);
  o.set_lr(0.25);
  EXPECT_EQ(o.lr(), 0.25);
  EXPECT_EQ(o.max_iter(), 8);
  EXPECT_EQ(o.tolerance_grad(), 1e-5);
  EXPECT_EQ(o.tolerance_change(), 1e-7);
  EXPECT_EQ(o.history_size(), 4);
  EXPECT_EQ(o.line_search_fn(), std::optional<std::string>("strong_wolfe"));

  // An unset max_eval becomes max_iter * 5 / 4 (integer division) at construction, as in PyTorch.
  Tensor p = make({1.0}, {1}).requires_grad_(true);
  optim::LBFGS opt({p}, o);
  const auto& go = static_cast<const optim::LBFGSOptions&>(opt.param_groups()[0].options());
  EXPECT_EQ(go.max_eval(), std::optional<int64_t>(10));
  EXPECT_EQ(static_cast<const optim::LBFGSOptions&>(opt.defaults()).max_eval(), std::optional<int64_t>(10));
  EXPECT_EQ(go.lr(), 0.25);
  Tensor q = make({1.0}, {1}).requires_grad_(true);
  optim::LBFGS opt2({q}, optim::LBFGSOptions().max_iter(3).max_eval(7));
  EXPECT_EQ(static_cast<const optim::LBFGSOptions&>(opt2.param_groups()[0].options()).max_eval(),
            std::optional<int64_t>(7));

  // LibTorch's construction from a plain learning rate, for LBFGS as for the others.
  optim::LBFGS from_lr({make({1.0}, {1}).requires_grad_(true)}, 0.5);
  EXPECT_EQ(from_lr.param_groups()[0].options().lr(), 0.5);
  optim::SGD sgd({make({1.0}, {1}).requires_grad_(true)}, optim::SGDOptions(0.1));
  EXPECT_EQ(sgd.param_groups()[0].options().lr(), 0.1);

  auto bad = [](optim::LBFGSOptions opts) {
    return [opts] { optim::LBFGS o({make({1.0}, {1}).requires_grad_(true)}, opts); };
  };
  EXPECT_TRUE(throws_error(bad(optim::LBFGSOptions().line_search_fn("backtracking")), {"LBFGS", "strong_wolfe"}));
  EXPECT_TRUE(throws_error(bad(optim::LBFGSOptions().history_size(0)), {"LBFGS", "history_size"}));
  EXPECT_TRUE(throws_error(bad(optim::LBFGSOptions().max_iter(0)), {"LBFGS", "max_iter"}));
  EXPECT_TRUE(throws_error(bad(optim::LBFGSOptions(-1)), {"LBFGS", "lr"}));
  EXPECT_TRUE(throws_error(bad(optim::LBFGSOptions().max_eval(0)), {"LBFGS", "max_eval"}));
}

TEST(LBFGS, OneParamGroupOnly) {
  Tensor a = make({1.0}, {1}).requires_grad_(true);
  Tensor b = make({2.0}, {1}).requires_grad_(true);
  std::vector<optim::OptimizerParamGroup> groups{optim::OptimizerParamGroup({a}), optim::OptimizerParamGroup({b})};
  EXPECT_TRUE(throws_error([&] { optim::LBFGS opt(groups); }, {"LBFGS", "one parameter group", "2 groups"}));

  // A group added later: step() refuses.
  optim::LBFGS opt({a});
  opt.add_param_group(optim::OptimizerParamGroup({b}));
  EXPECT_TRUE(
      throws_error([&] { opt.step([&] { return (a * a + b * b).sum(); }); }, {"LBFGS.step", "one parameter group"}));

  // Several parameters in the one group are one vector: mixed dtypes are refused.
  Tensor c = make({1.0}, {1}, kFloat32).requires_grad_(true);
  optim::LBFGS mixed({a, c});
  EXPECT_TRUE(throws_error(
      [&] {
        mixed.step([&] {
          mixed.zero_grad();
          Tensor l = (a * a).sum() + (c * c).sum().to(kFloat64);
          l.backward();
          return l;
        });
      },
      {"LBFGS.step", "one dtype"}));
}

// LibTorch's API: LBFGS from an empty list, filled by add_parameters. On f(p) = p^2 from p = 3 the
// first iteration steps along d = -f'(3) = -6 by t = min(1, 1 / |g|_1) * lr = 1/6: p = 3 - 1 = 2.
TEST(LBFGS, EmptyListThenAddParameters) {
  optim::LBFGS opt(std::vector<Tensor>{}, optim::LBFGSOptions(1).max_iter(1));
  EXPECT_EQ(opt.param_groups().size(), 1u);
  EXPECT_TRUE(opt.param_groups()[0].params().empty());
  auto closure = [&] {
    opt.zero_grad();
    Tensor l = (opt.param_groups()[0].params()[0] * opt.param_groups()[0].params()[0]).sum();
    l.backward();
    return l;
  };
  EXPECT_TRUE(throws_error([&] { opt.step([] { return tensor(1.0); }); }, {"LBFGS.step", "an empty parameter list"}));
  Tensor p = make({3.0}, {1}).requires_grad_(true);
  struct Collect : WarningHandler {
    std::vector<std::string> messages;
    using WarningHandler::process;
    void process(const Warning& w) override { messages.push_back(w.msg()); }
  } collect;
  {
    Warning::WarningHandlerGuard guard(&collect);
    opt.add_parameters({p});  // LibTorch's old interface: one warning
  }
  ASSERT_EQ(collect.messages.size(), 1u);
  EXPECT_NE(collect.messages[0].find("LBFGS.add_parameters"), std::string::npos) << collect.messages[0];
  EXPECT_NE(collect.messages[0].find("will be removed"), std::string::npos) << collect.messages[0];
  EXPECT_DOUBLE_EQ(opt.step(closure).item<double>(), 9.0);  // the loss before the step
  EXPECT_DOUBLE_EQ(p.item<double>(), 2.0);
  // Other optimisers keep PyTorch's check.
  EXPECT_TRUE(throws_error([] { optim::SGD(std::vector<Tensor>{}, optim::SGDOptions(0.1)); }, {"an empty parameter list"}));
}

// The minimum of f(p) = sum((p - target)^2 * scale), worked out by hand: p = target. One step of
// 20 iterations with the strong Wolfe search reaches it (a convex quadratic in 3 unknowns).
TEST(LBFGS, ReachesTheMinimumOfAQuadratic) {
  Tensor p = make({0.0, 0.0, 0.0}, {3}).requires_grad_(true);
  Tensor target = make({1.0, -2.0, 3.0}, {3});
  Tensor scale = make({1.0, 10.0, 0.5}, {3});
  optim::LBFGS opt({p}, optim::LBFGSOptions().line_search_fn("strong_wolfe"));
  opt.step([&] {
    opt.zero_grad();
    Tensor d = p - target;
    Tensor l = (d * d * scale).sum();
    l.backward();
    return l;
  });
  EXPECT_TRUE(all_close(p, {1.0, -2.0, 3.0}, {3}, 1e-6, 0));
}

// float32 parameters, and a parameter the loss does not use (no gradient: zeros in the flat
// gradient, so it never moves).
TEST(LBFGS, Float32AndAParameterWithoutGradient) {
  Tensor p = make({0.0, 0.0}, {2}, kFloat32).requires_grad_(true);
  Tensor unused = make({5.0}, {1}, kFloat32).requires_grad_(true);
  Tensor target = make({0.5, -1.5}, {2}, kFloat32);
  optim::LBFGS opt({p, unused}, optim::LBFGSOptions().line_search_fn("strong_wolfe"));
  opt.step([&] {
    opt.zero_grad();
    Tensor d = p - target;
    Tensor l = (d * d).sum();
    l.backward();
    return l;
  });
  EXPECT_EQ(p.dtype(), kFloat32);
  EXPECT_TRUE(all_close(p, {0.5, -1.5}, {2}, 1e-5, 0));
  EXPECT_TRUE(all_close(unused, {5.0}, {1}, 0, 0));
  EXPECT_FALSE(unused.grad().defined());
}

// Saving after a step and loading into a fresh optimiser over parameters with the same values
// continues exactly as the original does.
TEST(LBFGS, StateDictRoundTrip) {
  for (const char* name : {"rosen_wolfe_h1_iter5", "rosen_h2_iter4", "lstsq_wolfe_h1"}) {
    SCOPED_TRACE(name);
    const LbfgsCase* c = nullptr;
    for (const auto& k : lbfgs_fixtures().cases)
      if (k.name == name) c = &k;
    ASSERT_NE(c, nullptr);
    LbfgsProblem a = lbfgs_problem(c->problem);
    optim::LBFGS opt_a(a.params, lbfgs_options_of(*c));
    opt_a.step(lbfgs_closure(opt_a, a));

    const auto sd = opt_a.state_dict();
    for (const char* key : {"state.0.func_evals", "state.0.n_iter", "state.0.d", "state.0.t", "state.0.old_dirs",
                            "state.0.old_stps", "state.0.ro", "state.0.H_diag", "state.0.prev_flat_grad",
                            "state.0.prev_loss", "param_groups.0.lr", "param_groups.0.max_iter",
                            "param_groups.0.max_eval", "param_groups.0.history_size", "param_groups.0.line_search_fn"})
      EXPECT_TRUE(sd.contains(key)) << key;
    const auto& st = lbfgs_state(opt_a, a.params[0]);
    const auto k = static_cast<int64_t>(st.old_dirs().size());
    ASSERT_GT(k, 0);
    int64_t numel = 0;
    for (const Tensor& p : a.params) numel += p.numel();
    EXPECT_EQ(sd["state.0.old_dirs"].sizes(), IntArrayRef({k, numel}));
    EXPECT_EQ(sd["state.0.ro"].sizes(), IntArrayRef({k}));
    EXPECT_EQ(sd["state.0.d"].sizes(), IntArrayRef({numel}));

    // A fresh optimiser with other options and no state; the options come from the state dict.
    LbfgsProblem b = lbfgs_problem(c->problem);
    for (size_t i = 0; i < a.params.size(); ++i) {
      NoGradGuard g;
      b.params[i].copy_(a.params[i]);
    }
    optim::LBFGS opt_b(b.params, optim::LBFGSOptions(0.123).max_iter(2).history_size(50));
    opt_b.load_state_dict(sd);
    EXPECT_TRUE(opt_b.param_groups()[0].options() == opt_a.param_groups()[0].options());
    const auto& st_b = lbfgs_state(opt_b, b.params[0]);
    EXPECT_EQ(st_b.func_evals(), st.func_evals());
    EXPECT_EQ(st_b.n_iter(), st.n_iter());
    EXPECT_EQ(st_b.t(), st.t());
    EXPECT_EQ(st_b.prev_loss(), st.prev_loss());
    EXPECT_EQ(st_b.old_dirs().size(), st.old_dirs().size());

    for (int i = 0; i < 2; ++i) {
      const double la = opt_a.step(lbfgs_closure(opt_a, a)).item<double>();
      const double lb = opt_b.step(lbfgs_closure(opt_b, b)).item<double>();
      EXPECT_EQ(la, lb);
      for (size_t p = 0; p < a.params.size(); ++p) EXPECT_TRUE(all_close(b.params[p], a.params[p], 0, 0));
    }
    // And both still follow PyTorch's trajectory.
    for (size_t p = 0; p < a.params.size(); ++p) EXPECT_TRUE(all_close(b.params[p], c->tensors.at(a.names[p] + "@3")));
  }
}

TEST(LBFGS, LoadRejectsStateOfOtherParameters) {
  LbfgsProblem a = lbfgs_problem("lstsq");
  optim::LBFGS opt_a(a.params, optim::LBFGSOptions().max_iter(3));
  opt_a.step(lbfgs_closure(opt_a, a));
  const auto sd = opt_a.state_dict();
  Tensor w = make({1, 2, 3, 4, 5, 6}, {3, 2}).requires_grad_(true);
  Tensor b = make({0.0, 0.0}, {2}).requires_grad_(true);
  optim::LBFGS opt_b({w, b}, optim::LBFGSOptions().max_iter(3));
  Tensor other = make({1, 2, 3, 4, 5, 6, 7, 8, 9}, {9}).requires_grad_(true);
  optim::LBFGS opt_c({other, make({0.0}, {1}).requires_grad_(true)}, optim::LBFGSOptions().max_iter(3));
  // Parameters of 10 numbers: the flat state of 8 does not fit them (checked at the next step).
  opt_c.load_state_dict(sd);
  EXPECT_TRUE(throws_error(
      [&] {
        opt_c.step([&] {
          opt_c.zero_grad();
          Tensor l = (other * other).sum();
          l.backward();
          return l;
        });
      },
      {"LBFGS.step", "state d of shape [10]", "shape [8]"}));
  // The right shapes load and step.
  opt_b.load_state_dict(sd);
  EXPECT_NO_THROW(opt_b.step([&] {
    opt_b.zero_grad();
    Tensor l = (w * w).sum() + (b * b).sum();
    l.backward();
    return l;
  }));
}

}  // namespace
}  // namespace graft::test
