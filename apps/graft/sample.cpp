// `graft sample` (text.h): continues a text with a model graft train --model gpt|lstm saved.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <numeric>
#include <ostream>
#include <thread>
#include <vector>

#include "config.h"
#include "run_checkpoint.h"
#include "task.h"
#include "text.h"

namespace graft::cli {
namespace {

// The next byte from the last row of logits `l` (kVocab of them, finite): the likeliest at
// temperature 0, else a draw from softmax(logits / temperature) restricted to the top_k likeliest
// (all when 0).
int next_byte(const double* l, double temperature, int64_t top_k) {
  std::vector<int> order(kVocab);
  std::iota(order.begin(), order.end(), 0);
  // Likeliest first; ties by byte value, so that a draw does not depend on the sort.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return l[a] > l[b]; });
  if (temperature == 0) return order[0];
  const size_t k = top_k > 0 ? static_cast<size_t>(top_k) : order.size();
  std::vector<double> w(k);
  for (size_t i = 0; i < k; ++i) w[i] = std::exp((l[order[i]] - l[order[0]]) / temperature);
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  double u = default_generator().next_double() * total;
  for (size_t i = 0; i < k; ++i) {
    if (u < w[i]) return order[i];
    u -= w[i];
  }
  return order[k - 1];
}

}  // namespace

std::string sample(const SampleConfig& c, std::ostream& out) {
  const char* op = "graft sample";
  GRAFT_CHECK(c.length >= 0 && c.length <= 1000000, std::string(op) + " --length", "a length in [0, 1000000] bytes",
              std::to_string(c.length), "200 is a paragraph");
  GRAFT_CHECK(std::isfinite(c.temperature) && c.temperature >= 0 && c.temperature <= 100,
              std::string(op) + " --temperature", "a temperature in [0, 100]", std::to_string(c.temperature),
              "0.8 is typical; 0 always takes the likeliest byte");
  GRAFT_CHECK(c.top_k >= 0 && c.top_k <= kVocab, std::string(op) + " --top-k", "0 (all bytes) .. 256",
              std::to_string(c.top_k), "");
  check_threads(op, c.threads);  // graft train's and graft plan's bound (issue 34, item 6)
  set_num_threads(c.threads > 0 ? c.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  manual_seed(c.seed);
  const RunCheckpoint run = load_run_checkpoint(c.checkpoint, "graft sample --checkpoint");
  const Task* task = find_task(run.config.model);
  GRAFT_CHECK(task && task->generates_bytes(), op, "a checkpoint of graft train --model gpt or lstm",
              c.checkpoint + " of --model " + run.config.model, "graft sample continues text; train a text model");
  nn::Sequential model = task->build_model(run.config, TaskData{});
  model->load_state_dict(run.checkpoint.part("model."));
  model->eval();
  NoGradGuard no_grad;
  // An empty prompt starts after a newline, as a fortune does.
  std::string text = c.prompt.empty() ? std::string("\n") : c.prompt;
  const size_t shown = c.prompt.empty() ? 1 : 0;
  const int64_t T = run.config.context;
  for (int64_t i = 0; i < c.length; ++i) {
    const int64_t n = std::min<int64_t>(T, static_cast<int64_t>(text.size()));
    Tensor x = empty({1, n}, kInt64);
    for (int64_t t = 0; t < n; ++t)
      x.data_ptr<int64_t>()[t] = static_cast<uint8_t>(text[text.size() - static_cast<size_t>(n - t)]);
    const Tensor logits = model->forward(x);  // (n, 256)
    const Tensor row = logits.select(0, n - 1).to(kFloat64).contiguous();
    const double* l = row.data_ptr<double>();
    // A NaN row would "sample" byte 0xFF over and over (issue 34, item 4): an error, and nothing printed.
    GRAFT_CHECK(std::all_of(l, l + kVocab, [](double v) { return std::isfinite(v); }), op,
                "finite logits from the model in " + c.checkpoint,
                "non-finite logits for byte " + std::to_string(i + 1) + " of the sample",
                "its weights are not finite (the run diverged): train it again with a lower --lr");
    text.push_back(static_cast<char>(next_byte(l, c.temperature, c.top_k)));
  }
  errno = 0;
  out << text.substr(shown) << '\n' << std::flush;
  // A failed write (graft sample > /dev/full, a closed pipe) must not exit 0 with the sample lost.
  GRAFT_CHECK(out.good(), op, "the sample written to standard output",
              std::string("a write error") + (errno ? std::string(" (") + std::strerror(errno) + ")" : "") +
                  ": the sample is lost",
              "write it where there is room (a full disk or device, or a reader that has gone, fails the write)");
  return text.substr(shown);
}

}  // namespace graft::cli
