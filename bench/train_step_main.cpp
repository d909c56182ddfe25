// Training-step benchmark: one SGD step of an MLP and of a small CNN, graft vs LibTorch, time and
// peak memory (see BENCHMARKS.md; bench/run_suite.sh runs it).
//
//   graft_train_step [--reps=15] [--steps=20] [--warmup=3] [--mem_reps=3] [--mem_steps=20]
//                    [--markdown=FILE] [--json=FILE]
//
// --json writes every configuration's raw repetitions (ms per step, peak memory) for
// bench/suite_report.py, which merges them into the suite's table (bench/run_suite.sh).
//
// Every measurement runs in a child process of its own (this program re-executed with --child=...),
// so that neither library's thread pools, caches or allocator state leak from one measurement into
// the next, and so that peak RSS belongs to one (library, model, threads) configuration:
//   --child=check              both libraries, same initial weights: the first losses must agree
//   --child=time  --lib=L ...  warm-up steps, then `steps` timed steps; prints the median ms/step
//   --child=mem   --lib=L ...  builds the model and data, runs mem_steps steps; prints VmHWM
//   --child=base  --lib=L ...  builds the same model and data, runs no step; prints VmRSS
// The parent interleaves the libraries (alternating which goes first) over `reps` repetitions and
// reports medians.
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.h"
#include "train_step_common.h"

namespace {

using namespace trainstep;

using bench::arg_int;
using bench::arg_str;
using bench::parse_args;

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// kB from a "Name:   123 kB" line of /proc/self/status.
long proc_status_kb(const char* name) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(name);
  while (std::getline(f, line))
    if (line.compare(0, len, name) == 0 && line.size() > len && line[len] == ':') return std::atol(line.c_str() + len + 1);
  return -1;
}

// ---------------------------------------------------------------------------------------------
// Child side.

std::unique_ptr<Trainer> make_trainer(const std::string& lib, const Problem& p, int threads) {
  if (lib == "graft") {
    graft_set_threads(threads);
    return make_graft_trainer(p);
  }
#ifdef TRAIN_STEP_HAVE_TORCH
  if (lib == "torch") {
    torch_set_threads(threads);
    // torch::set_num_threads sizes LibTorch's OpenMP pool only; the OpenBLAS behind its matrix
    // products has a pool of its own (OPENBLAS_NUM_THREADS is set for the child as well).
    openblas_set_num_threads(threads);
    return make_torch_trainer(p);
  }
#endif
  std::fprintf(stderr, "unknown or unavailable library '%s'\n", lib.c_str());
  std::exit(2);
}

Model parse_model(const std::string& s) { return s == "cnn" ? Model::Cnn : Model::Mlp; }

int child_check() {
#ifdef TRAIN_STEP_HAVE_TORCH
  bool ok = true;
  for (Model m : {Model::Mlp, Model::Cnn}) {
    const Problem p = make_problem(m);
    auto g = make_trainer("graft", p, 1);
    auto t = make_trainer("torch", p, 1);
    // Step 1's loss checks the forward pass; step 3's also checks two rounds of backward + SGD.
    for (int s = 1; s <= 3; ++s) {
      const double lg = g->step(), lt = t->step();
      const double rel = std::abs(lg - lt) / std::max(1e-12, std::abs(lt));
      const double tol = s == 1 ? 1e-4 : 1e-3;
      const bool good = std::isfinite(lg) && std::isfinite(lt) && rel <= tol;
      if (s == 1 || s == 3)
        std::printf("check %s step %d: loss graft %.7f, LibTorch %.7f, rel diff %.2e (tolerance %.0e) %s\n",
                    model_name(m), s, lg, lt, rel, tol, good ? "ok" : "MISMATCH");
      ok = ok && good;
    }
  }
  std::fflush(stdout);
  return ok ? 0 : 1;
#else
  std::printf("check: LibTorch not built, nothing to compare\n");
  return 0;
#endif
}

