// Kernel throughput: elementwise and reduction ops, matrix products, conv2d forward + backward,
// optimiser steps and clip_grad_norm_ over 10M parameters (BENCHMARKS.md, "Suite"; bench/run_suite.sh
// runs it). Written in LibTorch's spelling and built twice (bench/CMakeLists.txt): torch_kernels
// against LibTorch, and, ported by tools/port-from-libtorch.sh, graft_kernels against graft. Each
// process measures one library at one thread count.
//
//   {torch,graft}_kernels [--threads=1] [--reps=3] [--min_time=0.05] [--filter=SUBSTRING] [--json=FILE]
//   torch_kernels --openblas ...   the matmul cases only, as cblas_sgemm on OpenBLAS's own threads
//
// Cases ("op/size"):
//   add, mul, exp, tanh, gelu            elementwise on a contiguous float32 tensor of 1K, 64K, 4M
//                                        elements (add and mul: two tensors of that size)
//   sum_all, sum_last, softmax_last      the same tensor viewed as [n / 1024, 1024] ([1, 1024] at 1K):
//                                        sum of every element, sum over the last dim, softmax over it
//   matmul/128, /512, /2048              square float32 matrix product C = A B
//   conv2d/conv1, conv2d/conv2           forward + backward of the CNN's two convolutions:
//                                        conv1 (64,1,28,28) * (32,1,3,3), weight and bias grads;
//                                        conv2 (64,32,13,13) * (64,32,3,3), input, weight, bias grads
//   sgd_momentum/10M, adamw/10M          one optimiser step over 10 x ([1000, 1000] + [1000]) = 10.01M
//                                        parameters with fixed gradients (SGD lr 0.01 momentum 0.9;
//                                        AdamW lr 1e-3 weight decay 0.01)
//   clip_grad_norm/10M                   clip_grad_norm_(those parameters, 1.0): the first call scales
//                                        the gradients to norm 1, every later one by 1 / (1 + 1e-6),
//                                        so every call computes the norm and scales
// Elementwise and reduction cases run under no-grad (throughput, not autograd).
//
// For each case: build the inputs (fixed values, the same in every build), run once and record a
// checksum (bench/suite_report.py compares the libraries' checksums: a wrong set-up would otherwise
// go unnoticed), time one warm run to size a block of about min_time seconds, then time `reps`
// blocks. The JSON holds every block's ms per run. The thread count is set once, before anything
// runs, with torch::set_num_threads; OpenBLAS's own pool (LibTorch's products and the direct
// cblas_sgemm) follows OPENBLAS_NUM_THREADS, which bench/run_suite.sh sets to the same count.
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"

namespace {

// ----- The cases and their data (library-neutral) -----

const std::vector<std::string>& elementwise_ops() {
  static const std::vector<std::string> ops = {"add", "mul", "exp", "tanh", "gelu", "sum_all", "sum_last", "softmax_last"};
  return ops;
}

std::vector<std::string> all_cases() {
  std::vector<std::string> cases;
  for (const std::string& op : elementwise_ops())
    for (const char* size : {"1K", "64K", "4M"}) cases.push_back(op + "/" + size);
  for (const char* n : {"128", "512", "2048"}) cases.push_back(std::string("matmul/") + n);
  cases.push_back("conv2d/conv1");
  cases.push_back("conv2d/conv2");
  cases.push_back("sgd_momentum/10M");
  cases.push_back("adamw/10M");
  cases.push_back("clip_grad_norm/10M");
  return cases;
}

std::string case_op(const std::string& c) { return c.substr(0, c.find('/')); }
std::string case_arg(const std::string& c) { return c.substr(c.find('/') + 1); }

int64_t size_of(const std::string& arg) {
  if (arg == "1K") return 1024;
  if (arg == "64K") return 65536;
  if (arg == "4M") return 4194304;
  return std::stoll(arg);
}

// Deterministic values in [lo, hi) (splitmix64), so neither library's generator is involved.
std::vector<float> values(int64_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t s = seed;
  for (float& x : v) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    x = lo + (hi - lo) * static_cast<float>((z >> 40) * 0x1.0p-24);
  }
  return v;
}

// One case. run() does the work once (outputs are kept until the next run, so every side pays for
// allocating them); checksum() is a sum over the case's result after the runs so far.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual void run() = 0;
  virtual double checksum() = 0;
};

// ----- The library's side (LibTorch's spelling; graft's after the port) -----

