// graft::nn::functional: activations, linear, embedding, softmax and losses, with LibTorch's option
// structs: namespace F = graft::nn::functional; F::cross_entropy(x, y, F::CrossEntropyFuncOptions()
// .ignore_index(0).label_smoothing(0.1)).
#pragma once

#include <optional>
#include <string>

#include "graft/core/tensor.h"

// GRAFT_ARG(type, name): a chainable setter `name(v)` and a getter `name()`, like LibTorch's TORCH_ARG.
#define GRAFT_ARG(T, name)                                        \
 public:                                                          \
  auto& name(const T& v) { name##_ = v; return *this; }           \
  const T& name() const { return name##_; }                       \
                                                                  \
 private:                                                         \
  T name##_

namespace graft {

enum class Reduction { None, Mean, Sum };
inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;
const char* reduction_name(Reduction r);

namespace nn::functional {

struct LeakyReLUFuncOptions { GRAFT_ARG(double, negative_slope) = 0.01; };
struct GELUFuncOptions { GRAFT_ARG(std::string, approximate) = "none"; };  // "none" or "tanh"
struct SoftplusFuncOptions { GRAFT_ARG(double, beta) = 1.0; GRAFT_ARG(double, threshold) = 20.0; };
struct ELUFuncOptions { GRAFT_ARG(double, alpha) = 1.0; };
struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  GRAFT_ARG(int64_t, dim);
  GRAFT_ARG(std::optional<DType>, dtype) = std::nullopt;
};
struct LogSoftmaxFuncOptions {
  LogSoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  GRAFT_ARG(int64_t, dim);
  GRAFT_ARG(std::optional<DType>, dtype) = std::nullopt;
};
struct EmbeddingFuncOptions { GRAFT_ARG(std::optional<int64_t>, padding_idx) = std::nullopt; };

struct CrossEntropyFuncOptions {
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(int64_t, ignore_index) = -100;
  GRAFT_ARG(Reduction, reduction) = kMean;
  GRAFT_ARG(double, label_smoothing) = 0.0;
};
struct NLLLossFuncOptions {
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(int64_t, ignore_index) = -100;
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct MSELossFuncOptions { GRAFT_ARG(Reduction, reduction) = kMean; };
struct L1LossFuncOptions { GRAFT_ARG(Reduction, reduction) = kMean; };
struct SmoothL1LossFuncOptions { GRAFT_ARG(Reduction, reduction) = kMean; GRAFT_ARG(double, beta) = 1.0; };
struct BinaryCrossEntropyFuncOptions {
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(Reduction, reduction) = kMean;
};
struct BinaryCrossEntropyWithLogitsFuncOptions {
  GRAFT_ARG(Tensor, weight) = {};
  GRAFT_ARG(Reduction, reduction) = kMean;
  GRAFT_ARG(Tensor, pos_weight) = {};
};

// ---- activations ----
Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& options = {});
Tensor gelu(const Tensor& x, const GELUFuncOptions& options = {});
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, const SoftplusFuncOptions& options = {});
Tensor elu(const Tensor& x, const ELUFuncOptions& options = {});
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& options);
Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& options);

// ---- layers ----
// y = x @ weight^T + bias; x (*, in), weight (out, in), bias (out) or undefined.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// Rows of `weight` (num, dim) picked by int64 `input` of any shape: result input.shape + [dim].
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options = {});
// int64 (*,) -> int64 (*, num_classes); num_classes = -1 means max(input) + 1.
Tensor one_hot(const Tensor& input, int64_t num_classes = -1);

// ---- losses ----
// input (N, C) or (N, C, d1, ...) or (C); target int64 class indices (N) / (N, d1, ...) / ().
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options = {});
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options = {});
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& options = {});
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options = {});

}  // namespace nn::functional
}  // namespace graft
