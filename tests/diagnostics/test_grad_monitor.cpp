// diagnostics::GradMonitor: every statistic against values worked out by hand or by a plain loop
// over the tensors' values, the flags (name and step), sampling, raising on nan/inf, and the JSON
// Lines file read back with nlohmann::json.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

using diagnostics::Flag;
using diagnostics::GradMonitor;
using diagnostics::GradMonitorOptions;
using diagnostics::ParamStats;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A module holding the given parameters directly (names without dots), in registration order.
struct Params {
  std::shared_ptr<nn::Module> m = std::make_shared<nn::Module>();
  Tensor add(const std::string& name, const std::vector<double>& value, IntArrayRef shape, DType dtype = kFloat64) {
    return m->register_parameter(name, make(value, shape, dtype));
  }
};

void set_grad(Tensor p, const std::vector<double>& g) { p.mutable_grad() = make(g, p.sizes(), p.dtype()); }

// w <- w + delta, by hand (what an optimiser step would do).
void add_to(Tensor p, const std::vector<double>& delta) {
  NoGradGuard no_grad;
  p.add_(make(delta, p.sizes(), p.dtype()));
}

const ParamStats& stats(const GradMonitor& mon, size_t record, const std::string& name) {
  for (const ParamStats& s : mon.records().at(record).params)
    if (s.name == name) return s;
  throw std::runtime_error("no parameter " + name);
}

std::vector<const Flag*> flags_of(const GradMonitor& mon, const std::string& kind) {
  std::vector<const Flag*> out;
  for (const Flag& f : mon.flags())
    if (f.kind == kind) out.push_back(&f);
  return out;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("graft_grad_monitor_" + name + ".jsonl")).string();
}

// ---- statistics ----

TEST(GradMonitor, StatisticsByHand) {
  Params ps;
  Tensor a = ps.add("a", {1, 2, 2, 0}, {4});               // ||w|| = 3
  Tensor b = ps.add("b", {3, 0, 0, 0, 0, 4}, {2, 3});       // ||w|| = 5
  Tensor c = ps.add("c", {0, 0, 2}, {3});                   // no gradient; ||w|| = 2
  set_grad(a, {3, -4, 0, 0});                                // norm 5, max 4, half zero
  set_grad(b, {-1, 0, 0, 0, 0, 0});                          // norm 1, max 1, 5/6 zero
  GradMonitor mon(*ps.m);
  mon.after_backward(0);
  ASSERT_EQ(mon.records().size(), 1u);
  EXPECT_TRUE(std::isnan(stats(mon, 0, "a").update_ratio));  // not until after_step
  add_to(a, {0.3, 0, 0, 0.4});                               // ||update|| = 0.5
  add_to(b, {0, 0, 0, 0, 0, -12});                           // ||update|| = 12
  add_to(c, {0, 0, 1});                                      // moved without a gradient: ||update|| = 1
  mon.after_step();

  ASSERT_EQ(mon.records().size(), 1u);
  EXPECT_EQ(mon.records()[0].step, 0);
  ASSERT_EQ(mon.records()[0].params.size(), 3u);
  const ParamStats& sa = stats(mon, 0, "a");
  EXPECT_TRUE(sa.has_grad);
  EXPECT_DOUBLE_EQ(sa.grad_norm, 5);
  EXPECT_DOUBLE_EQ(sa.grad_max, 4);
  EXPECT_DOUBLE_EQ(sa.weight_norm, 3);
  EXPECT_DOUBLE_EQ(sa.zero_fraction, 0.5);
  EXPECT_NEAR(sa.update_ratio, 0.5 / (3 + 1e-12), 1e-15);  // the 1e-12 guards against w = 0
  EXPECT_EQ(sa.nan_count, 0);
  EXPECT_EQ(sa.inf_count, 0);
  const ParamStats& sb = stats(mon, 0, "b");
  EXPECT_DOUBLE_EQ(sb.grad_norm, 1);
  EXPECT_DOUBLE_EQ(sb.grad_max, 1);
  EXPECT_DOUBLE_EQ(sb.weight_norm, 5);
  EXPECT_DOUBLE_EQ(sb.zero_fraction, 5.0 / 6);
  EXPECT_NEAR(sb.update_ratio, 12.0 / (5 + 1e-12), 1e-15);
  const ParamStats& sc = stats(mon, 0, "c");
  EXPECT_FALSE(sc.has_grad);
  EXPECT_TRUE(std::isnan(sc.grad_norm));
  EXPECT_TRUE(std::isnan(sc.grad_max));
  EXPECT_TRUE(std::isnan(sc.zero_fraction));
  EXPECT_DOUBLE_EQ(sc.weight_norm, 2);
  EXPECT_NEAR(sc.update_ratio, 1.0 / (2 + 1e-12), 1e-15);
  // b's norm 1 is not below 1e-4 x ... b is the last (and only) 2-dim parameter: no flag at all.
  EXPECT_TRUE(mon.flags().empty());
}

