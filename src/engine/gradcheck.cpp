// gradcheck / gradgradcheck: analytical Jacobian (one backward per output element) against the
// central finite-difference Jacobian (two forwards per input element), in float64.
#include "graft/engine/gradcheck.h"

#include <cmath>
#include <sstream>

#include "graft/engine/engine.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/error.h"
#include "graft/core/factory.h"
#include "graft/ops/ops.h"

namespace graft::autograd {

namespace {

// Element offsets (in elements, from the data pointer) of `t` in row-major order.
std::vector<int64_t> element_offsets(const Tensor& t) {
  std::vector<int64_t> offs;
  offs.reserve(static_cast<size_t>(t.numel()));
  std::vector<int64_t> idx(static_cast<size_t>(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[static_cast<size_t>(d)] * t.stride(d);
    offs.push_back(off);
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < t.size(d)) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return offs;
}

std::vector<double> values(const Tensor& t) {
  Tensor c = t.detach().to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return {p, p + c.numel()};
}

// Runs with grad mode as it is: gradgradcheck's function itself calls autograd::grad.
Tensor eval(const TestFunction& fn, const TensorList& inputs) { return fn(inputs); }

bool fail(const GradcheckOptions& o, const std::string& msg) {
  if (o.raise_exception) throw Error("gradcheck", msg);
  return false;
}

}  // namespace

bool gradcheck(const TestFunction& fn, const TensorList& inputs, const GradcheckOptions& opts) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined() || !in.requires_grad()) continue;
    GRAFT_CHECK(in.dtype() == kFloat64, "gradcheck", "float64 inputs (finite differences need the precision)",
                std::string("input ") + std::to_string(i) + " of dtype " + dtype_name(in.dtype()),
                "convert inputs with .to(graft::kFloat64)");
    GRAFT_CHECK(in.is_leaf(), "gradcheck", "leaf inputs", "input " + std::to_string(i) + " is not a leaf",
                "pass x.detach().requires_grad_() instead");
  }
  Tensor out = fn(inputs);
  GRAFT_CHECK(out.defined() && out.is_floating_point(), "gradcheck", "a floating-point output",
              out.defined() ? dtype_name(out.dtype()) : "an undefined tensor",
              "gradcheck differentiates floating-point outputs; use float64 inputs");
  const int64_t n_out = out.numel();
  std::vector<double> base = values(out);

  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined() || !in.requires_grad()) continue;
    const int64_t n_in = in.numel();
    // Numerical Jacobian: column j = (f(x + eps e_j) - f(x - eps e_j)) / (2 eps).
    std::vector<double> numeric(static_cast<size_t>(n_in * n_out));
    double* data = static_cast<double*>(in.data_ptr());
    const auto offs = element_offsets(in);
    for (int64_t j = 0; j < n_in; ++j) {
      double& x = data[offs[static_cast<size_t>(j)]];
      const double orig = x;
      x = orig + opts.eps;
      auto plus = values(eval(fn, inputs));
      x = orig - opts.eps;
      auto minus = values(eval(fn, inputs));
      x = orig;
      for (int64_t k = 0; k < n_out; ++k)
        numeric[static_cast<size_t>(k * n_in + j)] =
            (plus[static_cast<size_t>(k)] - minus[static_cast<size_t>(k)]) / (2 * opts.eps);
    }
    // Analytical Jacobian: row k = d out_k / d in, by one backward with a one-hot grad_output.
    for (int64_t k = 0; k < n_out; ++k) {
      Tensor y = fn(inputs);
      if (!y.requires_grad()) {
        for (int64_t j = 0; j < n_in; ++j)
          if (std::abs(numeric[static_cast<size_t>(k * n_in + j)]) > opts.atol)
            return fail(opts, "the output does not require grad but the numerical gradient for input " +
                                  std::to_string(i) + " is non-zero");
        continue;
      }
      Tensor go = zeros(y.sizes(), y.dtype());
      static_cast<double*>(go.data_ptr())[k] = 1.0;
      auto g = grad({y}, {in}, {go}, false, false, /*allow_unused=*/true)[0];
      std::vector<double> a = g.defined() ? values(g) : std::vector<double>(static_cast<size_t>(n_in), 0.0);
      for (int64_t j = 0; j < n_in; ++j) {
        const double an = a[static_cast<size_t>(j)], nu = numeric[static_cast<size_t>(k * n_in + j)];
        if (!(std::abs(an - nu) <= opts.atol + opts.rtol * std::abs(nu))) {
          std::ostringstream os;
          os << "Jacobian mismatch for output element " << k << " with respect to input " << i << " (shape "
             << shape_str(in.sizes()) << "), element " << j << ": analytical " << an << ", numerical " << nu
             << " (atol " << opts.atol << ", rtol " << opts.rtol << ")";
          return fail(opts, os.str());
        }
      }
    }
  }
  return true;
}

bool gradgradcheck(const TestFunction& fn, const TensorList& inputs, const GradcheckOptions& opts) {
  Tensor out = fn(inputs);
  GRAFT_CHECK(out.requires_grad(), "gradgradcheck", "an output that requires grad", "one that does not",
              "make the output depend on an input that requires grad");
  // Random grad_outputs (fixed seed), themselves differentiable inputs of the new function.
  Generator gen(1234);
  Tensor v = randn(out.sizes(), kFloat64, &gen).requires_grad_();
  std::vector<size_t> diff;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) diff.push_back(i);
  TensorList all = inputs;
  all.push_back(v);
  auto first_derivative = [&fn, diff, n = inputs.size()](const TensorList& args) -> Tensor {
    TensorList ins(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(n));
    Tensor y = fn(ins);
    TensorList wrt;
    for (size_t i : diff) wrt.push_back(ins[i]);
    auto gs = grad({y}, wrt, {args[n]}, true, /*create_graph=*/true, /*allow_unused=*/true);
    TensorList flat;
    for (size_t j = 0; j < gs.size(); ++j)
      flat.push_back(gs[j].defined() ? gs[j].reshape({-1}) : zeros({wrt[j].numel()}, kFloat64));
    return cat(flat, 0);
  };
  return gradcheck(first_derivative, all, opts);
}

}  // namespace graft::autograd
