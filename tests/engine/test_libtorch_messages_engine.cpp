// grad() and backward() errors that carry LibTorch's phrase beside graft's expected/got/hint (issue
// 32): the substrings LibTorch's autograd tests look for. Expected messages written out by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

// A custom function whose backward returns a gradient of the wrong shape: [10] for a [5, 5] input.
struct MessagesWrongShapeGrad : autograd::Function<MessagesWrongShapeGrad> {
  static Tensor forward(autograd::AutogradContext*, Tensor x) { return x.clone(); }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list) {
    return {ones({10})};
  }
};

TEST(LibTorchMessagesEngine, GradAndBackwardInputs) {
  const Tensor x = ones({1}, requires_grad());
  const Tensor y = ones({1}, requires_grad());
  EXPECT_EQ(error_message([&] { (void)autograd::grad({x * 2}, {}, {x}); }),
            "grad: expected at least one input, but got an empty list of inputs. grad requires non-empty inputs. "
            "Hint: grad() returns the gradients of the outputs with respect to `inputs`: name the tensors you want "
            "gradients for (to fill every leaf's .grad, call backward() instead)");
  // y takes no part in x * 2: input 1, of shape [1], is unused.
  EXPECT_EQ(error_message([&] { (void)autograd::grad({x * 2}, {x, y}, {}, std::nullopt, false, false); }),
            "grad: expected every input to be used in the graph of the outputs, but got input 1 (shape [1]) that "
            "was not used. Hint: Set allow_unused=True if this is the desired behavior: with allow_unused = true, "
            "unused inputs get an undefined tensor");
  const Tensor z = x * y;
  EXPECT_EQ(error_message([&] { z.backward(ones({1}), false, false, std::vector<Tensor>{}); }),
            "backward: expected a non-empty `inputs` list, or none (every leaf), but got an empty `inputs` list. "
            "'inputs' argument to backward() cannot be empty. Hint: leave `inputs` out to accumulate into every "
            "leaf's .grad");
}

TEST(LibTorchMessagesEngine, WronglyShapedGradient) {
  const Tensor x = ones({5, 5}, requires_grad());
  EXPECT_TRUE(throws_error([&] { MessagesWrongShapeGrad::apply(x).sum().backward(); },
                           {"expected a gradient at index 0 of a shape compatible with [5, 5], but got a gradient "
                            "of shape [10], which does not match the expected shape"}));
}

}  // namespace
}  // namespace graft::test