// Random float32 and float64 parameters whose sizes are not multiples of the vector width,
// against a plain loop in double over values().
TEST(GradMonitor, MatchesAPlainLoopInBothDtypes) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (int64_t n : {1, 7, 8, 13, 16, 1029, 5000}) {
      std::mt19937 rng(static_cast<unsigned>(n));
      std::normal_distribution<double> normal;
      std::vector<double> w(static_cast<size_t>(n)), g(w.size()), d(w.size());
      for (size_t i = 0; i < w.size(); ++i) {
        w[i] = normal(rng);
        g[i] = i % 5 == 2 ? 0.0 : normal(rng) * 1e-3;
        d[i] = normal(rng) * 1e-2;
      }
      Params ps;
      Tensor p = ps.add("p", w, {n}, dt);
      set_grad(p, g);
      // The values the tensors hold (rounded to float32 in that case), for the reference.
      const std::vector<double> wv = values(p), gv = values(p.grad());
      GradMonitor mon(*ps.m);
      mon.after_backward(0);
      add_to(p, d);
      const std::vector<double> wafter = values(p);
      mon.after_step();

      double gsq = 0, wsq = 0, usq = 0, gmax = 0;
      int64_t zeros = 0;
      for (size_t i = 0; i < wv.size(); ++i) {
        gsq += gv[i] * gv[i];
        wsq += wv[i] * wv[i];
        usq += (wafter[i] - wv[i]) * (wafter[i] - wv[i]);
        gmax = std::max(gmax, std::fabs(gv[i]));
        zeros += gv[i] == 0;
      }
      const ParamStats& s = stats(mon, 0, "p");
      SCOPED_TRACE(std::string(dtype_name(dt)) + " n = " + std::to_string(n));
      // float32 squares are summed in float32 within blocks of 512 elements (Note [Gradient monitor]).
      const double tol = dt == kFloat32 ? 1e-6 : 1e-13;
      EXPECT_NEAR(s.grad_norm, std::sqrt(gsq), tol * std::sqrt(gsq));
      EXPECT_NEAR(s.weight_norm, std::sqrt(wsq), tol * std::sqrt(wsq));
      EXPECT_EQ(s.grad_max, gmax);
      EXPECT_DOUBLE_EQ(s.zero_fraction, static_cast<double>(zeros) / static_cast<double>(n));
      const double ratio = std::sqrt(usq) / (std::sqrt(wsq) + 1e-12);
      EXPECT_NEAR(s.update_ratio, ratio, (dt == kFloat32 ? 1e-6 : 1e-12) * ratio);
    }
  }
}

