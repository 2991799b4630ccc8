// Intra-op parallelism: a session's pool of intra_op_threads - 1 workers
// that, with the thread calling parallel_for, run the independent tasks one
// kernel splits its work into (Conv's tiles of output rows, a large gemm's
// blocks of rows).
//
// Kernels reach the pool through the calling thread: Session::run installs
// its session's pool on the run's thread (and the parallel executor on the
// threads that run its nodes) with IntraOpScope, as memory listeners are
// lent (memory_hooks.h), so neither the public KernelContext nor the
// kernels' helper functions carry it. Inside a task no pool is installed:
// parallel_for there is a plain loop, and intra_op_threads() is 1, so a
// kernel called from a task (Conv's per-tile gemm) does not split again.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

namespace epprof::rt::detail {

class IntraOpPool {
 public:
  // `threads` >= 2: the calling thread of each parallel_for and threads - 1
  // workers, which wait for the next job spinning for a while (see
  // intra_op.cpp), then sleeping on a condition variable.
  explicit IntraOpPool(int threads);
  ~IntraOpPool();
  IntraOpPool(const IntraOpPool&) = delete;
  IntraOpPool& operator=(const IntraOpPool&) = delete;

  int threads() const { return workers_ + 1; }

  // task(context, i) for every i in [0, n), each exactly once, on the
  // calling thread and the workers; returns when all have run. The first
  // exception a task throws is rethrown here after the others have stopped
  // (tasks not yet started are skipped). One job at a time: a call while
  // another thread's job holds the pool runs its tasks on the caller alone.
  void run(int64_t n, void (*task)(const void* context, int64_t i), const void* context);

 private:
  struct State;
  std::unique_ptr<State> state_;  // what the workers share
  int workers_;
};

// For its lifetime, parallel_for on the calling thread uses `pool` (null:
// none, a plain loop).
class IntraOpScope {
 public:
  explicit IntraOpScope(IntraOpPool* pool) noexcept;
  ~IntraOpScope();
  IntraOpScope(const IntraOpScope&) = delete;
  IntraOpScope& operator=(const IntraOpScope&) = delete;

 private:
  IntraOpPool* saved_;
};

// The pool installed on the calling thread (null: none), to lend to the
// threads that work for it.
IntraOpPool* current_intra_op_pool() noexcept;

// Threads a parallel_for on the calling thread may use now: 1 with no pool
// (and inside a task), else the pool's. Kernels size their tasks by it.
int intra_op_threads() noexcept;

// fn(i) for every i in [0, n), on the calling thread's pool when it has one
// and n > 1; else a plain loop in order on the calling thread (a single task
// runs with the pool still installed, so it may split its own work).
template <typename Fn>
void parallel_for(int64_t n, const Fn& fn) {
  IntraOpPool* pool = current_intra_op_pool();
  if (!pool || n <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool->run(
      n, [](const void* f, int64_t i) { (*static_cast<const Fn*>(f))(i); }, &fn);
}

// How many ranges to split `units` equal units of work into: up to
// `per_thread` for each of intra_op_threads() (more ranges let the threads
// that start early, on a shared CPU, take over those of one that starts
// late), never more than `units`; 1 with one thread.
inline int64_t intra_op_ranges(int64_t units, int64_t per_thread) {
  const int threads = intra_op_threads();
  return threads == 1 || units <= 1 ? 1 : std::min<int64_t>(units, threads * per_thread);
}

// Multiply-adds from which a kernel's work is split across the intra-op
// threads: about 20 us on one core, several times what waking the workers
// and joining them costs (measured: silero_vad_legacy's 1-D Convs, tens of
// thousands of multiply-adds each, took 2.3 us on one thread and 4.9 us
// split across two).
constexpr int64_t kMinSplitMacs = int64_t(1) << 20;

// intra_op_ranges, or 1 range when the kernel's `macs` multiply-adds are
// too little work to split.
inline int64_t intra_op_ranges(int64_t units, int64_t per_thread, int64_t macs) {
  return macs < kMinSplitMacs ? 1 : intra_op_ranges(units, per_thread);
}

// Bytes a kernel reads and writes from which it splits its work across the
// intra-op threads even when its arithmetic would not pay for the join.
// The spatial kernels (Conv, MaxPool) split by output rows, the first range
// going to the calling thread, which takes the first task: a kernel that
// splits its rows as the one before it did reads on each thread the rows
// that thread wrote, in its own core's cache. Run on the calling thread
// alone, it reads half its input from the other core's, which on these VMs
// costs more than the work: the CNN's MaxPool ([1,32,64,64] 2x2/2, 4 taps an
// output) took 17 us in a 1-thread session and 32 us in a 2-thread one,
// after a Conv that split its rows; split by rows as the Conv had, 21 us,
// and the Conv itself, whose output buffer then stayed on the thread that
// writes it, went from 54 to 28 us.
constexpr int64_t kMinSplitBytes = int64_t(128) << 10;

// intra_op_ranges, or 1 range when the kernel has too little arithmetic
// (`macs`) and too little data (`bytes` read and written) to split.
inline int64_t intra_op_ranges(int64_t units, int64_t per_thread, int64_t macs, int64_t bytes) {
  return macs < kMinSplitMacs && bytes < kMinSplitBytes ? 1 : intra_op_ranges(units, per_thread);
}

// How a kernel splits an NCHW tensor across the intra-op threads: by
// ranges of whole planes (dims 0 and 1) when its planes are small, else by
// ranges of each plane's rows. The spatial kernels (Conv's depthwise loop
// and gemm lowering, MaxPool) and the element-wise ops (element_split.h)
// all ask this, so that a kernel splits a tensor as the one that wrote it
// did and each thread reads its own core's cache (kMinSplitBytes). Conv's
// implicit GEMM (conv_direct.h, AVX-512) does not: it splits by rows.
// Splitting the rows of a small plane gives each thread short strided runs,
// and the lines at the boundaries to both: ppocr_v4_rec's depthwise Conv,
// scalar Mul and Add on [1,240,12,40] (1,920-byte planes, the boundary on
// a line) took 104, 10 and 10 us on one thread, 71, 30 and 29 us on two
// split by rows, 61, 5 and 5 us split by planes. By planes was faster for
// planes of 8, 30 and 122 KB too; above 16 KB the rows stay, as the CNN's
// MaxPool and Conv were measured with them.
constexpr int64_t kSmallPlaneBytes = int64_t(16) << 10;
inline bool split_by_planes(int64_t planes, int64_t plane_bytes) {
  return plane_bytes < kSmallPlaneBytes && planes >= intra_op_threads();
}

// fn(r, begin, end) for each range r of [0, units) split into `ranges`
// near-equal contiguous ones (none longer than ceil(units / ranges)),
// through parallel_for. A kernel allocates the ranges' scratch buffers
// before, on the calling thread: memory profiling attributes an allocation
// to the node open on the thread that makes it, and the workers have none.
template <typename Fn>
void parallel_for_ranges(int64_t units, int64_t ranges, const Fn& fn) {
  parallel_for(ranges, [&](int64_t r) { fn(r, units * r / ranges, units * (r + 1) / ranges); });
}

}  // namespace epprof::rt::detail
