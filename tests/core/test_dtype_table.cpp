// The dtype table (Note [One dtype table]): each row's names and size, checked against the C++
// types and against PyTorch's and safetensors' documented spellings.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "../support/test_util.h"

namespace graft::test {

TEST(DTypeTable, ItemSizesAreTheCxxTypesSizes) {
  EXPECT_EQ(element_size(dtype_of<float>()), sizeof(float));
  EXPECT_EQ(element_size(dtype_of<double>()), sizeof(double));
  EXPECT_EQ(element_size(dtype_of<int64_t>()), sizeof(int64_t));
  EXPECT_EQ(element_size(dtype_of<int32_t>()), sizeof(int32_t));
  EXPECT_EQ(element_size(dtype_of<int16_t>()), sizeof(int16_t));
  EXPECT_EQ(element_size(dtype_of<int8_t>()), sizeof(int8_t));
  EXPECT_EQ(element_size(dtype_of<uint8_t>()), sizeof(uint8_t));
  EXPECT_EQ(element_size(dtype_of<bool>()), sizeof(bool));
  EXPECT_EQ(element_size(kHalf), 2u);
  EXPECT_EQ(element_size(kBFloat16), 2u);
}

TEST(DTypeTable, NamesAsPyTorchAndSafetensorsSpellThem) {
  // torch.float16 is Half in c10, torch.HalfTensor in Tensor.type(), F16 in safetensors.
  const DTypeInfo& h = dtype_info(kFloat16);
  EXPECT_STREQ(h.name, "float16");
  EXPECT_STREQ(h.scalar_type_name, "Half");
  EXPECT_STREQ(h.tensor_type, "torch.HalfTensor");
  EXPECT_STREQ(h.safetensors_name, "F16");
  EXPECT_STREQ(dtype_name(kUInt8), "uint8");
  EXPECT_STREQ(dtype_info(kUInt8).scalar_type_name, "Byte");
  EXPECT_STREQ(dtype_info(kInt8).scalar_type_name, "Char");
  EXPECT_STREQ(dtype_info(kInt64).safetensors_name, "I64");
  EXPECT_STREQ(dtype_info(kBool).tensor_type, "torch.BoolTensor");
}

TEST(DTypeTable, EveryRowIsItsDTypesAndEveryNameIsUnique) {
  std::set<std::string> names, scalar_types, tensor_types, st_names;
  std::set<int> ranks;
  for (size_t i = 0; i < kNumDTypes; ++i) {
    const auto d = static_cast<DType>(i);
    const DTypeInfo& row = dtype_info(d);
    EXPECT_EQ(row.dtype, d);
    EXPECT_EQ(row.itemsize, element_size(d));
    names.insert(row.name);
    scalar_types.insert(row.scalar_type_name);
    tensor_types.insert(row.tensor_type);
    st_names.insert(row.safetensors_name);
    ranks.insert(row.safetensors_rank);
    // The safetensors name is the kind's letter and the width in bits (BOOL apart).
    if (d != kBool) {
      const std::string st = row.safetensors_name;
      EXPECT_EQ(st.substr(st.find_first_of("0123456789")), std::to_string(8 * row.itemsize)) << st;
    }
  }
  EXPECT_EQ(names.size(), kNumDTypes);
  EXPECT_EQ(scalar_types.size(), kNumDTypes);
  EXPECT_EQ(tensor_types.size(), kNumDTypes);
  EXPECT_EQ(st_names.size(), kNumDTypes);
  EXPECT_EQ(ranks.size(), kNumDTypes);
}

}  // namespace graft::test
