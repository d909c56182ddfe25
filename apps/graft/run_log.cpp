// The run log (run_log.h, Note [Run log] in report.h).
#include "run_log.h"

#include <algorithm>
#include <cmath>

#include "run_result.h"

namespace graft::cli {
namespace {

// JSON has no NaN or infinity: such values are written as null.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json memory_categories_json() {
  nlohmann::json cats = nlohmann::json::array();
  for (int i = 0; i < memory::kNumCategories; ++i) cats.push_back(memory::category_name(static_cast<memory::Category>(i)));
  return cats;
}

}  // namespace

RunLog::RunLog(const TrainConfig& cfg, bool resuming) : keep_(!cfg.log.empty() || !cfg.report.empty()) {
  if (!cfg.log.empty()) file_ = std::make_unique<LineFile>(cfg.log, resuming, "graft train --log");
}

void RunLog::add(const nlohmann::json& record) {
  if (keep_) add_line(record.dump());
}

void RunLog::add_line(std::string line) {
  if (!keep_) return;
  lines_.push_back(std::move(line));
  if (file_) file_->write_line(lines_.back());
}

// How the run was configured.
void RunLog::add_run(const TrainConfig& cfg, int64_t parameters) {
  add({{"type", "run"},
       {"command", "graft train"},
       {"model", cfg.model},
       {"optimizer", cfg.optimizer},
       {"lr", cfg.lr.value_or(default_lr(cfg.optimizer))},
       {"schedule", cfg.schedule},
       {"batch_size", batch_size(cfg)},
       {"epochs", cfg.epochs},
       {"batch_norm", cfg.batch_norm},
       {"dropout", cfg.dropout},
       {"init", cfg.init},
       {"seed", cfg.seed},
       {"parameters", parameters}});
}

void RunLog::add_monitor(const nn::Module& model, int64_t every) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& item : model.named_parameters()) {
    const auto sizes = item.value().sizes();
    params.push_back({{"name", item.key()}, {"shape", std::vector<int64_t>(sizes.begin(), sizes.end())}});
  }
  add({{"type", "monitor"}, {"every", every}, {"params", params}});
}

void RunLog::add_step(int64_t step, int64_t epoch, double loss, double lr) {
  if (!keep_) return;
  add({{"type", "step"}, {"step", step}, {"epoch", epoch}, {"loss", number(loss)}, {"lr", number(lr)}});
}

void RunLog::add_epoch(const EpochRecord& r, int64_t last_step) {
  add({{"type", "epoch"},
       {"epoch", r.epoch},
       {"last_step", last_step},
       {"train_loss", number(r.train_loss)},
       {"train_accuracy", r.train_accuracy},
       {"test_loss", number(r.test_loss)},
       {"test_accuracy", r.test_accuracy},
       {"lr", number(r.lr)},
       {"seconds", r.seconds},
       {"examples_per_second", number(r.examples_per_second)}});
}

void RunLog::add_grad_records(const diagnostics::GradMonitor& monitor) {
  const auto& recs = monitor.records();
  for (; grad_records_ < recs.size(); ++grad_records_) {
    std::string line;
    diagnostics::append_grad_record(line, recs[grad_records_]);
    add_line(std::move(line));
  }
  const auto& flags = monitor.flags();
  for (; flags_ < flags.size(); ++flags_) {
    std::string line;
    diagnostics::append_flag_record(line, flags[flags_]);
    add_line(std::move(line));
  }
}

void RunLog::add_timeline() {
  memory::record_history(false);
  const auto events = memory::history();
  nlohmann::json points = nlohmann::json::array();
  const size_t stride = std::max<size_t>(1, events.size() / 2000);  // at most ~2000 points
  for (size_t i = 0; i < events.size(); i += stride) {
    const auto& e = events[i];
    points.push_back({{"seq", e.seq},
                      {"step", e.step},
                      {"op", e.op ? e.op : ""},
                      {"totals", std::vector<int64_t>(e.totals.begin(), e.totals.end())}});
  }
  add({{"type", "memory_timeline"},
       {"categories", memory_categories_json()},
       {"events", events.size()},
       {"points", points}});
}

// {"type": "memory", "epoch", "current": {category: bytes}, "peak": {...}, "peak_total", "cached"}
void RunLog::add_memory(int64_t epoch) {
  if (!keep_) return;
  const memory::Stats st = memory::stats();
  nlohmann::json current = nlohmann::json::object(), peak = nlohmann::json::object();
  for (int i = 0; i < memory::kNumCategories; ++i) {
    const auto c = static_cast<memory::Category>(i);
    current[memory::category_name(c)] = st[c].current_bytes;
    peak[memory::category_name(c)] = st[c].peak_bytes;
  }
  add({{"type", "memory"}, {"epoch", epoch},           {"current", current},
       {"peak", peak},     {"peak_total", st.peak_allocated_bytes}, {"cached", st.cached_bytes}});
}

}  // namespace graft::cli
