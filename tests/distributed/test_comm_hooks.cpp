// DistributedDataParallel's communication hooks (Note [DDP communication hooks] in
// graft/distributed/ddp.h), run as one process and under mpirun with 2 and 3 ranks (main() is in
// test_distributed.cpp). Every rank computes every rank's local gradients on a plain copy of the
// model, and the expected reductions are written from them by hand: the bfloat16 rounding with its
// own bit arithmetic, the sums in each order MPI may add them.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>

#include "graft/graft.h"

namespace graft::test {
namespace {

namespace dist = graft::distributed;
using nn::parallel::DistributedDataParallel;
using nn::parallel::DistributedDataParallelOptions;

struct HookNet : nn::Module {
  HookNet() {
    fc1 = register_module("fc1", nn::Linear(5, 7));
    fc2 = register_module("fc2", nn::Linear(7, 3));
  }
  Tensor forward(const Tensor& x) { return fc2(tanh(fc1(x))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
};

std::shared_ptr<HookNet> make_hook_net() {
  manual_seed(11);
  return std::make_shared<HookNet>();  // float32, the same values on every rank
}

constexpr int64_t kRows = 4;
Tensor inputs() {
  manual_seed(12);
  return randn({kRows * 3, 5});  // rows for up to 3 ranks
}
Tensor targets() {
  manual_seed(13);
  return randn({kRows * 3, 3});
}
Tensor loss_of(const Tensor& out, int64_t r) {
  return nn::functional::mse_loss(out, targets().narrow(0, r * kRows, kRows));
}

// Rank r's local gradients (by parameter name), from a plain copy of the model.
std::map<std::string, Tensor> local_gradients(int64_t r) {
  auto net = make_hook_net();
  loss_of(net->forward(inputs().narrow(0, r * kRows, kRows)), r).backward();
  std::map<std::string, Tensor> g;
  for (auto& item : net->named_parameters()) g[item.key()] = item.value().grad().contiguous();
  return g;
}

DistributedDataParallelOptions one_bucket_per_parameter() {
  return DistributedDataParallelOptions().bucket_cap_mb(1e-6).first_bucket_cap_mb(1e-6);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.sizes().equals(b.sizes()) && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

// Round to the nearest bfloat16, ties to even (written here, not graft's conversion).
float bf(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xffff0000u);
}

TEST(CommHook, DefaultHookIsTheReducersAllReduceBitForBit) {
  const int64_t W = dist::get_world_size(), R = dist::get_rank();
  const Tensor X = inputs().narrow(0, R * kRows, kRows);
  // Without a hook, and with allreduce_hook registered through PyTorch's (state, hook) spelling, the
  // hook wrapped to look at what it is given.
  auto plain_net = make_hook_net();
  DistributedDataParallel<std::shared_ptr<HookNet>> plain(plain_net, one_bucket_per_parameter());
  auto hooked_net = make_hook_net();
  DistributedDataParallel<std::shared_ptr<HookNet>> hooked(hooked_net, one_bucket_per_parameter());
  const auto mine = local_gradients(R);
  std::vector<size_t> indices;
  std::vector<bool> last;
  int checked = 0;
  const auto names = hooked.reducer().parameter_names();
  hooked.register_comm_hook(nullptr, [&](std::nullptr_t state, dist::GradBucket& bucket) {
    indices.push_back(bucket.index());
    last.push_back(bucket.is_last());
    const auto grads = bucket.gradients();
    EXPECT_EQ(grads.size(), bucket.parameters().size());
    for (size_t i = 0; i < grads.size(); ++i) {
      // Before the reduction the bucket holds this rank's own gradients.
      const size_t p = hooked.reducer().buckets()[bucket.index()].params[i];
      EXPECT_TRUE(same_bits(grads[i], mine.at(names[p]))) << names[p];
      EXPECT_TRUE(bucket.parameters()[i].is_same(hooked.reducer().parameters()[p]));
      ++checked;
    }
    return dist::ddp_comm_hooks::allreduce_hook(state, bucket);
  });
  loss_of(plain(X), R).backward();
  loss_of(hooked(X), R).backward();
  const size_t nb = hooked.reducer().buckets().size();
  ASSERT_EQ(nb, 4u);  // fc2.bias, fc2.weight, fc1.bias, fc1.weight
  ASSERT_EQ(indices.size(), nb);
  for (size_t b = 0; b < nb; ++b) {
    EXPECT_EQ(indices[b], b);
    EXPECT_EQ(last[b], b + 1 == nb);
  }
  EXPECT_EQ(checked, 4);

  // What the reducer did before hooks: each bucket's flat gradients all-reduced (AVG) as one tensor,
  // here by hand on this rank's local gradients.
  std::map<std::string, Tensor> want;
  for (const auto& bucket : plain.reducer().buckets()) {
    std::vector<Tensor> parts;
    for (size_t p : bucket.params) parts.push_back(mine.at(names[p]).reshape({-1}));
    Tensor flat = cat(parts).contiguous();
    dist::all_reduce(flat, dist::ReduceOp::AVG);
    int64_t o = 0;
    for (size_t p : bucket.params) {
      const Tensor& g = mine.at(names[p]);
      want[names[p]] = flat.narrow(0, o, g.numel()).view(g.sizes()).contiguous();
      o += g.numel();
    }
  }
  std::vector<std::map<std::string, Tensor>> all;
  for (int64_t r = 0; r < W; ++r) all.push_back(local_gradients(r));
  auto plain_params = plain.named_parameters();
  for (auto& item : hooked.named_parameters()) {
    const Tensor& got = item.value().grad();
    EXPECT_TRUE(same_bits(got, plain_params[item.key()].grad())) << item.key();
    EXPECT_TRUE(same_bits(got, want[item.key()])) << item.key();
    // And the average itself: one or two ranks add in one order only.
    Tensor sum = all[0].at(item.key()).clone();
    for (int64_t r = 1; r < W; ++r) sum = sum + all[static_cast<size_t>(r)].at(item.key());
    if (W <= 2) {
      EXPECT_TRUE(same_bits(got, sum / static_cast<double>(W))) << item.key();
    } else {
      EXPECT_TRUE(allclose(got, sum / static_cast<double>(W), 1e-6, 1e-7)) << item.key();
    }
  }
}

TEST(CommHook, Bf16CompressHookIsTheAverageRoundedThroughBfloat16) {
  const int64_t W = dist::get_world_size(), R = dist::get_rank();
  auto net = make_hook_net();
  DistributedDataParallel<std::shared_ptr<HookNet>> ddp(net, one_bucket_per_parameter());
  ddp.register_comm_hook(nullptr, dist::ddp_comm_hooks::bf16_compress_hook);
  loss_of(ddp(inputs().narrow(0, R * kRows, kRows)), R).backward();

  std::vector<std::map<std::string, Tensor>> all;
  for (int64_t r = 0; r < W; ++r) all.push_back(local_gradients(r));
  int64_t rounded_away = 0;
  for (auto& item : ddp.named_parameters()) {
    const Tensor got = item.value().grad().contiguous();
    ASSERT_EQ(got.dtype(), kFloat32);
    const float* g = got.data_ptr<float>();
    const int64_t n = got.numel();
    for (int64_t i = 0; i < n; ++i) {
      // Each rank's quotient in bfloat16: bf16(bf16(g_r) / W).
      std::vector<float> c;
      for (int64_t r = 0; r < W; ++r)
        c.push_back(bf(bf(all[static_cast<size_t>(r)].at(item.key()).data_ptr<float>()[i]) / static_cast<float>(W)));
      // Their sum, each partial sum rounded to bfloat16, in any order a reduction may take.
      std::vector<float> allowed;
      if (W == 1) allowed = {c[0]};
      if (W == 2) allowed = {bf(c[0] + c[1])};
      if (W == 3) allowed = {bf(bf(c[0] + c[1]) + c[2]), bf(bf(c[0] + c[2]) + c[1]), bf(bf(c[1] + c[2]) + c[0])};
      ASSERT_FALSE(allowed.empty()) << "the test writes the orders for up to 3 ranks";
      const bool ok = std::find(allowed.begin(), allowed.end(), g[i]) != allowed.end();
      EXPECT_TRUE(ok) << item.key() << "[" << i << "] = " << g[i] << ", by hand " << allowed[0];
      float exact = 0;
      for (int64_t r = 0; r < W; ++r) exact += all[static_cast<size_t>(r)].at(item.key()).data_ptr<float>()[i];
      rounded_away += g[i] != exact / static_cast<float>(W);
    }
  }
  EXPECT_GT(rounded_away, 0);  // the compression did round (float32 gradients have 24 bits)
}

TEST(CommHook, MisuseIsAClearError) {
  const int64_t R = dist::get_rank();
  auto net = make_hook_net();
  DistributedDataParallel<std::shared_ptr<HookNet>> ddp(net);
  // A hook whose result is not the bucket.
  ddp.register_comm_hook(nullptr, [](std::nullptr_t, dist::GradBucket& bucket) {
    return dist::Work::then(
        dist::ddp_comm_hooks::allreduce_hook(nullptr, bucket),
        [buffer = bucket.buffer()](const Tensor&) { return buffer.narrow(0, 0, 1); }, "a short result");
  });
  try {
    loss_of(ddp(inputs().narrow(0, R * kRows, kRows)), R).backward();
    FAIL() << "a hook with a one-element result passed";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("the reduced bucket"), std::string::npos) << m;
    EXPECT_NE(m.find("1 float32 elements"), std::string::npos) << m;
  }
  try {
    ddp.register_comm_hook(nullptr, dist::ddp_comm_hooks::allreduce_hook);
    FAIL() << "a second hook passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one communication hook per model"), std::string::npos) << e.what();
  }
  // bfloat16 is summed by the hooks' all_reduce, never averaged or maximised, and not by the public one.
  Tensor t = ones({3}).to(kBFloat16);
  EXPECT_THROW(dist::detail::all_reduce(t, dist::ReduceOp::AVG, "bf16 AVG"), Error);
  EXPECT_THROW(dist::detail::all_reduce(t, dist::ReduceOp::MAX, "bf16 MAX"), Error);
  EXPECT_THROW(dist::all_reduce(t, dist::ReduceOp::SUM), Error);
}

TEST(CommHook, AllReduceOfBfloat16SumsInBfloat16) {
  const int64_t W = dist::get_world_size(), R = dist::get_rank();
  // Rank r holds 1 + r 2^-7 (exact in bfloat16); the sum is rounded to 8 significant bits.
  Tensor t = full({2}, 1.0 + static_cast<double>(R) / 128.0).to(kBFloat16);
  dist::detail::all_reduce(t, dist::ReduceOp::SUM, "all_reduce of bfloat16")->wait();
  std::vector<float> v;
  for (int64_t r = 0; r < W; ++r) v.push_back(1.0f + static_cast<float>(r) / 128.0f);
  std::vector<float> allowed;
  if (W == 1) allowed = {v[0]};
  if (W == 2) allowed = {bf(v[0] + v[1])};
  if (W == 3) allowed = {bf(bf(v[0] + v[1]) + v[2]), bf(bf(v[0] + v[2]) + v[1]), bf(bf(v[1] + v[2]) + v[0])};
  ASSERT_FALSE(allowed.empty());
  const float got = t.to(kFloat32).data_ptr<float>()[0];
  EXPECT_NE(std::find(allowed.begin(), allowed.end(), got), allowed.end()) << got;
}

}  // namespace
}  // namespace graft::test
