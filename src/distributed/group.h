// The process group's backends behind graft::distributed's public API (process_group.cpp keeps the
// API, the argument checks and the labels; a Group moves the data). Two implementations:
// process_group.cpp's one-process group, where every collective's result is its input, and
// mpi_group.cpp's MPI group on its communication thread (Note [Communication thread] in
// graft/distributed/process_group.h), the only file that sees MPI.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graft/distributed/process_group.h"

namespace graft::distributed::internal {

class Group {
 public:
  explicit Group(ProcessGroupOptions options) : options_(options) {}
  virtual ~Group() = default;
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  const ProcessGroupOptions& options() const noexcept { return options_; }

  // Each queues one operation behind those queued before and returns its Work, described by
  // `label` in errors; the arguments have passed process_group.cpp's checks (contiguous tensors of
  // a dtype the operation takes, counts that add up, ranks in range).
  virtual WorkPtr all_reduce(const Tensor& tensor, ReduceOp op, std::string label) = 0;
  virtual WorkPtr broadcast(const Tensor& tensor, int src, std::string label) = 0;
  // Rank r receives counts[r] elements: the reduction of input[sum(counts[:r]) : sum(counts[:r+1])].
  virtual WorkPtr reduce_scatter_v(const Tensor& output, const Tensor& input, std::vector<int64_t> counts, ReduceOp op,
                                   std::string label) = 0;
  // output receives every rank's input end to end, rank r's counts[r] elements.
  virtual WorkPtr all_gather_v(const Tensor& output, const Tensor& input, std::vector<int64_t> counts,
                               std::string label) = 0;
  // Every rank's string into *out, in rank order.
  virtual WorkPtr all_gather_strings(const std::string& mine, std::shared_ptr<std::vector<std::string>> out) = 0;
  virtual WorkPtr send(const Tensor& tensor, int dst, int tag, std::string label) = 0;
  virtual WorkPtr recv(const Tensor& tensor, int src, int tag, std::string label) = 0;
  virtual WorkPtr barrier() = 0;
  // Runs what is queued, then stops (the MPI group finalises MPI unless it broke).
  virtual void shutdown() = 0;

 protected:
  ProcessGroupOptions options_;
  int rank_ = 0, size_ = 1;
};

// Whether graft was built with MPI (GRAFT_WITH_MPI).
bool mpi_built();
// The MPI group when an MPI launcher started this process; null otherwise, or without MPI.
std::unique_ptr<Group> make_mpi_group(const ProcessGroupOptions& options);

}  // namespace graft::distributed::internal