TEST(GradMonitor, CountsNanAndInf) {
  for (DType dt : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dt));
    Params ps;
    Tensor p = ps.add("weight", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {2, 5}, dt);
    Tensor q = ps.add("bias", {1, 1}, {2}, dt);
    set_grad(p, {kNaN, kInf, -kInf, 1, 0, kNaN, 2, -kNaN, 0, 3});
    set_grad(q, {-kInf, 0});
    GradMonitor mon(*ps.m);
    mon.after_backward(4);
    mon.after_step();
    const ParamStats& sp = stats(mon, 0, "weight");
    EXPECT_EQ(sp.nan_count, 3);
    EXPECT_EQ(sp.inf_count, 2);
    EXPECT_DOUBLE_EQ(sp.zero_fraction, 0.2);
    EXPECT_TRUE(std::isnan(sp.grad_norm));
    EXPECT_TRUE(std::isnan(sp.grad_max));
    const ParamStats& sq = stats(mon, 0, "bias");
    EXPECT_EQ(sq.nan_count, 0);
    EXPECT_EQ(sq.inf_count, 1);
    EXPECT_EQ(sq.grad_norm, kInf);
    EXPECT_EQ(sq.grad_max, kInf);
    // One "nonfinite" flag per parameter, value = nan + inf entries; no exploding flag besides.
    const auto nf = flags_of(mon, "nonfinite");
    ASSERT_EQ(nf.size(), 2u);
    EXPECT_EQ(nf[0]->param, "weight");
    EXPECT_EQ(nf[0]->step, 4);
    EXPECT_EQ(nf[0]->value, 5);
    EXPECT_NE(nf[0]->message.find("3 nan and 2 inf"), std::string::npos) << nf[0]->message;
    EXPECT_EQ(nf[1]->param, "bias");
    EXPECT_EQ(nf[1]->value, 1);
    EXPECT_TRUE(flags_of(mon, "exploding").empty());
  }
}

TEST(GradMonitor, RaiseNamesParameterStepAndCounts) {
  Params ps;
  Tensor a = ps.add("fine", {1, 2}, {2});
  Tensor b = ps.add("broken", {1, 2, 3}, {3});
  Tensor c = ps.add("also_broken", {1}, {1});
  set_grad(a, {1, 1});
  set_grad(b, {1, 1, 1});
  set_grad(c, {1});
  GradMonitor mon(*ps.m, {.raise_on_nonfinite = true});
  mon.after_backward(0);  // finite: no error
  mon.after_step();
  set_grad(b, {kNaN, 1, kInf});
  set_grad(c, {kNaN});
  EXPECT_TRUE(throws_error([&] { mon.after_backward(7); },
                           {"GradMonitor", "step 7", "broken", "1 nan and 1 inf", "learning rate", "clip"}));
  try {
    mon.after_backward(8);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("also_broken"), std::string::npos) << e.what();
  }
  // The failing steps were recorded, with their flags.
  ASSERT_EQ(mon.records().size(), 3u);
  EXPECT_EQ(mon.records()[1].step, 7);
  EXPECT_EQ(stats(mon, 1, "broken").nan_count, 1);
  const auto nf = flags_of(mon, "nonfinite");
  ASSERT_EQ(nf.size(), 4u);
  EXPECT_EQ(nf[0]->param, "broken");
  EXPECT_EQ(nf[0]->step, 7);
  EXPECT_EQ(nf[1]->param, "also_broken");
  mon.after_step();  // nothing pending after a raise: no-op
  EXPECT_EQ(mon.records().size(), 3u);
}

// ---- flags ----

nn::Sequential two_layers() {
  nn::Sequential model(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 2));
  model->to(kFloat64);
  return model;
}

// A handle to the parameter (it shares the tensor, gradient included).
Tensor param(nn::Sequential& model, const std::string& name) {
  const auto named = model->named_parameters();
  const Tensor* t = named.find(name);
  if (t == nullptr) throw std::runtime_error("no parameter " + name);
  return *t;
}

