// Reader of the PyTorch fixture files of tests/fixtures/ in the case format (used by the
// sequence-model fixtures; the generators' docstrings give each file's roles):
//   case <name> <kind>                 one case; kind says what the case builds or calls
//   param <key> <value>                an option (lists comma-separated)
//   t <role> <ndim> <sizes...> <values...>   a float64 tensor
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
  std::map<std::string, Tensor> tensors;  // float64, by role

  const std::string& param(const std::string& key) const;  // throws when missing
  double number(const std::string& key) const;
  bool flag(const std::string& key) const;  // "1"/"true" or "0"/"false"
  bool has(const std::string& role) const { return tensors.count(role) != 0; }
  const Tensor& tensor(const std::string& role) const;  // throws when missing
};

// Reads tests/fixtures/<file>.
std::vector<FixtureCase> load_fixture_cases(const std::string& file);

}  // namespace graft::test
