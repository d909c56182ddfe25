#include "op_table.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace graft::test {

namespace {

// The records registered so far, by file; op_table() takes them on its first call (after static
// initialisation: the op table test reads it when GoogleTest registers the tests).
std::map<std::string, std::vector<OpRecord>>& registered() {
  static std::map<std::string, std::vector<OpRecord>> by_file;
  return by_file;
}
bool table_built = false;

}  // namespace

std::vector<OpRecord>& op_table() {
  static std::vector<OpRecord> table = [] {
    std::vector<OpRecord> t;
    for (auto& [file, records] : registered())
      for (auto& r : records) t.push_back(std::move(r));
    registered().clear();
    table_built = true;
    return t;
  }();
  return table;
}

OpRecordRegistrar::OpRecordRegistrar(const char* file, std::vector<OpRecord> records) {
  if (table_built) {  // a record registered after the table was read would be missing from it
    std::fprintf(stderr, "op table: %s registers records after op_table() was first called\n", file);
    std::abort();
  }
  auto& mine = registered()[file];
  for (auto& r : records) mine.push_back(std::move(r));
}

}  // namespace graft::test
