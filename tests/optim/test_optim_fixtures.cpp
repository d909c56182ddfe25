// Optimisers and LR schedulers against trajectories and lr sequences computed by PyTorch 1.13.
// tests/fixtures/optim_fixtures.txt and lr_scheduler_fixtures.txt are written by
// tests/fixtures/gen_optim_fixtures.py (format in its docstring); these tests only read them.
//
// The trajectories train a small float64 MLP for 30 steps with graft's own autograd computing the
// gradients; losses and parameters must match PyTorch's to 1e-10.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"
#include "optim_test_helpers.h"

namespace graft::test {
namespace {

std::filesystem::path fixture_dir() { return std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures"; }

struct FixtureTensor {
  std::vector<int64_t> sizes;
  std::vector<double> values;
  Tensor make() const { return graft::test::make(values, sizes, kFloat64); }
};

// One record: the lines between "case"/"sched" and "end", split into words.
struct Record {
  std::string kind, name, type;
  std::vector<std::vector<std::string>> lines;
};

struct FixtureFile {
  std::map<std::string, FixtureTensor> tensors;  // top-level "t" lines
  std::vector<Record> records;
};

std::vector<double> numbers(const std::vector<std::string>& words, size_t from) {
  std::vector<double> out;
  for (size_t i = from; i < words.size(); ++i) out.push_back(std::stod(words[i]));
  return out;
}

// "t <name> f64 <ndim> <sizes...> <values...>"
std::pair<std::string, FixtureTensor> parse_tensor(const std::vector<std::string>& w) {
  if (w.size() < 4 || w[2] != "f64") throw std::runtime_error("bad tensor line");
  FixtureTensor t;
  const int64_t ndim = std::stoll(w[3]);
  int64_t numel = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    t.sizes.push_back(std::stoll(w.at(4 + d)));
    numel *= t.sizes.back();
  }
  t.values = numbers(w, 4 + static_cast<size_t>(ndim));
  if (static_cast<int64_t>(t.values.size()) != numel) throw std::runtime_error("tensor " + w[1] + ": wrong count");
  return {w[1], t};
}

FixtureFile load_fixture_file(const std::string& file) {
  std::ifstream f(fixture_dir() / file);
  if (!f) throw std::runtime_error("cannot open " + (fixture_dir() / file).string());
  FixtureFile out;
  Record* current = nullptr;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::vector<std::string> w;
    for (std::string s; in >> s;) w.push_back(s);
    if (w[0] == "case" || w[0] == "sched") {
      out.records.push_back({w[0], w.at(1), w.size() > 2 ? w[2] : "", {}});
      current = &out.records.back();
    } else if (w[0] == "end") {
      current = nullptr;
    } else if (current) {
      current->lines.push_back(w);
    } else if (w[0] == "t") {
      out.tensors.insert(parse_tensor(w));
    } else {
      throw std::runtime_error("unexpected line: " + line);
    }
  }
  return out;
}

// Loading never throws during test registration: a broken file leaves no records and an error
// that FixtureFiles.Load reports.
std::string& load_error() {
  static std::string e;
  return e;
}
FixtureFile load_or_empty(const std::string& file) {
  try {
    return load_fixture_file(file);
  } catch (const std::exception& e) {
    load_error() += file + ": " + e.what() + "\n";
    return {};
  }
}
const FixtureFile& optim_fixtures() {
  static const FixtureFile f = load_or_empty("optim_fixtures.txt");
  return f;
}
const FixtureFile& scheduler_fixtures() {
  static const FixtureFile f = load_or_empty("lr_scheduler_fixtures.txt");
  return f;
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);) out.push_back(part);
  return out;
}

// "scheduler <Type> k=v ..." -> (type, args)
std::pair<std::string, std::map<std::string, std::string>> parse_scheduler(const std::vector<std::string>& w) {
  std::map<std::string, std::string> args;
  for (size_t i = 2; i < w.size(); ++i) {
    const size_t eq = w[i].find('=');
    args[w[i].substr(0, eq)] = w[i].substr(eq + 1);
  }
  return {w.at(1), args};
}

