// The graft side of the kernel benchmark (see kernels_common.h).
#include <graft/graft.h>

#include <cstring>
#include <stdexcept>

#include "kernels_common.h"

namespace kbench {
namespace {

namespace F = graft::nn::functional;

graft::Tensor make(const std::vector<int64_t>& shape, uint64_t seed, float lo, float hi, bool requires_grad = false) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const std::vector<float> v = values(n, seed, lo, hi);
  graft::Tensor t = graft::empty(shape);
  std::memcpy(t.data_ptr<float>(), v.data(), v.size() * sizeof(float));
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

double sum_of(const graft::Tensor& t) {
  graft::NoGradGuard ng;
  return graft::sum(t.to(graft::kFloat64)).item<double>();
}

class Elementwise : public Runner {
 public:
  Elementwise(std::string op, int64_t n) : op_(std::move(op)) {
    const std::vector<int64_t> shape = n == 1024 ? std::vector<int64_t>{1, 1024} : std::vector<int64_t>{n / 1024, 1024};
    x_ = make(shape, 11, -3.0f, 3.0f);
    y_ = make(shape, 12, -3.0f, 3.0f);
  }
  void run() override {
    graft::NoGradGuard ng;
    if (op_ == "add") out_ = x_ + y_;
    else if (op_ == "mul") out_ = x_ * y_;
    else if (op_ == "exp") out_ = graft::exp(x_);
    else if (op_ == "tanh") out_ = graft::tanh(x_);
    else if (op_ == "gelu") out_ = F::gelu(x_);
    else if (op_ == "sum_all") out_ = graft::sum(x_);
    else if (op_ == "sum_last") out_ = graft::sum(x_, {-1});
    else if (op_ == "softmax_last") out_ = graft::softmax(x_, -1);
    else throw std::invalid_argument("unknown op " + op_);
  }
  double checksum() override { return sum_of(out_); }

 private:
  std::string op_;
  graft::Tensor x_, y_, out_;
};

class Matmul : public Runner {
 public:
  explicit Matmul(int64_t n) : a_(make({n, n}, 21, -1, 1)), b_(make({n, n}, 22, -1, 1)) {}
  void run() override {
    graft::NoGradGuard ng;
    c_ = graft::matmul(a_, b_);
  }
  double checksum() override { return sum_of(c_); }

 private:
  graft::Tensor a_, b_, c_;
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
    for (graft::Tensor* t : {&x_, &w_, &b_}) t->mutable_grad() = graft::Tensor();
    graft::Tensor y = F::conv2d(x_, w_, b_);
    y.backward(gy_);
  }
  double checksum() override { return sum_of(w_.grad()) + sum_of(b_.grad()) + (first_ ? 0.0 : sum_of(x_.grad())); }

 private:
  bool first_;
  graft::Tensor x_, w_, b_, gy_;
};

class Optim : public Runner {
 public:
  explicit Optim(std::string op) : op_(std::move(op)) {
    uint64_t seed = 41;
    for (const auto& shape : optimizer_shapes()) {
      graft::Tensor p = make(shape, seed++, -0.05f, 0.05f, true);
      p.mutable_grad() = make(shape, seed++, -1, 1);
      params_.push_back(p);
    }
    if (op_ == "sgd_momentum") opt_ = std::make_unique<graft::optim::SGD>(params_, graft::optim::SGDOptions(0.01).momentum(0.9));
    else if (op_ == "adamw") opt_ = std::make_unique<graft::optim::AdamW>(params_, graft::optim::AdamWOptions(1e-3).weight_decay(0.01));
  }
  void run() override {
    if (opt_) opt_->step();
    else graft::nn::utils::clip_grad_norm_(params_, 1.0);
  }
  double checksum() override {
    double s = 0;
    for (const graft::Tensor& p : params_) s += opt_ ? sum_of(p) : sum_of(p.grad());
    return s;
  }

 private:
  std::string op_;
  std::vector<graft::Tensor> params_;
  std::unique_ptr<graft::optim::Optimizer> opt_;
};

}  // namespace

std::unique_ptr<Runner> make_graft_runner(const std::string& name) {
  const std::string op = case_op(name), arg = case_arg(name);
  if (op == "matmul") return std::make_unique<Matmul>(size_of(arg));
  if (op == "conv2d") return std::make_unique<Conv>(arg == "conv1");
  if (op == "sgd_momentum" || op == "adamw" || op == "clip_grad_norm") return std::make_unique<Optim>(op);
  return std::make_unique<Elementwise>(op, size_of(arg));
}

void graft_set_threads(int n) { graft::set_num_threads(n); }
std::string graft_blas_core() { return graft::blas_core_name(); }

}  // namespace kbench