TEST(GradMonitor, VanishingAgainstTheLastLayer) {
  auto model = two_layers();  // 0.weight [3, 2], 0.bias [3], 2.weight [2, 3], 2.bias [2]
  set_grad(param(model, "0.weight"), std::vector<double>(6, 1e-9));  // norm sqrt(6) * 1e-9
  set_grad(param(model, "0.bias"), {1e-9, 1e-9, 1e-9});              // 1-dim: compared with the floor only
  set_grad(param(model, "2.weight"), std::vector<double>(6, 1.0));   // norm sqrt(6): the last layer
  set_grad(param(model, "2.bias"), {1e-11, 0});                      // norm 1e-11 < floor 1e-10
  GradMonitor mon(*model);
  mon.after_backward(3);
  mon.after_step();
  const auto v = flags_of(mon, "vanishing");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0]->param, "0.weight");
  EXPECT_EQ(v[0]->step, 3);
  EXPECT_NEAR(v[0]->value, std::sqrt(6.0) * 1e-9, 1e-22);
  EXPECT_NE(v[0]->message.find("2.weight"), std::string::npos) << v[0]->message;
  EXPECT_NE(v[0]->message.find("step 3"), std::string::npos) << v[0]->message;
  EXPECT_EQ(v[1]->param, "2.bias");
  EXPECT_DOUBLE_EQ(v[1]->value, 1e-11);
  EXPECT_NE(v[1]->message.find("vanishing_floor"), std::string::npos) << v[1]->message;
  EXPECT_EQ(mon.flags().size(), 2u);

  // A ratio of 1e-3 is above vanishing_ratio 1e-4: no new vanishing flag on the next step. Both
  // norms grew a million-fold, though: above growth_factor 100, which flags them as exploding.
  set_grad(param(model, "0.weight"), std::vector<double>(6, 1e-3));
  set_grad(param(model, "2.bias"), {1e-5, 0});
  mon.after_backward(4);
  mon.after_step();
  EXPECT_EQ(flags_of(mon, "vanishing").size(), 2u);
  const auto e = flags_of(mon, "exploding");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0]->param, "0.weight");
  EXPECT_EQ(e[0]->step, 4);
  EXPECT_EQ(e[1]->param, "2.bias");
  EXPECT_EQ(mon.flags().size(), 4u);
}

TEST(GradMonitor, ExplodingAboveTheCeiling) {
  Params ps;
  Tensor a = ps.add("big", {1, 1}, {2});
  Tensor b = ps.add("ok", {1, 1}, {2});
  set_grad(a, {1200, 1600});  // norm 2000
  set_grad(b, {600, 800});    // norm 1000: not above 1e3
  GradMonitor mon(*ps.m);
  mon.after_backward(11);
  mon.after_step();
  const auto e = flags_of(mon, "exploding");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0]->param, "big");
  EXPECT_EQ(e[0]->step, 11);
  EXPECT_DOUBLE_EQ(e[0]->value, 2000);
  EXPECT_NE(e[0]->message.find("exploding_ceiling"), std::string::npos) << e[0]->message;
}

TEST(GradMonitor, ExplodingByGrowthBetweenSampledSteps) {
  Params ps;
  Tensor a = ps.add("p", {1, 1}, {2});
  GradMonitor mon(*ps.m, {.every = 2, .exploding_ceiling = 1e9});
  const std::vector<std::vector<double>> grads = {
      {0.6, 0.8},       // step 0: norm 1
      {1e6, 0},         // step 1: not sampled
      {30, 40},         // step 2: norm 50, 50x: no flag
      {1, 0},           // step 3: not sampled
      {3000, 4000},     // step 4: norm 5000, 100x: not more than 100x
      {0, 0},           // step 5: not sampled
      {303000, 404000}  // step 6: norm 505000, 101x
  };
  for (int64_t step = 0; step < static_cast<int64_t>(grads.size()); ++step) {
    set_grad(a, grads[static_cast<size_t>(step)]);
    mon.after_backward(step);
    mon.after_step();
  }
  const auto e = flags_of(mon, "exploding");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0]->param, "p");
  EXPECT_EQ(e[0]->step, 6);
  EXPECT_DOUBLE_EQ(e[0]->value, 505000);
  EXPECT_NE(e[0]->message.find("growth_factor"), std::string::npos) << e[0]->message;
  EXPECT_TRUE(mon.flags().size() == 1u);
}

