// Helpers shared by the optim tests: building optimisers and schedulers from names and key/value
// options (as the fixture files spell them), the small MLP the trajectories train, and a bit-for-bit
// comparison of float32 values (the update-loop tests).
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace graft::test {

namespace optim = graft::optim;

// Sets one hyper-parameter by its state-dict name ("momentum", "betas", "nesterov").
inline void set_option(optim::OptimizerOptions& o, const std::string& key, const std::vector<double>& values) {
  struct Setter : optim::OptionsVisitor {
    std::string key;
    std::vector<double> values;
    bool found = false;
    void operator()(const char* name, double& v) override {
      if (key == name) v = values.at(0), found = true;
    }
    void operator()(const char* name, bool& v) override {
      if (key == name) v = values.at(0) != 0, found = true;
    }
    void operator()(const char* name, std::tuple<double, double>& v) override {
      if (key == name) v = {values.at(0), values.at(1)}, found = true;
    }
  } setter;
  setter.key = key;
  setter.values = values;
  o.visit(setter);
  if (!setter.found) throw std::runtime_error("no option '" + key + "' in " + o.optimizer_name());
}

using OptionList = std::vector<std::pair<std::string, std::vector<double>>>;

inline std::unique_ptr<optim::OptimizerOptions> make_options(const std::string& type, const OptionList& opts) {
  std::unique_ptr<optim::OptimizerOptions> o;
  if (type == "SGD") o = std::make_unique<optim::SGDOptions>(0.0);
  else if (type == "Adam") o = std::make_unique<optim::AdamOptions>();
  else if (type == "AdamW") o = std::make_unique<optim::AdamWOptions>();
  else if (type == "RMSprop") o = std::make_unique<optim::RMSpropOptions>();
  else if (type == "Adagrad") o = std::make_unique<optim::AdagradOptions>();
  else throw std::runtime_error("unknown optimiser " + type);
  for (const auto& [k, v] : opts) set_option(*o, k, v);
  return o;
}

inline std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& type,
                                                        std::vector<optim::OptimizerParamGroup> groups,
                                                        const optim::OptimizerOptions& defaults) {
  if (type == "SGD")
    return std::make_unique<optim::SGD>(std::move(groups), static_cast<const optim::SGDOptions&>(defaults));
  if (type == "Adam")
    return std::make_unique<optim::Adam>(std::move(groups), static_cast<const optim::AdamOptions&>(defaults));
  if (type == "AdamW")
    return std::make_unique<optim::AdamW>(std::move(groups), static_cast<const optim::AdamWOptions&>(defaults));
  if (type == "RMSprop")
    return std::make_unique<optim::RMSprop>(std::move(groups), static_cast<const optim::RMSpropOptions&>(defaults));
  if (type == "Adagrad")
    return std::make_unique<optim::Adagrad>(std::move(groups), static_cast<const optim::AdagradOptions&>(defaults));
  throw std::runtime_error("unknown optimiser " + type);
}

// Either kind of scheduler.
struct AnyScheduler {
  std::unique_ptr<optim::LRScheduler> lr;
  std::unique_ptr<optim::ReduceLROnPlateau> plateau;
  void step(double metric = 0) {
    if (lr) lr->step();
    else plateau->step(metric);
  }
};

inline std::vector<double> split_numbers(const std::string& s) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::stod(s.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}

