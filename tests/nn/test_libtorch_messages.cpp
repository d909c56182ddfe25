// Error messages that carry LibTorch's phrase beside graft's expected/got/hint (issue 32): the
// substrings LibTorch's own tests look for (ASSERT_THROWS_WITH), for OrderedDict, module
// registration, ModuleHolder, clone() and pack/pad of sequences. Each expected message is written
// out by hand from the call's arguments.
#include <gtest/gtest.h>

#include <string>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

struct MessagesNet : nn::Module {};
struct MessagesHolderImpl : nn::Module {
  int x_ = 0;
};
GRAFT_MODULE(MessagesHolder);

TEST(LibTorchMessages, OrderedDictLookupsAndInserts) {
  OrderedDict<std::string, int> d;
  d.insert("a", 1);
  d.insert("b", 2);
  EXPECT_EQ(error_message([&] { (void)d["foo"]; }),
            "OrderedDict::operator[]: expected a Key that is defined, but got 'foo'. Key 'foo' is not defined. "
            "Hint: the keys are: a, b");
  EXPECT_TRUE(throws_error([&] { (void)d[""]; }, {"Key '' is not defined"}));
  EXPECT_EQ(error_message([&] { d.insert("a", 3); }),
            "OrderedDict::insert: expected a new Key, but got Key 'a' already defined. Hint: use a distinct key, or "
            "update() / insert_or_assign() to overwrite");
  // The key description names the keys.
  OrderedDict<std::string, int> penguins("Penguin");
  penguins.insert("a", 1);
  EXPECT_TRUE(throws_error([&] { (void)penguins["b"]; }, {"Penguin 'b' is not defined", "the keys are: a"}));
  EXPECT_TRUE(throws_error([&] { penguins.insert("a", 1); }, {"Penguin 'a' already defined"}));
  OrderedDict<std::string, int> empty;
  EXPECT_EQ(error_message([&] { (void)empty.front(); }),
            "OrderedDict::front: expected a non-empty OrderedDict, but got an empty one. Called front() on an empty "
            "OrderedDict. Hint: insert an item first, or test is_empty()");
  EXPECT_TRUE(throws_error([&] { (void)empty.back(); }, {"Called back() on an empty OrderedDict"}));
}

TEST(LibTorchMessages, ModuleRegistration) {
  MessagesNet m;
  m.register_parameter("p", ones({2}));
  m.register_buffer("b", ones({2}));
  m.register_module("linear", nn::Linear(3, 4));
  // Registering a name twice as the same kind: LibTorch's "<Kind> 'name' already defined".
  EXPECT_EQ(error_message([&] { m.register_parameter("p", ones({2})); }),
            "register_parameter: expected a name not yet used in MessagesNet, but got Parameter 'p' already defined. "
            "Hint: each parameter, buffer and submodule of a module needs its own name");
  EXPECT_TRUE(throws_error([&] { m.register_buffer("b", ones({2})); }, {"Buffer 'b' already defined"}));
  EXPECT_TRUE(throws_error([&] { m.register_module("linear", nn::Linear(3, 4)); },
                           {"register_module", "Submodule 'linear' already defined"}));
  // A name taken by another kind says which.
  EXPECT_TRUE(throws_error([&] { m.register_buffer("p", ones({2})); }, {"'p', already defined as a parameter"}));
  // Dots and empty names.
  EXPECT_EQ(error_message([&] { m.register_parameter("name.with.dot", ones({2})); }),
            "register_parameter: expected a parameter name without dots, but got 'name.with.dot'. Parameter name "
            "must not contain a dot (got 'name.with.dot'). Hint: dots join the names of nested modules; use '_' "
            "instead");
  EXPECT_TRUE(throws_error([&] { m.register_buffer("name.with.dot", ones({2})); },
                           {"Buffer name must not contain a dot (got 'name.with.dot')"}));
  EXPECT_TRUE(throws_error([&] { m.register_module("name.with.dot", nn::Linear(3, 4)); },
                           {"Submodule name must not contain a dot (got 'name.with.dot')"}));
  EXPECT_TRUE(throws_error([&] { m.register_parameter("", ones({2})); }, {"Parameter name must not be empty"}));
  EXPECT_TRUE(throws_error([&] { m.register_buffer("", ones({2})); }, {"Buffer name must not be empty"}));
  EXPECT_TRUE(throws_error([&] { m.register_module("", nn::Linear(3, 4)); }, {"Submodule name must not be empty"}));
  // replace / unregister of an unknown submodule.
  EXPECT_EQ(error_message([&] { m.replace_module("conv", nn::Linear(3, 4)); }),
            "replace_module: expected the name of a registered submodule of MessagesNet, but got 'conv'. Submodule "
            "'conv' is not defined. Hint: register it first with register_module");
  EXPECT_TRUE(throws_error([&] { m.unregister_module("conv"); }, {"No Module with name `conv` is registered"}));
}