int child_measure(const std::string& kind, const std::map<std::string, std::string>& a) {
  const std::string lib = arg_str(a, "lib", "graft");
  const Model m = parse_model(arg_str(a, "model", "mlp"));
  const int threads = arg_int(a, "threads", 1);
  const Problem p = make_problem(m);
  auto trainer = make_trainer(lib, p, threads);
  const std::string core = lib == "graft" ? graft_blas_core() : std::string(openblas_get_corename());

  if (kind == "time") {
    const int warmup = arg_int(a, "warmup", 3), steps = arg_int(a, "steps", 20);
    float loss = 0;
    for (int i = 0; i < warmup; ++i) loss = trainer->step();
    std::vector<double> ms;
    for (int i = 0; i < steps; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      loss = trainer->step();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("RESULT ms=%.6f loss=%.6f core=%s\n", median(ms), loss, core.c_str());
  } else {
    // mem: peak RSS over mem_steps steps; base: the same process without any step.
    const int steps = kind == "mem" ? arg_int(a, "mem_steps", 20) : 0;
    graft_reset_tensor_peak();
    float loss = 0;
    for (int i = 0; i < steps; ++i) loss = trainer->step();
    const long hwm = proc_status_kb("VmHWM"), rss = proc_status_kb("VmRSS");
    std::printf("RESULT hwm_kb=%ld rss_kb=%ld tensor_peak=%lld loss=%.6f core=%s\n", hwm, rss,
                static_cast<long long>(lib == "graft" ? graft_tensor_peak_bytes() : 0), loss, core.c_str());
  }
  std::fflush(stdout);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Parent side.

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) {
    std::perror("readlink /proc/self/exe");
    std::exit(2);
  }
  buf[n] = 0;
  return buf;
}

// Runs this program as a child with `args` (and OPENBLAS_NUM_THREADS=threads) and returns the
// key=value pairs of its RESULT line; exits if the child fails.
std::map<std::string, std::string> run_child(const std::string& exe, const std::string& args, int threads) {
  const std::string cmd = "OPENBLAS_NUM_THREADS=" + std::to_string(threads) + " '" + exe + "' " + args;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) {
    std::perror("popen");
    std::exit(2);
  }
  std::map<std::string, std::string> kv;
  char line[1024];
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "RESULT ", 7) != 0) continue;
    std::istringstream in(line + 7);
    std::string tok;
    while (in >> tok) {
      auto eq = tok.find('=');
      if (eq != std::string::npos) kv[tok.substr(0, eq)] = tok.substr(eq + 1);
    }
  }
  const int rc = pclose(f);
  if (rc != 0 || kv.empty()) {
    std::fprintf(stderr, "child failed (status %d): %s\n", rc, cmd.c_str());
    std::exit(1);
  }
  return kv;
}

struct Config {
  Model model;
  int threads;
};

struct Measured {
  std::vector<double> ms;                       // per repetition: median ms/step
  std::vector<double> hwm_kb, base_kb, tensor;  // per memory repetition
  std::string core;
};

std::string case_label(Model m) {
  return m == Model::Mlp ? "MLP 784-512-256-10, batch 128" : "CNN (2 conv, 2 pool, 2 linear), batch 64";
}