// Builds a scheduler from PyTorch's keyword arguments (as strings).
inline AnyScheduler make_scheduler(optim::Optimizer& opt, const std::string& type,
                                   std::map<std::string, std::string> args) {
  auto num = [&](const std::string& k, double def) { return args.count(k) ? std::stod(args.at(k)) : def; };
  auto integer = [&](const std::string& k, int64_t def) { return args.count(k) ? std::stoll(args.at(k)) : def; };
  AnyScheduler s;
  if (type == "StepLR") {
    s.lr = std::make_unique<optim::StepLR>(opt, integer("step_size", 0), num("gamma", 0.1));
  } else if (type == "MultiStepLR") {
    std::vector<int64_t> ms;
    for (double v : split_numbers(args.at("milestones"))) ms.push_back(static_cast<int64_t>(v));
    s.lr = std::make_unique<optim::MultiStepLR>(opt, ms, num("gamma", 0.1));
  } else if (type == "ExponentialLR") {
    s.lr = std::make_unique<optim::ExponentialLR>(opt, num("gamma", 0));
  } else if (type == "CosineAnnealingLR") {
    s.lr = std::make_unique<optim::CosineAnnealingLR>(opt, integer("T_max", 0), num("eta_min", 0));
  } else if (type == "LinearLR") {
    s.lr = std::make_unique<optim::LinearLR>(opt, num("start_factor", 1.0 / 3), num("end_factor", 1.0),
                                             integer("total_iters", 5));
  } else if (type == "ConstantLR") {
    s.lr = std::make_unique<optim::ConstantLR>(opt, num("factor", 1.0 / 3), integer("total_iters", 5));
  } else if (type == "LambdaLR") {
    const std::string which = args.at("lr_lambda");
    optim::LambdaLR::Lambda f;
    if (which == "exp95") f = [](int64_t e) { return std::pow(0.95, static_cast<double>(e)); };
    else if (which == "warmup10") f = [](int64_t e) { return std::min(1.0, static_cast<double>(e + 1) / 10); };
    else throw std::runtime_error("unknown lambda " + which);
    s.lr = std::make_unique<optim::LambdaLR>(opt, f);
  } else if (type == "OneCycleLR") {
    optim::OneCycleLROptions o(num("max_lr", 0), integer("total_steps", 0));
    o.pct_start(num("pct_start", 0.3))
        .div_factor(num("div_factor", 25.0))
        .final_div_factor(num("final_div_factor", 1e4))
        .three_phase(integer("three_phase", 0) != 0)
        .cycle_momentum(integer("cycle_momentum", 1) != 0)
        .base_momentum(num("base_momentum", 0.85))
        .max_momentum(num("max_momentum", 0.95));
    if (args.count("anneal_strategy"))
      o.anneal_strategy(args.at("anneal_strategy") == "linear" ? optim::AnnealStrategy::linear
                                                               : optim::AnnealStrategy::cos);
    s.lr = std::make_unique<optim::OneCycleLR>(opt, o);
  } else if (type == "ReduceLROnPlateau") {
    using P = optim::ReduceLROnPlateau;
    const P::SchedulerMode mode = args.count("mode") && args.at("mode") == "max" ? P::max : P::min;
    const P::ThresholdMode tmode =
        args.count("threshold_mode") && args.at("threshold_mode") == "abs" ? P::abs : P::rel;
    s.plateau = std::make_unique<P>(opt, mode, num("factor", 0.1), integer("patience", 10), num("threshold", 1e-4),
                                    tmode, integer("cooldown", 0), std::vector<double>{num("min_lr", 0)});
  } else {
    throw std::runtime_error("unknown scheduler " + type);
  }
  return s;
}

// The fixtures' model: out = tanh(x w1^T + b1) w2^T + b2, loss = mse_loss(out, y).
inline Tensor mlp_loss(const Tensor& x, const Tensor& y, const Tensor& w1, const Tensor& b1, const Tensor& w2,
                       const Tensor& b2) {
  namespace F = nn::functional;
  return F::mse_loss(F::linear(F::tanh(F::linear(x, w1, b1)), w2, b2), y);
}

// Whether the float32 tensor t holds exactly the bits of v (the update-loop tests).
inline bool same_bits(const Tensor& t, const std::vector<float>& v) {
  return std::memcmp(t.contiguous().data_ptr<float>(), v.data(), v.size() * sizeof(float)) == 0;
}

}  // namespace graft::test