torch::Tensor make(const std::vector<int64_t>& shape, uint64_t seed, float lo, float hi, bool requires_grad = false) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const std::vector<float> v = values(n, seed, lo, hi);
  torch::Tensor t = torch::empty(shape);
  std::memcpy(t.data_ptr<float>(), v.data(), v.size() * sizeof(float));
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

double sum_of(const torch::Tensor& t) {
  torch::NoGradGuard ng;
  return torch::sum(t.to(torch::kFloat64)).item<double>();
}

class Elementwise : public Runner {
 public:
  Elementwise(std::string op, int64_t n) : op_(std::move(op)) {
    const std::vector<int64_t> shape = n == 1024 ? std::vector<int64_t>{1, 1024} : std::vector<int64_t>{n / 1024, 1024};
    x_ = make(shape, 11, -3.0f, 3.0f);
    y_ = make(shape, 12, -3.0f, 3.0f);
  }
  void run() override {
    torch::NoGradGuard ng;
    if (op_ == "add") out_ = x_ + y_;
    else if (op_ == "mul") out_ = x_ * y_;
    else if (op_ == "exp") out_ = torch::exp(x_);
    else if (op_ == "tanh") out_ = torch::tanh(x_);
    else if (op_ == "gelu") out_ = torch::gelu(x_);
    else if (op_ == "sum_all") out_ = torch::sum(x_);
    else if (op_ == "sum_last") out_ = torch::sum(x_, {-1});
    else if (op_ == "softmax_last") out_ = torch::softmax(x_, -1);
    else throw std::invalid_argument("unknown op " + op_);
  }
  double checksum() override { return sum_of(out_); }

 private:
  std::string op_;
  torch::Tensor x_, y_, out_;
};

class Matmul : public Runner {
 public:
  explicit Matmul(int64_t n) : a_(make({n, n}, 21, -1, 1)), b_(make({n, n}, 22, -1, 1)) {}
  void run() override {
    torch::NoGradGuard ng;
    c_ = torch::matmul(a_, b_);
  }
  double checksum() override { return sum_of(c_); }

 private:
  torch::Tensor a_, b_, c_;
};

class Conv : public Runner {
 public:
  explicit Conv(bool first) : first_(first) {
    if (first) {
      x_ = make({64, 1, 28, 28}, 31, 0, 1);
      w_ = make({32, 1, 3, 3}, 32, -1.0f / 3, 1.0f / 3, true);
      b_ = make({32}, 33, -1.0f / 3, 1.0f / 3, true);
      gy_ = make({64, 32, 26, 26}, 34, -1, 1);
    } else {
      x_ = make({64, 32, 13, 13}, 35, 0, 1, true);
      w_ = make({64, 32, 3, 3}, 36, -0.06f, 0.06f, true);
      b_ = make({64}, 37, -0.06f, 0.06f, true);
      gy_ = make({64, 64, 11, 11}, 38, -1, 1);
    }
  }
  void run() override {
    for (torch::Tensor* t : {&x_, &w_, &b_}) t->mutable_grad() = torch::Tensor();
    torch::Tensor y = torch::conv2d(x_, w_, b_);
    y.backward(gy_);
  }
  double checksum() override { return sum_of(w_.grad()) + sum_of(b_.grad()) + (first_ ? 0.0 : sum_of(x_.grad())); }

 private:
  bool first_;
  torch::Tensor x_, w_, b_, gy_;
};

