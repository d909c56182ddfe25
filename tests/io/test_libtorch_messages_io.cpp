// Loading and data-loader errors that carry LibTorch's phrase beside graft's expected/got/hint (issue
// 32): the substrings LibTorch's serialize and dataloader tests look for. Expected messages written
// out by hand.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

struct MessagesSavedX : nn::Module {
  MessagesSavedX() { register_parameter("x", ones({2})); }
};
struct MessagesLoadsY : nn::Module {
  MessagesLoadsY() { register_parameter("y", ones({2})); }
};

// A dataset that cannot tell its size, so make_data_loader cannot build a sampler for it.
struct MessagesUnsized : data::datasets::Dataset<MessagesUnsized> {
  data::Example<> get(size_t i) override { return {ones({static_cast<int64_t>(i)}), ones({1})}; }
  std::optional<size_t> size() const override { return std::nullopt; }
};

TEST(LibTorchMessagesIo, LoadNamesTheMissingTensor) {
  std::stringstream stream;
  graft::save(MessagesSavedX(), stream);
  MessagesLoadsY target;
  EXPECT_TRUE(throws_error([&] { graft::load(target, stream); },
                           {"missing key(s): \"y\" (No such serialized tensor 'y')", "unexpected key(s): \"x\""}));
}

// Saved: inner.x (a submodule "inner" with a parameter "x"); loaded into modules that want
// inner.y (inner is there, y is not) and other.x (nothing under "other" in the file).
struct MessagesInnerX : nn::Module {
  MessagesInnerX() { register_module("inner", std::make_shared<MessagesSavedX>()); }
};
struct MessagesInnerY : nn::Module {
  MessagesInnerY() { register_module("inner", std::make_shared<MessagesLoadsY>()); }
};
struct MessagesOtherX : nn::Module {
  MessagesOtherX() { register_module("other", std::make_shared<MessagesSavedX>()); }
};

TEST(LibTorchMessagesIo, LoadNamesTheMissingSubmoduleOrTensor) {
  std::stringstream stream;
  graft::save(MessagesInnerX(), stream);
  MessagesInnerY inner_y;
  EXPECT_TRUE(throws_error([&] { graft::load(inner_y, stream); },
                           {"missing key(s): \"inner.y\" (No such serialized tensor 'inner.y')"}));
  stream.seekg(0);
  MessagesOtherX other_x;
  EXPECT_TRUE(throws_error([&] { graft::load(other_x, stream); },
                           {"missing key(s): \"other.x\" (No such serialized submodule: 'other')",
                            "unexpected key(s): \"inner.x\""}));
}

TEST(LibTorchMessagesIo, ReadingAnAbsentValue) {
  serialize::OutputArchive out;
  out.write("value", IValue(int64_t{1}));
  std::stringstream stream;
  out.save_to(stream);
  serialize::InputArchive in;
  in.load_from(stream);
  IValue v;
  in.read("value", v);
  EXPECT_EQ(v.toInt(), 1);
  EXPECT_TRUE(throws_error([&] { in.read("bad_key", v); },
                           {"InputArchive::read(\"bad_key\")",
                            "but got no such value: the archive does not have a field with name \"bad_key\" (keys "
                            "here: \"value\")"}));
}

TEST(LibTorchMessagesIo, DataLoaderForAnUnsizedDataset) {
  EXPECT_EQ(error_message([] { (void)data::make_data_loader(MessagesUnsized{}); }),
            "make_data_loader: expected a dataset whose size() is known, but got size() = nullopt (Expected the "
            "dataset to be sized in order to construct the Sampler). Hint: a sampler needs the number of examples; "
            "pass a sampler: make_data_loader(dataset, sampler, options)");
}

}  // namespace
}  // namespace graft::test
