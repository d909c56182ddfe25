// Reader of the PyTorch fixture files of tests/fixtures/ in the case format (the activation/loss,
// norm/resample and sequence-model fixtures; the generators' docstrings give each file's roles):
//   case <name> <kind>                 one case; kind says what the case builds or calls
//   param <key> <value>                an option (lists comma-separated)
//   t <role> [f64|i64] <ndim> <sizes...> <values...>   a tensor, float64 unless marked i64
//   end
// '#' starts a comment line. A malformed line is an error naming the file and the line.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graft/graft.h"

namespace graft::test {

struct FixtureCase {
  std::string name, kind;
  std::map<std::string, std::string> params;
  std::map<std::string, Tensor> tensors;  // by role (shared by every test: clone before changing one)

  const std::string& param(const std::string& key) const;  // throws when missing
  double number(const std::string& key) const;
  double number(const std::string& key, double dflt) const { return params.count(key) ? number(key) : dflt; }
  std::vector<double> numbers(const std::string& key) const;  // a comma-separated list
  bool flag(const std::string& key) const;  // "1"/"true" or "0"/"false"
  bool has(const std::string& role) const { return tensors.count(role) != 0; }
  const Tensor& tensor(const std::string& role) const;  // throws when missing
};

// Reads tests/fixtures/<file>.
std::vector<FixtureCase> load_fixture_cases(const std::string& file);

// Copies the case's "<prefix><name>" tensors into the module's parameters of the same names, and
// checks that PyTorch and graft have the same parameter names (none missing, none extra).
void copy_parameters(nn::Module& module, const FixtureCase& c, const std::string& prefix = "p.");
// Checks every parameter's gradient (none counts as zero) against "grad.p.<name>".
void expect_parameter_grads(const nn::Module& module, const FixtureCase& c, double tol);

}  // namespace graft::test
