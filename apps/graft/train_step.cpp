// graft train's training step (train_step.h, Note [graft train's step]).
#include "train_step.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

namespace graft::cli {

namespace {

namespace F = graft::nn::functional;

// Predictions of the output layer (weight, bias) on the rows of h equal to target, a chunk of rows
// at a time (no logits held whole).
Tensor count_correct(const Tensor& h, const Tensor& weight, const Tensor& bias, const Tensor& target) {
  constexpr int64_t kRows = 1024;
  NoGradGuard no_grad;
  Tensor correct = zeros({}, h.options().dtype(kInt64));
  for (int64_t r = 0; r < h.size(0); r += kRows) {
    const int64_t n = std::min(kRows, h.size(0) - r);
    correct = correct + eq(argmax(F::linear(h.narrow(0, r, n), weight, bias), 1), target.narrow(0, r, n)).sum();
  }
  return correct;
}

}  // namespace

StepResult TrainStep::operator()(const Tensor& data, const Tensor& batch_target) {
  const int64_t examples = data.size(0);
  if (micro_batches > 1 && examples > 1) {  // Note [Micro-batches]
    GRAFT_CHECK(ddp == nullptr && !step_in_backward && !after_backward, "graft train --micro-batches",
                "one process, without --step-in-backward or a gradient monitor",
                ddp ? "DistributedDataParallel" : (step_in_backward ? "--step-in-backward" : "--log or --report"),
                "leave --micro-batches out");
    const int64_t k = std::min(micro_batches, examples);
    TrainStep one = *this;
    one.micro_batches = 1;
    optim::GradAccumulator acc(*optimizer, {.steps = k, .weighting = optim::Weighting::kBySampleCount});
    StepResult r;
    Tensor loss_sum;
    int64_t rows = 0;
    for (int64_t i = 0, start = 0; i < k; ++i) {
      const int64_t n = examples / k + (i < examples % k ? 1 : 0);
      const Tensor x = data.narrow(0, start, n), y = batch_target.narrow(0, start, n).reshape({-1});
      start += n;
      Tensor loss, correct;
      if (fused_output) {
        std::tie(loss, correct) = one.fused_forward(x, y);
      } else {
        const Tensor logits = checkpoint_segments > 0
                                  ? checkpoint_sequential(model, checkpoint_segments, x, checkpoint_policy)
                                  : model->forward(x);
        loss = F::cross_entropy(logits, y);
        NoGradGuard no_grad;
        correct = eq(argmax(logits, 1), y).sum();
      }
      acc.backward(loss, y.numel());  // steps (and zeroes) after the last
      NoGradGuard no_grad;
      const Tensor weighted = loss.detach() * static_cast<double>(y.numel());
      loss_sum = loss_sum.defined() ? loss_sum + weighted : weighted;
      r.correct = r.correct.defined() ? r.correct + correct : correct;
      rows += y.numel();
    }
    if (after_step) after_step();
    r.loss = loss_sum / static_cast<double>(rows);
    return r;
  }
  const Tensor target = batch_target.reshape({-1});  // text: one target per position (Note [Text task])
  StepResult r;
  auto backward_and_step = [&] {
    optimizer->zero_grad();
    r.loss.backward();
    if (after_backward) after_backward();
    if (!step_in_backward) optimizer->step();
    if (after_step) after_step();
  };
  if (fused_output) {
    std::tie(r.loss, r.correct) = fused_forward(data, target);
    backward_and_step();
    return r;
  }
  const Tensor logits = ddp                       ? (*ddp)(data)
                        : checkpoint_segments > 0 ? checkpoint_sequential(model, checkpoint_segments, data, checkpoint_policy)
                                                  : model->forward(data);
  r.loss = F::cross_entropy(logits, target);
  backward_and_step();
  NoGradGuard no_grad;
  r.correct = eq(argmax(logits, 1), target).sum();
  return r;
}

std::pair<Tensor, Tensor> TrainStep::fused_forward(const Tensor& data, const Tensor& target) const {
  GRAFT_CHECK(ddp == nullptr && model->size() >= 2, "graft train --chunked-loss", "one process and a model ending in "
              "its output layer", ddp ? "DistributedDataParallel" : "a model of one module", "leave --chunked-loss out");
  const std::vector<Tensor> head = model->ptr(model->size() - 1)->parameters();  // the output Linear's weight, bias
  GRAFT_CHECK(head.size() == 2 && head[0].dim() == 2 && head[1].dim() == 1, "graft train --chunked-loss",
              "an output layer of a weight and a bias", std::to_string(head.size()) + " parameters", "");
  nn::Sequential body;
  for (size_t i = 0; i + 1 < model->size(); ++i) body->push_back(model->entries()[i]);
  body->train(model->is_training());
  Tensor h = checkpoint_segments > 0 ? checkpoint_sequential(body, checkpoint_segments, data, checkpoint_policy)
                                     : body->forward(data);
  h = h.reshape({-1, head[0].size(1)});
  Tensor loss = F::linear_cross_entropy(h, head[0], head[1], target);
  Tensor correct = count_correct(h, head[0], head[1], target);
  return {loss, correct};  // h goes: the loss's node keeps what backward needs
}

StepResult eval_batch(nn::Sequential& model, const Tensor& data, const Tensor& batch_target) {
  NoGradGuard no_grad;
  const Tensor logits = model->forward(data);
  const Tensor target = batch_target.reshape({-1});
  return {F::cross_entropy(logits, target), eq(argmax(logits, 1), target).sum()};
}

Evaluation evaluate(nn::Sequential& model, const data::Dataset& set, int64_t chunk, int64_t n) {
  NoGradGuard no_grad;
  model->eval();
  double loss_sum = 0;
  int64_t correct = 0, predictions = 0;
  std::vector<int64_t> indices;
  for (int64_t start = 0; start < n; start += chunk) {
    indices.resize(static_cast<size_t>(std::min<int64_t>(chunk, n - start)));
    std::iota(indices.begin(), indices.end(), start);
    const data::Example<> batch = set.get_batch(indices);  // images are normalised as they are gathered
    const int64_t rows = batch.target.numel();
    const StepResult r = eval_batch(model, batch.data, batch.target);
    loss_sum += r.loss.item<double>() * static_cast<double>(rows);
    correct += r.correct.item<int64_t>();
    predictions += rows;
  }
  model->train();
  return {loss_sum / static_cast<double>(std::max<int64_t>(predictions, 1)),
          static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(predictions, 1))};
}

}  // namespace graft::cli
