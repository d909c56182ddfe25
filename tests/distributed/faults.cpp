// A DDP training loop in which one rank fails, for tests/distributed/faults.sh:
//   graft_distributed_faults throw   rank 1 throws in its 4th forward (and leaves)
//   graft_distributed_faults kill    rank 1 kills itself with SIGKILL in its 4th forward
//   graft_distributed_faults sizes   rank 1 all-reduces a tensor of another size
//   graft_distributed_faults models  rank 1 builds a different model
//   graft_distributed_faults none    nobody fails (the control run)
// Every rank prints "rank R: error: <message>" when it catches a graft::Error (or another
// exception) and exits 1; "rank R: done" when it finishes.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "graft/graft.h"

namespace {

int run(const std::string& mode) {
  namespace dist = graft::distributed;
  const int rank = dist::get_rank();
  graft::manual_seed(1);
  const int64_t hidden = (mode == "models" && rank == 1) ? 17 : 16;
  graft::nn::Sequential net(graft::nn::Linear(8, hidden), graft::nn::Tanh(), graft::nn::Linear(hidden, 2));
  graft::nn::parallel::DistributedDataParallel<graft::nn::Sequential> ddp(net);
  graft::optim::SGD opt(ddp.parameters(), graft::optim::SGDOptions(0.1));
  for (int step = 0; step < 10; ++step) {
    if (step == 3 && rank == 1) {
      if (mode == "throw") throw graft::Error("forward", "an injected failure in rank 1's forward");
      if (mode == "kill") std::raise(SIGKILL);
      if (mode == "sizes") {
        graft::Tensor t = graft::zeros({5});
        dist::all_reduce(t);
      }
    }
    if (step == 3 && rank != 1 && mode == "sizes") {
      graft::Tensor t = graft::zeros({4});
      dist::all_reduce(t);
    }
    opt.zero_grad();
    auto loss = ddp(graft::randn({4, 8})).pow(2).mean();
    loss.backward();
    opt.step();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "none";
  int rank = -1;
  try {
    graft::distributed::init_process_group();
    rank = graft::distributed::get_rank();
    run(mode);
  } catch (const std::exception& e) {
    std::printf("rank %d: error: %s\n", rank, e.what());
    std::fflush(stdout);
    return 1;
  }
  std::printf("rank %d: done\n", rank);
  std::fflush(stdout);
  graft::distributed::destroy_process_group();
  return 0;
}
