// graft::distributed and DistributedDataParallel, run as one process and under
// `mpirun --oversubscribe -np 2` and `-np 3` (tests/CMakeLists.txt). Every rank runs every test;
// the expected values are written from the rank and world size by hand, and DDP is compared with
// the same model trained in one process on the whole global batch (computed on every rank).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sstream>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

namespace dist = graft::distributed;
using nn::parallel::DistributedDataParallel;
using nn::parallel::DistributedDataParallelOptions;

int64_t world() { return dist::get_world_size(); }
int64_t rank() { return dist::get_rank(); }

// ---- collectives ----

TEST(ProcessGroup, AllReduceOpsGiveTheFormulaOverRanks) {
  const int64_t W = world(), R = rank();
  // Rank r holds [r + 1, 2 (r + 1), -r]: sum over r of (r + 1) is W (W + 1) / 2.
  auto make = [&](DType d) { return tensor<double>({double(R + 1), double(2 * (R + 1)), double(-R)}).to(d); };
  const double s = W * (W + 1) / 2.0;
  for (DType d : {kFloat32, kFloat64, kInt64, kInt32}) {
    Tensor t = make(d);
    dist::all_reduce(t, dist::ReduceOp::SUM);
    EXPECT_EQ(t.to(kFloat64).data_ptr<double>()[0], s) << dtype_name(d);
    EXPECT_EQ(t.to(kFloat64).data_ptr<double>()[1], 2 * s);
    EXPECT_EQ(t.to(kFloat64).data_ptr<double>()[2], -(W - 1) * W / 2.0);
    Tensor mx = make(d), mn = make(d);
    dist::all_reduce(mx, dist::ReduceOp::MAX);
    dist::all_reduce(mn, dist::ReduceOp::MIN);
    EXPECT_EQ(mx.to(kFloat64).data_ptr<double>()[0], double(W));
    EXPECT_EQ(mn.to(kFloat64).data_ptr<double>()[0], 1.0);
    EXPECT_EQ(mn.to(kFloat64).data_ptr<double>()[2], -double(W - 1));
  }
  Tensor avg = make(kFloat64);
  dist::all_reduce(avg, dist::ReduceOp::AVG);
  EXPECT_DOUBLE_EQ(avg.data_ptr<double>()[0], s / double(W));
  Tensor ints = make(kInt64);
  EXPECT_THROW(dist::all_reduce(ints, dist::ReduceOp::AVG), Error);
}

TEST(ProcessGroup, BroadcastGatherScatterAndPointToPoint) {
  const int64_t W = world(), R = rank();
  Tensor b = full({5}, double(R + 10), TensorOptions().dtype(kFloat64));
  dist::broadcast(b, static_cast<int>(W - 1));
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(b.data_ptr<double>()[i], double(W - 1 + 10));

  Tensor in = tensor<int64_t>({R, 100 + R});
  Tensor all = empty({2 * W}, TensorOptions().dtype(kInt64));
  dist::all_gather_into_tensor(all, in);
  std::vector<Tensor> parts;
  for (int64_t r = 0; r < W; ++r) parts.push_back(empty({2}, TensorOptions().dtype(kInt64)));
  dist::all_gather(parts, in);
  for (int64_t r = 0; r < W; ++r) {
    EXPECT_EQ(all.data_ptr<int64_t>()[2 * r], r);
    EXPECT_EQ(all.data_ptr<int64_t>()[2 * r + 1], 100 + r);
    EXPECT_EQ(parts[r].data_ptr<int64_t>()[1], 100 + r);
  }

  // Rank r's input block k is r * 10 + k: block R summed over ranks is 10 W (W - 1) / 2 + W R.
  Tensor blocks = empty({W * 3}, TensorOptions().dtype(kFloat64));
  for (int64_t k = 0; k < W; ++k)
    for (int64_t j = 0; j < 3; ++j) blocks.data_ptr<double>()[k * 3 + j] = double(R * 10 + k);
  Tensor mine = empty({3}, TensorOptions().dtype(kFloat64));
  dist::reduce_scatter_tensor(mine, blocks);
  EXPECT_EQ(mine.data_ptr<double>()[2], 10.0 * W * (W - 1) / 2.0 + double(W * R));

  if (W > 1) {  // a ring: each rank sends its rank to the next
    Tensor out = full({3}, double(R), TensorOptions().dtype(kFloat32));
    Tensor got = zeros({3}, TensorOptions().dtype(kFloat32));
    auto s = dist::isend(out, static_cast<int>((R + 1) % W));
    auto r = dist::irecv(got, static_cast<int>((R + W - 1) % W));
    s->wait();
    r->wait();
    EXPECT_EQ(got.data_ptr<float>()[0], float((R + W - 1) % W));
  }
  dist::barrier();
}

