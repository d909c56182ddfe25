// `graft report`: one self-contained HTML page from a run's JSON Lines log.
//
// Note [Run log]
// `graft train --log RUN.jsonl` writes one JSON object per line, each with a "type":
//   {"type":"run", "model":..., "optimizer":..., ...}                  the configuration, first
//   {"type":"step", "step":N, "epoch":E, "loss":L, "lr":LR}            every training step
//   {"type":"epoch", "epoch":E, "train_loss":..., "train_accuracy":..., "test_loss":...,
//    "test_accuracy":..., "lr":..., "seconds":...}                     every epoch
//   {"type":"monitor", "params":[{"name":..., "shape":[...]}, ...]}    the gradient monitor's header
//   {"type":"grad", "step":N, "params":{"<name>":{"grad_norm":..., "grad_max":..., "weight_norm":...,
//    "update_ratio":..., "zero_fraction":..., "nan":..., "inf":...}, ...}}   sampled steps
//   {"type":"flag", "step":N, "kind":"vanishing|exploding|dead_units|nonfinite", "param":..., "value":...,
//    "message":...}                                                    gradient-health findings
//   {"type":"memory_timeline", "categories":[...], "events":N, "points":[{"seq", "step", "op",
//    "totals":[bytes per category]}, ...]}                             the first steps' allocation
//                                                                      events (graft::memory history)
//   {"type":"memory", "epoch":E, "current":{category: bytes}, "peak":{...}, "peak_total", "cached"}
//                                                                      every epoch
//   {"type":"result", ...}                                             graft train --json's object, last
// Numbers that are not finite are written as null. Unknown types are kept and ignored by the page.
// The "grad" and "flag" records are the gradient monitor's own (Note [Gradient monitor]: its
// GradMonitorOptions::jsonl_path lines, graft::diagnostics::append_grad_record), so the two files
// cannot drift apart; apps/graft/run_log.cpp writes the others.
#pragma once

#include <string>
#include <vector>

namespace graft::cli {

// Reads a run log; a line that is not a JSON object is an error naming the file and the line.
std::vector<std::string> read_run_log(const std::string& path);

// The report page for the log's lines (each one JSON object). Self-contained: the data and the
// drawing code are inline, nothing is fetched, so the file opens offline.
std::string render_report(const std::vector<std::string>& log_lines, const std::string& title);

// read_run_log + render_report + an atomic write of `html_path`.
void write_report(const std::string& log_path, const std::string& html_path);
// render_report of lines already in memory + an atomic write of `html_path`.
void write_report_lines(const std::vector<std::string>& log_lines, const std::string& html_path,
                        const std::string& title = "graft run report");

}  // namespace graft::cli