TEST(GradMonitor, DeadUnits) {
  Params ps;
  std::vector<double> g95(100, 1.0), g50(100, 1.0);
  for (int i = 0; i < 95; ++i) g95[static_cast<size_t>(i)] = 0;
  for (int i = 0; i < 50; ++i) g50[static_cast<size_t>(i)] = 0;
  Tensor dead = ps.add("dead", std::vector<double>(100, 1.0), {10, 10});
  Tensor alive = ps.add("alive", std::vector<double>(100, 1.0), {100});
  Tensor tiny = ps.add("tiny", std::vector<double>(10, 1.0), {10});  // < 64 elements: never dead
  set_grad(dead, g95);
  set_grad(alive, g50);
  set_grad(tiny, std::vector<double>(10, 0.0));
  GradMonitor mon(*ps.m, {.vanishing_floor = 0});
  mon.after_backward(2);
  mon.after_step();
  const auto d = flags_of(mon, "dead_units");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0]->param, "dead");
  EXPECT_EQ(d[0]->step, 2);
  EXPECT_DOUBLE_EQ(d[0]->value, 0.95);
  EXPECT_EQ(mon.flags().size(), 1u);  // the floor 0 keeps "tiny" (norm 0) from vanishing
}

// ---- sampling ----

TEST(GradMonitor, EveryThirdStep) {
  Params ps;
  Tensor a = ps.add("p", {1, 1}, {2});
  GradMonitor mon(*ps.m, {.every = 3});
  for (int64_t step = 0; step < 8; ++step) {
    set_grad(a, {static_cast<double>(step), 0});
    mon.after_backward(step);
    add_to(a, {0, 1});
    mon.after_step();
  }
  ASSERT_EQ(mon.records().size(), 3u);
  EXPECT_EQ(mon.records()[0].step, 0);
  EXPECT_EQ(mon.records()[1].step, 3);
  EXPECT_EQ(mon.records()[2].step, 6);
  EXPECT_DOUBLE_EQ(stats(mon, 2, "p").grad_norm, 6);
  // Weights before step 6: (1, 1 + 6) -> norm sqrt(50); the update moved it by 1.
  EXPECT_NEAR(stats(mon, 2, "p").update_ratio, 1 / (std::sqrt(50.0) + 1e-12), 1e-15);
}

