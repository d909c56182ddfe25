// One Adam step over a 4096 x 1024 float32 parameter (4,194,304 values, the largest matrix of the
// issue-31 GPT) with its moments held in float32, bfloat16 or 8-bit block-wise codes (Note [Compact
// optimizer state] in graft/optim/state_precision.h), at 1 and 2 of graft's threads. Graft only;
// BENCHMARKS.md, "Training in a memory budget (issue 31)".
//
//   graft_adam_state_precision [--benchmark_repetitions=N --benchmark_report_aggregates_only=true]
//
// The gradient is fixed (randn) and the step count grows with every iteration, so after the first
// (untimed, state-creating) step each iteration is the steady-state update: load the moments,
// update them and the parameter, store the moments back.
#include <benchmark/benchmark.h>

#include <graft/core/factory.h>
#include <graft/core/generator.h>
#include <graft/optim/adam.h>
#include <graft/runtime/parallel.h>

#include <vector>

namespace {

using graft::optim::StatePrecision;

void adam_step(benchmark::State& state, StatePrecision precision) {
  graft::set_num_threads(static_cast<int>(state.range(0)));
  graft::manual_seed(0);
  graft::Tensor p = graft::randn({4096, 1024});
  p.set_requires_grad(true);
  p.mutable_grad() = graft::randn({4096, 1024}) * 1e-2;
  graft::optim::Adam opt(std::vector<graft::Tensor>{p}, graft::optim::AdamOptions(1e-3).state_precision(precision));
  opt.step();  // creates the state
  for (auto _ : state) {
    opt.step();
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * p.numel());
}

}  // namespace

BENCHMARK_CAPTURE(adam_step, full, StatePrecision::Full)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(adam_step, bfloat16, StatePrecision::BFloat16)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(adam_step, int8, StatePrecision::Int8)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