std::string fmt(double v, int prec) {
  if (!std::isfinite(v)) return "n/a";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

int parent(const std::map<std::string, std::string>& a) {
  const std::string exe = self_exe();
  const int reps = arg_int(a, "reps", 15), steps = arg_int(a, "steps", 20), warmup = arg_int(a, "warmup", 3);
  const int mem_reps = arg_int(a, "mem_reps", 3), mem_steps = arg_int(a, "mem_steps", 20);
#ifdef TRAIN_STEP_HAVE_TORCH
  const std::vector<std::string> libs = {"graft", "torch"};
  const std::string torch_ver = torch_version();
#else
  const std::vector<std::string> libs = {"graft"};
  const std::string torch_ver = "(LibTorch not built)";
#endif
  std::printf("%s; OPENBLAS_CORETYPE=%s OMP_WAIT_POLICY=%s; openblas_get_corename() = %s (before graft's check)\n",
              torch_ver.c_str(), env_or("OPENBLAS_CORETYPE", "(unset)"), env_or("OMP_WAIT_POLICY", "(unset)"),
              openblas_get_corename());
  std::printf("reps %d (timing), %d warm-up + %d timed steps per process; memory: %d reps of %d steps\n", reps,
              warmup, steps, mem_reps, mem_steps);
  std::fflush(stdout);

  // 1. Same computation on both sides.
  if (std::system(("'" + exe + "' --child=check").c_str()) != 0) {
    std::fprintf(stderr, "cross-check failed: graft and LibTorch do not compute the same losses\n");
    return 1;
  }

  const std::vector<Config> configs = {{Model::Mlp, 1}, {Model::Mlp, 2}, {Model::Cnn, 1}, {Model::Cnn, 2}};
  std::map<std::pair<int, std::string>, Measured> results;  // (config index, lib)
  auto child_args = [&](const std::string& kind, const std::string& lib, const Config& c) {
    return "--child=" + kind + " --lib=" + lib + " --model=" + model_name(c.model) +
           " --threads=" + std::to_string(c.threads) + " --steps=" + std::to_string(steps) +
           " --warmup=" + std::to_string(warmup) + " --mem_steps=" + std::to_string(mem_steps);
  };

  // 2. Peak memory: a stepping child and a non-stepping one per repetition.
  for (int r = 0; r < mem_reps; ++r)
    for (size_t ci = 0; ci < configs.size(); ++ci)
      for (const std::string& lib : libs) {
        const Config& c = configs[ci];
        Measured& m = results[{static_cast<int>(ci), lib}];
        auto mem = run_child(exe, child_args("mem", lib, c), c.threads);
        auto base = run_child(exe, child_args("base", lib, c), c.threads);
        m.hwm_kb.push_back(std::atof(mem["hwm_kb"].c_str()));
        m.base_kb.push_back(std::atof(base["rss_kb"].c_str()));
        m.tensor.push_back(std::atof(mem["tensor_peak"].c_str()));
        std::fprintf(stderr, "mem  rep %d %s t%d %-5s peak RSS %.1f MiB - base %.1f MiB\n", r + 1, model_name(c.model),
                     c.threads, lib.c_str(), m.hwm_kb.back() / 1024, m.base_kb.back() / 1024);
      }

  // 3. Time: repetitions interleaved, alternating which library goes first.
  for (int r = 0; r < reps; ++r)
    for (size_t ci = 0; ci < configs.size(); ++ci)
      for (size_t k = 0; k < libs.size(); ++k) {
        const std::string& lib = libs[(k + r + ci) % libs.size()];
        const Config& c = configs[ci];
        Measured& m = results[{static_cast<int>(ci), lib}];
        auto res = run_child(exe, child_args("time", lib, c), c.threads);
        m.ms.push_back(std::atof(res["ms"].c_str()));
        m.core = res["core"];
        std::fprintf(stderr, "time rep %d %s t%d %-5s %.2f ms/step (loss %s, core %s)\n", r + 1, model_name(c.model),
                     c.threads, lib.c_str(), m.ms.back(), res["loss"].c_str(), m.core.c_str());
      }

  // 4. The table.
  std::ostringstream md;
  md << "| case | threads | graft ms/step | LibTorch ms/step | ratio | graft peak MiB | LibTorch peak MiB | "
        "memory ratio | graft tensor peak MiB |\n"
     << "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::vector<std::string> time_missed, mem_missed;
  std::ostringstream spread;
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    const Config& c = configs[ci];
    const Measured& g = results[{static_cast<int>(ci), "graft"}];
    const Measured* t = results.count({static_cast<int>(ci), "torch"}) ? &results[{static_cast<int>(ci), "torch"}] : nullptr;
    const double g_ms = median(g.ms), t_ms = t ? median(t->ms) : NAN;
    const double g_mib = (median(g.hwm_kb) - median(g.base_kb)) / 1024;
    const double t_mib = t ? (median(t->hwm_kb) - median(t->base_kb)) / 1024 : NAN;
    const double ratio = g_ms / t_ms, mratio = g_mib / t_mib;
    md << "| " << case_label(c.model) << " | " << c.threads << " | " << fmt(g_ms, 2) << " | " << fmt(t_ms, 2) << " | "
       << fmt(ratio, 2) << " | " << fmt(g_mib, 1) << " | " << fmt(t_mib, 1) << " | " << fmt(mratio, 2) << " | "
       << fmt(median(g.tensor) / (1024.0 * 1024.0), 1) << " |\n";
    const std::string name = std::string(model_name(c.model)) + " at " + std::to_string(c.threads) + " thread" +
                             (c.threads > 1 ? "s" : "");
    if (t && !(ratio <= 1.0)) time_missed.push_back(name + " (ratio " + fmt(ratio, 2) + ")");
    if (t && !(mratio < 1.0)) mem_missed.push_back(name + " (memory ratio " + fmt(mratio, 2) + ")");
    auto range = [](const std::vector<double>& v) {
      return fmt(*std::min_element(v.begin(), v.end()), 2) + " to " + fmt(*std::max_element(v.begin(), v.end()), 2);
    };
    spread << "- " << name << ": graft " << range(g.ms) << " ms/step";
    if (t) spread << ", LibTorch " << range(t->ms) << " ms/step";
    spread << " (fastest to slowest repetition)\n";
  }
  if (libs.size() > 1) {
    md << "\n- time target (graft/LibTorch <= 1.0): "
       << (time_missed.empty() ? std::string("met in all 4 cases") : "MISSED in " + std::to_string(time_missed.size()) + " of 4: ");
    for (size_t i = 0; i < time_missed.size(); ++i) md << (i ? "; " : "") << time_missed[i];
    md << "\n- memory target (graft peak below LibTorch's): "
       << (mem_missed.empty() ? std::string("met in all 4 cases") : "MISSED in " + std::to_string(mem_missed.size()) + " of 4: ");
    for (size_t i = 0; i < mem_missed.size(); ++i) md << (i ? "; " : "") << mem_missed[i];
    md << "\n";
  }
  md << "\nSpread of the per-process medians:\n\n" << spread.str();

  std::printf("\n%s", md.str().c_str());
  const std::string json = arg_str(a, "json", "");
  if (!json.empty()) {
    std::ofstream js(json);
    auto list = [](const std::vector<double>& v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt(v[i], 4);
      return s + "]";
    };
    js << "[\n";
    for (size_t ci = 0; ci < configs.size(); ++ci) {
      const Config& c = configs[ci];
      js << (ci ? ",\n" : "") << "  {\"model\": \"" << model_name(c.model) << "\", \"threads\": " << c.threads;
      for (const std::string& lib : libs) {
        const Measured& m = results[{static_cast<int>(ci), lib}];
        std::vector<double> net;  // peak RSS growth per memory repetition, KiB
        for (size_t i = 0; i < m.hwm_kb.size() && i < m.base_kb.size(); ++i) net.push_back(m.hwm_kb[i] - m.base_kb[i]);
        js << ", \"" << lib << "_ms\": " << list(m.ms) << ", \"" << lib << "_peak_kib\": " << list(net);
      }
      js << "}";
    }
    js << "\n]\n";
  }
  const std::string out = arg_str(a, "markdown", "");
  if (!out.empty()) std::ofstream(out) << md.str();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto a = parse_args(argc, argv);
  const std::string child = arg_str(a, "child", "");
  try {
    if (child == "check") return child_check();
    if (child == "time" || child == "mem" || child == "base") return child_measure(child, a);
    if (!child.empty()) {
      std::fprintf(stderr, "unknown --child=%s\n", child.c_str());
      return 2;
    }
    return parent(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
