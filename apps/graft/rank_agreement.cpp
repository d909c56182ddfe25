// What every rank of `graft train` under mpirun must agree on (rank_agreement.h, Note [Ranks that agree]).
#include "rank_agreement.h"

#include <charconv>
#include <cstdio>
#include <exception>
#include <map>

namespace graft::cli {
namespace {

namespace dist = graft::distributed;

std::string num(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);  // the shortest text that reads back as v
  return std::string(buf, res.ptr);
}

std::string on_off(bool v) { return v ? "on" : "off"; }

// The strings gathered from each rank travel as one: each value as "<length>:<bytes>" (paths may
// hold any byte).
std::string pack(const std::vector<std::string>& values) {
  std::string s;
  for (const std::string& v : values) s += std::to_string(v.size()) + ":" + v;
  return s;
}

std::vector<std::string> unpack(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t colon = s.find(':', i);
    GRAFT_ASSERT(colon != std::string::npos, "a packed rank value without its length");
    const size_t n = std::stoul(s.substr(i, colon - i));
    out.push_back(s.substr(colon + 1, n));
    i = colon + 1 + n;
  }
  return out;
}

// "rank 3", "ranks 0, 2", "ranks 0-62": the ranks in `ranks` (ascending), runs of three or more as ranges.
std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i) s += ", ";
    s += std::to_string(ranks[i]);
    if (j > i) {
      s += j >= i + 2 ? "-" : ", ";
      s += std::to_string(ranks[j]);
    }
    i = j + 1;
  }
  return s;
}

// "rank 0 has 0.05, rank 1 has 0.5": each value (in the order of the first rank that has it) and
// the ranks that have it; at most 8 values, then how many more.
std::string who_has_what(const std::vector<std::string>& per_rank) {
  std::vector<std::string> values;
  std::map<std::string, std::vector<int>> ranks;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    auto& rs = ranks[per_rank[r]];
    if (rs.empty()) values.push_back(per_rank[r]);
    rs.push_back(static_cast<int>(r));
  }
  std::string s;
  for (size_t k = 0; k < values.size(); ++k) {
    if (k == 8) {
      s += ", and " + std::to_string(values.size() - 8) + " other values";
      break;
    }
    const std::vector<int>& rs = ranks[values[k]];
    if (k) s += ", ";
    s += rank_list(rs);
    s += rs.size() == 1 ? " has " : " have ";
    s += values[k].empty() ? std::string("(not given)") : values[k];
  }
  return s;
}

// FNV-1a, 64 bits (offset basis and prime of the FNV specification).
constexpr uint64_t kFnvOffset = 14695981039346656037ull, kFnvPrime = 1099511628211ull;