TEST(LibTorchMessages, TopLevelModuleByValueCloneAndEmptyHolder) {
  MessagesNet by_value;
  EXPECT_TRUE(throws_error([&] { (void)by_value.modules(); },
                           {"MessagesNet held by value. It looks like you attempted to retrieve your top-level module "
                            "as a shared_ptr",
                            "include_self = false"}));
  EXPECT_EQ(error_message([&] { (void)by_value.clone(); }),
            "Module::clone: clone() has not been implemented for MessagesNet: derive it from "
            "graft::nn::Cloneable<MessagesNetImpl> and implement reset() to make it cloneable");
  MessagesHolder empty{nullptr};
  EXPECT_TRUE(throws_error([&] { (void)empty->x_; },
                           {"ModuleHolder: expected a holder that owns a module, but got an empty holder (constructed "
                            "from nullptr). Accessing empty ModuleHolder. Hint: "}));
}

TEST(LibTorchMessages, PackAndPadSequences) {
  namespace rnn = nn::utils::rnn;
  // Three sequences of lengths 2, 1, 3 (not in decreasing order).
  const Tensor a = ones({2}), b = ones({1}), c = ones({3});
  EXPECT_EQ(error_message([&] { (void)rnn::pack_sequence({a, b, c}, /*enforce_sorted=*/true); }),
            "pack_padded_sequence: expected lengths sorted in decreasing order (enforce_sorted = true), but got "
            "lengths [2, 1, 3]. `lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "Hint: You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence (enforce_sorted "
            "= false), or sort the batch");
  // Lengths 3, 2, 1: the longest sequence has 3 steps, so total_length 2 is too short.
  const rnn::PackedSequence packed = rnn::pack_sequence({c, a, b});
  EXPECT_EQ(error_message([&] { (void)rnn::pad_packed_sequence(packed, false, 0.0, 2); }),
            "pad_packed_sequence: expected total_length at least the longest sequence (3), but got total_length = 2. "
            "Expected total_length to be at least the length of the longest sequence in input. Hint: leave "
            "total_length out to pad to the longest sequence");
}

TEST(LibTorchMessages, LossFoldHardtanhAndContainers) {
  // LibTorch's phrases, each after graft's own expected/got.
  const Tensor input = zeros({5, 1}), target = zeros({5});
  EXPECT_NE(error_message([&] { (void)nn::BCEWithLogitsLoss()(input, target); })
                .find("Target size ([5]) must be the same as input size ([5, 1])"),
            std::string::npos);
  nn::Fold fold(nn::FoldOptions({8, 8}, {3, 3}));
  EXPECT_NE(error_message([&] { (void)fold(zeros({1, 3, 16, 16})); })
                .find("Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got 4D)"),
            std::string::npos);
  EXPECT_NE(error_message([] { nn::Hardtanh(nn::HardtanhOptions().min_val(0.5).max_val(0.5)); })
                .find("max_val must be greater than min_val"),
            std::string::npos);
  nn::ModuleDict dict;
  dict->update(std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>{
      {"linear", std::make_shared<nn::LinearImpl>(2, 2)}});
  EXPECT_NE(error_message([&] { (void)dict["batch"]; }).find(" 'batch' is not defined"), std::string::npos);
  EXPECT_NE(error_message([&] { (void)dict->pop("x"); }).find(" 'x' is not defined"), std::string::npos);
  nn::Sequential empty;
  EXPECT_NE(error_message([&] { (void)empty->forward<int>(); }).find("Cannot call forward() on an empty Sequential"),
            std::string::npos);
}

}  // namespace
}  // namespace graft::test
