// Data-parallel training steps on MPI (BENCHMARKS.md, "Distributed data parallel"): one source in
// LibTorch's spelling, built twice (bench/CMakeLists.txt):
//   torch_ddp_step: LibTorch 1.13 as its own distributed example trains
//                   (https://github.com/pytorch/examples/blob/main/cpp/distributed/dist-mnist.cpp): after backward, one blocking all-reduce
//                   per parameter, through MPI directly (Debian's LibTorch has no MPI backend), then
//                   the gradient divided by the world size;
//   graft_ddp_step: ported, with graft's DistributedDataParallel (bucketed all-reduces that overlap
//                   backward) in place of that loop.
// Each rank takes its share of the problem's batch (train_step_common.h: MLP 128 rows, CNN 64), so
// 1 process x batch B and N ranks x batch B / N do the same work per step.
//   mpirun -np 2 {torch,graft}_ddp_step --mode=time --model=mlp|cnn [--steps=30] [--warmup=5]
//   {torch,graft}_ddp_step --mode=time --model=mlp --rows=64     (one process, a batch of 64)
//   mpirun -np 2 {torch,graft}_ddp_step --mode=allreduce         (all-reduce time by size)
//   mpirun -np 2 graft_ddp_step --mode=time --model=mlp --bucket_mb=0.25   (smaller DDP buckets)
//   GRAFT_BENCH_COMM_HOOK=bf16 mpirun -np 2 graft_ddp_step --mode=time ...  (graft: the buckets
//                   all-reduced in bfloat16 through ddp_comm_hooks::bf16_compress_hook)
// --mode=time prints one RESULT line (rank 0): the median step time (ms) and, of the same steps, the
// median communication (comm_ms: graft's reducer, the seconds its buckets' all-reduces ran; LibTorch's
// side, the per-parameter loop) and the median time the step waited for it (wait_ms: graft, the end of
// backward waiting for the last buckets; LibTorch, the whole loop, which blocks). buckets: graft's
// bucket count; LibTorch's side, one all-reduce per parameter. All 0 in one process.
#include <torch/torch.h>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "train_step_common.h"

