// The memory planner (Note [Memory planner] in graft/diagnostics/memory_plan.h).
#include "graft/diagnostics/memory_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/memory_internal.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/generator.h"
#include "graft/core/storage.h"
#include "graft/nn/functional.h"
#include "graft/nn/module.h"
#include "graft/nn/modules/container.h"
#include "graft/optim/optimizer.h"

namespace graft::memory {

namespace {

using Totals = std::array<int64_t, kNumCategories>;

int64_t sum(const Totals& t) {
  int64_t n = 0;
  for (int64_t v : t) n += v;
  return n;
}

// Everything the planned steps change, put back afterwards.
struct SavedState {
  std::vector<Tensor> params, param_values, grads, buffers, buffer_values;
  OrderedDict<std::string, Tensor> optimizer_state;
  Generator::State rng;
  bool training = true;
};

SavedState save_state(nn::Module& model, optim::Optimizer* opt) {
  NoGradGuard no_grad;
  SavedState s;
  s.params = model.parameters();
  for (const Tensor& p : s.params) {
    s.param_values.push_back(p.detach().clone());
    s.grads.push_back(p.grad());
  }
  s.buffers = model.buffers();
  for (const Tensor& b : s.buffers) s.buffer_values.push_back(b.defined() ? b.detach().clone() : Tensor());
  if (opt) {
    for (const auto& item : opt->state_dict()) s.optimizer_state.insert(item.key(), item.value().detach().clone());
  }
  s.rng = default_generator().state();
  s.training = model.is_training();
  return s;
}

void restore_state(nn::Module& model, optim::Optimizer* opt, SavedState& s) {
  NoGradGuard no_grad;
  for (size_t i = 0; i < s.params.size(); ++i) {
    Tensor p = s.params[i];
    p.detach().copy_(s.param_values[i]);
    p.mutable_grad() = s.grads[i];
  }
  for (size_t i = 0; i < s.buffers.size(); ++i)
    if (s.buffers[i].defined()) s.buffers[i].detach().copy_(s.buffer_values[i]);
  if (opt) opt->load_state_dict(s.optimizer_state);
  default_generator().set_state(s.rng);
  model.train(s.training);
}

void start_recording(bool meta) {
  if (meta) detail::record_meta_history(true, 1 << 22);
  else record_history(true, 1 << 22);
}

// One training step at `batch` on `device` (the CPU, or meta: Note [Planning on shapes alone]),
// its allocation events recorded.
std::vector<Event> recorded_step(nn::Module& model, IntArrayRef input_shape, optim::Optimizer* opt,
                                 const PlanOptions& o, int64_t batch, bool record, Device device) {
  std::vector<int64_t> shape(input_shape.begin(), input_shape.end());
  shape[0] = batch;
  if (record) start_recording(device.is_meta());
  {
    // The order of graft train's loop: the previous step's gradients live through the forward.
    const TensorOptions in = TensorOptions().dtype(o.input_dtype).device(device);
    Tensor x = is_floating_point(o.input_dtype) ? randn(shape, in) : zeros(shape, in);
    if (o.step) {
      o.step(x);
    } else {
      Tensor out;
      if (o.forward) {
        out = o.forward(x);
      } else {
        auto* seq = dynamic_cast<nn::SequentialImpl*>(&model);
        GRAFT_CHECK(seq != nullptr, "memory::plan", "an nn::Sequential model, or PlanOptions::forward",
                    "a module without a forward the planner can call", "pass options.forward = [&](x) { return model(x); }");
        out = seq->forward(x);
      }
      Tensor loss;
      if (o.loss == "mse") {
        loss = nn::functional::mse_loss(out, zeros_like(out));
      } else {
        GRAFT_CHECK(out.dim() == 2, "memory::plan", "(rows, classes) logits for the cross_entropy loss",
                    "an output of shape " + shape_str(out.sizes()), "set PlanOptions::loss = \"mse\"");
        loss = nn::functional::cross_entropy(out, zeros({out.size(0)}, TensorOptions().dtype(kInt64).device(device)));
      }
      out = Tensor();
      if (opt) opt->zero_grad();
      else model.zero_grad();
      loss.backward();
      loss = Tensor();
      if (opt) opt->step();
    }
  }
  if (!record) return {};
  record_history(false);
  return history();
}

// The device of the model's parameters: the CPU or meta, one of them for all.
Device model_device(nn::Module& model) {
  Device d = kCPU;
  bool first = true;
  for (const Tensor& p : model.parameters()) {
    GRAFT_CHECK(first || p.device() == d, "memory::plan", "every parameter on one device (the CPU or meta)",
                "parameters on " + d.str() + " and " + p.device().str(), "move the model with module->to(device)");
    d = p.device();
    first = false;
  }
  GRAFT_CHECK(d.is_cpu() || d.is_meta(), "memory::plan", "a model on the CPU or on meta", d.str(), "");
  return d;
}

}  // namespace

Plan plan(nn::Module& model, IntArrayRef input_shape, optim::Optimizer* optimizer, const PlanOptions& options) {
  const char* op = "memory::plan";
  GRAFT_CHECK(input_shape.size() >= 1 && input_shape[0] >= 1, op, "an input shape whose first size is the batch size",
              shape_str(input_shape), "pass e.g. {128, 1, 28, 28}");
  GRAFT_CHECK(options.probe_batch_a >= 1 && options.probe_batch_b > options.probe_batch_a, op,
              "probe batch sizes 1 <= a < b", std::to_string(options.probe_batch_a) + " and " + std::to_string(options.probe_batch_b),
              "keep the defaults (2 and 4)");
  GRAFT_CHECK(!is_recording_history(), op, "the memory history off (the planner records its own)",
              "memory::record_history(true) in effect", "call memory::record_history(false) first");
  GRAFT_CHECK(options.loss == "cross_entropy" || options.loss == "mse", op, "loss \"cross_entropy\" or \"mse\"",
              "\"" + options.loss + "\"", "pass loss = \"cross_entropy\" or \"mse\"");

  const Device device = model_device(model);
  const bool meta = device.is_meta();
  const Stats before = stats(device);
  SavedState saved = save_state(model, optimizer);
  // The copies kept for restoring are live during the probes; their bytes come off every event.
  const Stats with_copies = stats(device);
  Totals copies{};
  for (int k = 0; k < kNumCategories; ++k)
    copies[static_cast<size_t>(k)] = with_copies.by_category[static_cast<size_t>(k)].current_bytes -
                                     before.by_category[static_cast<size_t>(k)].current_bytes;
  // The gradients the model had are kept for restoring too, while the probes make their own.
  {
    std::vector<const Storage*> seen;
    for (const Tensor& g : saved.grads) {
      if (!g.defined()) continue;
      const Storage* s = g.impl().storage.get();
      if (std::find(seen.begin(), seen.end(), s) != seen.end() || !s->allocator) continue;
      seen.push_back(s);
      copies[static_cast<size_t>(category_of(*s))] += static_cast<int64_t>(s->nbytes);
    }
  }

  // On meta the probes cost no memory: run them at the planned size (exact there) and twice it.
  const int64_t probe_a = meta ? input_shape[0] : options.probe_batch_a;
  const int64_t probe_b = meta ? 2 * input_shape[0] : options.probe_batch_b;
  // Two pairs of probes: the first step (the optimiser's state created inside it, as in a run's first
  // step; the model and the optimiser are put back in between) and a steady step (after a warm-up
  // step has created the state). Either may be the higher: state created lazily can add temporaries.
  std::vector<Event> fa, fb, a, b;
  int64_t rounded_peak = 0;
  // The restore copies' blocks come off, as their bytes come off every event.
  auto rounded_now = [&] { return stats(device).peak_rounded_bytes - (with_copies.rounded_bytes - before.rounded_bytes); };
  try {
    model.train(true);
    if (meta) detail::reset_meta_peak_stats();
    fa = recorded_step(model, input_shape, optimizer, options, probe_a, true, device);
    if (meta) rounded_peak = rounded_now();
    restore_state(model, optimizer, saved);
    fb = recorded_step(model, input_shape, optimizer, options, probe_b, true, device);
    restore_state(model, optimizer, saved);
    recorded_step(model, input_shape, optimizer, options, probe_a, false, device);  // warm-up: optimiser state
    if (meta) detail::reset_meta_peak_stats();
    a = recorded_step(model, input_shape, optimizer, options, probe_a, true, device);
    if (meta) rounded_peak = std::max(rounded_peak, rounded_now());
    b = recorded_step(model, input_shape, optimizer, options, probe_b, true, device);
  } catch (...) {
    record_history(false);
    restore_state(model, optimizer, saved);
    throw;
  }
  restore_state(model, optimizer, saved);

  Plan p;
  p.baseline_bytes = before.allocated_bytes;
  const double ba = static_cast<double>(probe_a), bb = static_cast<double>(probe_b);
  auto line_from = [&](const Event& ea, const Event& eb) {
    Plan::Line l;
    for (size_t k = 0; k < kNumCategories; ++k) {
      const double va = static_cast<double>(ea.totals[k] - copies[k]), vb = static_cast<double>(eb.totals[k] - copies[k]);
      l.slope[k] = (vb - va) / (bb - ba);
      l.intercept[k] = va - l.slope[k] * ba;
    }
    l.op = ea.op;
    return l;
  };
  // Pairs the events of one step at the two batch sizes (Note [Memory planner]).
  auto add_lines = [&](const std::vector<Event>& ea, const std::vector<Event>& eb) {
    bool aligned = ea.size() == eb.size() && !ea.empty();
    for (size_t i = 0; aligned && i < ea.size(); ++i)
      aligned = ea[i].action == eb[i].action && ea[i].category == eb[i].category && ea[i].op == eb[i].op;
    if (aligned) {
      for (size_t i = 0; i < ea.size(); ++i) p.lines.push_back(line_from(ea[i], eb[i]));
      return;
    }
    // Data-dependent allocations: pair each probe's peak event instead (an extrapolation).
    p.exact = false;
    auto peak_of = [](const std::vector<Event>& ev) {
      size_t best = 0;
      for (size_t i = 1; i < ev.size(); ++i)
        if (sum(ev[i].totals) > sum(ev[best].totals)) best = i;
      return best;
    };
    GRAFT_CHECK(!ea.empty() && !eb.empty(), op, "allocation events in the planned step", "none", "");
    p.lines.push_back(line_from(ea[peak_of(ea)], eb[peak_of(eb)]));
  };
  add_lines(fa, fb);
  add_lines(a, b);
  Plan at = p.at_batch_size(input_shape[0]);
  at.predicted_peak_rounded_bytes = std::max<int64_t>(rounded_peak, 0);
  return at;
}

Plan Plan::at_batch_size(int64_t batch) const {
  Plan p = *this;
  if (batch != batch_size) p.predicted_peak_rounded_bytes = 0;  // known at the planned size only
  p.batch_size = batch;
  p.predicted_peak_bytes = 0;
  p.category_peak.fill(0);
  p.at_peak.fill(0);
  const double B = static_cast<double>(batch);
  double best = -1;
  for (const Line& l : lines) {
    double total = 0;
    Totals t{};
    for (size_t k = 0; k < kNumCategories; ++k) {
      t[k] = std::llround(l.intercept[k] + l.slope[k] * B);
      total += static_cast<double>(t[k]);
      p.category_peak[k] = std::max(p.category_peak[k], t[k]);
    }
    if (total > best) {
      best = total;
      p.at_peak = t;
      p.peak_op = l.op ? l.op : "";
    }
  }
  p.predicted_peak_bytes = sum(p.at_peak);
  return p;
}

int64_t Plan::max_batch_size(int64_t budget) const {
  double limit = std::numeric_limits<double>::infinity();
  for (const Line& l : lines) {
    double intercept = 0, slope = 0;
    for (size_t k = 0; k < kNumCategories; ++k) {
      intercept += l.intercept[k];
      slope += l.slope[k];
    }
    const double room = static_cast<double>(budget) - intercept;
    if (slope <= 1e-9) {
      if (room < -0.5) return 0;  // over the budget at any batch size
      continue;
    }
    limit = std::min(limit, room / slope);
  }
  if (!std::isfinite(limit)) return std::numeric_limits<int64_t>::max();
  int64_t b = std::max<int64_t>(0, static_cast<int64_t>(std::floor(limit + 1e-9)));
  while (b > 0 && at_batch_size(b).predicted_peak_bytes > budget) --b;  // rounding of the bytes
  return b;
}

std::string Plan::table() const {
  std::string out;
  char line[200];
  std::snprintf(line, sizeof line, "predicted peak of one training step at batch %lld: %s (%lld bytes)%s\n",
                static_cast<long long>(batch_size), format_bytes(predicted_peak_bytes).c_str(),
                static_cast<long long>(predicted_peak_bytes), exact ? "" : "  [extrapolated: data-dependent allocations]");
  out += line;
  if (predicted_peak_rounded_bytes > 0) {
    std::snprintf(line, sizeof line, "  in the caching allocator's blocks: %s\n", format_bytes(predicted_peak_rounded_bytes).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-18s %14s %14s\n", "category", "at the peak", "own peak");
  out += line;
  for (int k = 0; k < kNumCategories; ++k) {
    const auto c = static_cast<Category>(k);
    std::snprintf(line, sizeof line, "  %-18s %14s %14s\n", category_label(c),
                  format_bytes(at_peak[static_cast<size_t>(k)]).c_str(), format_bytes(category_peak[static_cast<size_t>(k)]).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "  reached while %s allocated; %s were live before the step\n",
                peak_op.empty() ? "an unnamed op" : peak_op.c_str(), format_bytes(baseline_bytes).c_str());
  out += line;
  return out;
}

std::string Plan::json() const {
  nlohmann::json at = nlohmann::json::object(), own = nlohmann::json::object();
  for (int k = 0; k < kNumCategories; ++k) {
    const auto c = static_cast<Category>(k);
    at[category_name(c)] = at_peak[static_cast<size_t>(k)];
    own[category_name(c)] = category_peak[static_cast<size_t>(k)];
  }
  return nlohmann::json{{"batch_size", batch_size},       {"predicted_peak_bytes", predicted_peak_bytes},
                        {"at_peak", at},                  {"category_peak", own},
                        {"peak_op", peak_op},             {"baseline_bytes", baseline_bytes},
                        {"exact", exact},                 {"predicted_peak_rounded_bytes", predicted_peak_rounded_bytes}}
      .dump();
}

}  // namespace graft::memory
