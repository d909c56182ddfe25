// graft train's training step (train_step.h, Note [graft train's step]).
#include "train_step.h"

namespace graft::cli {

StepResult TrainStep::operator()(const Tensor& data, const Tensor& batch_target) {
  namespace F = graft::nn::functional;
  const Tensor logits = ddp                       ? (*ddp)(data)
                        : checkpoint_segments > 0 ? checkpoint_sequential(model, checkpoint_segments, data)
                                                  : model->forward(data);
  const Tensor target = batch_target.reshape({-1});  // text: one target per position (Note [Text task])
  StepResult r;
  r.loss = F::cross_entropy(logits, target);
  optimizer->zero_grad();
  r.loss.backward();
  if (after_backward) after_backward();
  optimizer->step();
  if (after_step) after_step();
  NoGradGuard no_grad;
  r.correct = eq(argmax(logits, 1), target).sum();
  return r;
}

}  // namespace graft::cli
