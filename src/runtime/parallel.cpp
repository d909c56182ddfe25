// graft's thread pool: parallel_for's implementation and the thread count (see
// include/graft/runtime/parallel.h).
//
// Note [graft's thread pool]
// One pool per process, of get_num_threads() - 1 workers; the thread that calls parallel_for runs a
// share too. Design, and why:
//  - Passive, after a short spin. An idle worker sleeps on a condition variable. The host is often
//    shared (CI runners, a 2-core laptop, another library's pool), and a pool that spins without
//    bound steals the core that the other one wants: the MLP training step at 2 threads used to
//    run at 1.14x of 1 thread because OpenBLAS's spinning threads and the caller fought for two
//    cores (BENCHMARKS.md). But waking a sleeping thread costs 10 to 20 us on a shared VM, once to
//    start a worker and once more when the caller, done with its own chunks, sleeps until the
//    worker finishes; a training step runs a split matrix product every few hundred microseconds.
//    So a worker that finishes a job polls for the next one for a while (100 us; GRAFT_SPIN_US,
//    Note [Bounded spin]) before it sleeps, and the caller polls for its workers' last chunk for
//    as long before it sleeps. Between jobs further apart than that, and after the last one, nothing spins.
//    parallel_for still runs ranges under two grains inline, and the grains are sized so that one
//    chunk is tens of microseconds of work at least.
//  - Lazy. No thread exists until the first parallel_for that needs one; set_num_threads only
//    records the count, and the next dispatch that sees a different count joins the old workers
//    and starts new ones (under the dispatch lock, so never under a running job).
//  - Chunks. [begin, end) is cut into min(threads, (end - begin) / grain) chunks of near-equal
//    length (they differ by at most one index), so each is at least `grain` long. Workers and the
//    caller take chunks from an atomic counter, so a late-waking worker costs nothing: the caller
//    simply runs more chunks. Which thread runs which chunk varies from run to run; what a chunk
//    covers depends only on (begin, end, grain, threads). Kernels whose results must not depend on
//    the thread count (conv2d's weight gradient, the gemm split) cut their work into pieces that
//    depend on the sizes only, and parallel_for distributes the pieces.
//  - Nesting. A parallel_for called from inside a chunk (on a worker or on the calling thread) runs
//    inline: the pool is already busy, and waiting on it from inside it could deadlock.
//  - Concurrent callers. One job runs at a time. A second user thread that calls parallel_for while
//    the pool is busy runs its whole range inline on its own thread rather than waiting: it never
//    blocks on another caller's work, and the machine holds at most threads + 1 busy threads.
//  - Exceptions. Every chunk runs even after one has thrown; the first exception (in time) is kept
//    and rethrown on the caller once all chunks are done and no worker touches the job any more.
//  - Exit. The pool object is created on first use and never destroyed, so a parallel_for from a
//    static destructor (or from a thread still running at exit) finds a valid mutex. A static
//    "reaper" object, constructed together with the pool, stops and joins the workers during static
//    destruction; after that, parallel_for runs inline. No worker is left blocked on a destroyed
//    object and no std::thread is destroyed while joinable.
//  - fork(). A child process has none of the parent's workers; pthread_atfork gives the child a
//    fresh pool (the old one is abandoned, as its mutex may have been held by a parent thread).
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "graft/core/error.h"
#include "graft/runtime/parallel.h"
#include "runtime/blas.h"

