#include "buffer_pool.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "memory_hooks.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define EPPROF_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define EPPROF_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define EPPROF_POISON(p, n) ((void)(p), (void)(n))
#define EPPROF_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace epprof::rt::memory {
namespace {

// The calling thread's idle small buffers: a free list per size (a
// multiple of 64 under kMinPooledBytes), linked through each buffer's
// first word, until they total kMaxIdleSmallBytes. Under AddressSanitizer
// an idle buffer is poisoned, so a kernel that touches a tensor it freed
// is caught as it would be without the cache.
class SmallCache {
 public:
  SmallCache() = default;
  SmallCache(const SmallCache&) = delete;
  SmallCache& operator=(const SmallCache&) = delete;
  ~SmallCache() { trim(); }

  void* take(size_t bytes) noexcept {
    void*& head = heads_[bytes / 64];
    void* p = head;
    if (!p) return nullptr;
    EPPROF_UNPOISON(p, bytes);
    head = *static_cast<void**>(p);
    idle_ -= bytes;
    return p;
  }
  // Keeps `p` unless the cache is full.
  bool keep(void* p, size_t bytes) noexcept {
    if (idle_ + bytes > kMaxIdleSmallBytes) return false;
    void*& head = heads_[bytes / 64];
    *static_cast<void**>(p) = head;
    head = p;
    idle_ += bytes;
    EPPROF_POISON(p, bytes);
    return true;
  }
  void trim() noexcept {
    for (size_t c = 0; c < kClasses; ++c)
      while (void* p = take(c * 64)) std::free(p);
  }
  size_t idle_bytes() const noexcept { return idle_; }

 private:
  static constexpr size_t kClasses = kMinPooledBytes / 64;
  void* heads_[kClasses] = {};
  size_t idle_ = 0;
};

// The thread's cache, made on its first small buffer and emptied when the
// thread exits; null after that (a buffer freed by a later thread-exit
// destructor goes straight to free) or when there was no memory for it.
// Both pointers are trivially destructible, so reading them stays valid
// until the thread is gone.
thread_local SmallCache* t_small = nullptr;
thread_local bool t_small_gone = false;

struct SmallCacheReaper {
  ~SmallCacheReaper() {
    delete t_small;
    t_small = nullptr;
    t_small_gone = true;
  }
};

SmallCache* small_cache() noexcept {
  if (__builtin_expect(t_small != nullptr, 1)) return t_small;
  if (t_small_gone) return nullptr;
  thread_local SmallCacheReaper reaper;  // constructed here, once: frees the cache at thread exit
  (void)reaper;
  t_small = new (std::nothrow) SmallCache;
  return t_small;
}

// A buffer taken from the system, idle or in use, and the profilers that
// heard of it (for when it goes back).
struct Chunk {
  size_t bytes;
  Owners heard;
};

struct Pool {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> idle;  // by size
  size_t idle_bytes = 0;
  std::unordered_map<const void*, Chunk> chunks;  // every pooled-size buffer not given back
};

// Never destroyed: buffers may be released by static destructors that run
// after this file's would have.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

// Forgets the chunk at `p` (given back to the system), under the pool's
// lock: the profilers that heard of it, to tell them it went.
Owners forget_chunk_locked(Pool& pl, const void* p) {
  Owners heard;
  auto it = pl.chunks.find(p);
  if (it != pl.chunks.end()) {
    heard = it->second.heard;
    pl.chunks.erase(it);
  }
  return heard;
}

// Sizes are whole multiples of 64, at least one: what aligned_alloc
// requires, and what the free lists are by, so a buffer taken from one is
// never smaller than the size asked for; and never 0, which a thread's cap
// on its idle bytes would not count.
size_t whole_lines(size_t bytes) noexcept { return bytes ? (bytes + 63) & ~size_t(63) : 64; }

}  // namespace

void* acquire_buffer(size_t bytes) noexcept {
  bytes = whole_lines(bytes);
  if (bytes < kMinPooledBytes) {
    if (SmallCache* c = small_cache())
      if (void* p = c->take(bytes)) return p;
  } else {
    Pool& pl = pool();
    std::lock_guard<std::mutex> lock(pl.mu);
    auto it = pl.idle.find(bytes);
    if (it != pl.idle.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      pl.idle_bytes -= bytes;
      return p;
    }
  }
  void* p = std::aligned_alloc(64, bytes);
  if (p && bytes >= kMinPooledBytes) {
    const Owners owners = report_arena_chunk(p, bytes);
    Pool& pl = pool();
    std::lock_guard<std::mutex> lock(pl.mu);
    try {
      pl.chunks.emplace(p, Chunk{bytes, owners});
    } catch (const std::bad_alloc&) {
      report_arena_chunk_freed(owners, p);  // cannot remember it: the profile lets it go now
    }
  }
  return p;
}

void release_buffer(void* p, size_t bytes) noexcept {
  if (!p) return;
  bytes = whole_lines(bytes);
  if (bytes < kMinPooledBytes) {
    SmallCache* c = small_cache();
    if (c && c->keep(p, bytes)) return;
  } else {
    Owners heard;
    {
      Pool& pl = pool();
      std::lock_guard<std::mutex> lock(pl.mu);
      if (pl.idle_bytes + bytes <= kMaxIdleBytes) {
        try {
          pl.idle[bytes].push_back(p);
          pl.idle_bytes += bytes;
          return;
        } catch (const std::bad_alloc&) {
          // no room to remember it: give it back to the system below
        }
      }
      heard = forget_chunk_locked(pl, p);
    }
    report_arena_chunk_freed(heard, p);
  }
  std::free(p);
}

void report_pool_chunks(const Listener& l) noexcept {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  for (auto& [p, chunk] : pl.chunks) report_arena_chunk_to(l, p, chunk.bytes, &chunk.heard);
}

void forget_pool_listener(epprof_profiler_t profiler) noexcept {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  for (auto& [p, chunk] : pl.chunks) {
    Owners& o = chunk.heard;
    int kept = 0;
    for (int i = 0; i < o.n; ++i)
      if (o.profiler[i].handle != profiler.handle) {
        o.profiler[kept] = o.profiler[i];
        o.device[kept] = o.device[i];
        ++kept;
      }
    o.n = kept;
  }
}

void trim_buffer_pool() noexcept {
  if (t_small) t_small->trim();
  std::vector<std::pair<void*, Owners>> freed;
  {
    Pool& pl = pool();
    std::lock_guard<std::mutex> lock(pl.mu);
    for (auto& [bytes, list] : pl.idle)
      for (void* p : list) {
        const Owners heard = forget_chunk_locked(pl, p);
        try {
          freed.emplace_back(p, heard);
        } catch (const std::bad_alloc&) {
          std::free(p);  // its profilers keep it as held: nothing is lost but the curve's last step
        }
      }
    pl.idle.clear();
    pl.idle_bytes = 0;
  }
  for (const auto& [p, heard] : freed) {
    report_arena_chunk_freed(heard, p);
    std::free(p);
  }
}

size_t idle_small_bytes() noexcept { return t_small ? t_small->idle_bytes() : 0; }

size_t idle_buffer_bytes() noexcept {
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  return pl.idle_bytes;
}

}  // namespace epprof::rt::memory
