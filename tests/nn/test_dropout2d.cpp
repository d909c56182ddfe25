// nn::Dropout2d and graft::dropout: channel-wise dropout against a hand computation of the mask.
#include <gtest/gtest.h>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

// x (2, 3, 2, 2) with x[n, c, h, w] = 1 + (n * 3 + c) * 4 + h * 2 + w (so 1 .. 24).
Tensor images() {
  std::vector<double> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i + 1);
  return make(v, {2, 3, 2, 2}, kFloat32);
}

TEST(Dropout2d, ZeroesWholeChannelsWithASeededMask) {
  const double p = 0.5;
  nn::Dropout2d drop{nn::Dropout2dOptions(p)};
  EXPECT_TRUE(drop->is_training());
  manual_seed(21);
  const Tensor x = images().requires_grad_();
  Tensor y = drop->forward(x);
  // The mask: one uniform per (n, c), drawn as manual_seed(21) then rand((2, 3, 1, 1)) draws them.
  Generator g(21);
  std::vector<double> expect(24), grad(24);
  int kept = 0;
  for (int nc = 0; nc < 6; ++nc) {
    const bool keep = g.next_double() < 1.0 - p;  // keep ~ bernoulli(1 - p), as PyTorch draws it
    kept += keep;
    for (int s = 0; s < 4; ++s) {
      const size_t i = static_cast<size_t>(nc * 4 + s);
      expect[i] = keep ? static_cast<double>(i + 1) * 2.0 : 0.0;  // scaled by 1 / (1 - 0.5)
      grad[i] = keep ? 2.0 : 0.0;
    }
  }
  ASSERT_GT(kept, 0);  // seed 21 keeps some channels and drops others
  ASSERT_LT(kept, 6);
  EXPECT_EQ(values(y), expect);
  y.sum().backward();
  EXPECT_EQ(values(x.grad()), grad);

  drop->eval();
  EXPECT_EQ(values(drop->forward(x)), values(x));  // identity in eval
  EXPECT_EQ(drop->extra_repr(), "p=0.5, inplace=False");
}

TEST(Dropout2d, UnbatchedImagesInplaceAndErrors) {
  // (C, H, W): one uniform per channel.
  manual_seed(5);
  const Tensor x = images().view({6, 2, 2});
  const Tensor y = nn::Dropout2d(0.25)->forward(x);
  Generator g(5);
  for (int64_t c = 0; c < 6; ++c) {
    const bool keep = g.next_double() < 1.0 - 0.25;  // keep ~ bernoulli(1 - p), as PyTorch draws it
    for (int64_t s = 0; s < 4; ++s) {
      const double xv = static_cast<double>(c * 4 + s + 1);
      EXPECT_FLOAT_EQ(values(y)[static_cast<size_t>(c * 4 + s)], keep ? static_cast<float>(xv / 0.75) : 0.0f);
    }
  }
  Tensor z = images();
  manual_seed(5);
  nn::Dropout2d inplace(nn::Dropout2dOptions(0.25).inplace(true));
  const Tensor out = inplace->forward(z);
  EXPECT_EQ(out.data_ptr<float>(), z.data_ptr<float>());
  EXPECT_TRUE(throws_error([] { nn::Dropout2d(1.5); }, {"Dropout2d", "[0, 1]", "1.5"}));
  EXPECT_TRUE(throws_error([] { nn::Dropout2d()->forward(zeros({4, 5})); }, {"dropout2d", "(N, C, H, W)", "[4, 5]"}));
}

TEST(Dropout2d, NamespaceDropoutMatchesTheModuleFormula) {
  // graft::dropout(x, p, train): per element, the same mask rule; train = false is the identity.
  const Tensor x = images();
  manual_seed(9);
  const Tensor y = graft::dropout(x, 0.5, true);
  Generator g(9);
  for (size_t i = 0; i < 24; ++i) {
    const bool keep = g.next_double() < 1.0 - 0.5;  // keep ~ bernoulli(1 - p), as PyTorch draws it
    EXPECT_EQ(values(y)[i], keep ? static_cast<double>(i + 1) * 2.0 : 0.0) << i;
  }
  EXPECT_EQ(values(graft::dropout(x, 0.5, false)), values(x));
  EXPECT_TRUE(throws_error([&] { graft::dropout(x, 2.0, true); }, {"dropout", "[0, 1]"}));
}

}  // namespace
}  // namespace graft::test
