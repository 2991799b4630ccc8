#include "intra_op.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "memory_hooks.h"

namespace epprof::rt::detail {

namespace {

thread_local IntraOpPool* t_pool = nullptr;

}  // namespace

struct IntraOpPool::State {
  // One parallel_for's tasks, on the caller's stack while it runs.
  struct Job {
    void (*task)(const void*, int64_t);
    const void* context;
    int64_t n;
    std::atomic<int64_t> next{0};  // the next task to take; n or more: none left
    memory::Listeners listeners;   // the caller's: the workers' scratch buffers report to them
    std::exception_ptr error;      // the first one a task threw (under mu)
  };

  // Starting and joining a job takes no lock, so that a kernel of a few
  // microseconds still gains from a second thread: with a mutex and a
  // condition variable on both sides, a worker started 1,800 cycles after
  // the caller and the join took 1,400 more, and a [512,128] gemv split in
  // two (1.6 us a half) took as long as whole (3.2 us; 2.3 lock-free). The
  // protocol:
  // - the caller publishes `job`, then bumps `generation`, which spinning
  //   workers watch;
  // - a worker counts itself into `active` before it reads `job`, and out
  //   after its last task;
  // - the caller, its own tasks done, clears `job`, then waits for `active`
  //   to reach 0.
  // All of these are sequentially consistent, so a worker that read the
  // job is counted before the caller looks, and one counted after it reads
  // null (or a later job, which is live: its caller waits for it the same
  // way). Sleeping is the slow path: a worker that spun kSpin without a job
  // waits on `work`, counted in `sleepers`, which the caller checks after
  // bumping `generation` (so one of the two sees the other); the caller
  // waits on `idle`, flagged in `caller_waiting`, likewise.
  // The caller's per-job writes, the workers' and the rarely written flags
  // on lines of their own: on one line, every store moved it between the
  // cores again.
  alignas(64) std::atomic<Job*> job{nullptr};  // the job workers may join; null between jobs
  std::atomic<uint64_t> generation{0};         // jobs started
  alignas(64) std::atomic<int> active{0};      // workers counted into a job
  alignas(64) std::atomic<int> sleepers{0};    // workers waiting on `work`
  std::atomic<bool> caller_waiting{false};
  std::atomic<bool> stop{false};
  std::mutex mu;                        // for the condition variables, and a job's error
  std::condition_variable work;         // workers wait for a job (or stop)
  std::condition_variable idle;         // the caller waits for `active` to reach 0
  std::atomic<bool> busy{false};        // a caller holds the pool
  std::vector<std::thread> threads;

  // Spins until done() or kSpin has passed; true when done() came first.
  // Sleeping on a condition variable and being woken costs a futex call on
  // each side and an interrupt between the CPUs: tens of microseconds on a
  // virtual machine (perf on the bundled cnn model with 2 threads: the
  // kernel's share of the run went from 9% to 15% with the pool), where a
  // spin costs the waiting thread's CPU alone. ONNX Runtime's intra-op
  // threads spin too before they block.
  template <typename Done>
  static bool spin_until(const Done& done) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 0;; ++i) {
      if (done()) return true;
      if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return false;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }
  static constexpr std::chrono::microseconds kSpin{200};

  // Takes and runs tasks until none is left. A task that throws records its
  // exception (the first one wins) and ends the job: the tasks not yet taken
  // are skipped.
  void work_on(Job& j) {
    for (int64_t i; (i = j.next.fetch_add(1, std::memory_order_relaxed)) < j.n;) {
      try {
        j.task(j.context, i);
      } catch (...) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!j.error) j.error = std::current_exception();
        }
        j.next.store(j.n, std::memory_order_relaxed);
      }
    }
  }

  void worker() {
    uint64_t seen = 0;
    for (;;) {
      // A kernel's next parallel_for often comes within microseconds (the
      // next Conv of the run): wait for it spinning first, and sleep only
      // when none came.
      const auto started = [&] { return stop.load() || generation.load(std::memory_order_acquire) != seen; };
      if (!spin_until(started)) {
        std::unique_lock<std::mutex> lock(mu);
        sleepers.fetch_add(1);
        work.wait(lock, started);
        sleepers.fetch_sub(1);
      }
      if (stop.load()) return;
      seen = generation.load(std::memory_order_acquire);
      active.fetch_add(1);
      if (Job* j = job.load()) {
        const memory::Borrow as_the_caller(j->listeners);
        work_on(*j);
      }
      if (active.fetch_sub(1) == 1 && caller_waiting.load()) {
        std::lock_guard<std::mutex> lock(mu);
        idle.notify_one();
      }
    }
  }

  void shut_down() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop.store(true);
    }
    work.notify_all();
    for (auto& t : threads) t.join();
  }
};

IntraOpPool::IntraOpPool(int threads) : state_(std::make_unique<State>()), workers_(std::max(threads - 1, 0)) {
  try {
    state_->threads.reserve(static_cast<size_t>(workers_));
    for (int i = 0; i < workers_; ++i) state_->threads.emplace_back([s = state_.get()] { s->worker(); });
  } catch (...) {  // a thread could not start: stop those that did
    state_->shut_down();
    throw;
  }
}

IntraOpPool::~IntraOpPool() { state_->shut_down(); }

void IntraOpPool::run(int64_t n, void (*task)(const void*, int64_t), const void* context) {
  State& st = *state_;
  const IntraOpScope no_pool_in_tasks(nullptr);
  if (st.busy.exchange(true, std::memory_order_acquire)) {  // another thread's job: run ours alone
    for (int64_t i = 0; i < n; ++i) task(context, i);
    return;
  }
  State::Job job{task, context, n, {}, memory::current(), nullptr};
  st.job.store(&job);
  st.generation.fetch_add(1);
  if (st.sleepers.load() > 0) {
    // Wake only the workers there are tasks for (the caller takes one).
    std::lock_guard<std::mutex> lock(st.mu);
    for (int64_t w = std::min<int64_t>(n - 1, workers_); w > 0; --w) st.work.notify_one();
  }
  st.work_on(job);
  st.job.store(nullptr);  // a worker counted from now on reads null
  // A worker may be finishing its last task: spin a while first.
  if (!State::spin_until([&] { return st.active.load() == 0; })) {
    std::unique_lock<std::mutex> lock(st.mu);
    st.caller_waiting.store(true);
    st.idle.wait(lock, [&] { return st.active.load() == 0; });
    st.caller_waiting.store(false);
  }
  st.busy.store(false, std::memory_order_release);
  if (job.error) std::rethrow_exception(job.error);
}

IntraOpScope::IntraOpScope(IntraOpPool* pool) noexcept : saved_(t_pool) { t_pool = pool; }
IntraOpScope::~IntraOpScope() { t_pool = saved_; }

IntraOpPool* current_intra_op_pool() noexcept { return t_pool; }

int intra_op_threads() noexcept { return t_pool ? t_pool->threads() : 1; }

}  // namespace epprof::rt::detail