// Consecutive sampled steps reuse the weights read by after_step as the next snapshot
// (Note [Gradient monitor passes]); a write to the weights in between invalidates it.
TEST(GradMonitor, ConsecutiveStepsAndWritesBetweenThem) {
  Params ps;
  Tensor a = ps.add("p", {3, 4}, {2});
  Tensor b = ps.add("q", {1, 0}, {2});  // no gradient
  set_grad(a, {1, 0});
  GradMonitor mon(*ps.m);
  mon.after_backward(0);
  add_to(a, {0, 12});  // (3, 16)
  add_to(b, {0, 1});   // (1, 1)
  mon.after_step();
  mon.after_backward(1);
  add_to(a, {5, -4});  // (8, 12)
  mon.after_step();
  add_to(a, {-8, 3});  // (0, 15): not an optimiser step, but the weights before step 2 all the same
  mon.after_backward(2);
  add_to(a, {0, -3});  // (0, 12)
  mon.after_step();
  ASSERT_EQ(mon.records().size(), 3u);
  EXPECT_DOUBLE_EQ(stats(mon, 0, "p").weight_norm, 5);
  EXPECT_NEAR(stats(mon, 0, "p").update_ratio, 12 / (5 + 1e-12), 1e-15);
  EXPECT_DOUBLE_EQ(stats(mon, 1, "p").weight_norm, std::sqrt(9.0 + 256));
  EXPECT_NEAR(stats(mon, 1, "p").update_ratio, std::sqrt(25.0 + 16) / (std::sqrt(9.0 + 256) + 1e-12), 1e-15);
  EXPECT_DOUBLE_EQ(stats(mon, 2, "p").weight_norm, 15);
  EXPECT_NEAR(stats(mon, 2, "p").update_ratio, 3 / (15 + 1e-12), 1e-15);
  EXPECT_DOUBLE_EQ(stats(mon, 0, "q").weight_norm, 1);
  EXPECT_NEAR(stats(mon, 0, "q").update_ratio, 1 / (1 + 1e-12), 1e-15);
  EXPECT_DOUBLE_EQ(stats(mon, 1, "q").weight_norm, std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(stats(mon, 1, "q").update_ratio, 0);
}

TEST(GradMonitor, MissingAfterStepLeavesTheRatioUnknown) {
  Params ps;
  Tensor a = ps.add("p", {3, 4}, {2});
  set_grad(a, {1, 0});
  GradMonitor mon(*ps.m);
  mon.after_backward(0);
  mon.after_backward(1);  // completes step 0 without a ratio
  mon.after_step();
  ASSERT_EQ(mon.records().size(), 2u);
  EXPECT_TRUE(std::isnan(stats(mon, 0, "p").update_ratio));
  EXPECT_DOUBLE_EQ(stats(mon, 1, "p").update_ratio, 0);
}

TEST(GradMonitor, Errors) {
  Params ps;
  ps.add("p", {1}, {1});
  EXPECT_TRUE(throws_error([&] { GradMonitor(*ps.m, {.every = 0}); }, {"GradMonitor", "every"}));
  EXPECT_TRUE(throws_error([&] { GradMonitor(*ps.m, {.jsonl_path = "/nonexistent-dir/x/grads.jsonl"}); },
                           {"GradMonitor", "/nonexistent-dir/x/grads.jsonl"}));
}

// ---- a real training loop and the JSON Lines file ----

TEST(GradMonitor, TrainingLoopAndJsonLines) {
  const std::string path = temp_path("training");
  manual_seed(0);
  auto model = two_layers();
  const double lr = 0.1;
  optim::SGD opt(model->parameters(), optim::SGDOptions(lr));
  Generator gen(7);
  const Tensor x = randn({16, 2}, kFloat64, &gen);
  const Tensor y = randn({16, 2}, kFloat64, &gen);

  std::vector<std::vector<double>> expected_ratio;  // per step, per parameter: lr * ||g|| / ||w||
  {
    GradMonitor mon(*model, {.every = 2, .exploding_ceiling = 0.05, .jsonl_path = path});
    for (int64_t step = 0; step < 5; ++step) {
      opt.zero_grad();
      nn::functional::mse_loss(model->forward(x), y).backward();
      if (step == 4) param(model, "0.bias").mutable_grad().fill_(kNaN);  // a non-finite gradient
      if (step % 2 == 0) {
        // Plain SGD moves each weight by lr * g, so the ratio is lr * ||g|| / (||w|| + 1e-12), up to
        // the rounding of w - lr * g.
        std::vector<double> r;
        for (const auto& item : model->named_parameters()) {
          double gsq = 0, wsq = 0;
          for (double v : values(item.value().grad())) gsq += v * v;
          for (double v : values(item.value())) wsq += v * v;
          r.push_back(lr * std::sqrt(gsq) / (std::sqrt(wsq) + 1e-12));
        }
        expected_ratio.push_back(r);
      }
      mon.after_backward(step);
      opt.step();
      mon.after_step();
    }

    ASSERT_EQ(mon.records().size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      const auto& ps = mon.records()[k].params;
      ASSERT_EQ(ps.size(), 4u);
      for (size_t i = 0; i < ps.size(); ++i) {
        if (k == 2 && ps[i].name == "0.bias") continue;  // nan
        EXPECT_NEAR(ps[i].update_ratio, expected_ratio[k][i], 1e-10 * expected_ratio[k][i]) << k << " " << i;
      }
    }
    ASSERT_FALSE(mon.flags().empty());

    // The file, line by line.
    std::ifstream in(path);
    std::string line;
    std::vector<nlohmann::json> lines;
    while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(lines.size(), 1 + mon.records().size() + mon.flags().size());
    const nlohmann::json& head = lines[0];
    EXPECT_EQ(head["type"], "monitor");
    EXPECT_EQ(head["version"], 1);
    ASSERT_EQ(head["params"].size(), 4u);
    EXPECT_EQ(head["params"][0]["name"], "0.weight");
    EXPECT_EQ(head["params"][0]["shape"], nlohmann::json({3, 2}));
    EXPECT_EQ(head["params"][3]["name"], "2.bias");
    EXPECT_EQ(head["params"][3]["shape"], nlohmann::json({2}));
    EXPECT_EQ(head["options"]["every"], 2);
    EXPECT_EQ(head["options"]["exploding_ceiling"], 0.05);
    EXPECT_EQ(head["options"]["raise_on_nonfinite"], false);

    size_t rec = 0, flag = 0;
    for (size_t l = 1; l < lines.size(); ++l) {
      const nlohmann::json& j = lines[l];
      if (j["type"] == "grad") {
        ASSERT_LT(rec, mon.records().size());
        const auto& r = mon.records()[rec++];
        EXPECT_EQ(j["step"], r.step);
        ASSERT_EQ(j["params"].size(), r.params.size());
        for (const ParamStats& s : r.params) {
          const nlohmann::json& p = j["params"].at(s.name);
          const auto same = [&](const char* key, double v) {
            if (std::isfinite(v)) EXPECT_EQ(p.at(key).get<double>(), v) << key;  // round-trips exactly
            else EXPECT_TRUE(p.at(key).is_null()) << key;
          };
          same("grad_norm", s.grad_norm);
          same("grad_max", s.grad_max);
          same("weight_norm", s.weight_norm);
          same("update_ratio", s.update_ratio);
          same("zero_fraction", s.zero_fraction);
          EXPECT_EQ(p.at("nan").get<int64_t>(), s.nan_count);
          EXPECT_EQ(p.at("inf").get<int64_t>(), s.inf_count);
        }
      } else {
        ASSERT_EQ(j["type"], "flag");
        ASSERT_LT(flag, mon.flags().size());
        const Flag& f = mon.flags()[flag++];
        EXPECT_EQ(j["step"], f.step);
        EXPECT_EQ(j["kind"], f.kind);
        EXPECT_EQ(j["param"], f.param);
        EXPECT_EQ(j["value"].get<double>(), f.value);
        EXPECT_EQ(j["message"], f.message);
      }
    }
    EXPECT_EQ(rec, mon.records().size());
    // Step 4's nan gradient: null in the file, a "nonfinite" flag naming 0.bias.
    EXPECT_TRUE(lines[0].contains("params"));
    bool saw_nonfinite = false;
    for (const Flag& f : mon.flags()) saw_nonfinite |= f.kind == "nonfinite" && f.param == "0.bias" && f.step == 4;
    EXPECT_TRUE(saw_nonfinite);
  }
  std::filesystem::remove(path);
}

TEST(GradMonitor, DestructionCompletesAPendingStepAndConstructionTruncates) {
  const std::string path = temp_path("pending");
  {
    std::ofstream old(path);
    old << "old content\nmore\n";
  }
  Params ps;
  Tensor a = ps.add("p", {3, 4}, {2});
  set_grad(a, {0, 0});
  {
    GradMonitor mon(*ps.m, {.jsonl_path = path});
    mon.after_backward(9);  // no after_step
  }
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 3u);  // monitor, grad, flag (norm 0 < floor)
  EXPECT_EQ(lines[0]["type"], "monitor");
  EXPECT_EQ(lines[1]["type"], "grad");
  EXPECT_EQ(lines[1]["step"], 9);
  EXPECT_TRUE(lines[1]["params"]["p"]["update_ratio"].is_null());
  EXPECT_EQ(lines[1]["params"]["p"]["weight_norm"], 5.0);
  EXPECT_EQ(lines[2]["kind"], "vanishing");
  std::filesystem::remove(path);
}

