#include "op_table.h"

namespace graft::test {

std::vector<OpRecord>& op_table() {
  static std::vector<OpRecord> table;
  return table;
}

OpRecordRegistrar::OpRecordRegistrar(std::vector<OpRecord> records) {
  for (auto& r : records) op_table().push_back(std::move(r));
}

}  // namespace graft::test
