// LibTorch-style source (tests/porting, docs/porting.md): the activations of issue 32, PReLU, RReLU,
// CELU, Softsign, Tanhshrink, Threshold, Softshrink, Hardshrink, LogSigmoid, as modules, as
// torch::nn::functional calls and as torch:: ops, with their printing. Ported by
// tools/port-from-libtorch.sh and built against graft; where LibTorch is installed, also built
// unchanged against it and the outputs compared. The expected values are PyTorch 1.13's (float64).
#include <torch/torch.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "porting_checks.h"

namespace {

namespace F = torch::nn::functional;
using porting::check;
using porting::show;

template <class M> void print_module(const std::string& name, const M& module) {
  std::ostringstream s;
  s << module;
  std::printf("%s: %s\n", name.c_str(), s.str().c_str());
}

}  // namespace

int main() {
  auto x = torch::tensor({-3.0, -1.0, -0.5, 0.0, 0.5, 2.5}, torch::kFloat64).requires_grad_();

  // ---- functionals and torch:: ops: values at the edges (0, +-lambda, the threshold) ----
  show("prelu", F::prelu(x, torch::tensor({0.25}, torch::kFloat64)), {-0.75, -0.25, -0.125, 0, 0.5, 2.5});
  show("celu", F::celu(x, F::CELUFuncOptions().alpha(2.0)),
       {-1.55373968, -0.786938681, -0.442398434, 0, 0.5, 2.5});
  show("torch_celu", torch::celu(x, 2.0), {-1.55373968, -0.786938681, -0.442398434, 0, 0.5, 2.5});
  show("softsign", F::softsign(x), {-0.75, -0.5, -0.333333333, 0, 0.333333333, 0.714285714});
  show("tanhshrink", F::tanhshrink(x), {-2.00494525, -0.238405844, -0.0378828427, 0, 0.0378828427, 1.5133857});
  show("threshold", F::threshold(x, F::ThresholdFuncOptions(0.5, -2.0)), {-2, -2, -2, -2, -2, 2.5});
  show("torch_threshold", torch::threshold(x, 0.5, -2.0), {-2, -2, -2, -2, -2, 2.5});
  show("softshrink", F::softshrink(x, F::SoftshrinkFuncOptions(0.5)), {-2.5, -0.5, 0, 0, 0, 2});
  show("torch_softshrink", torch::softshrink(x, 0.5), {-2.5, -0.5, 0, 0, 0, 2});
  show("hardshrink", F::hardshrink(x, F::HardshrinkFuncOptions().lambda(0.5)), {-3, -1, 0, 0, 0, 2.5});
  show("torch_hardshrink", torch::hardshrink(x, 0.5), {-3, -1, 0, 0, 0, 2.5});
  show("logsigmoid", F::logsigmoid(x),
       {-3.04858735, -1.31326169, -0.974076984, -0.693147181, -0.474076984, -0.0788897343});
  show("torch_log_sigmoid", torch::log_sigmoid(x),
       {-3.04858735, -1.31326169, -0.974076984, -0.693147181, -0.474076984, -0.0788897343});
  show("rrelu_eval", F::rrelu(x, F::RReLUFuncOptions().lower(0.1).upper(0.3)), {-0.6, -0.2, -0.1, 0, 0.5, 2.5});
  show("torch_rrelu_eval", torch::rrelu(x, 0.1, 0.3, false), {-0.6, -0.2, -0.1, 0, 0.5, 2.5});

  // ---- gradients ----
  show("logsigmoid_grad", torch::autograd::grad({F::logsigmoid(x).sum()}, {x})[0],
       {0.952574127, 0.731058579, 0.622459331, 0.5, 0.377540669, 0.07585818});
  show("celu_grad", torch::autograd::grad({F::celu(x, F::CELUFuncOptions().alpha(2.0)).sum()}, {x})[0],
       {0.22313016, 0.60653066, 0.778800783, 1, 1, 1});
  show("softshrink_grad", torch::autograd::grad({F::softshrink(x, F::SoftshrinkFuncOptions(0.5)).sum()}, {x})[0],
       {1, 1, 0, 0, 0, 1});

  // ---- PReLU: one weight per channel, its gradient ----
  torch::nn::PReLU prelu(torch::nn::PReLUOptions().num_parameters(3).init(0.1));
  {
    torch::NoGradGuard no_grad;
    prelu->weight.copy_(torch::tensor({0.1, 0.2, 0.3}, torch::kFloat32));
  }
  auto xc = torch::tensor({{-1.0, 2.0, -3.0}, {4.0, -5.0, -6.0}}, torch::kFloat32).requires_grad_();
  auto y = prelu(xc);
  show("prelu_channels", y, {-0.1, 2, -0.9, 4, -1, -1.8});
  y.sum().backward();
  show("prelu_grad_input", xc.grad(), {0.1, 1, 0.3, 1, 0.2, 0.3});
  show("prelu_grad_weight", prelu->weight.grad(), {-1, -5, -9});
  check(prelu->named_parameters().size() == 1 && prelu->named_parameters().keys()[0] == "weight",
        "PReLU has one parameter, weight");

  // ---- RReLU: sampled slopes in training, the mean slope in evaluation ----
  torch::nn::RReLU rrelu(torch::nn::RReLUOptions().lower(0.2).upper(0.4));
  auto neg = -torch::rand({100}, torch::kFloat64) - 0.5;
  auto slopes = rrelu(neg) / neg;
  check(slopes.min().item<double>() >= 0.2 && slopes.max().item<double>() <= 0.4, "RReLU slopes within bounds");
  rrelu->eval();
  check(torch::allclose(rrelu(neg), neg * 0.3), "RReLU in eval is leaky_relu with the mean slope");

  // ---- in place ----
  auto z = torch::tensor({-1.0, 0.25, 2.0}, torch::kFloat64);
  torch::nn::Threshold th(torch::nn::ThresholdOptions(0.5, 9.0).inplace(true));
  th(z);
  show("threshold_inplace", z, {9, 9, 2});

  // ---- printing (LibTorch's pretty_print) ----
  print_module("PReLU", torch::nn::PReLU(torch::nn::PReLUOptions().num_parameters(3)));
  print_module("RReLU", torch::nn::RReLU());
  print_module("RReLU with options", torch::nn::RReLU(torch::nn::RReLUOptions().lower(0.2).upper(0.4).inplace(true)));
  print_module("CELU", torch::nn::CELU(torch::nn::CELUOptions().alpha(2.5).inplace(true)));
  print_module("Softsign", torch::nn::Softsign());
  print_module("Tanhshrink", torch::nn::Tanhshrink());
  print_module("LogSigmoid", torch::nn::LogSigmoid());
  print_module("Threshold", torch::nn::Threshold(1.25, -2));
  print_module("Softshrink", torch::nn::Softshrink(1.5));
  print_module("Hardshrink", torch::nn::Hardshrink(torch::nn::HardshrinkOptions().lambda(2)));
  return porting::finish();
}
