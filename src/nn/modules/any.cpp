// AnyValue / AnyModule: the error paths and type names (Note [AnyModule calls] in
// include/graft/nn/modules/any.h).
#include "graft/nn/modules/any.h"

#include <cxxabi.h>

#include <cstdlib>

namespace graft::nn {

namespace detail {

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* out = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string s = status == 0 && out ? out : type.name();
  std::free(out);
  // The one long spelling worth shortening in messages.
  const std::string long_string = "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >";
  for (size_t at = s.find(long_string); at != std::string::npos; at = s.find(long_string, at))
    s.replace(at, long_string.size(), "std::string");
  return s;
}

void throw_any_value_cast(const std::type_info& held, const std::type_info& wanted) {
  throw Error("AnyValue::get", "a value of type " + type_name(wanted), "a value of type " + type_name(held),
              "ask for the type the value holds (type_info() tells it), or use try_get<T>()");
}

void check_any_arity(const std::string& signature, size_t expected, size_t got) {
  GRAFT_CHECK(expected == got, "AnyModule::forward",
              std::to_string(expected) + (expected == 1 ? " argument" : " arguments") + " for " + signature,
              std::to_string(got) + (got == 1 ? " argument" : " arguments"),
              "pass the arguments the module's forward takes");
}

void throw_any_argument(const std::string& signature, size_t index, const std::type_info& expected,
                        const std::type_info& got) {
  throw Error("AnyModule::forward",
              "argument " + std::to_string(index + 1) + " of type " + type_name(expected) + " for " + signature,
              "a value of type " + type_name(got),
              "types must match exactly, as in LibTorch (e.g. pass 2.0, not 2, for a double)");
}

}  // namespace detail

void AnyModule::check_not_empty(const char* what) const {
  GRAFT_CHECK(content_ != nullptr, std::string("AnyModule::") + what, "an AnyModule holding a module",
              "an empty AnyModule", "assign a module first, e.g. AnyModule(graft::nn::Linear(3, 4))");
}

void AnyModule::throw_bad_get(const char* op, const std::type_info& wanted) const {
  // LibTorch's sentence is kept in the hint: ported tests match on it.
  const std::string held = detail::type_name(type_info()), asked = detail::type_name(wanted);
  throw Error(op, "a module of type " + asked, "a module of type " + held,
              "ask for the type the AnyModule holds (Attempted to cast module of type " + held + " to type " + asked +
                  ")");
}

}  // namespace graft::nn
