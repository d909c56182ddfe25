#include "fixture_file.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "test_util.h"

namespace graft::test {

namespace {

double parse_double(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') throw std::runtime_error("bad number '" + s + "'");
  return v;
}

}  // namespace

const std::string& FixtureCase::param(const std::string& key) const {
  auto it = params.find(key);
  if (it == params.end()) throw std::runtime_error("case " + name + ": no param " + key);
  return it->second;
}

double FixtureCase::number(const std::string& key) const { return parse_double(param(key)); }

std::vector<double> FixtureCase::numbers(const std::string& key) const {
  std::vector<double> out;
  std::stringstream in(param(key));
  for (std::string tok; std::getline(in, tok, ',');) out.push_back(parse_double(tok));
  return out;
}

bool FixtureCase::flag(const std::string& key) const {
  const std::string& v = param(key);
  if (v == "1" || v == "true" || v == "True") return true;
  if (v == "0" || v == "false" || v == "False") return false;
  throw std::runtime_error("case " + name + ": param " + key + " is not a flag: " + v);
}

const Tensor& FixtureCase::tensor(const std::string& role) const {
  auto it = tensors.find(role);
  if (it == tensors.end()) throw std::runtime_error("case " + name + ": no tensor " + role);
  return it->second;
}

std::vector<FixtureCase> load_fixture_cases(const std::string& file) {
  const auto path = std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / file;
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path.string());
  std::vector<FixtureCase> cases;
  std::optional<FixtureCase> cur;
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string kind;
    in >> kind;
    try {
      if (kind == "case") {
        if (cur) throw std::runtime_error("case inside a case");
        cur.emplace();
        in >> cur->name >> cur->kind;
      } else if (!cur) {
        throw std::runtime_error("'" + kind + "' outside a case");
      } else if (kind == "param") {
        std::string k, v;
        in >> k >> v;
        cur->params[k] = v;
      } else if (kind == "t") {
        std::string role, tok, dtype;
        in >> role >> tok;
        if (tok == "f64" || tok == "i64") {
          dtype = tok;
          in >> tok;
        }
        int64_t ndim = -1;
        try {
          ndim = std::stoll(tok);
        } catch (const std::exception&) {
          throw std::runtime_error("bad ndim '" + tok + "'");
        }
        if (ndim < 0) throw std::runtime_error("bad ndim");
        std::vector<int64_t> sizes(static_cast<size_t>(ndim));
        for (auto& s : sizes) in >> s;
        std::vector<double> values;
        while (in >> tok) values.push_back(parse_double(tok));
        int64_t n = 1;
        for (int64_t s : sizes) n *= s;
        if (static_cast<int64_t>(values.size()) != n) throw std::runtime_error("tensor " + role + ": wrong value count");
        cur->tensors[role] = make(values, sizes, dtype == "i64" ? kInt64 : kFloat64);
      } else if (kind == "end") {
        cases.push_back(std::move(*cur));
        cur.reset();
      } else {
        throw std::runtime_error("unknown line kind '" + kind + "'");
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(path.string() + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  if (cur) throw std::runtime_error(path.string() + ": last case has no end");
  return cases;
}

void copy_parameters(nn::Module& module, const FixtureCase& c, const std::string& prefix) {
  const auto params = module.named_parameters();
  int64_t from_torch = 0;
  for (const auto& [role, t] : c.tensors) from_torch += role.rfind(prefix, 0) == 0;
  EXPECT_EQ(static_cast<int64_t>(params.size()), from_torch) << c.name << ": parameter count";
  NoGradGuard ng;
  for (const auto& item : params) item.value().copy_(c.tensor(prefix + item.key()));
}

void expect_parameter_grads(const nn::Module& module, const FixtureCase& c, double tol) {
  for (const auto& item : module.named_parameters()) {
    const Tensor g = item.value().grad().defined() ? item.value().grad() : zeros_like(item.value());
    EXPECT_TRUE(all_close(g, c.tensor("grad.p." + item.key()), tol, tol)) << c.name << ": grad of " << item.key();
  }
}

}  // namespace graft::test
