// Issue 34, item 7: pad_packed_sequence with a huge total_length fails at once on one allocation
// (it used to append one padding step at a time, 3.1 GB after 20 s at 2^40), and PackedSequences
// built by hand (extra rows, batch sizes that grow, index tensors that are not permutations) are an
// error naming the op the user called, never an internal cat, stack or narrow.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../support/test_util.h"

namespace graft::test {
namespace packed_sequence_checks {

namespace rnn = nn::utils::rnn;

Tensor i64(const std::vector<double>& v) { return make(v, {static_cast<int64_t>(v.size())}, kInt64); }

void expect_no_internal_op(const std::string& msg) {
  for (const char* internal : {"cat:", "stack:", "narrow:", "index_select:"})
    EXPECT_EQ(msg.find(internal), std::string::npos) << msg;
}

// Two sequences of lengths 3 and 2 with 1 feature, packed by hand: rows a0 b0 a1 b1 a2.
TEST(PackedSequenceChecks, AValidHandBuiltSequencePadsByHand) {
  const rnn::PackedSequence p(make({1, 10, 2, 20, 3}, {5, 1}), i64({2, 2, 1}));
  const auto [padded, lengths] = rnn::pad_packed_sequence(p, /*batch_first=*/false, /*padding_value=*/-1.0, 5);
  EXPECT_TRUE(all_close(padded, {1, 10, 2, 20, 3, -1, -1, -1, -1, -1}, {5, 2, 1}, 0, 0));
  EXPECT_TRUE(all_close(lengths, {3, 2}, {2}, 0, 0));
}

// The padding past the longest sequence is one allocation: under a memory limit, the error names
// the whole tail's bytes (the old loop failed on a 4-byte step after millions of them).
TEST(PackedSequenceChecks, AHugeTotalLengthFailsAtOnceOnOneAllocation) {
  const int64_t old_limit = memory::get_limit();
  memory::set_limit(int64_t{256} << 20);
  const rnn::PackedSequence p(make({1, 10, 2, 20, 3}, {5, 1}, kFloat32), i64({2, 2, 1}));
  const int64_t total = int64_t{1} << 40;
  try {
    rnn::pad_packed_sequence(p, false, 0.0, total);
    ADD_FAILURE() << "a (2^40, 2, 1) float32 tensor fitted in 256 MiB";
  } catch (const memory::OutOfMemoryError& e) {
    EXPECT_GE(e.requested_bytes(), (total - 3) * 2 * 4) << e.what();  // the tail: (total - T) x N x 1 floats
  }
  memory::set_limit(old_limit);
}

TEST(PackedSequenceChecks, ExtraRowsAreAnError) {
  const rnn::PackedSequence p(make({1, 10, 2, 20, 3, 99}, {6, 1}), i64({2, 2, 1}));
  const std::string msg = error_message([&] { rnn::pad_packed_sequence(p); });
  EXPECT_NE(msg.find("pad_packed_sequence"), std::string::npos) << msg;
  EXPECT_NE(msg.find("extra rows"), std::string::npos) << msg;
  expect_no_internal_op(msg);
  // Fewer rows than the batch sizes count: the same op, not narrow's out-of-range message.
  const rnn::PackedSequence short_data(make({1, 10, 2}, {3, 1}), i64({2, 2, 1}));
  const std::string msg2 = error_message([&] { rnn::pad_packed_sequence(short_data); });
  EXPECT_NE(msg2.find("sum(batch_sizes)"), std::string::npos) << msg2;
  expect_no_internal_op(msg2);
}

TEST(PackedSequenceChecks, BatchSizesThatGrowOrReachZeroAreAnError) {
  for (const std::vector<double>& bs : {std::vector<double>{1, 2, 2}, std::vector<double>{2, 0, 3}}) {
    const rnn::PackedSequence p(make({1, 10, 2, 20, 3}, {5, 1}), i64(bs));
    const std::string msg = error_message([&] { rnn::pad_packed_sequence(p); });
    EXPECT_NE(msg.find("never grow"), std::string::npos) << msg;
    expect_no_internal_op(msg);
  }
}

TEST(PackedSequenceChecks, IndicesThatAreNotPermutationsAreAnError) {
  const Tensor data = make({1, 10, 2, 20, 3}, {5, 1});
  // The constructor inverts sorted_indices: a repeated or out-of-range index is refused there.
  EXPECT_TRUE(throws_error([&] { rnn::PackedSequence(data, i64({2, 2, 1}), i64({0, 0})); },
                           {"PackedSequence", "sorted_indices", "repeated"}));
  EXPECT_TRUE(throws_error([&] { rnn::PackedSequence(data, i64({2, 2, 1}), i64({0, 5})); },
                           {"PackedSequence", "sorted_indices", "out of range"}));
  // Given both, each must be a permutation of the batch's sequences.
  const rnn::PackedSequence p(data, i64({2, 2, 1}), i64({1, 0}), i64({1, 1}));
  EXPECT_TRUE(throws_error([&] { rnn::pad_packed_sequence(p); }, {"pad_packed_sequence", "unsorted_indices"}));
  const rnn::PackedSequence q(data, i64({2, 2, 1}), i64({1, 0, 2}));
  EXPECT_TRUE(throws_error([&] { rnn::pad_packed_sequence(q); }, {"pad_packed_sequence", "sorted_indices", "[2]"}));
}

// A recurrent layer checks a packed input the same way, under its own name.
TEST(PackedSequenceChecks, AnLSTMRefusesABadPackedInput) {
  nn::LSTM lstm(nn::LSTMOptions(1, 2));
  const rnn::PackedSequence p(make({1, 10, 2, 20, 3, 99}, {6, 1}, kFloat32), i64({2, 2, 1}));
  const std::string msg = error_message([&] { lstm->forward_with_packed_input(p); });
  EXPECT_NE(msg.find("extra rows"), std::string::npos) << msg;
  expect_no_internal_op(msg);
}

}  // namespace packed_sequence_checks
}  // namespace graft::test
