// What `graft train` reports: a line per epoch, and the run's result (train.h's train() returns it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace graft::cli {

struct EpochRecord {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_accuracy = 0, test_loss = 0, test_accuracy = 0, lr = 0, seconds = 0;
  // Examples (images, or predicted bytes for text) per second of the epoch's training steps.
  double examples_per_second = 0;
};

struct TrainResult {
  double test_accuracy = 0, test_loss = 0, train_loss = 0;
  int64_t epochs = 0;  // epochs finished in total, counting those before a resume
  double seconds = 0;  // of this process's training
  int64_t peak_memory_bytes = 0;  // graft's tensor memory (graft::memory::stats)
  std::map<std::string, int64_t> peak_memory_by_category;  // memory::category_name -> peak bytes
  int64_t peak_rss_bytes = 0;     // the process's peak resident set (getrusage), for comparison
  int64_t peak_reserved_bytes = 0;  // the allocator's, live and cached blocks (memory::Stats::reserved_bytes)
  int64_t peak_train_memory_bytes = 0;  // the peak during training steps alone (no evaluation):
                                        // what `graft plan` predicts
  int64_t parameters = 0;
  int64_t world_size = 1;  // ranks under mpirun (--json: "world_size"; the global batch is world_size x --batch-size)
  // Each rank's peak_memory_bytes and peak_train_memory_bytes, in rank order (--json:
  // "rank_peak_memory_bytes", "rank_peak_train_memory_bytes"; one entry in one process): what
  // graft plan --world-size predicts per rank (Note [Planning a rank] in plan_internal.h).
  std::vector<int64_t> rank_peak_memory_bytes, rank_peak_train_memory_bytes;
  std::vector<EpochRecord> history;  // epochs run by this process
};

}  // namespace graft::cli