void fnv1a(uint64_t& h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a:%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> rank_flags(const TrainConfig& c) {
  // Every flag of `graft train` but --threads, --workers and --progress (Note [Ranks that agree]).
  // The paths are compared as given: every rank must name the same file.
  return {{"--model", c.model},
          {"--optimizer", c.optimizer},
          {"--lr", num(c.lr.value_or(default_lr(c.optimizer)))},
          {"--momentum", num(c.momentum)},
          {"--nesterov", on_off(c.nesterov)},
          {"--weight-decay", num(c.weight_decay)},
          {"--schedule", c.schedule},
          {"--step-size", std::to_string(c.step_size)},
          {"--gamma", num(c.gamma)},
          {"--batch-size", std::to_string(batch_size(c))},
          {"--epochs", std::to_string(c.epochs)},
          {"--init", c.init},
          {"--batch-norm", on_off(c.batch_norm)},
          {"--dropout", num(c.dropout)},
          {"--seed", std::to_string(c.seed)},
          {"--data", c.data},
          {"--context", std::to_string(c.context)},
          {"--width", std::to_string(c.width)},
          {"--depth", std::to_string(c.depth)},
          {"--heads", std::to_string(c.heads)},
          {"--checkpoint-attention", on_off(c.checkpoint_attention)},
          {"--train-limit", std::to_string(c.train_limit)},
          {"--classes", std::to_string(c.classes)},
          {"--save", c.save},
          {"--resume", c.resume},
          {"--init-from", c.init_from},
          {"--stop-after", std::to_string(c.stop_after)},
          {"--zero", std::to_string(c.zero)},
          {"--eval-limit", std::to_string(c.eval_limit)},
          {"--checkpoint-segments", std::to_string(c.checkpoint_segments)},
          {"--selective-recompute", on_off(c.selective_recompute)},
          {"--chunked-loss", on_off(c.chunked_loss)},
          {"--step-in-backward", on_off(c.step_in_backward)},
          {"--micro-batches", std::to_string(c.micro_batches)},
          {"--optimizer-state", c.optimizer_state},
          {"--eval-batch-size", std::to_string(c.eval_batch_size)},
          {"--memory-budget", c.memory_budget},
          {"--monitor-every", std::to_string(c.monitor_every)},
          {"--json", on_off(c.json)},
          {"--log", c.log},
          {"--report", c.report}};
}

void check_ranks_agree(const TrainConfig& cfg) {
  if (dist::get_world_size() <= 1) return;
  const auto flags = rank_flags(cfg);
  std::vector<std::string> mine;
  for (const auto& [flag, value] : flags) mine.push_back(value);
  std::vector<std::vector<std::string>> all;
  for (const std::string& packed : dist::detail::all_gather_strings(pack(mine))) all.push_back(unpack(packed));
  std::string differences;
  for (size_t f = 0; f < flags.size(); ++f) {
    std::vector<std::string> per_rank;
    for (const auto& values : all) {
      GRAFT_ASSERT(values.size() == flags.size(), "ranks sent different numbers of flags");
      per_rank.push_back(values[f]);
    }
    bool same = true;
    for (const std::string& v : per_rank) same = same && v == per_rank[0];
    if (same) continue;
    if (!differences.empty()) differences += "; ";
    differences += flags[f].first + ": " + who_has_what(per_rank);
  }
  GRAFT_CHECK(differences.empty(), "graft train under mpirun",
              "the same run-shaping flags on every rank (this is rank " + std::to_string(dist::get_rank()) + " of " +
                  std::to_string(all.size()) + ")",
              differences,
              "give every rank the same flags; only --threads, --workers and --progress may differ. Rank 0 alone "
              "writes --save, --log, --report and --json: give them to every rank or to none");
}

uint64_t weights_checksum(const nn::Module& module) {
  uint64_t h = kFnvOffset;
  auto add = [&](const Tensor& t) {
    if (!t.defined()) return;
    const Tensor c = t.contiguous();
    fnv1a(h, c.data_ptr(), c.nbytes());
  };
  for (const auto& item : module.named_parameters()) add(item.value());
  for (const auto& item : module.named_buffers()) add(item.value());
  return h;
}

int64_t load_on_every_rank(const std::string& flag, const std::string& path, const nn::Module& model, int world,
                           const std::function<int64_t()>& load) {
  if (world <= 1) return load();
  const bool resume = flag == "--resume";
  const std::string op = "graft train " + flag;
  int64_t done = 0;
  std::exception_ptr failure;
  std::string mine;
  try {
    done = load();
    mine = (resume ? "epochs " + std::to_string(done) + " and " : std::string()) + "weights " +
           hex(weights_checksum(model));
  } catch (const std::exception& e) {
    failure = std::current_exception();
    mine = std::string("error: ") + e.what();
  }
  // Every rank reaches this all-gather, the one that failed too: no rank is left waiting.
  const std::vector<std::string> all = dist::detail::all_gather_strings(mine);
  if (failure) std::rethrow_exception(failure);
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].rfind("error: ", 0) == 0)
      throw Error(op, "rank " + std::to_string(r) + " could not " + (resume ? "resume from " : "load ") + path +
                          " (this is rank " + std::to_string(dist::get_rank()) + "): " + all[r].substr(7));
  bool same = true;
  for (const std::string& s : all) same = same && s == all[0];
  GRAFT_CHECK(same, op,
              "the same " + std::string(resume ? "checkpoint" : "state dict") + " on every rank: the same " +
                  (resume ? "epochs and weights" : "weights") + " in " + path,
              who_has_what(all),
              "each rank reads " + flag + " itself: give every rank (every node) the same file" +
                  (resume ? ", e.g. a copy of the one rank 0 wrote" : ""));
  return done;
}

}  // namespace graft::cli
