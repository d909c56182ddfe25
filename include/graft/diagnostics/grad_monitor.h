// graft::diagnostics::GradMonitor: gradient health, per step and per parameter. See
// docs/gradients.md ("Gradient health").
//
//   graft::diagnostics::GradMonitor monitor(*model, {.every = 10, .jsonl_path = "grads.jsonl"});
//   for (int64_t step = 0; ...; ++step) {
//     optimizer.zero_grad();
//     loss_fn(model->forward(x), y).backward();
//     monitor.after_backward(step);   // gradient statistics (and the weights before the step)
//     optimizer.step();
//     monitor.after_step();           // update-to-weight ratios, flags, the step's JSON lines
//   }
//
// Note [Gradient monitor]
// On a sampled step (step % every == 0) after_backward reads each parameter's gradient once: its
// sum of squares (accumulated in double across blocks), max |g|, the number of exactly-zero
// entries, and the nan and inf counts. after_step reads the weights and the snapshot of the
// weights from before the step: update_ratio = ||w_after - w_before|| / (||w_before|| + 1e-12).
// The snapshot is a buffer per parameter, allocated on the first sampled step and reused: the
// first after_backward copies the weights into it (one fused pass over gradient and weight), and
// when the next step is sampled too, after_step writes the new weights into it while it reads
// them, so that the next after_backward reads the gradient alone (see Note [Gradient monitor
// passes] in src/diagnostics/grad_monitor.cpp). That snapshot is trusted only while the
// parameter's version counter (bumped by optimiser steps and in-place ops), storage and size are
// unchanged; a write through data_ptr() in between goes unseen. Steps that are not sampled cost
// nothing: neither call reads a tensor. float32 squares are summed in float32 within blocks of
// 512 elements (relative error ~1e-7, at most ~2e-6). Records and flags stay in memory for the
// monitor's lifetime (a few hundred bytes per parameter and sampled step).
//
// Flags (each names the parameter and the step; Flag::value is the statistic that tripped it):
//   "vanishing"  a parameter with >= 2 dims whose grad norm is below vanishing_ratio times the
//                last layer's (the last parameter with >= 2 dims in named_parameters order), or
//                any gradient with norm below vanishing_floor;
//   "exploding"  a finite grad norm above exploding_ceiling, or above growth_factor times the
//                same parameter's norm at the previous sampled step;
//   "dead_units" a parameter with >= 64 elements whose fraction of exactly-zero gradient entries
//                is >= dead_fraction (ReLU units that no input activates);
//   "nonfinite"  a gradient holding nan or inf entries (value: their number).
// Parameters without a gradient are skipped by every rule (has_grad = false; their gradient
// statistics are nan and 0). raise_on_nonfinite makes after_backward throw graft::Error naming
// the first parameter whose gradient holds nan or inf, after the step has been recorded (and
// written): only sampled steps are checked.
//
// JSON Lines (when jsonl_path is set; the file is truncated on construction, each line written
// and flushed as soon as its step is complete). Non-finite numbers are written as null.
//   {"type":"monitor","version":1,"params":[{"name":"0.weight","shape":[512,784]},...],
//    "options":{"every":1,"vanishing_ratio":0.0001,...}}
//   {"type":"grad","step":N,"params":{"0.weight":{"grad_norm":..,"grad_max":..,"weight_norm":..,
//    "update_ratio":..,"zero_fraction":..,"nan":..,"inf":..},...}}
//   {"type":"flag","step":N,"kind":"vanishing","param":"0.weight","value":..,"message":"..."}
// A step whose after_step never came (after_backward of the next sampled step, or the monitor's
// destruction, completes it) has update_ratio nan (null).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "graft/core/tensor.h"
#include "graft/nn/module.h"
#include "graft/optim/optimizer.h"

namespace graft::diagnostics {

struct GradMonitorOptions {
  int64_t every = 1;               // sample steps 0, every, 2 * every, ...
  double vanishing_ratio = 1e-4;   // vs the last layer's grad norm (parameters with >= 2 dims)
  double vanishing_floor = 1e-10;  // absolute, any parameter
  double exploding_ceiling = 1e3;  // absolute
  double growth_factor = 100;      // vs the previous sampled step's norm of the same parameter
  double dead_fraction = 0.9;      // zero-gradient fraction; parameters with >= 64 elements
  bool raise_on_nonfinite = false;
  std::string jsonl_path;          // empty: records are kept in memory only
  // The optimiser that steps the model. When it supports update statistics (Note [Update
  // statistics] in graft/optim/optimizer.h; SGD does), the monitor turns them on and takes the
  // weight norms and update-to-weight ratios from its update loop instead of keeping a copy of the
  // weights: after_backward reads only the gradients and after_step reads nothing.
  optim::Optimizer* optimizer = nullptr;
};

struct ParamStats {
  std::string name;
  double grad_norm = 0;     // L2 norm of the gradient (nan when has_grad is false)
  double grad_max = 0;      // max |g| (nan when has_grad is false or g holds nan)
  double weight_norm = 0;   // L2 norm of the weight before the optimiser step
  double update_ratio = 0;  // ||w_after - w_before|| / (weight_norm + 1e-12); nan until after_step
  double zero_fraction = 0; // fraction of exactly-zero gradient entries (nan when has_grad is false)
  int64_t nan_count = 0;
  int64_t inf_count = 0;
  bool has_grad = false;
};

struct StepRecord {
  int64_t step = 0;
  std::vector<ParamStats> params;  // in named_parameters order
};

struct Flag {
  int64_t step = 0;
  std::string kind;  // "vanishing" | "exploding" | "dead_units" | "nonfinite"
  std::string param;
  double value = 0;
  std::string message;
};

// The "grad" and "flag" records of the JSON Lines above, appended to `line` as one JSON object
// each (no newline): what the monitor writes to jsonl_path, for a writer of its own that keeps
// the same records (graft train's run log, Note [Run log] in apps/graft/report.h).
void append_grad_record(std::string& line, const StepRecord& record);
void append_flag_record(std::string& line, const Flag& flag);

class GradMonitor {
 public:
  // Watches model.named_parameters() as they are now (float32 or float64 parameters).
  explicit GradMonitor(const nn::Module& model, GradMonitorOptions options = {});
  ~GradMonitor();
  GradMonitor(const GradMonitor&) = delete;
  GradMonitor& operator=(const GradMonitor&) = delete;
  GradMonitor(GradMonitor&&) noexcept;
  GradMonitor& operator=(GradMonitor&&) noexcept;

  // After loss.backward(), before optimizer.step(). Does nothing unless step % every == 0.
  void after_backward(int64_t step);
  // After optimizer.step(): update ratios, flags, JSON lines. Does nothing unless the last
  // after_backward sampled its step.
  void after_step();

  const std::vector<StepRecord>& records() const;
  const std::vector<Flag>& flags() const;
  const GradMonitorOptions& options() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace graft::diagnostics