namespace graft {
namespace {

// Note [Bounded spin]
// How long a worker keeps polling for the next job after one, and how long the caller polls for
// the workers' last chunk before sleeping on a condition variable. Long enough to bridge the serial
// stretch between two split products of a training step (tens of microseconds: the small ops and
// the graph bookkeeping between them), short enough that an idle pool costs nothing measurable:
// at most this much CPU per job on each worker. Spinning executes `pause`, which on an SMT core
// hands the issue slots to the sibling thread. GRAFT_SPIN_US in the environment sets it (0: sleep
// at once, a fully passive pool), read once when the pool starts.
std::chrono::microseconds spin_time() {
  static const std::chrono::microseconds t = [] {
    const char* env = std::getenv("GRAFT_SPIN_US");
    if (!env || !*env) return std::chrono::microseconds(100);
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    return std::chrono::microseconds(end && *end == '\0' && v >= 0 && v <= 1000000 ? v : 100);
  }();
  return t;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Polls `ready` until it returns true or spin_time() has passed; returns its last answer.
template <class P>
bool spin_until(P&& ready) {
  const auto spin = spin_time();
  if (spin.count() == 0) return ready();
  const auto deadline = std::chrono::steady_clock::now() + spin;
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

// True on pool workers always, and on a caller while it runs a job: a parallel_for there is nested.
thread_local bool t_in_parallel = false;

// The requested thread count; 0 until the first get/set (then OpenBLAS's start-up count).
std::atomic<int> g_num_threads{0};

struct Job {
  detail::RangeFn fn;
  int64_t begin, base, extra;  // chunk c covers base + (c < extra) indices
  int64_t chunks;
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written once, by the thread that set `failed`
  // Workers inside this job. Changed under Pool::mutex; the caller also polls it without the lock
  // (Note [Bounded spin]) and then confirms it under the lock.
  std::atomic<int> attached{0};

  Job(detail::RangeFn f, int64_t b, int64_t n, int64_t c) : fn(f), begin(b), base(n / c), extra(n % c), chunks(c) {}

  // Runs chunks until none is left.
  void run_chunks() {
    for (int64_t c = next.fetch_add(1, std::memory_order_relaxed); c < chunks;
         c = next.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t lo = begin + c * base + std::min(c, extra);
      const int64_t hi = lo + base + (c < extra ? 1 : 0);
      try {
        fn(lo, hi);
      } catch (...) {
        if (!failed.exchange(true, std::memory_order_acq_rel)) error = std::current_exception();
      }
    }
  }
};

class Pool {
 public:
  // Runs `job` on the caller and up to job.chunks - 1 workers. The caller holds dispatch_mutex.
  void run(Job& job, int threads) {
    if (stopped_) {  // after static destruction began: inline
      job.run_chunks();
      return;
    }
    resize(threads - 1);
    {
      std::lock_guard<std::mutex> lk(mutex_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    const int64_t helpers = std::min<int64_t>(job.chunks - 1, static_cast<int64_t>(workers_.size()));
    if (helpers == static_cast<int64_t>(workers_.size())) wake_.notify_all();
    else
      for (int64_t i = 0; i < helpers; ++i) wake_.notify_one();
    t_in_parallel = true;
    job.run_chunks();
    t_in_parallel = false;
    // Every chunk has been taken; poll briefly for the workers still running one, then sleep. A
    // worker may still attach after this saw 0 (it woke late and finds the job under the lock):
    // the check under the lock below is the one that counts, and such a worker runs no chunk.
    spin_until([&] { return job.attached.load(std::memory_order_acquire) == 0; });
    std::unique_lock<std::mutex> lk(mutex_);
    done_.wait(lk, [&] { return job.attached.load(std::memory_order_relaxed) == 0; });
    job_ = nullptr;  // a worker that wakes from now on finds no job
  }

  // Stops and joins every worker; later jobs run inline. Holds dispatch_mutex so that no job is in
  // flight.
  void shutdown() {
    std::lock_guard<std::mutex> d(dispatch_mutex);
    resize(0);
    stopped_ = true;
  }

  std::mutex dispatch_mutex;  // one job at a time (see the Note)

 private:
  // Makes the pool hold n workers; the caller holds dispatch_mutex, and no job is in flight.
  void resize(int n) {
    if (static_cast<int>(workers_.size()) == n) return;
    if (!workers_.empty()) {
      {
        std::lock_guard<std::mutex> lk(mutex_);
        stop_.store(true, std::memory_order_relaxed);
      }
      wake_.notify_all();
      for (std::thread& t : workers_) t.join();
      workers_.clear();
      stop_.store(false, std::memory_order_relaxed);  // every worker has exited
    }
    workers_.reserve(static_cast<size_t>(n));
    uint64_t gen;
    {
      std::lock_guard<std::mutex> lk(mutex_);
      gen = generation_.load(std::memory_order_relaxed);
    }
    for (int i = 0; i < n; ++i) workers_.emplace_back([this, gen] { worker_loop(gen); });
  }

  void worker_loop(uint64_t seen) {
    t_in_parallel = true;
    for (;;) {
      // The next job is often a few microseconds away: poll for it before sleeping (Note [Bounded spin]).
      spin_until([&] {
        return stop_.load(std::memory_order_relaxed) || generation_.load(std::memory_order_acquire) != seen;
      });
      std::unique_lock<std::mutex> lk(mutex_);
      wake_.wait(lk, [&] { return stop_.load(std::memory_order_relaxed) || generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_.load(std::memory_order_relaxed)) return;
      seen = generation_.load(std::memory_order_relaxed);
      Job* job = job_;
      if (!job) continue;  // woke after that job had finished
      job->attached.fetch_add(1, std::memory_order_relaxed);
      lk.unlock();
      job->run_chunks();
      lk.lock();
      if (job->attached.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_one();
    }
  }

  // mutex_ guards job_ and every change of generation_, stop_ and Job::attached; the atomics let
  // the spinning threads read them without it.
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  Job* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  bool stopped_ = false;  // guarded by dispatch_mutex
  std::vector<std::thread> workers_;
};

Pool* new_pool();

std::atomic<Pool*> g_pool{nullptr};
std::once_flag g_pool_once;

// Stops and joins the workers during static destruction (see the Note). It is constructed when the
// pool is, so statics constructed later are destroyed before it (and may still use the pool), and
// those constructed earlier after it (their parallel_for calls then run inline).
struct Reaper {
  ~Reaper() {
    if (Pool* p = g_pool.load(std::memory_order_acquire)) p->shutdown();
  }
};

void after_fork_in_child() {
  // The parent's workers do not exist here, and its mutexes may be held: start again.
  if (g_pool.load(std::memory_order_relaxed)) g_pool.store(new Pool, std::memory_order_release);
}

Pool* new_pool() {
  static Reaper reaper;
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
  return new Pool;  // never deleted (see the Note)
}

Pool& pool() {
  std::call_once(g_pool_once, [] { g_pool.store(new_pool(), std::memory_order_release); });
  return *g_pool.load(std::memory_order_acquire);
}

}  // namespace

void set_num_threads(int n) {
  GRAFT_CHECK(n >= 1, "set_num_threads", "a thread count of at least 1", std::to_string(n),
              "pass 1 for single-threaded kernels");
  runtime::keep_blas_single_threaded();
  g_num_threads.store(n, std::memory_order_relaxed);
}

int get_num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  runtime::ensure_blas_ready();
  n = std::max(1, runtime::blas_startup_threads());
  int expected = 0;
  g_num_threads.compare_exchange_strong(expected, n, std::memory_order_relaxed);
  return g_num_threads.load(std::memory_order_relaxed);
}

namespace detail {

void parallel_for_impl(int64_t begin, int64_t end, int64_t grain, RangeFn f) {
  const int64_t n = end - begin;
  const int threads = get_num_threads();
  const int64_t chunks = std::min<int64_t>(threads, n / std::max<int64_t>(grain, 1));
  if (chunks <= 1 || t_in_parallel) {
    f(begin, end);
    return;
  }
  Pool& p = pool();
  std::unique_lock<std::mutex> busy(p.dispatch_mutex, std::try_to_lock);
  if (!busy.owns_lock()) {  // another user thread's job is running: run this one inline
    f(begin, end);
    return;
  }
  Job job(f, begin, n, chunks);
  p.run(job, threads);
  busy.unlock();
  if (job.failed.load(std::memory_order_acquire)) std::rethrow_exception(job.error);
}

}  // namespace detail
}  // namespace graft