::testing::AssertionResult close(double actual, double expected, double atol, double rtol) {
  if (std::abs(actual - expected) <= atol + rtol * std::abs(expected)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << actual << ", expected " << expected << " (diff "
                                       << actual - expected << ")";
}

TEST(OptimFixtures, FilesLoad) {
  optim_fixtures();
  scheduler_fixtures();
  ASSERT_EQ(load_error(), "");
  EXPECT_GE(optim_fixtures().records.size(), 25u);
  EXPECT_GE(scheduler_fixtures().records.size(), 15u);
  std::map<std::string, int> per_type;
  for (const auto& r : optim_fixtures().records) ++per_type[r.type];
  for (const char* t : {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad"}) EXPECT_GE(per_type[t], 3) << t;
}

class Trajectory : public ::testing::TestWithParam<size_t> {};

TEST_P(Trajectory, MatchesPyTorch) {
  const FixtureFile& file = optim_fixtures();
  const Record& rec = file.records.at(GetParam());
  SCOPED_TRACE(rec.name);
  const Tensor x = file.tensors.at("x").make(), y = file.tensors.at("y").make();
  std::map<std::string, Tensor> params;
  const std::vector<std::string> names = {"w1", "b1", "w2", "b2"};
  for (const auto& n : names) params[n] = file.tensors.at(n).make().requires_grad_();

  OptionList defaults;
  std::vector<optim::OptimizerParamGroup> groups;
  std::vector<OptionList> group_overrides;
  std::vector<std::string> nograd;
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> scheds;
  std::vector<double> losses;
  std::map<std::string, FixtureTensor> snapshots;
  int64_t steps = 0;
  for (const auto& w : rec.lines) {
    if (w[0] == "option") {
      defaults.push_back({w.at(1), numbers(w, 2)});
    } else if (w[0] == "group") {
      std::vector<Tensor> ps;
      for (const auto& n : split_on(w.at(1), ',')) ps.push_back(params.at(n));
      groups.emplace_back(ps);
      OptionList over;
      for (size_t i = 2; i < w.size();) {  // key value [value]
        const std::string key = w[i++];
        std::vector<double> vals;
        while (i < w.size() && (std::isdigit(static_cast<unsigned char>(w[i][0])) || w[i][0] == '-'))
          vals.push_back(std::stod(w[i++]));
        over.push_back({key, vals});
      }
      group_overrides.push_back(over);
    } else if (w[0] == "nograd") {
      nograd.push_back(w.at(1));
    } else if (w[0] == "scheduler") {
      scheds.push_back(parse_scheduler(w));
    } else if (w[0] == "steps") {
      steps = std::stoll(w.at(1));
    } else if (w[0] == "loss") {
      losses = numbers(w, 1);
    } else if (w[0] == "t") {
      snapshots.insert(parse_tensor(w));
    }
  }
  ASSERT_EQ(static_cast<int64_t>(losses.size()), steps);

  std::unique_ptr<optim::OptimizerOptions> defaults_opts = make_options(rec.type, defaults);
  if (groups.empty()) {
    std::vector<Tensor> all;
    for (const auto& n : names) all.push_back(params[n]);
    groups.emplace_back(all);
  } else {
    for (size_t g = 0; g < groups.size(); ++g) {
      auto o = defaults_opts->clone();
      for (const auto& [k, v] : group_overrides[g]) set_option(*o, k, v);
      groups[g].set_options(std::move(o));
    }
  }
  auto opt = make_optimizer(rec.type, groups, *defaults_opts);
  std::vector<AnyScheduler> schedulers;
  for (const auto& [type, args] : scheds) schedulers.push_back(make_scheduler(*opt, type, args));

  for (int64_t step = 1; step <= steps; ++step) {
    opt->zero_grad();
    Tensor loss = mlp_loss(x, y, params["w1"], params["b1"], params["w2"], params["b2"]);
    loss.backward();
    for (const auto& n : nograd) params[n].mutable_grad() = Tensor();
    ASSERT_TRUE(close(loss.item<double>(), losses[step - 1], 1e-10, 1e-10)) << "loss before step " << step;
    opt->step();
    for (auto& s : schedulers) s.step();
    for (const auto& n : names) {
      auto it = snapshots.find(n + "@" + std::to_string(step));
      if (it == snapshots.end()) continue;
      ASSERT_TRUE(all_close(params[n], it->second.values, it->second.sizes, 1e-10, 1e-10))
          << n << " after step " << step;
    }
  }
  for (const auto& n : nograd) {  // never updated
    EXPECT_TRUE(all_close(params[n], file.tensors.at(n).values, file.tensors.at(n).sizes, 0, 0)) << n;
    EXPECT_EQ(opt->state_of(params[n]), nullptr) << n;
  }
}

std::string record_name(const ::testing::TestParamInfo<size_t>& info, const FixtureFile& f) {
  return f.records.at(info.param).name;
}

std::vector<size_t> indices(size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

INSTANTIATE_TEST_SUITE_P(PyTorch, Trajectory, ::testing::ValuesIn(indices(optim_fixtures().records.size())),
                         [](const auto& info) { return record_name(info, optim_fixtures()); });

class Schedule : public ::testing::TestWithParam<size_t> {};

TEST_P(Schedule, MatchesPyTorch) {
  const Record& rec = scheduler_fixtures().records.at(GetParam());
  SCOPED_TRACE(rec.name);
  std::string opt_type;
  std::vector<double> lrs, metrics;
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> scheds;
  std::map<int, std::vector<double>> lr_seq, mom_seq;
  int64_t steps = 0;
  for (const auto& w : rec.lines) {
    if (w[0] == "optimizer") {
      opt_type = w.at(1);
      lrs = numbers(w, 2);
    } else if (w[0] == "scheduler") {
      scheds.push_back(parse_scheduler(w));
    } else if (w[0] == "metrics") {
      metrics = numbers(w, 1);
    } else if (w[0] == "steps") {
      steps = std::stoll(w.at(1));
    } else if (w[0] == "lr") {
      lr_seq[std::stoi(w.at(1))] = numbers(w, 2);
    } else if (w[0] == "momentum") {
      mom_seq[std::stoi(w.at(1))] = numbers(w, 2);
    }
  }
  std::vector<optim::OptimizerParamGroup> groups;
  for (double lr : lrs) {
    auto o = make_options(opt_type, {{"lr", {lr}}});
    if (opt_type == "SGD") set_option(*o, "momentum", {0.9});
    groups.emplace_back(std::vector<Tensor>{zeros({2}, kFloat64).requires_grad_()}, std::move(o));
  }
  auto defaults = make_options(opt_type, opt_type == "SGD" ? OptionList{{"lr", {lrs[0]}}, {"momentum", {0.9}}}
                                                           : OptionList{{"lr", {lrs[0]}}});
  auto opt = make_optimizer(opt_type, groups, *defaults);
  std::vector<AnyScheduler> schedulers;
  for (const auto& [type, args] : scheds) schedulers.push_back(make_scheduler(*opt, type, args));

  auto momentum_of = [&](size_t g) {
    auto& o = opt->param_groups()[g].options();
    if (opt_type == "SGD") return static_cast<optim::SGDOptions&>(o).momentum();
    return std::get<0>(static_cast<optim::AdamOptions&>(o).betas());
  };
  auto check = [&](int64_t k) {
    for (size_t g = 0; g < lrs.size(); ++g) {
      ASSERT_TRUE(close(opt->param_groups()[g].options().lr(), lr_seq.at(static_cast<int>(g)).at(k), 1e-15, 1e-12))
          << "lr of group " << g << " after " << k << " steps";
      if (mom_seq.count(static_cast<int>(g))) {
        ASSERT_TRUE(close(momentum_of(g), mom_seq.at(static_cast<int>(g)).at(k), 1e-15, 1e-12))
            << "momentum of group " << g << " after " << k << " steps";
      }
    }
  };
  check(0);
  if (HasFatalFailure()) return;
  for (int64_t k = 1; k <= steps; ++k) {
    opt->step();
    for (auto& s : schedulers) s.step(metrics.empty() ? 0.0 : metrics.at(k - 1));
    check(k);
    if (HasFatalFailure()) return;
    // get_last_lr() reports what the last-stepped scheduler left in the groups.
    const AnyScheduler& last = schedulers.back();
    const std::vector<double>& reported = last.lr ? last.lr->get_last_lr() : last.plateau->get_last_lr();
    ASSERT_EQ(reported.size(), lrs.size());
    for (size_t g = 0; g < lrs.size(); ++g) EXPECT_EQ(reported[g], opt->param_groups()[g].options().lr());
  }
}

INSTANTIATE_TEST_SUITE_P(PyTorch, Schedule, ::testing::ValuesIn(indices(scheduler_fixtures().records.size())),
                         [](const auto& info) { return record_name(info, scheduler_fixtures()); });

}  // namespace
}  // namespace graft::test
