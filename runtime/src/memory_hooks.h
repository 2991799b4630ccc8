// Tensor allocations, for memory profiling: Tensor's constructor reports
// each buffer to the profilers listening on the calling thread, and its
// deleter reports the free to those same profilers, on whatever thread it
// runs. A profiling observer that tracks memory (ProfilingOptions::memory)
// listens on the thread that runs one of its session phases or runs, for as
// long as it lasts, so a process's other sessions report to no one. With no
// listener an allocation costs one thread-local load. A free reaching a
// profiler that has stopped is refused by libepprof (a stale handle) and
// dropped.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>

#include "buffer_pool.h"
#include "epprof/profiler.h"

namespace epprof::rt::memory {

struct Listener {
  epprof_profiler_t profiler;
  epprof_name_id device;
  const std::atomic<epprof_memory_tag>* tag;  // what the listener's session is doing
};

// A thread's listeners.
struct Listeners {
  Listener l[4] = {};
  int n = 0;
};

// The profilers that heard an allocation, for its free.
struct Owners {
  static constexpr int kMax = 4;
  epprof_profiler_t profiler[kMax];
  epprof_name_id device[kMax];
  int n = 0;
};

// Adds `l` to the calling thread's listeners (up to Owners::kMax at once:
// a session observer and a run observer, say; more are not heard), and
// removes the one with that profiler.
void listen(const Listener& l) noexcept;
void unlisten(epprof_profiler_t profiler) noexcept;

// The calling thread's listeners, to lend to the threads that work for it.
Listeners current() noexcept;

// For its lifetime, the calling thread (a pool thread running one node of a
// run) listens as the run's thread does, instead of as itself.
class Borrow {
 public:
  explicit Borrow(const Listeners& lent) noexcept;
  ~Borrow();
  Borrow(const Borrow&) = delete;
  Borrow& operator=(const Borrow&) = delete;

 private:
  Listeners own_;
  bool swapped_ = false;
};

// `temporary`: scratch a kernel frees before it returns (im2col columns);
// else tagged as the listener's session is (initializer, output).
Owners report_allocated(const void* p, size_t bytes, bool temporary = false) noexcept;
// A chunk the buffer pool takes from the system (EPPROF_MEMORY_ARENA_CHUNK),
// under an id of its own: the tensors carved from it report its address.
Owners report_arena_chunk(const void* p, size_t bytes) noexcept;
void report_arena_chunk_freed(const Owners& owners, const void* p) noexcept;
// The same, to one listener only (a profiler that starts listening hears
// the chunks the pool already holds): adds it to `owners`; false when it
// was not heard (owners full, or the profiler refused it).
bool report_arena_chunk_to(const Listener& l, const void* p, size_t bytes, Owners* owners) noexcept;
void report_freed(const Owners& owners, const void* p) noexcept;

// A kernel's scratch buffer of n T (uninitialised unless `zeroed`), from
// the buffer pool (buffer_pool.h), reported as temporary memory while it
// lives. T is trivial: its bytes are all there is to it.
template <typename T>
class Scratch {
  static_assert(std::is_trivial_v<T>, "scratch holds plain values");

 public:
  explicit Scratch(size_t n, bool zeroed = false) : bytes_((n * sizeof(T) + 63) / 64 * 64) {
    if (n == 0) return;
    p_ = static_cast<T*>(acquire_buffer(bytes_));
    if (!p_) throw std::bad_alloc();
    if (zeroed) std::memset(static_cast<void*>(p_), 0, n * sizeof(T));
    owners_ = report_allocated(p_, bytes_, true);
  }
  ~Scratch() {
    if (!p_) return;
    report_freed(owners_, p_);
    release_buffer(p_, bytes_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get() const { return p_; }
  T& operator[](size_t i) const { return p_[i]; }

 private:
  size_t bytes_;
  T* p_ = nullptr;
  Owners owners_;
};

}  // namespace epprof::rt::memory
