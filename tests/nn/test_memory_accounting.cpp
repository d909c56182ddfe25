// Memory accounting by category, the limit and out-of-memory report, the history of events, the
// graph-leak detector, saved-tensor hooks, and the engine's own peak during backward.
//
// Every expectation is computed from the tensors the test itself holds: the bytes of their
// storages, summed by hand (distinct storages only), never from graft's counters alone.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "graft/graft.h"

namespace graft::test {
namespace {

using memory::Category;

int64_t category_bytes(Category c) { return memory::stats()[c].current_bytes; }

// The bytes of the distinct storages behind `ts` (a view and its base count once).
int64_t storage_bytes(std::initializer_list<Tensor> ts) {
  std::set<const Storage*> seen;
  int64_t n = 0;
  for (const Tensor& t : ts)
    if (t.defined() && seen.insert(t.impl().storage.get()).second) n += static_cast<int64_t>(t.impl().storage->nbytes);
  return n;
}

int64_t sum_of_categories(const memory::Stats& st) {
  int64_t n = 0;
  for (const auto& c : st.by_category) n += c.current_bytes;
  return n;
}

struct Baseline {
  memory::Stats st = memory::stats();
  int64_t operator()(Category c) const { return category_bytes(c) - st[c].current_bytes; }
};

// A 20 -> 30 -> 5 MLP in float32; the tensors of one forward are kept so the test can sum them.
struct LinearMlp {
  nn::Linear l1{nn::LinearOptions(20, 30)};
  nn::Linear l2{nn::LinearOptions(30, 5)};
  int64_t param_bytes() const { return (20 * 30 + 30 + 30 * 5 + 5) * 4; }
  std::vector<Tensor> parameters() {
    auto p = l1->parameters();
    auto q = l2->parameters();
    p.insert(p.end(), q.begin(), q.end());
    return p;
  }
};

TEST(MemoryCategories, EveryByteIsCountedOnceAndMovesWithItsRole) {
  const Baseline base;
  LinearMlp m;
  EXPECT_EQ(base(Category::Parameters), m.param_bytes());
  optim::SGD opt(m.parameters(), optim::SGDOptions(0.1).momentum(0.9));

  Tensor x = randn({8, 20});
  Tensor h, out, loss;
  {
    h = tanh(m.l1(x));      // linear saves x (and its weight, a parameter); tanh saves h
    out = m.l2(h);          // linear saves h again: one storage, counted once
    loss = (out * out).sum();  // mul saves out twice: counted once
  }
  // The graph holds exactly x, h and out (parameters saved by linear stay parameters).
  EXPECT_EQ(base(Category::SavedActivations), storage_bytes({x, h, out}));
  EXPECT_EQ(base(Category::Gradients), 0);
  EXPECT_EQ(sum_of_categories(memory::stats()), memory::stats().allocated_bytes);

  loss.backward();
  EXPECT_EQ(base(Category::SavedActivations), 0);  // backward released them
  EXPECT_EQ(base(Category::Gradients), m.param_bytes());
  int64_t grad_bytes = 0;
  for (const Tensor& p : m.parameters()) grad_bytes += storage_bytes({p.grad()});
  EXPECT_EQ(base(Category::Gradients), grad_bytes);

  opt.step();
  EXPECT_EQ(base(Category::OptimizerState), m.param_bytes());  // one momentum buffer per parameter
  EXPECT_EQ(base(Category::Parameters), m.param_bytes());

  opt.zero_grad(/*set_to_none=*/true);
  EXPECT_EQ(base(Category::Gradients), 0);
  EXPECT_EQ(sum_of_categories(memory::stats()), memory::stats().allocated_bytes);
}

TEST(MemoryCategories, NoGradAndInferenceModeSaveNothing) {
  LinearMlp m;
  Tensor x = randn({64, 20});
  const Baseline base;
  {
    NoGradGuard no_grad;
    Tensor y = tanh(m.l2(tanh(m.l1(x))));
    EXPECT_EQ(base(Category::SavedActivations), 0);
  }
  {
    InferenceMode inference;
    Tensor y = tanh(m.l2(tanh(m.l1(x))));
    EXPECT_EQ(base(Category::SavedActivations), 0);
  }
}

TEST(MemoryCategories, AViewAndItsBaseAreOneStorage) {
  Tensor x = randn({16, 16}).requires_grad_();
  const Baseline base;
  Tensor a = x * 2.0;           // the base
  Tensor v = a.t();             // a view of it
  Tensor s = a.narrow(0, 0, 4); // another view
  Tensor y = (a * v).sum() + (s * s).sum();  // saves a, v and s: all one storage
  EXPECT_EQ(base(Category::SavedActivations), storage_bytes({a}));
  EXPECT_EQ(storage_bytes({a, v, s}), 16 * 16 * 4);
  y.backward();
  EXPECT_EQ(base(Category::SavedActivations), 0);
}

TEST(MemoryCategories, PeakPerCategoryIsTheHighestItReached) {
  Tensor w = randn({256, 256}).requires_grad_();
  memory::reset_peak_stats();
  const Baseline base;
  int64_t held = 0;
  {
    Tensor a = tanh(randn({128, 256}).mm(w));
    Tensor b = tanh(a.mm(w));
    // tanh saves both outputs; the mms save their inputs (a again) and w: w is a leaf, not a
    // registered parameter, so the graph holding it makes it a saved activation.
    held = storage_bytes({a, b, w}) + 128 * 256 * 4;  // + the first mm's input
    EXPECT_EQ(base(Category::SavedActivations), held);
    b.sum().backward();
  }
  const auto st = memory::stats();
  EXPECT_EQ(st[Category::SavedActivations].peak_bytes - base.st[Category::SavedActivations].current_bytes, held);
  EXPECT_EQ(base(Category::SavedActivations), 0);
}

TEST(MemoryCategories, SummaryListsEveryCategory) {
  const std::string s = memory::memory_summary();
  for (const char* label : {"parameters", "gradients", "optimizer state", "saved activations", "other", "total",
                            "cached (free)", "limit"})
    EXPECT_NE(s.find(label), std::string::npos) << label;
}

TEST(MemoryFormat, BytesParseAndPrintByHand) {
  EXPECT_EQ(memory::parse_bytes("2GiB"), int64_t(2) << 30);
  EXPECT_EQ(memory::parse_bytes("512MiB"), int64_t(512) << 20);
  EXPECT_EQ(memory::parse_bytes("64 KiB"), 65536);
  EXPECT_EQ(memory::parse_bytes("1.5GB"), 1500000000);
  EXPECT_EQ(memory::parse_bytes("1000000"), 1000000);
  EXPECT_THROW(memory::parse_bytes("two gigs"), Error);
  EXPECT_THROW(memory::parse_bytes("-5MiB"), Error);
  EXPECT_EQ(memory::format_bytes(512), "512 B");
  EXPECT_EQ(memory::format_bytes(3 << 19), "1.50 MiB");
  EXPECT_EQ(memory::format_bytes(int64_t(2) << 30), "2.00 GiB");
}

// ---- limit and out-of-memory report ----

struct LimitScope {
  explicit LimitScope(int64_t bytes) { memory::set_limit(bytes); }
  ~LimitScope() { memory::set_limit(0); }
};

TEST(OutOfMemory, AnAllocationPastTheLimitThrowsAndChangesNothing) {
  const auto before = memory::stats();
  LimitScope limit(before.allocated_bytes + (1 << 20));
  try {
    Tensor t = zeros({1 << 19});  // 2 MiB
    FAIL() << "expected OutOfMemoryError";
  } catch (const memory::OutOfMemoryError& e) {
    EXPECT_EQ(e.requested_bytes(), 2 << 20);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("asked for 2.00 MiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("zeros"), std::string::npos) << msg;
    EXPECT_NE(msg.find("saved activations"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Cached but free"), std::string::npos) << msg;
  }
  const auto after = memory::stats();
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(after.allocations, before.allocations);
  Tensor fits = zeros({1 << 17});  // 512 KiB still fits
  EXPECT_EQ(memory::stats().allocated_bytes, before.allocated_bytes + (1 << 19));
}

TEST(OutOfMemory, TheReportNamesTheLargestSavedActivationsAndTrainingGoesOnWithASmallerBatch) {
  manual_seed(0);
  nn::Sequential model(nn::Linear(64, 256), nn::Tanh(), nn::Linear(256, 256), nn::Tanh(), nn::Linear(256, 10));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  const int64_t base = memory::stats().allocated_bytes;
  // Batch 1024: the input (256 KiB) and the outputs of the two Linear + Tanh layers (1 MiB each,
  // saved; Sequential fuses each pair, so the tanh writes over the product and no separate
  // pre-activation exists) fit under a limit of 3 MiB over the model; the backward's first 1 MiB
  // gradient (the last Linear's input gradient) does not.
  LimitScope limit(base + (3 << 20));
  auto step = [&](int64_t batch) {
    Tensor x = randn({batch, 64});
    Tensor loss = model->forward(x).pow(2).mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
    return loss.item<float>();
  };
  bool failed = false;
  try {
    step(1024);
  } catch (const memory::OutOfMemoryError& e) {
    failed = true;
    ASSERT_FALSE(e.largest_saved().empty());
    const auto& top = e.largest_saved().front();
    EXPECT_EQ(top.bytes, 1024 * 256 * 4);
    EXPECT_EQ(top.shape, "[1024, 256]");
    EXPECT_EQ(top.produced_by, "fused_linear_tanh");
    EXPECT_EQ(top.saved_by, "FusedLinearTanhBackward0");
    const std::string msg = e.what();
    EXPECT_NE(msg.find("AddmmBackward0 asked for 1.00 MiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[1024, 256] float32, produced by fused_linear_tanh"), std::string::npos) << msg;
  }
  ASSERT_TRUE(failed);
  EXPECT_EQ(memory::stats()[Category::SavedActivations].current_bytes, 0);  // the failed graph is gone
  // Lower the batch size and go on: the same model trains.
  EXPECT_TRUE(std::isfinite(step(128)));
  EXPECT_TRUE(std::isfinite(step(128)));
}

// ---- history ----

TEST(MemoryHistory, RecordsAllocationsFreesAndMovesWithRunningTotals) {
  memory::record_history(true, 1000);
  memory::set_step(7);
  {
    Tensor x = randn({100}).requires_grad_();  // 400 bytes
    Tensor y = exp(x);                          // 400 bytes, saved by ExpBackward0 (moves to saved)
    y.sum().backward();
  }
  memory::record_history(false);
  const auto events = memory::history();
  ASSERT_GE(events.size(), 4u);
  bool saw_move_to_saved = false, saw_exp_alloc = false;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    EXPECT_EQ(e.seq, i);
    EXPECT_EQ(e.step, 7);
    if (e.action == memory::Event::Action::Move && e.category == Category::SavedActivations && e.bytes == 400)
      saw_move_to_saved = true;
    if (e.action == memory::Event::Action::Alloc && e.op && std::string(e.op) == "exp") saw_exp_alloc = true;
  }
  EXPECT_TRUE(saw_move_to_saved);
  EXPECT_TRUE(saw_exp_alloc);
  // Running totals: replaying the events from the first one's totals reproduces the last one's.
  auto totals = events.front().totals;
  for (size_t i = 1; i < events.size(); ++i) {
    const auto& e = events[i];
    const auto c = static_cast<size_t>(e.category);
    if (e.action == memory::Event::Action::Alloc) totals[c] += e.bytes;
    if (e.action == memory::Event::Action::Free) totals[c] -= e.bytes;
    if (e.action == memory::Event::Action::Move) {
      totals[static_cast<size_t>(e.from)] -= e.bytes;
      totals[c] += e.bytes;
    }
    EXPECT_EQ(totals, e.totals) << "event " << i;
  }
  const std::string json = memory::history_json();
  EXPECT_NE(json.find("\"saved_activations\""), std::string::npos);
}

TEST(MemoryHistory, TheRingBufferKeepsTheLastEvents) {
  memory::record_history(true, 10);
  for (int i = 0; i < 20; ++i) Tensor t = empty({4});
  memory::record_history(false);
  const auto events = memory::history();
  ASSERT_EQ(events.size(), 10u);
  EXPECT_EQ(events.front().seq, 30u);  // 40 events (20 allocs + 20 frees); the last 10 remain
  EXPECT_EQ(events.back().seq, 39u);
}

// ---- graph-leak detector ----

TEST(GraphLeaks, AccumulatingTheLossTensorIsCaught) {
  manual_seed(0);
  nn::Linear model(nn::LinearOptions(10, 1));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  std::vector<diagnostics::GraphLeak> reported;
  diagnostics::GraphLeakDetector detector({.on_leak = [&](const diagnostics::GraphLeak& l) { reported.push_back(l); }});
  Tensor total_loss = zeros({});
  std::vector<diagnostics::GraphLeak> last;
  for (int step = 0; step < 6; ++step) {
    Tensor loss = model->forward(randn({4, 10})).pow(2).mean();
    opt.zero_grad();
    loss.backward();
    opt.step();
    total_loss = total_loss + loss;  // the mistake
    last = detector.step();
  }
  ASSERT_FALSE(reported.empty());
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].grad_fn, "AddBackward0");
  EXPECT_EQ(last[0].tensor, "a float32 tensor of shape []");
  EXPECT_EQ(last[0].root_step, 5);
  EXPECT_EQ(last[0].first_step, 0);
  EXPECT_NE(last[0].message.find("loss.item"), std::string::npos);
  // Steps 0..4 are leaked after 6 steps (one step of grace): each left its add and its loss graph.
  EXPECT_GE(last[0].leaked_nodes, 5 * 2);
  EXPECT_GT(last[0].total_nodes, last[0].leaked_nodes);
}

TEST(GraphLeaks, TheCorrectLoopIsQuiet) {
  nn::Linear model(nn::LinearOptions(10, 1));
  diagnostics::GraphLeakDetector detector({.on_leak = [](const diagnostics::GraphLeak& l) { ADD_FAILURE() << l.message; }});
  double total_loss = 0;
  for (int step = 0; step < 6; ++step) {
    Tensor loss = model->forward(randn({4, 10})).pow(2).mean();
    loss.backward();
    total_loss += loss.item<float>();
    EXPECT_TRUE(detector.step().empty());
  }
  EXPECT_TRUE(std::isfinite(total_loss));
}

TEST(GraphLeaks, AnEvaluationLoopWithoutNoGradPinsItsSavedTensorsAndTheDetectorSaysHowMuch) {
  nn::Sequential model(nn::Linear(32, 64), nn::Tanh(), nn::Linear(64, 1));
  diagnostics::GraphLeakDetector detector({.on_leak = [](const diagnostics::GraphLeak&) {}});
  Tensor total = zeros({});
  // The saved bytes of one step's graph, measured on its own.
  int64_t per_step = 0;
  {
    const int64_t before = category_bytes(Category::SavedActivations);
    Tensor l = model->forward(randn({16, 32})).sum();
    per_step = category_bytes(Category::SavedActivations) - before;
  }
  ASSERT_EQ(per_step, (16 * 32 + 16 * 64) * 4);  // the input and the tanh output
  detector.step();  // the measurement was step 0; the loop starts at step 1
  std::vector<diagnostics::GraphLeak> leaks;
  for (int step = 1; step <= 4; ++step) {
    total = total + model->forward(randn({16, 32})).sum();
    leaks = detector.step();
  }
  ASSERT_EQ(leaks.size(), 1u);
  // Ending step 4, the graphs of steps 1 to 3 are leaked (step 4's is within its grace step).
  EXPECT_EQ(leaks[0].first_step, 1);
  EXPECT_EQ(leaks[0].saved_bytes, 3 * per_step);
}

// ---- saved-tensor hooks ----

TEST(SavedTensorHooks, PackAndUnpackSeeEverySavedTensorAndGradientsAreUnchanged) {
  manual_seed(1);
  Tensor x = randn({5, 7}).requires_grad_();
  Tensor w = randn({7, 3}).requires_grad_();
  auto run = [&] { return tanh(x.mm(w)).pow(2).sum(); };
  Tensor y0 = run();
  y0.backward();
  const Tensor gx0 = x.grad().clone(), gw0 = w.grad().clone();
  x.mutable_grad() = Tensor();
  w.mutable_grad() = Tensor();

  int packs = 0, unpacks = 0;
  Tensor y;
  {
    autograd::SavedTensorsHooks hooks([&](const Tensor& t) { ++packs; return t.clone(); },
                                      [&](const Tensor& t) { ++unpacks; return t; });
    y = run();
  }
  EXPECT_EQ(packs, 4);  // mm saves x and w; tanh its output; pow its base
  y.backward();         // after the scope closed: the pair stays with the saved tensors
  EXPECT_GE(unpacks, 4);  // each saved tensor is read at least once (a backward may read one twice)
  EXPECT_TRUE(equal(x.grad(), gx0));
  EXPECT_TRUE(equal(w.grad(), gw0));
}

TEST(SavedTensorHooks, InPlaceChangesOfThePackedOriginalAreStillCaught) {
  Tensor x = randn({4}).requires_grad_();
  Tensor a = x * 1.0;
  Tensor y;
  {
    autograd::SavedTensorsHooks hooks([](const Tensor& t) { return t.clone(); }, [](const Tensor& t) { return t; });
    y = (a * a).sum();
  }
  {
    NoGradGuard ng;
    a.add_(1.0);
  }
  EXPECT_THROW(y.backward(), Error);
}

TEST(SavedTensorHooks, BFloat16HalvesSavedActivationsWithinTheRoundingBound) {
  manual_seed(2);
  nn::Linear lin(nn::LinearOptions(64, 32));
  Tensor x = randn({256, 64});
  Tensor g_out = randn({256, 32});

  const int64_t before = category_bytes(Category::SavedActivations);
  Tensor y32 = lin(x);
  const int64_t saved32 = category_bytes(Category::SavedActivations) - before;
  EXPECT_EQ(saved32, 256 * 64 * 4);  // the input (the weight is a parameter)
  y32.backward(g_out);
  const Tensor gw32 = lin->weight.grad().clone();
  lin->weight.mutable_grad() = Tensor();

  Tensor y16;
  {
    autograd::SaveInBFloat16 bf16;
    y16 = lin(x);
  }
  EXPECT_EQ(category_bytes(Category::SavedActivations) - before, saved32 / 2);
  y16.backward(g_out);
  const Tensor gw16 = lin->weight.grad();
  // dW = g_out^T x with x rounded to bfloat16 (relative error <= 2^-9 per element), so
  // |dW16 - dW32| <= 2^-9 |g_out|^T |x| elementwise (plus float32 rounding).
  const Tensor bound = g_out.abs().t().mm(x.abs()) * (std::ldexp(1.0, -9) * 1.01) + 1e-5;
  const Tensor over = (gw16 - gw32).abs().le(bound).logical_not().sum();
  EXPECT_EQ(over.item<int64_t>(), 0);
  EXPECT_FALSE(equal(gw16, gw32));  // the rounding did happen
}

TEST(SavedTensorHooks, OnDiskMovesSavedActivationsOutOfTensorMemoryAndGradientsAreExact) {
  manual_seed(3);
  nn::Sequential model(nn::Linear(64, 128), nn::Tanh(), nn::Linear(128, 10));
  Tensor x = randn({512, 64});
  auto grads = [&] {
    std::vector<Tensor> gs;
    for (auto& p : model->parameters()) {
      gs.push_back(p.grad().clone());
      p.mutable_grad() = Tensor();
    }
    return gs;
  };
  const int64_t before = category_bytes(Category::SavedActivations);
  Tensor l0 = model->forward(x).pow(2).sum();
  EXPECT_GT(category_bytes(Category::SavedActivations) - before, 512 * 128 * 4);
  l0.backward();
  const auto g0 = grads();

  Tensor l1;
  {
    autograd::SaveOnDisk disk("/tmp", /*min_bytes=*/4096);
    l1 = model->forward(x).pow(2).sum();
  }
  EXPECT_EQ(category_bytes(Category::SavedActivations) - before, 0);  // every saved activation is a mapped file
  l1.backward();
  const auto g1 = grads();
  ASSERT_EQ(g0.size(), g1.size());
  for (size_t i = 0; i < g0.size(); ++i) EXPECT_TRUE(equal(g0[i], g1[i])) << i;
}

// ---- the engine's own memory ----

// A chain y = tanh(tanh(...tanh(x))) of depth D over B bytes per activation. The theoretical minimum
// during backward frees each saved output right after its node runs, so the live bytes never exceed
// what the forward left (D saved outputs) plus the gradient flowing in and the one flowing out.
TEST(EngineMemory, BackwardOfAChainStaysAtTheTheoreticalMinimum) {
  constexpr int64_t kDepth = 16, kN = 1 << 16;
  constexpr int64_t B = kN * 4;
  Tensor x = randn({kN}).requires_grad_();
  Tensor y = x;
  for (int64_t i = 0; i < kDepth; ++i) y = tanh(y);
  Tensor loss = y.sum();
  y = Tensor();  // the graph alone holds the chain now
  EXPECT_EQ(category_bytes(Category::SavedActivations) - 0 >= kDepth * B, true);
  memory::reset_peak_stats();
  const int64_t before = memory::stats().allocated_bytes;
  loss.backward();
  const int64_t peak = memory::stats().peak_allocated_bytes;
  // Minimum: the saved outputs (already counted in `before`) + incoming and outgoing gradient; the
  // kernel computing g * (1 - y^2) needs no other temporary.
  EXPECT_LE(peak - before, 2 * B);
  EXPECT_EQ(category_bytes(Category::SavedActivations), 0);
  EXPECT_EQ(memory::stats().allocated_bytes - before, B - kDepth * B);  // x.grad remains
}

// A clone's parameters are parameters, as are a module's after to(dtype): the copies take the
// role of the tensors they replace (they were counted as "other" before).
TEST(MemoryCategories, ClonedAndConvertedParametersStayParameters) {
  nn::Linear a(100, 50);
  const int64_t bytes = (100 * 50 + 50) * 4;
  const int64_t params = memory::stats()[Category::Parameters].current_bytes;
  const auto b = a->clone();
  EXPECT_EQ(memory::stats()[Category::Parameters].current_bytes - params, bytes);
  a->to(kFloat64);
  // b's float32 copy, and a's float64 parameters in place of its float32 ones: bytes + (2 bytes - bytes).
  EXPECT_EQ(memory::stats()[Category::Parameters].current_bytes - params, 2 * bytes);
}

}  // namespace
}  // namespace graft::test