namespace {

using namespace trainstep;

namespace nn = torch::nn;
namespace F = torch::nn::functional;

int g_rank = 0, g_world = 1;

nn::Sequential build(Model m) {
  nn::Sequential net;
  if (m == Model::Mlp) {
    net->push_back(nn::Linear(784, 512));
    net->push_back(nn::ReLU());
    net->push_back(nn::Linear(512, 256));
    net->push_back(nn::ReLU());
    net->push_back(nn::Linear(256, 10));
  } else {
    net->push_back(nn::Conv2d(nn::Conv2dOptions(1, 32, 3)));
    net->push_back(nn::ReLU());
    net->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    net->push_back(nn::Conv2d(nn::Conv2dOptions(32, 64, 3)));
    net->push_back(nn::ReLU());
    net->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    net->push_back(nn::Flatten());
    net->push_back(nn::Linear(1600, 128));
    net->push_back(nn::ReLU());
    net->push_back(nn::Linear(128, 10));
  }
  return net;
}

void load_params(const nn::Sequential& net, const Problem& p) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params = net->parameters();
  if (params.size() != p.params.size()) throw std::runtime_error("parameter count differs from the problem's");
  for (size_t i = 0; i < params.size(); ++i)
    std::memcpy(params[i].data_ptr<float>(), p.params[i].values.data(), p.params[i].values.size() * sizeof(float));
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class Trainer {
 public:
  // bucket_mb > 0: DDP's bucket caps (first and later) instead of PyTorch's 1 and 25 MiB (graft only).
  Trainer(const Problem& p, int64_t rows, double bucket_mb) : net_(build(p.model)) {
    load_params(net_, p);
    // This rank's rows of the problem's batch.
    const int64_t total = p.input_shape[0];
    const int64_t first = (rows * g_rank) % total;
    torch::Tensor x = torch::from_blob(const_cast<float*>(p.input.data()), p.input_shape, torch::kFloat32);
    torch::Tensor y = torch::from_blob(const_cast<int64_t*>(p.labels.data()), {total}, torch::kInt64);
    x_ = x.narrow(0, first, rows).clone();
    y_ = y.narrow(0, first, rows).clone();
#ifndef GRAFT_PORTED
    (void)bucket_mb;
#else
    if (g_world > 1)
      ddp_ = std::make_unique<torch::nn::parallel::DistributedDataParallel<nn::Sequential>>(
          net_, torch::nn::parallel::DistributedDataParallelOptions()
                    .bucket_cap_mb(bucket_mb > 0 ? bucket_mb : 25.0)
                    .first_bucket_cap_mb(bucket_mb > 0 ? bucket_mb : 1.0));
    const char* hook = std::getenv("GRAFT_BENCH_COMM_HOOK");
    if (ddp_ && hook && std::string(hook) == "bf16")
      ddp_->register_comm_hook(nullptr, graft::distributed::ddp_comm_hooks::bf16_compress_hook);
#endif
    params_ = net_->parameters();
    opt_ = std::make_unique<torch::optim::SGD>(params_, torch::optim::SGDOptions(kLr).momentum(kMomentum));
  }

  // graft's reducer: the last step's all-reduce time, and how long the end of backward waited for it.
  void last_reduction(double& comm_ms, double& wait_ms, size_t& buckets) const {
#ifdef GRAFT_PORTED
    if (ddp_) {
      comm_ms = ddp_->reducer().last_communication_seconds() * 1e3;
      wait_ms = ddp_->reducer().last_wait_seconds() * 1e3;
      buckets = ddp_->reducer().buckets().size();
    }
#else
    // The per-parameter loop blocks: all of its communication is waited for.
    comm_ms = wait_ms = loop_ms_;
    buckets = g_world > 1 ? params_.size() : 0;
#endif
  }

  float step() {
    for (torch::Tensor& p : params_) p.mutable_grad() = torch::Tensor();
#ifdef GRAFT_PORTED
    torch::Tensor logits = ddp_ ? (*ddp_)(x_) : net_->forward(x_);
#else
    torch::Tensor logits = net_->forward(x_);
#endif
    torch::Tensor loss = F::cross_entropy(logits, y_);
    loss.backward();
#ifndef GRAFT_PORTED
    // The dist-mnist example's loop: every gradient, one blocking all-reduce after the other.
    if (g_world > 1) {
      const double t0 = now_ms();
      for (torch::Tensor& p : params_) {
        torch::Tensor g = p.grad();
        MPI_Allreduce(MPI_IN_PLACE, g.data_ptr<float>(), static_cast<int>(g.numel()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        g.div_(g_world);
      }
      loop_ms_ = now_ms() - t0;
    }
#endif
    opt_->step();
    return loss.item<float>();
  }

 private:
  nn::Sequential net_;
  torch::Tensor x_, y_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<torch::optim::SGD> opt_;
#ifdef GRAFT_PORTED
  std::unique_ptr<torch::nn::parallel::DistributedDataParallel<nn::Sequential>> ddp_;
#else
  double loop_ms_ = 0;  // the last step's all-reduce loop
#endif
};

int time_steps(const bench::Args& a) {
  const std::string model = bench::arg_str(a, "model", "mlp");
  const Model m = model == "mlp" ? Model::Mlp : Model::Cnn;
  const Problem p = make_problem(m);
  const int64_t rows = bench::arg_int(a, "rows", static_cast<int>(p.input_shape[0] / g_world));
  Trainer t(p, rows, std::stod(bench::arg_str(a, "bucket_mb", "0")));
  const int warmup = bench::arg_int(a, "warmup", 5), steps = bench::arg_int(a, "steps", 30);
  float loss = 0;
  for (int i = 0; i < warmup; ++i) loss = t.step();
  // Per timed step: its time, and (graft with DDP) the reducer's all-reduce time and the end of
  // backward's wait for it; the medians are printed (comm_ms, wait_ms: 0 where there is no reducer).
  std::vector<double> ms, comm, wait;
  size_t buckets = 0;
  for (int i = 0; i < steps; ++i) {
    const double t0 = now_ms();
    loss = t.step();
    ms.push_back(now_ms() - t0);
    double comm_ms = 0, wait_ms = 0;
    t.last_reduction(comm_ms, wait_ms, buckets);
    comm.push_back(comm_ms);
    wait.push_back(wait_ms);
  }
  if (g_rank == 0)
    std::printf("RESULT mode=time library=%s model=%s world=%d rows_per_rank=%lld ms=%.4f loss=%.6f buckets=%zu "
                "comm_ms=%.3f wait_ms=%.3f\n",
                bench::kLibrary, model.c_str(), g_world, static_cast<long long>(rows), bench::median(ms), loss, buckets,
                bench::median(comm), bench::median(wait));
  return 0;
}

// The median time of one all-reduce (SUM, float32) by size: raw MPI (torch side), graft's process
// group (graft side: the communication thread and the collective check included).
int time_allreduce(const bench::Args& a) {
  const int reps = bench::arg_int(a, "reps", 50);
  for (int64_t n : {int64_t{1}, int64_t{256}, int64_t{4096}, int64_t{65536}, int64_t{262144}, int64_t{1048576},
                    int64_t{4194304}}) {
    torch::Tensor t = torch::ones({n});
    std::vector<double> ms;
    for (int r = 0; r < reps + 3; ++r) {
#ifdef GRAFT_PORTED
      torch::distributed::barrier();
#else
      MPI_Barrier(MPI_COMM_WORLD);
#endif
      const double t0 = now_ms();
#ifdef GRAFT_PORTED
      torch::distributed::all_reduce(t);
#else
      MPI_Allreduce(MPI_IN_PLACE, t.data_ptr<float>(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#endif
      if (r >= 3) ms.push_back(now_ms() - t0);
    }
    if (g_rank == 0)
      std::printf("RESULT mode=allreduce library=%s world=%d bytes=%lld us=%.2f\n", bench::kLibrary, g_world,
                  static_cast<long long>(n * 4), bench::median(ms) * 1e3);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args a = bench::parse_args(argc, argv);
  torch::set_num_threads(bench::arg_int(a, "threads", 1));
#ifdef GRAFT_PORTED
  // graft's group owns MPI (its communication thread initialises it and makes every call).
  torch::distributed::init_process_group();
  g_rank = torch::distributed::get_rank();
  g_world = torch::distributed::get_world_size();
#else
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_world);
#endif
  const std::string mode = bench::arg_str(a, "mode", "time");
  const int rc = mode == "allreduce" ? time_allreduce(a) : time_steps(a);
#ifdef GRAFT_PORTED
  torch::distributed::destroy_process_group();
#else
  MPI_Finalize();
#endif
  return rc;
}