TEST(ProcessGroup, AsyncWorkCompletesAndKeepsOrder) {
  const int64_t W = world();
  std::vector<Tensor> ts;
  std::vector<dist::WorkPtr> works;
  for (int k = 0; k < 8; ++k) {
    ts.push_back(full({1000}, double(k), TensorOptions().dtype(kFloat64)));
    works.push_back(dist::all_reduce(ts.back(), dist::ReduceOp::SUM, /*async_op=*/true));
  }
  for (int k = 7; k >= 0; --k) works[k]->wait();
  for (int k = 0; k < 8; ++k) {
    EXPECT_TRUE(works[k]->is_success());
    EXPECT_EQ(ts[k].data_ptr<double>()[999], double(k * W));
    if (k) {
      EXPECT_LE(works[k - 1]->completed_at(), works[k]->started_at());  // one at a time, in order
    }
  }
}

TEST(ProcessGroup, MisuseIsAClearError) {
  Tensor t = zeros({4, 3}).t();
  try {
    dist::all_reduce(t);
    FAIL() << "a non-contiguous tensor was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("contiguous"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dist::broadcast(zeros({2}), static_cast<int>(world())), Error);
  EXPECT_THROW(dist::all_reduce(zeros({2}, TensorOptions().dtype(kBFloat16))), Error);
  EXPECT_THROW(dist::init_process_group(), Error);  // already initialised
}

// Issue 34, item 5: GRAFT_DIST_TIMEOUT above the steady clock's range (about 9.2e9 s: the deadline
// overflowed, and every collective timed out at once) or not finite (an undefined cast, printed as
// -9223372036854775808 ms) is refused with an error naming the variable and the value; so is a
// ProcessGroupOptions timeout over the same bound of 30 days.
TEST(ProcessGroup, TimeoutFromTheEnvironmentIsBounded) {
  // Re-initialising needs the one-process group: MPI cannot start twice in a process.
  if (world() > 1) GTEST_SKIP() << "re-initialises the process group: one process only";
  const char* held = std::getenv("GRAFT_DIST_TIMEOUT");
  const std::string saved = held ? held : "";
  dist::destroy_process_group();
  for (const char* bad : {"1e10", "9.3e9", "inf", "1e999", "nan", "-5", "0", "60s", ""}) {
    setenv("GRAFT_DIST_TIMEOUT", bad, 1);
    EXPECT_TRUE(throws_error([] { dist::init_process_group(); },
                             {"init_process_group", "GRAFT_DIST_TIMEOUT", "30 days", std::string("\"") + bad + "\""}))
        << bad;
    EXPECT_FALSE(dist::is_initialized()) << bad;
  }
  setenv("GRAFT_DIST_TIMEOUT", "2592000", 1);  // the bound itself
  dist::init_process_group();
  EXPECT_EQ(dist::get_timeout(), std::chrono::milliseconds(int64_t{2592000} * 1000));
  dist::destroy_process_group();
  unsetenv("GRAFT_DIST_TIMEOUT");
  dist::ProcessGroupOptions too_long;
  too_long.timeout = std::chrono::hours(24 * 31);
  EXPECT_TRUE(throws_error([&] { dist::init_process_group("mpi", too_long); }, {"init_process_group", "30 days"}));
  if (!saved.empty()) setenv("GRAFT_DIST_TIMEOUT", saved.c_str(), 1);
  dist::init_process_group();  // as main() left it, for the tests that follow
  EXPECT_TRUE(dist::is_initialized());
}

// Note [Collective checks]: sizes that differ between ranks fail on every rank, and the group goes on.
TEST(ProcessGroup, MismatchedSizesFailOnEveryRankAndTheGroupGoesOn) {
  if (world() == 1) GTEST_SKIP() << "needs two ranks";
  Tensor t = zeros({10 + rank()});
  try {
    dist::all_reduce(t);
    FAIL() << "sizes " << t.numel() << " passed";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("different collectives"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1: all_reduce of 11 float32"), std::string::npos) << m;
  }
  Tensor ok = ones({3});
  dist::all_reduce(ok);
  EXPECT_EQ(ok.data_ptr<float>()[0], float(world()));
}

// ---- samplers ----

TEST(DistributedSampler, ShardsArePyTorchsByHand) {
  using data::samplers::DistributedSampler;
  // 10 indices over 3 ranks: padded with 0 and 1 to 12.
  const std::vector<std::vector<size_t>> want = {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
  const std::vector<std::vector<size_t>> want_drop = {{0, 3, 6}, {1, 4, 7}, {2, 5, 8}};
  for (size_t r = 0; r < 3; ++r) {
    DistributedSampler s(10, 3, r, /*shuffle=*/false);
    EXPECT_EQ(s.indices(), want[r]);
    EXPECT_EQ(*s.next(3), (std::vector<size_t>{want[r][0], want[r][1], want[r][2]}));
    EXPECT_EQ(*s.next(3), (std::vector<size_t>{want[r][3]}));
    EXPECT_FALSE(s.next(3).has_value());
    EXPECT_EQ(DistributedSampler(10, 3, r, false, 0, /*drop_last=*/true).indices(), want_drop[r]);
  }
  // Shuffled: the shards of one epoch partition one permutation; another epoch reorders it.
  std::vector<size_t> seen, seen1;
  for (size_t r = 0; r < 4; ++r) {
    DistributedSampler s(12, 4, r, true, /*seed=*/5);
    seen.insert(seen.end(), s.indices().begin(), s.indices().end());
    s.set_epoch(1);
    seen1.insert(seen1.end(), s.indices().begin(), s.indices().end());
    EXPECT_EQ(DistributedSampler(12, 4, r, true, 5).indices().size(), 3u);
  }
  EXPECT_NE(seen, seen1);
  std::sort(seen.begin(), seen.end());
  std::sort(seen1.begin(), seen1.end());
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(seen[i], i);
  EXPECT_EQ(seen, seen1);
  EXPECT_THROW(DistributedSampler(10, 3, 3), Error);
}

TEST(DistributedSampler, DataLoaderShardsEveryEpoch) {
  auto x = arange(10, TensorOptions().dtype(kFloat64)).reshape({10, 1});
  auto ds = data::TensorDataset(x, x);
  std::vector<std::vector<double>> per_rank(3);
  for (int64_t r = 0; r < 3; ++r) {
    data::DataLoader loader(ds, data::DataLoaderOptions().batch_size(2).shuffle(true).seed(3).distributed(3, r));
    EXPECT_EQ(loader.size(), 2);  // ceil(10 / 3) = 4 examples, 2 batches
    for (auto& batch : loader)
      for (int64_t i = 0; i < batch.data.size(0); ++i) per_rank[r].push_back(batch.data.data_ptr<double>()[i]);
  }
  // The three shards are every third entry of one shuffled order, padded with its first two.
  std::vector<double> all;
  for (auto& v : per_rank) {
    EXPECT_EQ(v.size(), 4u);
    all.insert(all.end(), v.begin(), v.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<double> distinct(all.begin(), std::unique(all.begin(), all.end()));
  EXPECT_EQ(distinct.size(), 10u);
  EXPECT_THROW(data::DataLoader(ds, data::DataLoaderOptions().distributed(2, 2)), Error);
}

// ---- DistributedDataParallel against one process on the global batch ----

struct Net : nn::Module {
  explicit Net(bool with_unused) {
    fc1 = register_module("fc1", nn::Linear(6, 16));
    fc2 = register_module("fc2", nn::Linear(16, 16));
    fc3 = register_module("fc3", nn::Linear(16, 3));
    if (with_unused) extra = register_module("extra", nn::Linear(16, 3));
  }
  Tensor forward(const Tensor& x) { return fc3(tanh(fc2(tanh(fc1(x))))); }
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr}, extra{nullptr};
};

std::shared_ptr<Net> make_net(uint64_t seed, bool unused) {
  manual_seed(seed);
  auto n = std::make_shared<Net>(unused);
  n->to(kFloat64);
  return n;
}

enum class Opt { kSGD, kAdam };
struct Case {
  Opt opt = Opt::kSGD;
  int64_t micro = 1;                  // micro-batches per step (GradAccumulator, no_sync)
  std::optional<double> clip;         // clip_grad_norm_
  bool unused = false;                // a parameter the forward never uses (find_unused_parameters)
  double bucket_mb = 25.0;            // small: one bucket per parameter
  int zero = 0;                       // ZeroRedundancyOptimizer stage (0: none)
};

std::unique_ptr<optim::Optimizer> make_opt(Opt o, std::vector<Tensor> params) {
  if (o == Opt::kSGD) return std::make_unique<optim::SGD>(params, optim::SGDOptions(0.05).momentum(0.9));
  return std::make_unique<optim::Adam>(params, optim::AdamOptions(0.01));
}

double rel_diff(const Tensor& a, const Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a - b).abs().max().item<double>() / (scale > 0 ? scale : 1.0);
}

// A second DistributedDataParallel of `net`, kept alive for the test (one ZeRO per reducer).
nn::parallel::Reducer& fresh_ddp_reducer(const std::shared_ptr<Net>& net) {
  static std::vector<std::unique_ptr<DistributedDataParallel<std::shared_ptr<Net>>>> keep;
  keep.push_back(std::make_unique<DistributedDataParallel<std::shared_ptr<Net>>>(net));
  return keep.back()->reducer();
}

void run_case(const Case& c) {
  const int64_t W = world(), R = rank(), b = 4, steps = 30, G = W * b * c.micro;
  manual_seed(7);
  const Tensor X = randn({G * steps, 6}, TensorOptions().dtype(kFloat64));
  const Tensor Y = randn({G * steps, 3}, TensorOptions().dtype(kFloat64));

  auto ref = make_net(100, c.unused);
  auto ref_opt = make_opt(c.opt, ref->parameters());
  auto mine = make_net(100 + static_cast<uint64_t>(R), c.unused);  // DDP must broadcast rank 0's values
  DistributedDataParallel<std::shared_ptr<Net>> ddp(
      mine, DistributedDataParallelOptions()
                .bucket_cap_mb(c.bucket_mb)
                .first_bucket_cap_mb(std::min(1.0, c.bucket_mb))
                .find_unused_parameters(c.unused));
  if (c.bucket_mb < 0.01) {
    EXPECT_GE(ddp.reducer().buckets().size(), 4u);
  }
  std::unique_ptr<optim::Optimizer> opt;
  std::unique_ptr<optim::ZeroRedundancyOptimizer> zero;
  optim::Optimizer* stepper;
  if (c.zero) {
    zero = std::make_unique<optim::ZeroRedundancyOptimizer>(
        ddp.parameters(), [&](std::vector<Tensor> p) { return make_opt(c.opt, std::move(p)); },
        optim::ZeroRedundancyOptions().stage(c.zero), &ddp.reducer());
    stepper = zero.get();
  } else {
    opt = make_opt(c.opt, ddp.parameters());
    stepper = opt.get();
  }
  optim::GradAccumulator acc(*stepper, {.steps = c.micro, .max_grad_norm = c.clip, .sync = &ddp.reducer()});

  for (int64_t step = 0; step < steps; ++step) {
    // One process, the whole global batch.
    ref_opt->zero_grad();
    const Tensor ref_loss = nn::functional::mse_loss(ref->forward(X.narrow(0, step * G, G)), Y.narrow(0, step * G, G));
    ref_loss.backward();
    if (c.clip) nn::utils::clip_grad_norm_(ref->parameters(), *c.clip);
    ref_opt->step();
    // This rank's rows of each micro-batch.
    double loss_sum = 0;
    for (int64_t k = 0; k < c.micro; ++k) {
      const int64_t row = step * G + k * W * b + R * b;
      const Tensor loss = nn::functional::mse_loss(ddp(X.narrow(0, row, b)), Y.narrow(0, row, b));
      acc.backward(loss);
      loss_sum += loss.item<double>();
    }
    Tensor global = full({1}, loss_sum / double(c.micro), TensorOptions().dtype(kFloat64));
    dist::all_reduce(global, dist::ReduceOp::AVG);
    EXPECT_LE(std::abs(global.item<double>() - ref_loss.item<double>()), 1e-12 * std::abs(ref_loss.item<double>()))
        << "step " << step;
  }
  auto ref_params = ref->named_parameters();
  for (auto& item : ddp.named_parameters())
    EXPECT_LE(rel_diff(item.value(), ref_params[item.key()]), 1e-12) << item.key();
  if (c.unused) {
    EXPECT_FALSE(mine->extra->weight.grad().defined());  // used on no rank: left alone
  }
  if (!zero) return;
  // The sharded state, consolidated on rank 0, is the single-process optimiser's.
  const auto want = ref_opt->state_dict();
  const auto got = zero->consolidate_state_dict(0);
  if (R == 0) {
    ASSERT_EQ(got.size(), want.size());
    for (const auto& item : want) {
      ASSERT_TRUE(got.contains(item.key())) << item.key();
      EXPECT_LE(rel_diff(got[item.key()].to(kFloat64), item.value().to(kFloat64)), 1e-12) << item.key();
    }
  } else {
    EXPECT_EQ(got.size(), 0u);
  }
  // A single-process state dict loads into the N shards (each rank takes its elements).
  auto again = std::make_unique<optim::ZeroRedundancyOptimizer>(
      ddp.parameters(), [&](std::vector<Tensor> p) { return make_opt(c.opt, std::move(p)); },
      optim::ZeroRedundancyOptions().stage(1), &fresh_ddp_reducer(mine));
  again->load_consolidated_state_dict(want);
  const auto round_trip = again->consolidate_state_dict(0);
  if (R == 0) {
    for (const auto& item : want)
      EXPECT_EQ(rel_diff(round_trip[item.key()].to(kFloat64), item.value().to(kFloat64)), 0.0) << item.key();
  }
}

TEST(DistributedDataParallel, SGDMomentumEqualsOneProcessOnTheGlobalBatch) { run_case({.opt = Opt::kSGD}); }
TEST(DistributedDataParallel, AdamEqualsOneProcessOnTheGlobalBatch) { run_case({.opt = Opt::kAdam}); }
TEST(DistributedDataParallel, OneBucketPerParameter) { run_case({.opt = Opt::kAdam, .bucket_mb = 1e-6}); }
TEST(DistributedDataParallel, FourMicroBatchesUnderNoSync) { run_case({.opt = Opt::kSGD, .micro = 4}); }
TEST(DistributedDataParallel, ClipGradNormIsTheGlobalOne) { run_case({.opt = Opt::kSGD, .clip = 0.05}); }
TEST(DistributedDataParallel, UnusedParameterWithFindUnusedParameters) {
  run_case({.opt = Opt::kAdam, .unused = true, .bucket_mb = 1e-6});
}
TEST(ZeroRedundancyOptimizer, Stage1EqualsOneProcess) { run_case({.opt = Opt::kAdam, .zero = 1}); }
TEST(ZeroRedundancyOptimizer, Stage2EqualsOneProcess) { run_case({.opt = Opt::kAdam, .micro = 4, .zero = 2}); }
TEST(ZeroRedundancyOptimizer, Stage2WithClippingAndSGD) { run_case({.opt = Opt::kSGD, .clip = 0.05, .zero = 2}); }

// A model whose first parameters the forward never uses: a single-process Adam keeps no state for
// them (no gradient), so its state dict has no "state.0.*" and "state.1.*".
struct FirstUnusedNet : nn::Module {
  FirstUnusedNet() {
    skip = register_module("skip", nn::Linear(6, 3));
    fc = register_module("fc", nn::Linear(6, 3));
  }
  Tensor forward(const Tensor& x) { return fc(x); }
  nn::Linear skip{nullptr}, fc{nullptr};
};

TEST(ZeroRedundancyOptimizer, LoadsAStateDictWhoseFirstParameterHasNoState) {
  const int64_t steps = 3;
  manual_seed(11);
  auto ref = std::make_shared<FirstUnusedNet>();
  ref->to(kFloat64);
  const Tensor X = randn({8, 6}, TensorOptions().dtype(kFloat64));
  const Tensor Y = randn({8, 3}, TensorOptions().dtype(kFloat64));
  // The original: one process (the same on every rank), Adam for 3 steps.
  optim::Adam ref_opt(ref->parameters(), optim::AdamOptions(0.01));
  for (int64_t s = 0; s < steps; ++s) {
    ref_opt.zero_grad();
    nn::functional::mse_loss(ref->forward(X), Y).backward();
    ref_opt.step();
  }
  const auto want = ref_opt.state_dict();
  ASSERT_FALSE(want.contains("state.0.exp_avg"));  // the premise: parameters 0 and 1 have no state
  ASSERT_FALSE(want.contains("state.1.exp_avg"));
  ASSERT_TRUE(want.contains("state.2.exp_avg"));

  // Loaded into ZeRO's shards (each rank its elements) and gathered back on rank 0.
  DistributedDataParallel<std::shared_ptr<FirstUnusedNet>> ddp(ref);
  auto adam = [](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions(0.01)); };
  optim::ZeroRedundancyOptimizer zero(ddp.parameters(), adam, optim::ZeroRedundancyOptions().stage(1), &ddp.reducer());
  zero.load_consolidated_state_dict(want);
  const auto got = zero.consolidate_state_dict(0);
  if (rank() != 0) {
    EXPECT_EQ(got.size(), 0u);
    return;
  }
  for (int i : {2, 3}) {  // fc.weight, fc.bias: their state exactly
    for (const char* name : {"exp_avg", "exp_avg_sq"}) {
      const std::string k = "state." + std::to_string(i) + "." + name;
      ASSERT_TRUE(got.contains(k)) << k;
      EXPECT_EQ(got[k].sizes(), want[k].sizes()) << k;
      EXPECT_EQ((got[k] - want[k]).abs().max().item<double>(), 0.0) << k;
      EXPECT_GT(want[k].abs().max().item<double>(), 0.0) << k;  // a trained moment, not zeros
    }
    const std::string k = "state." + std::to_string(i) + ".step";
    ASSERT_TRUE(got.contains(k)) << k;
    EXPECT_EQ(got[k].to(kFloat64).item<double>(), double(steps)) << k;
  }
  for (int i : {0, 1}) {  // skip.weight, skip.bias: none (zero moments, as never stepped)
    for (const char* name : {"exp_avg", "exp_avg_sq"}) {
      const std::string k = "state." + std::to_string(i) + "." + name;
      ASSERT_TRUE(got.contains(k)) << k;
      EXPECT_EQ(got[k].abs().max().item<double>(), 0.0) << k;
    }
  }
}

TEST(ZeroRedundancyOptimizer, ConsolidateToARankOutsideTheWorldIsAnError) {
  const int64_t W = world();
  auto net = make_net(3, false);
  DistributedDataParallel<std::shared_ptr<Net>> ddp(net);
  optim::ZeroRedundancyOptimizer zero(
      ddp.parameters(), [](std::vector<Tensor> p) { return std::make_unique<optim::Adam>(p); },
      optim::ZeroRedundancyOptions().stage(1), &ddp.reducer());
  for (int to : {static_cast<int>(W), 5, -1}) {
    try {
      zero.consolidate_state_dict(to);
      FAIL() << "to = " << to << " was accepted in a world of " << W;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("consolidate_state_dict"), std::string::npos) << msg;
      EXPECT_NE(msg.find("to = " + std::to_string(to)), std::string::npos) << msg;
      EXPECT_NE(msg.find("[0, " + std::to_string(W - 1) + "]"), std::string::npos) << msg;
      EXPECT_NE(msg.find("a world of " + std::to_string(W)), std::string::npos) << msg;
    }
  }
  // Every rank refused before any collective: a valid call still works afterwards.
  EXPECT_EQ(zero.consolidate_state_dict(static_cast<int>(W - 1)).size() > 0, rank() == W - 1);
}

// Note [SyncBatchNorm]: N ranks x batch b with SyncBatchNorm take the steps one process takes with
// BatchNorm on batch N b: outputs, parameters and running statistics.
TEST(SyncBatchNorm, EqualsBatchNormOnTheGlobalBatch) {
  const int64_t W = world(), R = rank(), b = 4, steps = 30, G = W * b;
  manual_seed(7);
  const Tensor X = randn({G * steps, 6}, TensorOptions().dtype(kFloat64));
  const Tensor Y = randn({G * steps, 3}, TensorOptions().dtype(kFloat64));
  auto make = [](uint64_t seed) {
    manual_seed(seed);
    nn::Sequential s(nn::Linear(6, 16), nn::BatchNorm1d(16), nn::Tanh(), nn::Linear(16, 3));
    s->to(kFloat64);
    return s;
  };
  nn::Sequential ref = make(5);
  nn::Sequential mine(std::dynamic_pointer_cast<nn::SequentialImpl>(
      nn::SyncBatchNormImpl::convert_sync_batchnorm(make(5 + static_cast<uint64_t>(R)).ptr())));
  ASSERT_NE(dynamic_cast<nn::SyncBatchNormImpl*>(mine->ptr(1).get()), nullptr);
  DistributedDataParallel<nn::Sequential> ddp(mine);  // broadcasts rank 0's weights and statistics
  optim::SGD ref_opt(ref->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  optim::SGD opt(ddp.parameters(), optim::SGDOptions(0.05).momentum(0.9));
  for (int64_t step = 0; step < steps; ++step) {
    ref_opt.zero_grad();
    const Tensor ref_out = ref->forward(X.narrow(0, step * G, G));
    nn::functional::mse_loss(ref_out, Y.narrow(0, step * G, G)).backward();
    ref_opt.step();
    opt.zero_grad();
    const Tensor out = ddp(X.narrow(0, step * G + R * b, b));
    nn::functional::mse_loss(out, Y.narrow(0, step * G + R * b, b)).backward();
    opt.step();
    EXPECT_LE(rel_diff(out, ref_out.narrow(0, R * b, b)), 1e-12) << "step " << step;
  }
  auto ref_state = ref->named_parameters();
  for (auto& item : mine->named_parameters()) EXPECT_LE(rel_diff(item.value(), ref_state[item.key()]), 1e-12) << item.key();
  auto ref_buffers = ref->named_buffers();
  for (auto& item : mine->named_buffers()) {
    if (item.value().dtype() == kInt64) {
      EXPECT_EQ(item.value().item<int64_t>(), ref_buffers[item.key()].item<int64_t>()) << item.key();
    } else {
      EXPECT_LE(rel_diff(item.value(), ref_buffers[item.key()]), 1e-12) << item.key();
    }
  }
}

// SyncBatchNorm is BatchNorm's base with its own statistics: BatchNorm's state, reset_parameters and
// PyTorch's repr, "SyncBatchNorm(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)".
TEST(SyncBatchNorm, HasBatchNormsStateAndRepr) {
  const PrintStyleGuard python(PrintStyle::Python);  // compares PyTorch's repr
  nn::SyncBatchNorm bn(nn::SyncBatchNormOptions(4).momentum(std::nullopt));
  std::vector<std::string> keys;
  for (const auto& item : bn->state_dict()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  {
    NoGradGuard ng;
    bn->weight.fill_(3.0);
    bn->running_var.fill_(2.0);
  }
  bn->reset_parameters();
  EXPECT_EQ(bn->weight.sum().item<double>(), 4.0);
  EXPECT_EQ(bn->running_var.sum().item<double>(), 4.0);
  std::ostringstream os;
  os << *bn;
  EXPECT_EQ(os.str(), "SyncBatchNorm(4, eps=1e-05, momentum=None, affine=True, track_running_stats=True)");
  EXPECT_TRUE(nn::SyncBatchNorm(nn::SyncBatchNormOptions(4).affine(false))->parameters().empty());
}

// A group that ends early (flush after 2 of 4 micro-batches, both under no_sync) is averaged over
// the ranks by sync_now: one step equals one process's step on the same 2 N b rows.
TEST(DistributedDataParallel, FlushOfAShortGroupSynchronises) {
  const int64_t W = world(), R = rank(), b = 3;
  manual_seed(11);
  const Tensor X = randn({2 * W * b, 6}, TensorOptions().dtype(kFloat64));
  const Tensor Y = randn({2 * W * b, 3}, TensorOptions().dtype(kFloat64));
  auto ref = make_net(21, false);
  auto mine = make_net(21 + static_cast<uint64_t>(R), false);
  DistributedDataParallel<std::shared_ptr<Net>> ddp(mine);
  optim::SGD ref_opt(ref->parameters(), optim::SGDOptions(0.1));
  optim::SGD opt(ddp.parameters(), optim::SGDOptions(0.1));
  optim::GradAccumulator acc(opt, {.steps = 4, .sync = &ddp.reducer()});
  for (int64_t k = 0; k < 2; ++k) {
    const int64_t row = k * W * b + R * b;
    EXPECT_FALSE(acc.backward(nn::functional::mse_loss(ddp(X.narrow(0, row, b)), Y.narrow(0, row, b))));
  }
  EXPECT_TRUE(acc.flush());
  nn::functional::mse_loss(ref->forward(X), Y).backward();
  ref_opt.step();
  auto want = ref->named_parameters();
  for (auto& item : ddp.named_parameters()) EXPECT_LE(rel_diff(item.value(), want[item.key()]), 1e-12) << item.key();
}

TEST(DistributedDataParallel, UnusedParameterWithoutFindUnusedIsAnErrorNamingIt) {
  auto net = make_net(1, /*unused=*/true);
  DistributedDataParallel<std::shared_ptr<Net>> ddp(net);
  try {
    ddp(randn({2, 6}, TensorOptions().dtype(kFloat64))).sum().backward();
    FAIL() << "an unused parameter passed";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("extra.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("find_unused_parameters"), std::string::npos) << m;
  }
}

TEST(DistributedDataParallel, GradientsLiveOnceInTheBuckets) {
  auto net = make_net(1, false);
  DistributedDataParallel<std::shared_ptr<Net>> ddp(net);
  int64_t param_bytes = 0;
  for (const Tensor& p : ddp.parameters()) param_bytes += static_cast<int64_t>(p.nbytes());
  const int64_t before = memory::stats()[memory::Category::Gradients].current_bytes;
  for (int i = 0; i < 2; ++i) {
    net->zero_grad();
    ddp(randn({8, 6}, TensorOptions().dtype(kFloat64))).sum().backward();
  }
  // The buckets were counted at construction; backward adds no second copy.
  EXPECT_EQ(memory::stats()[memory::Category::Gradients].current_bytes, before);
  int64_t bucket_bytes = 0;
  for (auto& b : ddp.reducer().buckets()) bucket_bytes += static_cast<int64_t>(b.buffer.nbytes());
  EXPECT_EQ(bucket_bytes, param_bytes);
  for (size_t i = 0; i < ddp.parameters().size(); ++i) {
    const Tensor& g = ddp.parameters()[i].grad();
    bool inside = false;
    for (auto& b : ddp.reducer().buckets())
      inside |= g.data_ptr() >= b.buffer.data_ptr() &&
                static_cast<const char*>(g.data_ptr()) < static_cast<const char*>(b.buffer.data_ptr()) + b.buffer.nbytes();
    EXPECT_TRUE(inside) << ddp.reducer().parameter_names()[i];
  }
}

TEST(DistributedDataParallel, MismatchedModelsAreAnErrorOnEveryRank) {
  if (world() == 1) GTEST_SKIP() << "needs two ranks";
  manual_seed(1);
  nn::Sequential net(nn::Linear(4, rank() == 1 ? 5 : 4));
  try {
    DistributedDataParallel<nn::Sequential> ddp(net);
    FAIL() << "different models passed";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rank 0 and rank 1 differ"), std::string::npos) << m;
    EXPECT_NE(m.find("[5, 4]"), std::string::npos) << m;
  }
}

// The first bucket's all-reduce is queued while backward still produces gradients.
TEST(DistributedDataParallel, TheFirstBucketIsQueuedBeforeBackwardEnds) {
  manual_seed(3);
  nn::Sequential net(nn::Linear(64, 256), nn::Tanh(), nn::Linear(256, 256), nn::Tanh(), nn::Linear(256, 256), nn::Tanh(),
                     nn::Linear(256, 8));
  net->to(kFloat64);
  DistributedDataParallel<nn::Sequential> ddp(
      net, DistributedDataParallelOptions().bucket_cap_mb(0.5).first_bucket_cap_mb(0.01));
  ASSERT_GE(ddp.reducer().buckets().size(), 3u);
  ddp(randn({32, 64}, TensorOptions().dtype(kFloat64))).sum().backward();
  const auto& ev = ddp.reducer().last_events();
  using K = nn::parallel::ReducerEvent::Kind;
  auto first = [&](K k) {
    return std::find_if(ev.begin(), ev.end(), [&](const auto& e) { return e.kind == k; }) - ev.begin();
  };
  auto last = [&](K k) {
    int64_t at = -1;
    for (size_t i = 0; i < ev.size(); ++i)
      if (ev[i].kind == k) at = static_cast<int64_t>(i);
    return at;
  };
  EXPECT_LT(first(K::kBucketQueued), last(K::kGradReady));
  EXPECT_LT(last(K::kGradReady), first(K::kBackwardEnd));
  std::printf("rank %lld: %zu buckets, communication %.3f ms, waited %.3f ms at the end of backward\n",
              static_cast<long long>(rank()), ddp.reducer().buckets().size(),
              ddp.reducer().last_communication_seconds() * 1e3, ddp.reducer().last_wait_seconds() * 1e3);
}

// ZeRO: each rank keeps 1/N of the optimiser state (stage 1) and of the gradients (stage 2), by
// graft's accounting, against DDP with a whole Adam on every rank.
TEST(ZeroRedundancyOptimizer, StateAndGradientBytesPerRankAreAShare) {
  const int64_t W = world();
  auto bytes = [](memory::Category c) { return memory::stats()[c].current_bytes; };
  int64_t ddp_state = 0, n = 0;
  for (int stage : {0, 1, 2}) {
    const int64_t s0 = bytes(memory::Category::OptimizerState), g0 = bytes(memory::Category::Gradients);
    auto net = make_net(1, false);
    DistributedDataParallel<std::shared_ptr<Net>> ddp(net);
    n = 0;
    for (const Tensor& p : ddp.parameters()) n += p.numel();
    const int64_t chunk = (n + W - 1) / W;
    const int64_t shard = std::min(n, (rank() + 1) * chunk) - rank() * chunk;  // the last rank: fewer
    std::unique_ptr<optim::Optimizer> opt;
    if (stage == 0) {
      opt = make_opt(Opt::kAdam, ddp.parameters());
    } else {
      auto zero = std::make_unique<optim::ZeroRedundancyOptimizer>(
          ddp.parameters(), [](std::vector<Tensor> p) { return make_opt(Opt::kAdam, std::move(p)); },
          optim::ZeroRedundancyOptions().stage(stage), &ddp.reducer());
      EXPECT_EQ(zero->chunk(), chunk);
      EXPECT_EQ(zero->shard_numel(), shard);
      opt = std::move(zero);
    }
    opt->zero_grad();
    ddp(randn({8, 6}, TensorOptions().dtype(kFloat64))).sum().backward();
    opt->step();
    const int64_t state = bytes(memory::Category::OptimizerState) - s0;
    const int64_t grads = bytes(memory::Category::Gradients) - g0;
    std::printf("rank %lld, ZeRO stage %d: %lld parameters, optimizer state %lld B, gradients %lld B\n",
                static_cast<long long>(rank()), stage, static_cast<long long>(n), static_cast<long long>(state),
                static_cast<long long>(grads));
    if (stage == 0) {
      ddp_state = state;
      EXPECT_EQ(state, 2 * n * 8);  // Adam's two moments in float64
      EXPECT_EQ(grads, n * 8);      // the buckets, nothing else
    } else {
      EXPECT_EQ(state * n, ddp_state * shard);  // exactly the shard's share
      // Stage 1 keeps DDP's buckets and the shard's gradient; stage 2 only the shard's.
      EXPECT_EQ(grads, stage == 1 ? n * 8 + shard * 8 : shard * 8);
    }
  }
}

// Note [ZeRO shards]'s arithmetic, worked out by hand: 10 elements over 3 ranks are 4 + 4 + 2.
TEST(ZeroRedundancyOptimizer, FlatShardsAreCeilChunksWithFewerOnTheLastRanks) {
  const dist::FlatShards s(10, 3);
  EXPECT_EQ(s.chunk, 4);
  EXPECT_EQ(s.counts(), (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(s.begin(2), 8);
  EXPECT_EQ(s.end(2), 10);
  // A bucket of elements [3, 7): rank 0 owns 3, rank 1 owns 4..6, rank 2 none.
  EXPECT_EQ(s.counts_in(3, 4), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(s.overlap(1, 3, 4).lo, 4);
  EXPECT_EQ(s.overlap(1, 3, 4).hi, 7);
  EXPECT_EQ(s.overlap(2, 3, 4).size(), 0);
  // Fewer elements than ranks' worth: the last rank owns none.
  EXPECT_EQ(dist::FlatShards(2, 3).counts(), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(dist::FlatShards(7, 1).counts(), (std::vector<int64_t>{7}));
}

}  // namespace
}  // namespace graft::test

// Every rank runs every test; the process group lives for the whole run.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  graft::distributed::init_process_group();
  const int rc = RUN_ALL_TESTS();
  graft::distributed::destroy_process_group();
  return rc;
}
