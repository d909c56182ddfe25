// `graft train --log`: the JSON Lines run log (Note [Run log] in report.h), and the records it
// keeps in memory for --report. The gradient monitor's records are the monitor's own
// (graft::diagnostics::append_grad_record), not a copy of its format.
#pragma once

#include <graft/graft.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config.h"
#include "line_file.h"

namespace graft::cli {

struct EpochRecord;

// A write error of the log (a full disk) stops the run with a graft::Error naming --log and the
// file; the file keeps every complete line before it (LineFile cuts a partial one off).
class RunLog {
 public:
  RunLog(const TrainConfig& cfg, bool resuming);
  bool enabled() const { return keep_; }  // --log or --report
  void add(const nlohmann::json& record);
  void add_line(std::string line);  // one JSON object, already written
  void flush() {}                   // each line is written to the file as it is added
  const std::vector<std::string>& lines() const { return lines_; }

  // The records of Note [Run log]:
  void add_run(const TrainConfig& cfg, int64_t parameters);  // "run", first
  void add_monitor(const nn::Module& model, int64_t every);  // "monitor", the monitor's header
  void add_step(int64_t step, int64_t epoch, double loss, double lr);
  void add_epoch(const EpochRecord& r, int64_t last_step);
  // The monitor's "grad" and "flag" records not in the log yet.
  void add_grad_records(const diagnostics::GradMonitor& monitor);
  // Stops graft::memory's history and writes its events as a "memory_timeline" for the report.
  void add_timeline();
  void add_memory(int64_t epoch);  // "memory": the bytes by category, now and at the peak

 private:
  bool keep_;
  std::unique_ptr<LineFile> file_;
  std::vector<std::string> lines_;
  size_t grad_records_ = 0, flags_ = 0;  // how many of the monitor's are in the log
};

}  // namespace graft::cli