// Names and messages are escaped: a parameter name with a quote, a backslash and a tab.
TEST(GradMonitor, JsonLinesEscapeNames) {
  const std::string path = temp_path("escape");
  const std::string name = "we\"ird\\na\tme";
  Params ps;
  Tensor a = ps.add(name, {1, 2}, {2});
  set_grad(a, {0, 0});  // norm 0: a vanishing flag whose message holds the name
  {
    GradMonitor mon(*ps.m, {.jsonl_path = path});
    mon.after_backward(0);
    mon.after_step();
  }
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["params"][0]["name"], name);
  EXPECT_TRUE(lines[1]["params"].contains(name));
  EXPECT_EQ(lines[1]["params"][name]["grad_norm"], 0.0);
  EXPECT_EQ(lines[1]["params"][name]["zero_fraction"], 1.0);
  EXPECT_EQ(lines[2]["param"], name);
  EXPECT_NE(lines[2]["message"].get<std::string>().find(name), std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace graft::test

namespace graft::test {
namespace {

// Note [Update statistics]: SGD's own loop reports ||w_before||^2 and ||update||^2; by hand for
// w = (3, 4), g = (1, 0), lr 0.5: update (-0.5, 0).
TEST(UpdateStats, SgdReportsWeightAndUpdateNormsByHand) {
  Tensor w = tensor(std::vector<double>{3.0, 4.0}, kFloat64).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.5));
  EXPECT_TRUE(opt.supports_update_stats());
  opt.record_update_stats(true);
  w.mutable_grad() = tensor(std::vector<double>{1.0, 0.0}, kFloat64);
  opt.step();
  const auto* u = opt.update_stats(w);
  ASSERT_NE(u, nullptr);
  EXPECT_DOUBLE_EQ(u->weight_sq, 25.0);
  EXPECT_DOUBLE_EQ(u->update_sq, 0.25);
  EXPECT_EQ(u->step, 1);
  EXPECT_EQ(opt.steps_taken(), 1);
  // Adam does not record them
  Tensor v = zeros({2}).requires_grad_();
  optim::Adam adam({v}, optim::AdamOptions(0.1));
  adam.record_update_stats(true);
  EXPECT_FALSE(adam.recording_update_stats());
}

// With the optimiser given, the monitor's ratios come from SGD's loop; they equal the ones it
// computes from its own weight snapshots (float64, SGD with momentum, every step, 2000+ elements).
TEST(GradMonitor, FusedWithSgdMatchesTheSnapshotWay) {
  auto make = [] {
    manual_seed(3);
    return nn::Sequential(nn::Linear(40, 50), nn::Tanh(), nn::Linear(50, 3));
  };
  nn::Sequential a = make(), b = make();
  a->to(kFloat64);
  b->to(kFloat64);
  optim::SGD oa(a->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  optim::SGD ob(b->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  GradMonitor fused(*a, {.optimizer = &oa});
  GradMonitor snap(*b);
  Generator gen(11);
  const Tensor x = randn({8, 40}, kFloat64, &gen), y = randn({8, 3}, kFloat64, &gen);
  for (int64_t step = 0; step < 4; ++step) {
    for (auto* run : {&a, &b}) {
      optim::SGD& o = run == &a ? oa : ob;
      GradMonitor& m = run == &a ? fused : snap;
      o.zero_grad();
      nn::functional::mse_loss((*run)->forward(x), y).backward();
      m.after_backward(step);
      o.step();
      m.after_step();
    }
  }
  ASSERT_EQ(fused.records().size(), 4u);
  for (size_t k = 0; k < 4; ++k)
    for (size_t i = 0; i < 4; ++i) {
      const auto& f = fused.records()[k].params[i];
      const auto& s = snap.records()[k].params[i];
      EXPECT_NEAR(f.grad_norm, s.grad_norm, 1e-12 * s.grad_norm);
      EXPECT_NEAR(f.weight_norm, s.weight_norm, 1e-12 * s.weight_norm) << k << " " << i;
      EXPECT_GT(f.update_ratio, 0);
      EXPECT_NEAR(f.update_ratio, s.update_ratio, 1e-9 * s.update_ratio) << k << " " << i;
    }
}

}  // namespace
}  // namespace graft::test