class Optim : public Runner {
 public:
  explicit Optim(std::string op) : op_(std::move(op)) {
    uint64_t seed = 41;
    for (int i = 0; i < 20; ++i) {  // 10 x ([1000, 1000], [1000])
      const std::vector<int64_t> shape = i % 2 ? std::vector<int64_t>{1000} : std::vector<int64_t>{1000, 1000};
      torch::Tensor p = make(shape, seed++, -0.05f, 0.05f, true);
      p.mutable_grad() = make(shape, seed++, -1, 1);
      params_.push_back(p);
    }
    if (op_ == "sgd_momentum")
      opt_ = std::make_unique<torch::optim::SGD>(params_, torch::optim::SGDOptions(0.01).momentum(0.9));
    else if (op_ == "adamw")
      opt_ = std::make_unique<torch::optim::AdamW>(params_, torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  }
  void run() override {
    if (opt_) opt_->step();
    else torch::nn::utils::clip_grad_norm_(params_, 1.0);
  }
  double checksum() override {
    double s = 0;
    for (const torch::Tensor& p : params_) s += opt_ ? sum_of(p) : sum_of(p.grad());
    return s;
  }

 private:
  std::string op_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> opt_;
};

std::unique_ptr<Runner> make_runner(const std::string& name) {
  const std::string op = case_op(name), arg = case_arg(name);
  if (op == "matmul") return std::make_unique<Matmul>(size_of(arg));
  if (op == "conv2d") return std::make_unique<Conv>(arg == "conv1");
  if (op == "sgd_momentum" || op == "adamw" || op == "clip_grad_norm") return std::make_unique<Optim>(op);
  return std::make_unique<Elementwise>(op, size_of(arg));
}

// ----- cblas_sgemm called directly (--openblas): the best a product can do with this BLAS -----

// Found at run time in the OpenBLAS the process loaded (LibTorch's), so that nothing else is linked.
class OpenBlasMatmul : public Runner {
 public:
  explicit OpenBlasMatmul(int64_t n)
      : n_(n), a_(values(n * n, 21, -1, 1)), b_(values(n * n, 22, -1, 1)), c_(static_cast<size_t>(n * n)) {
    sgemm_ = reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "cblas_sgemm"));
    if (!sgemm_) throw std::runtime_error("cblas_sgemm not found in the process");
  }
  void run() override {
    const int n = static_cast<int>(n_);
    sgemm_(kRowMajor, kNoTrans, kNoTrans, n, n, n, 1.0f, a_.data(), n, b_.data(), n, 0.0f, c_.data(), n);
  }
  double checksum() override {
    double s = 0;
    for (float v : c_) s += v;
    return s;
  }

 private:
  enum { kRowMajor = 101, kNoTrans = 111 };  // CBLAS_ORDER / CBLAS_TRANSPOSE values
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
  int64_t n_;
  std::vector<float> a_, b_, c_;
  Sgemm sgemm_ = nullptr;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args a = bench::parse_args(argc, argv);
  const int reps = bench::arg_int(a, "reps", 3);
  const int threads = bench::arg_int(a, "threads", 1);
  const double min_time = bench::arg_double(a, "min_time", 0.05);
  const std::string filter = bench::arg_str(a, "filter", "");
  const bool openblas = a.count("openblas") > 0;
  const std::string library = openblas ? "openblas" : bench::kLibrary;
  torch::set_num_threads(threads);
  std::printf("%s%s\n", bench::describe_process(torch::get_num_threads()).c_str(),
              openblas ? " (cblas_sgemm called directly)" : "");
  std::fflush(stdout);

  std::ostringstream js;
  js << "{\"library\": \"" << library << "\", \"threads\": " << threads << ", \"reps\": " << reps
     << ", \"min_time\": " << min_time << ", \"corename\": \"" << bench::openblas_corename() << "\", \"results\": [";
  bool first = true;
  try {
    for (const std::string& name : all_cases()) {
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      if (openblas && case_op(name) != "matmul") continue;
      std::unique_ptr<Runner> r =
          openblas ? std::unique_ptr<Runner>(std::make_unique<OpenBlasMatmul>(size_of(case_arg(name)))) : make_runner(name);
      r->run();
      const double sum = r->checksum();
      r->run();  // warm
      auto t0 = std::chrono::steady_clock::now();
      r->run();
      const int iters = std::max(1, static_cast<int>(min_time / std::max(seconds_since(t0), 1e-9)));
      std::vector<double> ms;
      for (int rep = 0; rep < reps; ++rep) {
        t0 = std::chrono::steady_clock::now();
        for (int it = 0; it < iters; ++it) r->run();
        ms.push_back(1e3 * seconds_since(t0) / iters);
      }
      std::printf("%-22s t%d  %s %.4f ms\n", name.c_str(), threads, library.c_str(), bench::median(ms));
      std::fflush(stdout);
      char sum_text[64];
      std::snprintf(sum_text, sizeof sum_text, "%.10g", sum);
      js << (first ? "" : ",") << "\n  {\"case\": \"" << name << "\", \"checksum\": " << sum_text
         << ", \"ms\": " << bench::json_list(ms) << "}";
      first = false;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  js << "\n]}\n";
  const std::string out = bench::arg_str(a, "json", "");
  if (!out.empty()) {
    std::ofstream f(out);
    f << js.str();
    if (!f) {
      std::perror(out.c_str());
      return 1;
    }
  }
  return 0;
}
